"""The typed chunks ``Agent.stream()`` yields.

Every chunk has ``type`` (the wire-style name), ``run_id`` and ``response_id``: one id per model
response (one loop iteration), shared by the text, reasoning and tool chunks of that response and
by the results of its tool calls. Order within one response::

    reasoning-delta* text-delta* tool-call-delta*  (interleaved as the model streams)
    message (the assistant message)  tool-call* (each complete call, before execution)
    tool-result* / tool-call-suspended* (in call order)  message* (the tool messages)

then the next response, and finally exactly one ``finish`` (success, max iterations, suspended
with reason ``tool-calls``) or one ``error`` (failure or abort; ``cancelled`` tells which).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from pydantic import BaseModel

from .usage import SubAgentUsage, Usage

FinishReason = Literal["stop", "max-iterations", "length", "content-filter", "tool-calls", "error", "other"]


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(slots=True)
class _Chunk:
    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the chunk."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "exception"}


@dataclass(slots=True)
class TextDeltaChunk(_Chunk):
    run_id: str
    response_id: str
    delta: str
    type: Literal["text-delta"] = "text-delta"


@dataclass(slots=True)
class ReasoningDeltaChunk(_Chunk):
    run_id: str
    response_id: str
    delta: str
    type: Literal["reasoning-delta"] = "reasoning-delta"


@dataclass(slots=True)
class ToolCallDeltaChunk(_Chunk):
    """A fragment of a tool call being streamed. ``start`` is True on the call's first fragment
    (which carries ``tool_name``); ``args_delta`` is the new piece of JSON argument text."""

    run_id: str
    response_id: str
    index: int
    tool_call_id: str
    tool_name: str
    args_delta: str
    start: bool = False
    type: Literal["tool-call-delta"] = "tool-call-delta"


@dataclass(slots=True)
class ToolCallChunk(_Chunk):
    """A complete tool call, before it runs. ``args_error`` is set when the arguments were not
    valid JSON (the call then gets an error result the model can correct)."""

    run_id: str
    response_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    args_error: str | None = None
    type: Literal["tool-call"] = "tool-call"


@dataclass(slots=True)
class ToolResultChunk(_Chunk):
    """The settled outcome of a tool call: ``result`` on success, ``error`` (and ``is_error``) on
    failure. ``skipped`` marks calls settled without running (abort). ``model_output`` is the text
    the model sees."""

    run_id: str
    response_id: str
    tool_call_id: str
    tool_name: str
    result: Any = None
    error: str | None = None
    is_error: bool = False
    skipped: bool = False
    model_output: str = ""
    type: Literal["tool-result"] = "tool-result"


@dataclass(slots=True)
class ToolProgressChunk(_Chunk):
    """How far a running tool call is (``ToolContext.report_progress``): ``progress`` out of
    ``total`` (None: unknown), ``text`` its words ("40% copying")."""

    run_id: str
    response_id: str
    tool_call_id: str
    tool_name: str
    progress: float
    total: float | None
    text: str
    type: Literal["tool-progress"] = "tool-progress"


@dataclass(slots=True)
class CompactingChunk(_Chunk):
    """The oldest turns of the thread are being compacted now (``runtime/compaction.py``): the observer's
    model call(s) may take as long as an answer, so it is said (the status line, until the
    ``ContextCompactedChunk``)."""

    run_id: str
    messages: int
    reason: Literal["auto", "refused", "manual"] = "auto"
    type: Literal["compacting"] = "compacting"

    @property
    def words(self) -> str:
        return f"compacting {self.messages} older message{'s' if self.messages != 1 else ''} into notes"


@dataclass(slots=True)
class ContextCompactedChunk(_Chunk):
    """The oldest turns of the thread were compacted into observations (``runtime/compaction.py``):
    ``messages`` observed (of ``runs``), the tokens the thread's requests need ``before`` and ``after``
    (``Fit.pressure``: older tool results as stubs, this turn's giants at half the room) out of
    ``window``; ``reason`` is ``auto`` (past the threshold), ``refused`` (the server refused a request
    as too big), ``manual`` (``/compact``) or ``cut`` (see ``sent_chars``); ``error``: the observer's call failed and the notes are
    the extractive fallback."""

    run_id: str
    response_id: str
    messages: int
    runs: list[str]
    before: int
    after: int
    window: int
    reason: Literal["auto", "refused", "manual", "cut"] = "auto"
    error: str | None = None
    #: ``reason == "cut"``: nothing was compacted, the person's own message of this turn was cut to fit
    #: the window: the characters sent of those written
    sent_chars: int = 0
    written_chars: int = 0
    #: nothing to gain: the notes were not smaller than those messages, which stay in the context as they were
    kept: bool = False
    type: Literal["context-compacted"] = "context-compacted"


@dataclass(slots=True)
class MessageChunk(_Chunk):
    """A complete message added to the run (assistant message or tool message), as a dict of
    ``runtime.messages.Message``."""

    run_id: str
    response_id: str
    message: dict[str, Any]
    type: Literal["message"] = "message"


@dataclass(slots=True)
class ToolCallSuspendedChunk(_Chunk):
    """A tool call waiting for the caller: ``kind`` is ``approval`` (resume with approve/deny) or
    ``suspend`` (resume with data matching ``resume_schema``)."""

    run_id: str
    response_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    suspend_payload: Any
    resume_schema: dict[str, Any] | None
    kind: Literal["approval", "suspend"] = "suspend"
    type: Literal["tool-call-suspended"] = "tool-call-suspended"


@dataclass(slots=True)
class FinishChunk(_Chunk):
    """The run ended (or suspended, with ``finish_reason='tool-calls'`` and ``suspended`` True).

    ``usage`` is this agent's own usage (with cost when the price is known); ``sub_agent_usage``
    lists sub-agent runs made through ``Agent.as_tool``; ``total_usage`` sums both."""

    run_id: str
    response_id: str
    finish_reason: FinishReason
    usage: Usage
    total_usage: Usage
    model: str
    sub_agent_usage: list[SubAgentUsage] = field(default_factory=list)
    suspended: bool = False
    type: Literal["finish"] = "finish"

    @property
    def cost(self) -> float | None:
        return self.usage.cost

    @property
    def total_cost(self) -> float | None:
        return self.total_usage.cost


@dataclass(slots=True)
class ErrorChunk(_Chunk):
    """The run failed (``cancelled`` False) or was aborted (``cancelled`` True). Always last."""

    run_id: str
    response_id: str
    error: str
    cancelled: bool = False
    status_code: int | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    type: Literal["error"] = "error"


@dataclass(slots=True)
class RetryChunk(_Chunk):
    """The model call failed and is tried again in ``delay`` seconds: try ``attempt`` of ``attempts``
    (issue 39.5: a retry is said, not silent). ``reason``: the model server's failure in words."""

    run_id: str
    attempt: int
    attempts: int
    delay: float
    reason: str
    type: Literal["retry"] = "retry"

    @property
    def words(self) -> str:
        return f"retrying in {self.delay:.0f} s ({self.attempt}/{self.attempts}): {self.reason}"


StreamChunk = (
    TextDeltaChunk
    | ReasoningDeltaChunk
    | ToolCallDeltaChunk
    | ToolCallChunk
    | ToolResultChunk
    | ToolProgressChunk
    | CompactingChunk
    | ContextCompactedChunk
    | MessageChunk
    | ToolCallSuspendedChunk
    | FinishChunk
    | ErrorChunk
    | RetryChunk
)
