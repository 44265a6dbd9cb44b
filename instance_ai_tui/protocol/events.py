"""Models of the Instance AI streaming protocol's events.

Both dialects parse: the seed document (``../shared/seeds/streaming-protocol.md``) and
released n8n (2.35+), which adds event types, nests ``tasks-update`` and uses other task
statuses. ``parse_event`` never raises for an unknown ``type``: it returns an
``UnknownEvent`` that keeps every field. It raises ``EventParseError`` (a ``ValueError``)
for input that is not an event at all, so callers can record a diagnostic.
"""

from __future__ import annotations

import functools
import json
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_serializer, model_validator

from .base import WireModel
from .usage_words import format_tokens


class EventParseError(ValueError):
    """Raised when a frame cannot be read as an event."""


# --------------------------------------------------------------------------- tasks


class TaskStatus(StrEnum):
    """Task status, normalised to n8n's vocabulary (the richer of the two)."""

    TODO = "todo"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


_SEED_TASK_STATUS = {"pending": TaskStatus.TODO, "completed": TaskStatus.DONE}
_TO_SEED_STATUS = {TaskStatus.TODO: "pending", TaskStatus.DONE: "completed"}


class TaskItem(WireModel):
    id: str
    description: str = ""
    detail: str | None = None
    status: TaskStatus = TaskStatus.TODO

    @field_validator("status", mode="before")
    @classmethod
    def _normalise_status(cls, value: Any) -> Any:
        if isinstance(value, str):
            return _SEED_TASK_STATUS.get(value, value)
        return value


