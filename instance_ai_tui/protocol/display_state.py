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

n8n's own outcomes (read in its source, ``@n8n/instance-ai`` 2.41 ``tools/workflows.tool.js``,
``tools/orchestration/plan.tool.js``, and the editor's ``InstanceAiConfirmationPanel.vue`` /
``instanceAi.store.ts``) are followed, not the bare "a result means success":

* a result ``{success: false, error}`` is a failure (n8n returns it as a result, not an error), and
  so is a result listing ``failedNodes`` (setup applied, but those nodes failed): ``failed``, with
  n8n's words in the label; ``{success: true, partial: true}`` is ``done`` ("partly done");
* an execution outcome with ``status: "error"`` (``executions`` run / run-step / get, read in n8n's
  ``modules/instance-ai/instance-ai.adapter.service.js``) is ``failed``, naming the node of its
  ``nodeErrors`` and n8n's message: a workflow that failed a node is never "✓ done";
* a denial is ``{success: false, denied: true}`` or ``confirmationStatus: denied``: one word,
  "denied", live, restored, exported and headless;
* a skipped setup or question is n8n's ``deferred`` (``confirmationStatus: deferred``, or a result
  whose ``skippedByUser`` lists what was left for later): ``not-run`` "skipped (for later)", never
  "denied";
* a plan review reads approved / changes requested / rejected: from its result (n8n: "Plan
  approved.", "User requested changes: …", "User denied the plan."; ours: ``approved``,
  ``feedback``, ``rejected``), else from the answer given here (``approved``,
  ``changes-requested``, ``denied``); a plan review still loading when its run *completed* was
  approved (n8n hands the run off to the planned tasks only on approval).

Module rule: ``protocol/`` imports nothing else of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .tree import ToolCallState

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


#: n8n 2.41's ``research`` ``fetch-url`` result when the person said no (its ``content``)
FETCH_DENIED = "User denied access to this URL."


def is_denied_result(result: Any) -> bool:
    """n8n reports a denial as a result, not an error: ``{"success": false, "denied": true}``, or a
    refused ``fetch-url``'s ``{"content": "User denied access to this URL."}``."""
    return isinstance(result, dict) and (result.get("denied") is True or result.get("content") == FETCH_DENIED)


def _web_search_empty(call: ToolCallState) -> bool:
    """n8n's ``research`` ``web-search`` answered ``{query, results: []}``: what it returns when the person
    said no, when the admin blocks web search or when it has no search service, and for a search that
    found nothing; its history keeps no word of which (no ✓ for it)."""
    result, args = call.result, call.args or {}
    searched = call.tool_name == "web-search" or (call.tool_name == "research" and args.get("action") == "web-search")
    return searched and isinstance(result, dict) and result.get("results") == [] and "query" in result


def _auto_approved(call: ToolCallState) -> bool:
    extra = call.model_extra or {}
    return extra.get("autoApproved") is True


PLAN_APPROVED = "plan approved"
PLAN_CHANGES = "changes requested"
PLAN_REJECTED = "plan rejected"
SKIPPED_LABEL = "skipped (for later)"


def _plan_outcome(result: Any) -> str | None:
    """A plan review's outcome from its tool result (n8n's text or our plan tool's object)."""
    if isinstance(result, dict):
        if result.get("rejected") is True or result.get("denied") is True:
            return PLAN_REJECTED
        if result.get("approved") is True:
            return PLAN_APPROVED
        if result.get("approved") is False:
            return PLAN_CHANGES
        result = result.get("result")
    if isinstance(result, str):
        text = result.strip().lower()
        if text.startswith("plan approved"):
            return PLAN_APPROVED
        if text.startswith("user denied the plan"):
            return PLAN_REJECTED
        if text.startswith("user requested changes"):
            return PLAN_CHANGES
    return None


def _plan_review_state(call: ToolCallState, run_active: bool, auto: bool) -> DisplayState | None:
    outcome = _plan_outcome(call.result)
    status = call.confirmation_status
    if outcome is None:
        outcome = {"approved": PLAN_APPROVED, "changes-requested": PLAN_CHANGES}.get(status or "")
    if outcome is None and status == "denied":
        outcome = PLAN_REJECTED
    if outcome is None and call.is_loading and not run_active:
        outcome = PLAN_APPROVED  # a completed run left it loading: n8n handed the run off to the plan
    if outcome is None:
        return None
    return DisplayState("denied" if outcome == PLAN_REJECTED else "done", outcome, auto)


