"""Publishing one run's protocol events: envelope stamping, ordering and batching.

The assistant builds every event as its ``protocol.events`` model, once; the bus serialises it,
once, into the log's ``NewEvent`` (type, run id, JSON text) and delivers the model itself to the
subscribers of this process (``StoredEvent.event``). ``RunEmitter.emit(event)`` is synchronous
and never blocks: it stamps the envelope (``runId``, ``ts`` in epoch ms) and queues the model.
One pump task per emitter hands everything queued to ``EventBus.publish_many`` in order, so a
burst of text deltas becomes one store commit and the call order is the id order. ``flush()`` waits
until everything emitted so far is persisted and delivered. After ``close()`` (used right
after ``run-finish``) further events are dropped, so ``run-finish`` is always a run's last.

``RunEmitter.text_delta`` and ``reasoning_delta`` are the typed constructors of the hot path (every
streamed token goes through one): they build the event already stamped, in one validation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..bus.base import EventBus
from ..protocol.events import (
    AgentCompletedEvent,
    AgentCompletedPayload,
    ErrorEvent,
    ErrorPayload,
    Event,
    ReasoningDeltaEvent,
    RunFinishEvent,
    RunFinishPayload,
    StatusEvent,
    StatusPayload,
    TextDeltaEvent,
    ToolErrorEvent,
    ToolErrorPayload,
    ToolInterruptedEvent,
)
from ..runtime.messages import now_ms
from ..store.errors import is_unavailable, waiting_words

log = logging.getLogger(__name__)

#: seconds the emitter holds and retries events while the storage is unavailable
RETRY_FOR = 60.0


def status_update(agent_id: str, message: str) -> StatusEvent:
    return StatusEvent(agent_id=agent_id, payload=StatusPayload(message=message))


def tool_error(agent_id: str, tool_call_id: str, error: str) -> ToolErrorEvent:
    return ToolErrorEvent(agent_id=agent_id, payload=ToolErrorPayload(tool_call_id=tool_call_id, error=error))


def tool_interrupted(agent_id: str, tool_call_id: str, error: str) -> ToolInterruptedEvent:
    return ToolInterruptedEvent(agent_id=agent_id, payload=ToolErrorPayload(tool_call_id=tool_call_id, error=error))


def agent_completed(agent_id: str, role: str, status: str, result: str = "",
                    error: str | None = None) -> AgentCompletedEvent:
    payload = AgentCompletedPayload(role=role, result=result, status=status, error=error or None)
    return AgentCompletedEvent(agent_id=agent_id, payload=payload)


def error_event(agent_id: str, content: str, status_code: int | None = None, code: str | None = None) -> ErrorEvent:
    """An ``error`` event; ``code`` is the failure's class (``runtime.errors`` / ``store.errors`` ``code``)."""
    return ErrorEvent(agent_id=agent_id, payload=ErrorPayload(content=content, status_code=status_code, code=code))


