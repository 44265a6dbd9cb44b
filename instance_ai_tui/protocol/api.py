"""Request and response bodies of the HTTP API (seed and released n8n)."""

from __future__ import annotations

import functools
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, field_validator

from .base import StrictWireModel, WireModel
from .tree import AgentNode

# --------------------------------------------------------------------------- send


class SendMessageRequest(WireModel):
    """``POST chat/:threadId``. Only ``message`` is needed; n8n's extras are kept."""

    message: str = ""
    time_zone: str | None = None
    attachments: list[dict[str, Any]] | None = None

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message must not be empty")
        return value


class SendMessageResponse(WireModel):
    run_id: str


# --------------------------------------------------------------------------- confirm


class QuestionAnswer(WireModel):
    question_id: str
    selected_options: list[str] = Field(default_factory=list)
    custom_text: str | None = None
    skipped: bool | None = None


class ApprovalConfirm(StrictWireModel):
    kind: Literal["approval"] = "approval"
    approved: bool
    user_input: str | None = None
    scope: Literal["once", "session"] | None = None


class PlanDenyConfirm(StrictWireModel):
    kind: Literal["planDeny"] = "planDeny"


class QuestionsConfirm(StrictWireModel):
    kind: Literal["questions"] = "questions"
    answers: list[QuestionAnswer]


class CredentialSelectionConfirm(StrictWireModel):
    kind: Literal["credentialSelection"] = "credentialSelection"
    credentials: dict[str, str]


class CredentialAutoSetupConfirm(StrictWireModel):
    kind: Literal["credentialAutoSetup"] = "credentialAutoSetup"
    credential_type: str
    attempt_id: str | None = None


class CredentialDestinationConfirm(StrictWireModel):
    kind: Literal["credentialDestination"] = "credentialDestination"
    approved: bool
    origin: str


class DomainAccessApproveConfirm(StrictWireModel):
    kind: Literal["domainAccessApprove"] = "domainAccessApprove"
    domain_access_action: Literal["allow_once", "allow_domain", "allow_all"]


class DomainAccessDenyConfirm(StrictWireModel):
    kind: Literal["domainAccessDeny"] = "domainAccessDeny"


class ResourceDecisionConfirm(StrictWireModel):
    kind: Literal["resourceDecision"] = "resourceDecision"
    resource_decision: Literal["denyOnce", "allowOnce", "allowForSession"]


class SetupWorkflowApplyConfirm(StrictWireModel):
    kind: Literal["setupWorkflowApply"] = "setupWorkflowApply"
    node_credentials: dict[str, dict[str, str]] | None = None
    node_parameters: dict[str, dict[str, Any]] | None = None
    skipped_nodes: list[str] | None = None


class SetupWorkflowTestTriggerConfirm(StrictWireModel):
    kind: Literal["setupWorkflowTestTrigger"] = "setupWorkflowTestTrigger"
    test_trigger_node: str
    node_credentials: dict[str, dict[str, str]] | None = None
    node_parameters: dict[str, dict[str, Any]] | None = None


class McpConnectConfirm(StrictWireModel):
    kind: Literal["mcpConnect"] = "mcpConnect"
    approved: bool
    connected_slugs: list[str] | None = None


ConfirmBody = Annotated[
    (
        ApprovalConfirm
        | PlanDenyConfirm
        | QuestionsConfirm
        | CredentialSelectionConfirm
        | CredentialAutoSetupConfirm
        | CredentialDestinationConfirm
        | DomainAccessApproveConfirm
        | DomainAccessDenyConfirm
        | ResourceDecisionConfirm
        | SetupWorkflowApplyConfirm
        | SetupWorkflowTestTriggerConfirm
        | McpConnectConfirm
    ),
    Field(discriminator="kind"),
]

@functools.cache
def _confirm_adapter() -> TypeAdapter[Any]:
    return TypeAdapter(ConfirmBody)


def answer_verdict(body: ConfirmBody) -> bool | None:
    """Whether an answer approves (True), says no (False: a denial, a rejected plan, a web access
    or a resource refused, a credential destination or an MCP connection declined) or neither
    (None: answers to questions, credential picks, a workflow setup)."""
    if isinstance(body, ApprovalConfirm | CredentialDestinationConfirm | McpConnectConfirm):
        return body.approved
    if isinstance(body, PlanDenyConfirm | DomainAccessDenyConfirm):
        return False
    if isinstance(body, DomainAccessApproveConfirm):
        return True
    if isinstance(body, ResourceDecisionConfirm):
        return body.resource_decision != "denyOnce"
    return None