class TaskList(WireModel):
    """A checklist. Accepts the seed's flat list and n8n's ``{tasks: [...]}``.

    ``flat`` records which dialect it came in, so it is written back the same way.
    """

    tasks: list[TaskItem] = Field(default_factory=list)
    flat: bool = Field(default=False, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _accept_flat(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {"tasks": value, "flat": True}
        return value

    @model_serializer(mode="wrap")
    def _serialise(self, handler: Any) -> Any:
        data = handler(self)
        if self.flat:
            return [
                {**item, "status": _TO_SEED_STATUS.get(TaskStatus(item["status"]), item["status"])}
                if isinstance(item, dict) and "status" in item
                else item
                for item in data.get("tasks", [])
            ]
        return data

    @property
    def done_count(self) -> int:
        return sum(1 for t in self.tasks if t.status == TaskStatus.DONE)


class PlannedTask(WireModel):
    id: str
    title: str = ""
    kind: str = ""
    spec: str = ""
    deps: list[str] = Field(default_factory=list)
    tools: list[str] | None = None
    workflow_id: str | None = None
    is_supporting_workflow: bool | None = None


# --------------------------------------------------------------------------- payloads


class Payload(WireModel):
    """Base class of every payload: unknown fields are kept."""


class RunStartPayload(Payload):
    message_id: str = ""
    trace_id: str | None = None
    message_group_id: str | None = None


RunFinishStatus = Literal["completed", "cancelled", "error", "interrupted"]


class RunFinishPayload(Payload):
    status: str = "completed"
    reason: str | None = None
    archived_workflow_ids: list[str] | None = None


class TextPayload(Payload):
    text: str = ""


class ToolInputStartPayload(Payload):
    tool_call_id: str
    tool_name: str = ""


class ToolCallPayload(Payload):
    tool_call_id: str = ""
    tool_name: str = ""
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("args", mode="before")
    @classmethod
    def _args_dict(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            try:
                parsed = json.loads(value) if value.strip() else {}
            except ValueError:
                return {"_raw": value}
            return parsed if isinstance(parsed, dict) else {"_value": parsed}
        if not isinstance(value, dict):
            return {"_value": value}
        return value


class ToolResultPayload(Payload):
    tool_call_id: str = ""
    result: Any = None


class ToolErrorPayload(Payload):
    tool_call_id: str = ""
    error: str = ""

    @field_validator("error", mode="before")
    @classmethod
    def _error_text(cls, value: Any) -> Any:
        if value is None:
            return ""
        if not isinstance(value, str):
            return json.dumps(value) if not isinstance(value, Exception) else str(value)
        return value


class TargetResource(WireModel):
    type: str = "other"
    id: str | None = None
    name: str | None = None
    project_id: str | None = None


class AgentSpawnedPayload(Payload):
    parent_id: str = ""
    role: str = ""
    tools: list[str] = Field(default_factory=list)
    task_id: str | None = None
    kind: str | None = None
    title: str | None = None
    subtitle: str | None = None
    goal: str | None = None
    target_resource: TargetResource | None = None


class AgentCompletedPayload(Payload):
    role: str = ""
    result: str = ""
    error: str | None = None
    status: str | None = None

    @field_validator("result", mode="before")
    @classmethod
    def _result_text(cls, value: Any) -> Any:
        if value is None:
            return ""
        if not isinstance(value, str):
            return json.dumps(value, default=str)
        return value


Severity = Literal["destructive", "warning", "info"]
InputType = Literal["approval", "text", "questions", "plan-review", "resource-decision", "continue"]


class Question(WireModel):
    id: str
    question: str = ""
    type: Literal["single", "multi", "text"] = "single"
    options: list[str] | None = None


class DomainAccess(WireModel):
    url: str = ""
    host: str = ""


class ResourceDecisionRequest(WireModel):
    tool_group: str = ""
    resource: str = ""
    description: str = ""
    options: list[str] = Field(default_factory=list)


class ChangePreview(WireModel):
    """What an approved call would change: a one-line summary and a unified diff."""

    summary: str = ""
    diff: str = ""
    #: how many lines of the diff were left out (it is capped)
    omitted_lines: int = 0


class ConfirmationPayload(Payload):
    """The rich confirmation of the seed and of n8n (every field past the first five optional)."""

    request_id: str
    tool_call_id: str = ""
    tool_name: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    severity: str = "warning"
    message: str = "Confirmation required"
    input_type: str | None = None
    questions: list[Question] | None = None
    tasks: TaskList | None = None
    plan_items: list[PlannedTask] | None = None
    intro_message: str | None = None
    credential_requests: list[dict[str, Any]] | None = None
    credential_flow: dict[str, Any] | None = None
    setup_requests: list[dict[str, Any]] | None = None
    workflow_id: str | None = None
    project_id: str | None = None
    domain_access: DomainAccess | None = None
    resource_decision: ResourceDecisionRequest | None = None
    approval_details: dict[str, Any] | None = None
    resource_name: str | None = None
    #: ours: what an approved call would change (``{summary, diff}``: a unified diff of a file, or
    #: of a workflow's nodes and connections), drawn on the approval card
    preview: ChangePreview | None = None
    #: ours: an MCP server's form (``elicitation/create``) asked as these questions: ``{"server": NAME}``
    mcp_elicitation: dict[str, Any] | None = None

    @field_validator("severity", mode="before")
    @classmethod
    def _severity(cls, value: Any) -> Any:
        return value if value in ("destructive", "warning", "info") else "warning"

    @property
    def effective_input_type(self) -> str:
        return self.input_type or "approval"


class TasksUpdatePayload(Payload):
    tasks: TaskList = Field(default_factory=TaskList)
    plan_items: list[PlannedTask] | None = None


class SetupItemsPayload(Payload):
    workflow_id: str = ""
    items: list[dict[str, Any]] = Field(default_factory=list)


class PreferencesAppliedPayload(Payload):
    preferences: list[dict[str, Any]] = Field(default_factory=list)
    rendered_length: int = 0
    injected_this_turn: bool = False
    carried_from_run_id: str | None = None


class FilesystemRequestPayload(Payload):
    request_id: str = ""
    operation: str | None = None
    args: dict[str, Any] | None = None
    tool_call: dict[str, Any] | None = None


class ThreadTitlePayload(Payload):
    title: str = ""


class StatusPayload(Payload):
    message: str = ""


class ContextCompactedPayload(Payload):
    """The oldest turns of the thread were compacted into observations (this app's own event): the
    messages observed (of ``runs``), the model's context in tokens before and after (an estimate of
    the next request) out of ``context_window``; ``reason``: ``auto`` (past the threshold), ``refused``
    (the model server refused a request as too big) or ``manual`` (``/compact``)."""

    messages: int = 0
    runs: list[str] = Field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    context_window: int = 0
    reason: str = "auto"
    #: the observer's call failed: the notes are what could be kept without it
    error: str | None = None
    #: ``reason == "cut"``: the person's message of this turn was cut to fit: characters sent of written
    sent_chars: int = 0
    written_chars: int = 0
    #: nothing to gain: notes would not have been smaller than those messages, which were kept as they were
    kept: bool = False

    def words(self) -> str:
        """One line: "context compacted: 12 older messages became notes (78% → 21% of 8.2k)"."""
        if self.reason == "cut":
            size = format_tokens(self.context_window)
            return (f"context full: your message was cut to {self.sent_chars:,} of its {self.written_chars:,} "
                    f"characters to fit the model's {size} context (its head and tail were sent; it stays "
                    "whole in the thread)")
        cause = {"refused": "the model refused a request as too big; ", "manual": ""}.get(self.reason, "")
        if self.kept:
            these = f"these {self.messages} messages are" if self.messages != 1 else "this message is"
            return (f"{cause}nothing to gain: {these} already shorter than notes about them "
                    f"(context {_share(self.tokens_before, self.tokens_after, self.context_window, kept=True)})")
        what = f"{self.messages} older message{'s' if self.messages != 1 else ''} became notes"
        tail = f" (notes without the model: {self.error})" if self.error else ""
        return (f"context compacted: {cause}{what} "
                f"({_share(self.tokens_before, self.tokens_after, self.context_window)}){tail}")


def _share(before: int, after: int, window: int, *, kept: bool = False) -> str:
    if window <= 0:
        return f"{format_tokens(after)} tokens" if kept else f"{format_tokens(before)} → {format_tokens(after)} tokens"
    size = format_tokens(window)
    if kept:
        return f"{round(100 * after / window)}% of {size}"
    return f"{round(100 * before / window)}% → {round(100 * after / window)}% of {size}"


#: ``error`` codes this app sets itself: the class of a failed run (``runtime.errors``, ``store.errors``,
#: ``assistant.errors.describe_failure``); any other code is n8n's own (``quota_exhausted``)
APP_ERROR_CODE_PREFIXES = ("model", "storage", "redis", "run_stopped")


def is_app_error_code(code: str | None) -> bool:
    """Whether ``code`` is one of this app's failure classes (not n8n's)."""
    return bool(code) and str(code).startswith(APP_ERROR_CODE_PREFIXES)


class ErrorPayload(Payload):
    content: str = ""
    status_code: int | None = None
    code: str | None = None
    provider: str | None = None
    technical_details: str | None = None


# --------------------------------------------------------------------------- events


class EventBase(WireModel):
    """The envelope every event shares."""

    type: str
    run_id: str = ""
    agent_id: str = ""
    user_id: str | None = None
    response_id: str | None = None
    ts: int | float | None = None


class RunStartEvent(EventBase):
    type: Literal["run-start"] = "run-start"
    payload: RunStartPayload = Field(default_factory=RunStartPayload)


class RunFinishEvent(EventBase):
    type: Literal["run-finish"] = "run-finish"
    payload: RunFinishPayload = Field(default_factory=RunFinishPayload)


class TextDeltaEvent(EventBase):
    type: Literal["text-delta"] = "text-delta"
    payload: TextPayload = Field(default_factory=TextPayload)


class ReasoningDeltaEvent(EventBase):
    type: Literal["reasoning-delta"] = "reasoning-delta"
    payload: TextPayload = Field(default_factory=TextPayload)


class TextBlockEvent(EventBase):
    type: Literal["text-block"] = "text-block"
    payload: TextPayload = Field(default_factory=TextPayload)


class ReasoningBlockEvent(EventBase):
    type: Literal["reasoning-block"] = "reasoning-block"
    payload: TextPayload = Field(default_factory=TextPayload)


class ToolInputStartEvent(EventBase):
    type: Literal["tool-input-start"] = "tool-input-start"
    payload: ToolInputStartPayload


class ToolCallEvent(EventBase):
    type: Literal["tool-call"] = "tool-call"
    payload: ToolCallPayload = Field(default_factory=ToolCallPayload)


class ToolResultEvent(EventBase):
    type: Literal["tool-result"] = "tool-result"
    payload: ToolResultPayload = Field(default_factory=ToolResultPayload)


class ToolErrorEvent(EventBase):
    type: Literal["tool-error"] = "tool-error"
    payload: ToolErrorPayload = Field(default_factory=ToolErrorPayload)


class ToolInterruptedEvent(EventBase):
    type: Literal["tool-interrupted"] = "tool-interrupted"
    payload: ToolErrorPayload = Field(default_factory=ToolErrorPayload)


class AgentSpawnedEvent(EventBase):
    type: Literal["agent-spawned"] = "agent-spawned"
    payload: AgentSpawnedPayload = Field(default_factory=AgentSpawnedPayload)


class AgentCompletedEvent(EventBase):
    type: Literal["agent-completed"] = "agent-completed"
    payload: AgentCompletedPayload = Field(default_factory=AgentCompletedPayload)


class ConfirmationRequestEvent(EventBase):
    type: Literal["confirmation-request"] = "confirmation-request"
    payload: ConfirmationPayload


class TasksUpdateEvent(EventBase):
    type: Literal["tasks-update"] = "tasks-update"
    payload: TasksUpdatePayload = Field(default_factory=TasksUpdatePayload)


class SetupItemsEvent(EventBase):
    type: Literal["setup-items"] = "setup-items"
    payload: SetupItemsPayload = Field(default_factory=SetupItemsPayload)


class PreferencesAppliedEvent(EventBase):
    type: Literal["preferences-applied"] = "preferences-applied"
    payload: PreferencesAppliedPayload = Field(default_factory=PreferencesAppliedPayload)


class FilesystemRequestEvent(EventBase):
    type: Literal["filesystem-request"] = "filesystem-request"
    payload: FilesystemRequestPayload = Field(default_factory=FilesystemRequestPayload)


class ThreadTitleUpdatedEvent(EventBase):
    type: Literal["thread-title-updated"] = "thread-title-updated"
    payload: ThreadTitlePayload = Field(default_factory=ThreadTitlePayload)


class StatusEvent(EventBase):
    type: Literal["status"] = "status"
    payload: StatusPayload = Field(default_factory=StatusPayload)


class ContextCompactedEvent(EventBase):
    type: Literal["context-compacted"] = "context-compacted"
    payload: ContextCompactedPayload = Field(default_factory=ContextCompactedPayload)


class ErrorEvent(EventBase):
    type: Literal["error"] = "error"
    payload: ErrorPayload = Field(default_factory=ErrorPayload)


class UnknownEvent(EventBase):
    """An event of a type this client does not know. Kept whole, never fatal."""

    payload: dict[str, Any] = Field(default_factory=dict)


#: The one list of the protocol's event types: everything else (the tuple of classes, the set
#: of type names, the class of each name) is derived from it.
KnownEvent = Annotated[
    (
        RunStartEvent
        | RunFinishEvent
        | TextDeltaEvent
        | ReasoningDeltaEvent
        | TextBlockEvent
        | ReasoningBlockEvent
        | ToolInputStartEvent
        | ToolCallEvent
        | ToolResultEvent
        | ToolErrorEvent
        | ToolInterruptedEvent
        | AgentSpawnedEvent
        | AgentCompletedEvent
        | ConfirmationRequestEvent
        | TasksUpdateEvent
        | SetupItemsEvent
        | PreferencesAppliedEvent
        | FilesystemRequestEvent
        | ThreadTitleUpdatedEvent
        | StatusEvent
        | ContextCompactedEvent
        | ErrorEvent
    ),
    Field(discriminator="type"),
]

Event = KnownEvent | UnknownEvent

#: Stored or wire form of an event: a decoded JSON object, or its JSON text.
WireEvent = dict[str, Any] | str | bytes | bytearray

KNOWN_EVENT_CLASSES: tuple[type[EventBase], ...] = get_args(get_args(KnownEvent)[0])
#: type name -> model class
EVENT_CLASSES: dict[str, type[EventBase]] = {cls.model_fields["type"].default: cls for cls in KNOWN_EVENT_CLASSES}
EVENT_TYPES: frozenset[str] = frozenset(EVENT_CLASSES)


@functools.cache
def _known_adapter() -> TypeAdapter[Any]:
    # Built on first use, not at import: keeps start-up fast.
    return TypeAdapter(KnownEvent)


def first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, as ``where: what`` (``where``: the path to the field)."""
    first = exc.errors()[0]
    return f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg')}"


def parse_event(data: Any) -> Event:
    """Parse one event from a dict or a JSON string.

    Unknown ``type`` values give an ``UnknownEvent``. Anything that is not an event
    object (not JSON, not an object, no string ``type``, a known type with a payload of
    the wrong shape) raises ``EventParseError``.
    """
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise EventParseError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EventParseError(f"an event must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        raise EventParseError("an event needs a string 'type'")
    try:
        if kind in EVENT_TYPES:
            return _known_adapter().validate_python(data)
        return UnknownEvent.model_validate(data)
    except ValidationError as exc:
        raise EventParseError(f"invalid {kind} event: {first_error(exc)}") from None
