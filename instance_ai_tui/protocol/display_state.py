"""What a tool call's state *is*, for people: the one function every view asks.

The agent tree keeps n8n's own rule (reference §6.1): a tool call is ``isLoading`` until its
result or error arrives, a *cancelled* or *failed* run stops its loading calls, and a
*completed* run leaves them as they are (n8n's ``create-tasks`` after a plan review stays
loading). The tree therefore cannot be read naively: a loading call may be running, waiting
for the user, never resolved, or an expired confirmation; a finished call without a result
was cancelled before it ran; a "successful" result may be n8n's ``{"denied": true}``.

``display_state(call, run_active=...)`` decides it once. The live view (``tui.tool_card``),
the restored view (the same widget, fed from history), ``export`` (``protocol.transcript``)
and headless ``run`` (``client.cli_run``) all use it, so they never disagree.

States (``DisplayState.kind``):

==============  ===========================================================
``running``     loading, no unanswered confirmation, the run is active
``waiting``     loading with a confirmation nobody answered yet; ``label`` says
                for what, by ``inputType``: approval, your answer, your plan review
``done``        a result that is not a denial
``failed``      an error that is not a denial or a cancellation
``denied``      the user said no: ``confirmationStatus: denied`` or n8n's ``result.denied``
``not-run``     cancelled or interrupted before it ran (stopped with no result, or
                ``tool-interrupted``)
``expired``     the confirmation expired (n8n's ``confirmation.expired``) unanswered
``unresolved``  still loading in the tree but its run is over (completed without it)
==============  ===========================================================

Module rule: ``protocol/`` imports nothing else of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .tree import ToolCallState

__all__ = ["AUTO_APPROVED_LABEL", "DisplayState", "Kind", "display_state", "is_denied_result", "waiting_label"]

Kind = Literal["running", "waiting", "done", "failed", "denied", "not-run", "expired", "unresolved"]

#: how an auto-approved call ("always allow" of the thread) is marked everywhere
AUTO_APPROVED_LABEL = "auto-approved (always allow)"


@dataclass(frozen=True, slots=True)
class DisplayState:
    kind: Kind
    #: the words shown next to the glyph ("waiting for your answer", "denied", ...)
    label: str
    #: ran without asking because of an "always allow" grant
    auto_approved: bool = False

    @property
    def finished(self) -> bool:
        """Nothing more will happen to this call."""
        return self.kind not in ("running", "waiting")


_WAITING_LABELS = {
    "approval": "waiting for approval",
    "resource-decision": "waiting for approval",
    "domain-access": "waiting for approval",
    "questions": "waiting for your answer",
    "text": "waiting for your answer",
    "plan-review": "waiting for your plan review",
}


def waiting_label(input_type: str | None) -> str:
    """``waiting for approval`` / ``waiting for your answer`` / ``waiting for your plan review``."""
    return _WAITING_LABELS.get(input_type or "approval", "waiting for your answer")


def is_denied_result(result: Any) -> bool:
    """n8n reports a denial as a result, not an error: ``{"success": false, "denied": true}``."""
    return isinstance(result, dict) and result.get("denied") is True


def _auto_approved(call: ToolCallState) -> bool:
    extra = call.model_extra or {}
    return extra.get("autoApproved") is True


def display_state(call: ToolCallState, *, run_active: bool = True, resolved: bool = False) -> DisplayState:
    """The state of ``call`` as the user should see it.

    ``run_active``: the run the call belongs to is still going (streaming or suspended). A
    loading call of a finished run is ``unresolved`` (or ``expired``), never "running".
    ``resolved``: the user answered its confirmation here and the answer is on its way.
    """
    auto = _auto_approved(call)
    conf = call.confirmation
    if call.confirmation_status == "denied" or is_denied_result(call.result):
        return DisplayState("denied", "denied", auto)
    if call.is_loading:
        if conf is not None and conf.expired and call.confirmation_status is None:
            return DisplayState("expired", "expired (not answered in time)", auto)
        answered = resolved or call.confirmation_status == "approved"
        if conf is not None and not answered:
            if run_active:
                return DisplayState("waiting", waiting_label(conf.effective_input_type), auto)
            return DisplayState("unresolved", "not answered (the run ended)", auto)
        if run_active:
            return DisplayState("running", "running", auto)
        return DisplayState("unresolved", "not resolved (the run ended without it)", auto)
    if call.interrupted:
        return DisplayState("not-run", "not run (interrupted)", auto)
    if call.error is not None:
        return DisplayState("failed", "failed", auto)
    if call.result is None and call.completed_at is None:
        # stopped by the end of its run (cancel, error) before a result came
        if conf is not None and conf.expired and call.confirmation_status is None:
            return DisplayState("expired", "expired (not answered in time)", auto)
        return DisplayState("not-run", "not run (cancelled)", auto)
    return DisplayState("done", "done", auto)