def parse_confirm_body(data: Any) -> ConfirmBody:
    """Parse a confirm body. The seed's bare ``{approved}`` (no ``kind``) is an approval.

    Raises ``pydantic.ValidationError`` for anything else that does not fit.
    """
    if isinstance(data, dict) and "kind" not in data:
        data = {"kind": "approval", **data}
    # strict, as JSON: "yes", 1 or "on" is not a boolean (lax mode approved them); nested
    # objects still validate from plain dicts
    try:
        text = json.dumps(data)
    except (TypeError, ValueError):
        return _confirm_adapter().validate_python(data, strict=True)
    return _confirm_adapter().validate_json(text, strict=True)


class ConfirmResponse(WireModel):
    ok: bool = True
    run_id: str | None = None


# --------------------------------------------------------------------------- threads


class ThreadInfo(WireModel):
    id: str
    title: str = ""
    resource_id: str | None = None
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)

    def matches(self, query: str) -> bool:
        """Every word of ``query`` is in the title or the id, case folded ("strasse" finds "Straße")."""
        return all(word in f"{self.title} {self.id}".casefold() for word in query.casefold().split())


class ThreadList(WireModel):
    threads: list[ThreadInfo] = Field(default_factory=list)
    total: int | None = None
    has_more: bool = False


class CreateThreadRequest(WireModel):
    thread_id: str | None = None
    title: str | None = None
    project_id: str | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None


class UpdateThreadRequest(StrictWireModel):
    title: str | None = Field(default=None, min_length=1, max_length=255)
    metadata: dict[str, Any] | None = None


# --------------------------------------------------------------------------- history and status


class InstanceAiMessage(WireModel):
    id: str
    run_id: str | None = None
    message_group_id: str | None = None
    run_ids: list[str] | None = None
    role: Literal["user", "assistant"]
    created_at: datetime
    content: str = ""
    reasoning: str = ""
    is_streaming: bool = False
    agent_tree: AgentNode | None = None
    #: a turn the user rewound past (retry, edit, rewind): kept in history, not in the model's context
    superseded: bool = False


class ThreadPermissions(WireModel):
    """``GET threads/:threadId/permissions`` (and the answer of ``DELETE
    threads/:threadId/permissions/:toolName``): the tools the user chose "always allow" for in
    this thread — they run without asking until revoked."""

    always_allow: list[str] = Field(default_factory=list)


class ModelInfo(WireModel):
    name: str
    #: tokens the model can read at once, when known (the status line shows how full it is)
    context_window: int | None = None


class ModelList(WireModel):
    """``GET models[?threadId=]``: the models a thread can use (``/model``)."""

    models: list[ModelInfo] = Field(default_factory=list)
    #: the model the thread uses (or the default, without a thread)
    current: str = ""
    default: str = ""


class SetModelRequest(WireModel):
    """``PUT threads/:threadId/model``: ``""`` goes back to the default model."""

    model: str = Field(default="", max_length=200)


class CompactRequest(WireModel):
    """``POST threads/:threadId/compact``: compact the thread's context now (``/compact``); ``keep``
    says what the notes must keep in particular."""

    keep: str = Field(default="", max_length=500)


class RewindRequest(WireModel):
    """``POST threads/:threadId/rewind``: forget the turns from this user message on."""

    message_id: str = Field(min_length=1)


class RewindResponse(WireModel):
    #: the runs now superseded (the rewound user message's run and every later one)
    superseded_run_ids: list[str] = Field(default_factory=list)
    #: the text of the rewound user message (to retry it, or to edit it and send it again)
    text: str = ""


class ThreadMessages(WireModel):
    thread_id: str
    messages: list[InstanceAiMessage] = Field(default_factory=list)
    next_event_id: int = 1
    #: the thread's metadata (our server: ``usage`` = the thread's token/cost total); absent from n8n
    metadata: dict[str, Any] | None = None
    #: a page (``limit``) was asked for and older messages exist (our server; absent from n8n)
    has_more: bool | None = None


class BackgroundTask(WireModel):
    task_id: str
    role: str = ""
    agent_id: str = ""
    status: Literal["running", "completed", "failed", "cancelled"] = "running"
    started_at: float = 0
    run_id: str | None = None
    message_group_id: str | None = None


class ThreadStatus(WireModel):
    has_active_run: bool = False
    is_suspended: bool = False
    run_id: str | None = None
    background_tasks: list[BackgroundTask] = Field(default_factory=list)


class ErrorBody(WireModel):
    """Our server's error body. n8n's is ``{code, message}``; ours adds ``error`` for clarity."""

    code: int
    message: str
    hint: str | None = None