def result_failure(result: Any) -> str | None:
    """n8n's failures reported as results: ``{success: false, error}`` (not a denial),
    ``failedNodes``, a credential pick n8n could not verify (``verified: false``), an ``Error: …``
    text (the orchestration tools' way: ``create-tasks``' ``{result: "Error: …", taskCount: 0}``,
    ``complete-checkpoint``'s ``{ok: false, result}``); the words to show, else None."""
    if isinstance(result, str):
        return _error_text(result)
    if not isinstance(result, dict) or is_denied_result(result):
        return None
    inner = result.get("result")  # create-tasks' {result: "Error: …", taskCount: 0}, complete-checkpoint's {ok, result}
    if isinstance(inner, str) and (_error_text(inner) is not None or result.get("ok") is False):
        return _error_text(inner) or f"failed: {inner}"
    if result.get("success") is True and result.get("verified") is False:
        return _unverified(result)
    failed = result.get("failedNodes")
    if isinstance(failed, list) and failed:
        names = [str(n.get("nodeName") or n.get("name") or "?") if isinstance(n, dict) else str(n) for n in failed]
        errors = [str(n.get("error")) for n in failed if isinstance(n, dict) and n.get("error")]
        detail = f": {errors[0]}" if errors else ""
        return f"failed: {len(names)} node(s) failed ({', '.join(names[:5])}){detail}"
    if result.get("success") is False:
        why = result.get("error") or result.get("reason") or result.get("message")
        return f"failed: {why}" if why else "failed"
    return _execution_failure(result)


def _error_text(text: str) -> str | None:
    text = text.strip()
    return f"failed: {text[6:].strip()}" if text.startswith("Error:") else None


def _unverified(result: dict[str, Any]) -> str:
    """n8n 2.41's ``credentials`` ``setup`` answer: the picks are saved, but "not confirmed working"
    (``selections``: a failed connection test, no values, or no test for the type)."""
    problems = []
    for selection in result.get("selections") or []:
        if not isinstance(selection, dict):
            continue
        label = str(selection.get("credentialType") or "a credential")
        if selection.get("connection") == "failed":
            why = selection.get("connectionMessage")
            problems.append(f"{label} failed its connection test" + (f": {why}" if why else ""))
        elif selection.get("hasNoValues"):
            problems.append(f"{label} has no values filled in")
        elif selection.get("connection") == "untested":
            problems.append(f"{label} could not be tested (n8n has no connection test for it)")
    return "picked, not verified" + (f": {'; '.join(problems)}" if problems else "")


def _execution_failure(result: dict[str, Any]) -> str | None:
    """n8n's execution outcome as a result (``executions`` run / run-step / get, n8n's
    ``extractExecutionOutcome``: ``{executionId, status: "error", nodeErrors: [{nodeName, message}],
    error}``; ``nodes`` execute: ``{status: "error", error: {message}}``): the failed node and n8n's
    message, else None."""
    error = result.get("error")
    if result.get("status") != "error" or not ("executionId" in result or "nodeErrors" in result
                                                or isinstance(error, dict)):
        return None
    if isinstance(error, dict):
        error = error.get("message")
    nodes = [n for n in result.get("nodeErrors") or [] if isinstance(n, dict)]
    if nodes:
        names = ", ".join(str(n.get("nodeName") or "?") for n in nodes[:5])
        message = nodes[0].get("message") or error
        where = f"node {names}" if len(nodes) == 1 else f"nodes {names}"
        return f"failed: the execution failed at {where}" + (f": {message}" if message else "")
    return f"failed: the execution failed: {error}" if error else "failed: the execution failed"


def _skipped(result: Any) -> bool:
    return isinstance(result, dict) and bool(result.get("skippedByUser")) and not result.get("completedNodes")


def display_state(call: ToolCallState, *, run_active: bool = True, resolved: bool = False) -> DisplayState:
    """The state of ``call`` as the user should see it.

    ``run_active``: the run the call belongs to is still going (streaming or suspended). A
    loading call of a finished run is ``unresolved`` (or ``expired``), never "running".
    ``resolved``: the user answered its confirmation here and the answer is on its way.
    """
    auto = _auto_approved(call)
    conf = call.confirmation
    if conf is not None and conf.effective_input_type == "plan-review":
        plan = _plan_review_state(call, run_active, auto)
        if plan is not None:
            return plan
    if call.confirmation_status == "denied" or is_denied_result(call.result):
        return DisplayState("denied", "denied", auto)
    if call.confirmation_status == "deferred" or _skipped(call.result):
        if call.is_loading and run_active:
            return DisplayState("running", "running", auto)
        return DisplayState("not-run", SKIPPED_LABEL, auto)
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
    failure = result_failure(call.result)
    if failure is not None:
        return DisplayState("failed", failure, auto)
    if _web_search_empty(call):
        return DisplayState("not-run", "no results", auto)
    if call.result is None and call.completed_at is None:
        # stopped by the end of its run (cancel, error) before a result came
        if conf is not None and conf.expired and call.confirmation_status is None:
            return DisplayState("expired", "expired (not answered in time)", auto)
        return DisplayState("not-run", "not run (cancelled)", auto)
    if isinstance(call.result, dict) and call.result.get("partial") is True:
        return DisplayState("done", "partly done", auto)
    return DisplayState("done", "done", auto)
