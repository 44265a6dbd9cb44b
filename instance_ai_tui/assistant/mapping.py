"""Runtime stream chunks -> protocol events, for one agent (the orchestrator or a sub-agent).

``ChunkMapper.handle(chunk)`` builds protocol event models and emits them through the run's
``RunEmitter``:

* ``text-delta`` / ``reasoning-delta`` with the chunk's ``responseId``,
* ``tool-call`` before a tool runs, with a ``status`` "Running <tool>…" (cleared with "" once
  no call of this agent is in flight),
* ``tool-result`` or ``tool-error`` when a call settles,
* a tool's progress (``tool-progress``): its ``tool-call`` again with ``progress`` (the arguments as
  announced) and the status "Running <tool>… 40% copying",
* ``context-compacted`` when the agent's context was compacted (``runtime/compaction.py``),
* for a suspended call: nothing yet; the suspension is collected in ``suspensions`` and the run
  manager turns it into a ``confirmation-request`` (a sub-agent's suspension travels up through
  its ``delegate`` call first).

Tools that publish their own events (``plan``'s ``tasks-update``, ``delegate``'s
``agent-spawned``) first ``await mapper.announced(tool_call_id)``: the runtime queues the
``tool-call`` chunk before running the tool, but this mapper may not have emitted it yet.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..protocol.events import (
    ContextCompactedEvent,
    ContextCompactedPayload,
    StatusEvent,
    StatusPayload,
    ToolCallEvent,
    ToolCallPayload,
    ToolErrorEvent,
    ToolErrorPayload,
    ToolResultEvent,
    ToolResultPayload,
)
from ..runtime.chunks import (
    CompactingChunk,
    ContextCompactedChunk,
    ErrorChunk,
    FinishChunk,
    ReasoningDeltaChunk,
    RetryChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolCallSuspendedChunk,
    ToolProgressChunk,
    ToolResultChunk,
)
from ..runtime.run import ABORTED_RESULT
from .emitter import RunEmitter, status_update

#: how long a tool waits for its tool-call event before publishing anyway (a safety net only)
ANNOUNCE_TIMEOUT = 5.0


@dataclass(slots=True)
class Suspension:
    """A suspended tool call of one agent, waiting for the user."""

    agent_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    kind: str  # "approval" | "suspend"
    payload: Any
    response_id: str = ""


@dataclass
class ChunkMapper:
    """Maps the chunks of one agent's run to events under ``agent_id``."""

    emitter: RunEmitter
    agent_id: str
    #: emit ``status`` events ("Running list-files…", cleared with "") while tools run
    status_events: bool = True
    suspensions: list[Suspension] = field(default_factory=list)
    finish: FinishChunk | None = None
    error: ErrorChunk | None = None
    _announced: dict[str, asyncio.Event] = field(default_factory=dict)
    _in_flight: dict[str, str] = field(default_factory=dict)
    #: the arguments of calls in flight, as announced (a progress update repeats them)
    _args: dict[str, dict[str, Any]] = field(default_factory=dict)
    _status_shown: bool = False
    #: a retry's words are on the status line (cleared by the answer's first output)
    _retrying: bool = False

    def _gate(self, tool_call_id: str) -> asyncio.Event:
        gate = self._announced.get(tool_call_id)
        if gate is None:
            gate = self._announced[tool_call_id] = asyncio.Event()
        return gate

    async def announced(self, tool_call_id: str) -> None:
        """Wait until this call's ``tool-call`` event has been emitted."""
        try:
            await asyncio.wait_for(self._gate(tool_call_id).wait(), ANNOUNCE_TIMEOUT)
        except TimeoutError:
            pass

    def mark_announced(self, tool_call_id: str) -> None:
        """For a resumed call: its ``tool-call`` went out before the suspension."""
        self._gate(tool_call_id).set()

    def handle(self, chunk: StreamChunk) -> None:
        emit = self.emitter.emit
        if isinstance(chunk, TextDeltaChunk):
            if self._retrying:  # the retry worked: its words go
                self._retrying = False
                self._clear_status()
            if chunk.delta:
                emit(self.emitter.text_delta(self.agent_id, chunk.delta, chunk.response_id))
        elif isinstance(chunk, ReasoningDeltaChunk):
            if self._retrying:
                self._retrying = False
                self._clear_status()
            if chunk.delta:
                emit(self.emitter.reasoning_delta(self.agent_id, chunk.delta, chunk.response_id))
        elif isinstance(chunk, ToolCallChunk):
            emit(ToolCallEvent(
                agent_id=self.agent_id, response_id=chunk.response_id or None,
                payload=ToolCallPayload(tool_call_id=chunk.tool_call_id, tool_name=chunk.tool_name, args=chunk.args),
            ))
            self._in_flight[chunk.tool_call_id] = chunk.tool_name
            self._args[chunk.tool_call_id] = chunk.args
            self._show_status()
            self._gate(chunk.tool_call_id).set()
        elif isinstance(chunk, ToolResultChunk):
            denial = isinstance(chunk.result, dict) and chunk.result.get("denied") is True
            if chunk.skipped and chunk.model_output == ABORTED_RESULT:
                # stopped by a cancellation (Esc): no outcome of its own (the model reads the
                # runtime's note); the run's end reads "not run (cancelled)" live, restored and exported
                pass
            elif (chunk.is_error or chunk.skipped) and not denial:  # a denial is n8n's result {denied: true}
                error = chunk.error or chunk.model_output.strip("[]") or "the tool failed"
                emit(ToolErrorEvent(
                    agent_id=self.agent_id, response_id=chunk.response_id or None,
                    payload=ToolErrorPayload(tool_call_id=chunk.tool_call_id, error=error),
                ))
            else:
                emit(ToolResultEvent(
                    agent_id=self.agent_id, response_id=chunk.response_id or None,
                    payload=ToolResultPayload(tool_call_id=chunk.tool_call_id, result=chunk.result),
                ))
            self._in_flight.pop(chunk.tool_call_id, None)
            self._args.pop(chunk.tool_call_id, None)
            self._show_status()
        elif isinstance(chunk, ToolProgressChunk):
            if chunk.tool_call_id in self._in_flight:  # (a late update of a settled call says nothing)
                emit(ToolCallEvent(
                    agent_id=self.agent_id, response_id=chunk.response_id or None,
                    payload=ToolCallPayload.model_validate({
                        "toolCallId": chunk.tool_call_id, "toolName": chunk.tool_name,
                        "args": self._args.get(chunk.tool_call_id, {}), "progress": chunk.text}),
                ))
                emit(status_update(self.agent_id, f"Running {chunk.tool_name}… {chunk.text}"))
                self._status_shown = True
        elif isinstance(chunk, ToolCallSuspendedChunk):
            self._in_flight.pop(chunk.tool_call_id, None)
            self._args.pop(chunk.tool_call_id, None)
            self.suspensions.append(Suspension(
                agent_id=self.agent_id, tool_call_id=chunk.tool_call_id, tool_name=chunk.tool_name,
                args=dict(chunk.args or {}), kind=chunk.kind, payload=chunk.suspend_payload,
                response_id=chunk.response_id,
            ))
            self._show_status()
        elif isinstance(chunk, CompactingChunk):  # the observer's call may take as long as an answer: said
            emit(status_update(self.agent_id, chunk.words))
            self._status_shown = self._retrying = True
        elif isinstance(chunk, ContextCompactedChunk):
            if self._retrying:  # "compacting …" is done
                self._retrying = False
                self._clear_status()
            emit(compacted_event(self.agent_id, chunk.messages, chunk.runs, chunk.before, chunk.after, chunk.window,
                                 chunk.reason, chunk.error, chunk.sent_chars, chunk.written_chars, chunk.kept))
        elif isinstance(chunk, FinishChunk):
            self.finish = chunk
            self._clear_status()
        elif isinstance(chunk, ErrorChunk):
            self.error = chunk
            self._clear_status()
        elif isinstance(chunk, RetryChunk):  # the status line and run's stderr say each retry (issue 39.5)
            retry = {"attempt": chunk.attempt, "attempts": chunk.attempts, "delaySeconds": chunk.delay,
                     "reason": chunk.reason}
            self.emitter.emit(StatusEvent(agent_id=self.agent_id, payload=StatusPayload(message=chunk.words,
                                                                                        retry=retry)))
            self._status_shown = self._retrying = True
        # MessageChunk and ToolCallDeltaChunk carry nothing the protocol needs

    def _show_status(self) -> None:
        if not self.status_events:
            return
        if self._in_flight:
            names = sorted(set(self._in_flight.values()))
            label = names[0] if len(names) == 1 else f"{len(self._in_flight)} tools"
            self.emitter.emit(status_update(self.agent_id, f"Running {label}…"))
            self._status_shown = True
        else:
            self._clear_status()

    def _clear_status(self) -> None:
        if self._status_shown:
            self.emitter.emit(status_update(self.agent_id, ""))
            self._status_shown = False


def compacted_event(agent_id: str, messages: int, runs: list[str], before: int, after: int, window: int,
                    reason: str, error: str | None = None, sent_chars: int = 0,
                    written_chars: int = 0, kept: bool = False) -> ContextCompactedEvent:
    """The ``context-compacted`` event of a compaction (in a run, or ``/compact``'s), or of a message
    cut to fit (``reason="cut"``)."""
    return ContextCompactedEvent(agent_id=agent_id, payload=ContextCompactedPayload(
        messages=messages, runs=list(runs), tokens_before=before, tokens_after=after, context_window=window,
        reason=reason, error=error, sent_chars=sent_chars, written_chars=written_chars, kept=kept))
