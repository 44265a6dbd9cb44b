"""The agent activity tree: what the reducer builds from events (n8n's ``InstanceAiAgentNode``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from .base import WireModel
from .events import ConfirmationPayload, PlannedTask, TargetResource, TaskList

AgentStatus = Literal["active", "completed", "cancelled", "error"]
CancellationReason = Literal["user", "timeout", "shutdown", "interrupted"]


class Confirmation(ConfirmationPayload):
    """A confirmation attached to a tool call (payload minus toolCallId/toolName/args).

    The three fields the payload carries for the tool call itself are optional here
    (``None`` = left out of the wire form), as in n8n's tree.
    """

    tool_call_id: str | None = None  # type: ignore[assignment]
    tool_name: str | None = None  # type: ignore[assignment]
    args: dict[str, Any] | None = None  # type: ignore[assignment]
    expired: bool | None = None


class ToolCallState(WireModel):
    tool_call_id: str
    tool_name: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    is_loading: bool = True
    render_hint: str | None = None
    confirmation: Confirmation | None = None
    confirmation_status: Literal["pending", "approved", "denied", "changes-requested", "deferred"] | None = None
    interrupted: bool | None = None
    started_at: str | None = None
    completed_at: str | None = None


class TextEntry(WireModel):
    type: Literal["text"] = "text"
    content: str = ""
    response_id: str | None = None


class ReasoningEntry(WireModel):
    type: Literal["reasoning"] = "reasoning"
    content: str = ""
    response_id: str | None = None


class ToolCallEntry(WireModel):
    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    response_id: str | None = None


class ChildEntry(WireModel):
    type: Literal["child"] = "child"
    agent_id: str
    response_id: str | None = None


class OtherEntry(WireModel):
    """A timeline entry of a type this client does not know (e.g. newer n8n's
    ``instance-context``). Kept whole so a snapshot round-trips."""

    type: str


_ENTRY_TYPES = frozenset({"text", "reasoning", "tool-call", "child"})


def _entry_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _ENTRY_TYPES else "other"


TimelineEntry = Annotated[
    (
        Annotated[TextEntry, Tag("text")]
        | Annotated[ReasoningEntry, Tag("reasoning")]
        | Annotated[ToolCallEntry, Tag("tool-call")]
        | Annotated[ChildEntry, Tag("child")]
        | Annotated[OtherEntry, Tag("other")]
    ),
    Discriminator(_entry_tag),
]


class AgentNode(WireModel):
    agent_id: str
    role: str = "orchestrator"
    tools: list[str] | None = None
    task_id: str | None = None
    kind: str | None = None
    title: str | None = None
    subtitle: str | None = None
    goal: str | None = None
    target_resource: TargetResource | None = None
    status: AgentStatus = "active"
    status_message: str | None = None
    text_content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallState] = Field(default_factory=list)
    children: list[AgentNode] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    tasks: TaskList | None = None
    plan_items: list[PlannedTask] | None = None
    setup_items_by_workflow_id: dict[str, list[dict[str, Any]]] | None = None
    latest_setup_announcement: dict[str, Any] | None = None
    result: str | None = None
    error: str | None = None
    error_details: dict[str, Any] | None = None
    cancellation_reason: CancellationReason | None = None


class RunSyncPayload(WireModel):
    """n8n's ``event: run-sync`` control frame: replaces the tree of a live message group."""

    run_id: str = ""
    message_group_id: str | None = None
    run_ids: list[str] = Field(default_factory=list)
    agent_tree: AgentNode | None = None
    status: Literal["active", "suspended", "background"] | str = "active"
    background_tasks: list[dict[str, Any]] = Field(default_factory=list)
