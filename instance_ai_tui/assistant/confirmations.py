"""Confirmations: suspended tool calls shown to the user, and how a confirm body resumes them.

A suspended call becomes a ``PendingConfirmation`` with a ``requestId`` and a
``confirmation-request`` event. Approval suspensions (a tool that needs approval) become an
``approval`` card with the tool's severity and message; tools that suspend themselves
(``plan`` review, ``ask-user``) describe their card in their suspend payload under
``confirmation``. A sub-agent's suspension travels up through its ``delegate`` call, whose
payload then also names the ``target`` (the sub-agent's own tool call) the card belongs to.

``resume_data(body, pending)`` maps every confirm body of ``protocol.api`` onto the data the
suspended call is resumed with (n8n's ``toConfirmationData``).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    CredentialAutoSetupConfirm,
    CredentialDestinationConfirm,
    CredentialSelectionConfirm,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    McpConnectConfirm,
    PlanDenyConfirm,
    QuestionsConfirm,
    ResourceDecisionConfirm,
    SetupWorkflowApplyConfirm,
    SetupWorkflowTestTriggerConfirm,
)
from ..runtime.state import ApprovalDecision
from ..runtime.tools import Tool
from .errors import InvalidRequest
from .mapping import Suspension

#: default lifetime of a confirmation (n8n: 24 h)
DEFAULT_TTL_SECONDS = 24 * 3600.0


class ConfirmationAnswer(BaseModel):
    """Resume data of tools that suspend themselves (plan review, ask-user, delegate)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    approved: bool = True
    user_input: str | None = None
    denied: bool = False
    answers: list[dict[str, Any]] | None = None
    scope: str | None = None


class PendingConfirmation(BaseModel):
    """A confirmation waiting for the user; stored with the run so it survives a restart."""

    request_id: str
    thread_id: str
    run_id: str
    #: the card: agent, tool call, tool
    agent_id: str
    tool_call_id: str
    tool_name: str
    input_type: str = "approval"
    #: how the orchestrator's pending call is resumed
    resume_tool_call_id: str
    resume_kind: Literal["approval", "suspend"]
    #: the sub-agent run whose call this is (a sub-agent's approval), to clean up its checkpoint
    sub_run_id: str | None = None
    created_at: float = Field(default_factory=lambda: time.time())
    expires_at: float | None = None
    #: the ``confirmation-request`` payload (published again if a crash kept it from the log)
    request: dict[str, Any] = Field(default_factory=dict)
    response_id: str | None = None

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (now or time.time()) >= self.expires_at


def card_fields(suspension: Suspension, tools: dict[str, Tool]) -> dict[str, Any]:
    """The card part of a confirmation payload (severity, message, inputType, ...)."""
    payload = suspension.payload if isinstance(suspension.payload, dict) else {}
    if suspension.kind == "approval":
        tool = tools.get(suspension.tool_name)
        severity = (tool.metadata.get("severity") if tool else None) or "warning"
        message = payload.get("message") or f"Allow {suspension.tool_name} to run?"
        card = {"severity": severity, "message": message, "inputType": "approval"}
        if isinstance(payload.get("preview"), dict):
            card["preview"] = payload["preview"]  # what the call would change (a diff)
        return card
    card = dict(payload.get("confirmation") or {})
    card.setdefault("severity", "info")
    card.setdefault("message", "Confirmation required")
    card.setdefault("inputType", "approval")
    return card


def build_request(pending: PendingConfirmation, suspension: Suspension, card: dict[str, Any]) -> dict[str, Any]:
    """The ``confirmation-request`` payload. It refers to its tool call (``toolCallId``, whose
    ``tool-call`` event carried the arguments) instead of copying them (issue 31): a large call was
    stored three times (the call, the request in the log, the request with the run record). Readers
    take the call's arguments (the reducer always did; ``run`` asks with them)."""
    return {"requestId": pending.request_id, "toolCallId": pending.tool_call_id, "toolName": pending.tool_name,
            "args": {}, **card}


_KINDS_BY_INPUT: dict[str, frozenset[str]] = {
    "questions": frozenset({"questions", "approval"}),
    "plan-review": frozenset({"approval", "planDeny"}),
    "text": frozenset({"approval"}),
}
_NEVER_FOR_APPROVAL = frozenset({"questions", "planDeny"})


def check_fits(body: ConfirmBody, pending: PendingConfirmation) -> None:
    """Refuse an answer of the wrong kind (e.g. question answers for an approval card)."""
    allowed = _KINDS_BY_INPUT.get(pending.input_type)
    fits = body.kind in allowed if allowed is not None else body.kind not in _NEVER_FOR_APPROVAL
    if not fits:
        raise InvalidRequest(
            f"confirmation {pending.request_id} asks for {pending.input_type!r}; a {body.kind!r} answer does not fit"
        )


def resume_data(body: ConfirmBody) -> dict[str, Any]:
    """The confirm body as resume data (camelCase keys, ``approved`` always present)."""
    if isinstance(body, ApprovalConfirm):
        data: dict[str, Any] = {"approved": body.approved}
        if body.user_input is not None:
            data["userInput"] = body.user_input
        if body.scope is not None:
            data["scope"] = body.scope
        return data
    if isinstance(body, PlanDenyConfirm):
        return {"approved": False, "denied": True}
    if isinstance(body, QuestionsConfirm):
        return {"approved": True, "answers": [a.to_wire() for a in body.answers]}
    if isinstance(body, CredentialSelectionConfirm):
        return {"approved": True, "credentials": dict(body.credentials)}
    if isinstance(body, CredentialAutoSetupConfirm):
        auto = {"credentialType": body.credential_type}
        if body.attempt_id:
            auto["attemptId"] = body.attempt_id
        return {"approved": True, "autoSetup": auto}
    if isinstance(body, CredentialDestinationConfirm):
        return {"approved": body.approved, "origin": body.origin}
    if isinstance(body, DomainAccessApproveConfirm):
        return {"approved": True, "domainAccessAction": body.domain_access_action}
    if isinstance(body, DomainAccessDenyConfirm):
        return {"approved": False}
    if isinstance(body, ResourceDecisionConfirm):
        return {"approved": body.resource_decision != "denyOnce", "resourceDecision": body.resource_decision}
    if isinstance(body, SetupWorkflowApplyConfirm):
        return {"approved": True, "action": "apply", **body.to_wire()}
    if isinstance(body, SetupWorkflowTestTriggerConfirm):
        return {"approved": True, "action": "test-trigger", **body.to_wire()}
    if isinstance(body, McpConnectConfirm):
        data = {"approved": body.approved}
        if body.connected_slugs is not None:
            data["connectedSlugs"] = list(body.connected_slugs)
        return data
    raise InvalidRequest(f"unsupported confirmation kind {getattr(body, 'kind', '?')!r}")


def always_allow(body: ConfirmBody) -> bool:
    """True when the answer means "always allow this tool in this thread"."""
    if isinstance(body, ApprovalConfirm):
        return body.approved and body.scope == "session"
    if isinstance(body, ResourceDecisionConfirm):
        return body.resource_decision == "allowForSession"
    if isinstance(body, DomainAccessApproveConfirm):
        return body.domain_access_action == "allow_all"
    return False


def approval_decision(data: dict[str, Any]) -> ApprovalDecision:
    """Resume data -> the runtime's approval decision (a denial keeps the user's words)."""
    approved = bool(data.get("approved"))
    reason = data.get("userInput") if not approved else None
    return ApprovalDecision(approved=approved, reason=reason or None)