class RunEmitter:
    """The event publisher of one run of one thread."""

    def __init__(self, bus: EventBus, thread_id: str, run_id: str, *, clock: Callable[[], int] = now_ms) -> None:
        self.bus = bus
        self.thread_id = thread_id
        self.run_id = run_id
        self._clock = clock
        self._queue: list[Event] = []
        self._pump: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self.dropped = 0
        self.failures = 0
        #: seconds a batch is retried while the storage is unavailable
        self.retry_for = RETRY_FOR
        #: id of the first event this emitter published (the run's ``run-start``)
        self.first_id: int | None = None
        #: the last error the bus raised (publishing continues with the next batch)
        self.last_error: BaseException | None = None
        #: while events are held because the storage is unavailable: what they wait for, in words
        #: ("the database is locked by another program (PID 4242)"); "" otherwise (issue 39.1)
        self.held = ""

    @property
    def closed(self) -> bool:
        return self._closed

    def stamp(self, event: Event) -> Event:
        """Set the envelope fields this emitter owns (``runId``, ``ts``); returns ``event``."""
        event.run_id = self.run_id
        event.ts = self._clock()
        return event

    def text_delta(self, agent_id: str, text: str, response_id: str | None = None) -> TextDeltaEvent:
        """A stamped ``text-delta`` of this run, built in one validation (every streamed token
        goes through here)."""
        return TextDeltaEvent.__pydantic_validator__.validate_python({
            "runId": self.run_id, "agentId": agent_id, "responseId": response_id or None, "ts": self._clock(),
            "payload": {"text": text},
        })

    def reasoning_delta(self, agent_id: str, text: str, response_id: str | None = None) -> ReasoningDeltaEvent:
        """A stamped ``reasoning-delta`` of this run (see ``text_delta``)."""
        return ReasoningDeltaEvent.__pydantic_validator__.validate_python({
            "runId": self.run_id, "agentId": agent_id, "responseId": response_id or None, "ts": self._clock(),
            "payload": {"text": text},
        })

    def emit(self, event: Event) -> None:
        """Queue one event (stamped here unless built stamped, as by ``text_delta``); returns at once."""
        if self._closed:
            self.dropped += 1
            log.debug("run %s: dropped %s emitted after the run finished", self.run_id, event.type)
            return
        if event.ts is None or event.run_id != self.run_id:
            self.stamp(event)
        self._queue.append(event)
        self._idle.clear()
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"emit-{self.run_id}")

    async def _run_pump(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                give_up_at: float | None = None
                attempt = 0
                while True:
                    try:
                        stored = await self.bus.publish_many(self.thread_id, batch)
                    except Exception as exc:  # noqa: BLE001 - the bus is ours: log and keep the run going
                        self.failures += 1
                        self.last_error = exc
                        now = asyncio.get_running_loop().time()
                        give_up_at = now + self.retry_for if give_up_at is None else give_up_at
                        if is_unavailable(exc, from_storage=True) and now < give_up_at:  # raised by the bus: storage
                            # storage down for now (issue 15): keep the batch (and everything emitted
                            # meanwhile, queued behind it, in order) and try again
                            if attempt == 0:
                                log.warning("run %s: storage unavailable (%s); holding %d event(s) and retrying",
                                            self.run_id, exc, len(batch))
                            self.held = waiting_words(exc)
                            attempt += 1
                            await asyncio.sleep(min(1.0, 0.05 * 2**attempt))
                            continue
                        self.held = ""
                        log.error("run %s: publishing %d event(s) failed: %s", self.run_id, len(batch), exc)
                        break
                    self.held = ""
                    if self.first_id is None and stored:
                        self.first_id = stored[0].id
                    if attempt:
                        log.warning("run %s: storage is back; %d held event(s) stored", self.run_id, len(batch))
                    break
        finally:
            if not self._queue:
                self._idle.set()

    async def flush(self) -> None:
        """Wait until every event emitted so far has been published."""
        while not self._idle.is_set():
            await self._idle.wait()
            if self._queue and (self._pump is None or self._pump.done()):
                self._pump = asyncio.get_running_loop().create_task(self._run_pump())

    def close(self) -> None:
        """Drop everything emitted from now on (and what is still queued)."""
        self._closed = True
        self.dropped += len(self._queue)
        self._queue.clear()

    def run_finish(self, agent_id: str, status: str, reason: str | None = None, **extra: Any) -> RunFinishEvent:
        """The stamped ``run-finish`` event (not emitted: see ``finish``). ``extra`` are more
        payload fields in wire form (e.g. ``usage``)."""
        payload = RunFinishPayload(status=status, reason=reason or None, **extra)
        event = RunFinishEvent(agent_id=agent_id, payload=payload)
        self.stamp(event)
        return event

    async def finish(self, event: RunFinishEvent) -> None:
        """Publish ``event`` (a ``run-finish``) as the run's last event, flush, and close."""
        if self._closed:
            return
        self._queue.append(event)
        self._idle.clear()
        self._closed = True
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"emit-{self.run_id}")
        await self.flush()
