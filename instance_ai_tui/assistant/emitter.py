"""Publishing one run's protocol events: envelope stamping, ordering and batching.

The assistant builds every event as its ``protocol.events`` model; this is where they are
serialised, once, into the log's ``NewEvent`` (type, run id, JSON text) that the bus stores
and delivers. ``RunEmitter.emit(event)`` is synchronous and never blocks: it stamps the
envelope (``runId``, ``ts`` in epoch ms) and queues the model. One pump task per emitter
serialises everything queued and hands it to ``EventBus.publish_many`` in order, so a burst of
text deltas becomes one store commit and the call order is the id order. ``flush()`` waits
until everything emitted so far is persisted and delivered. After ``close()`` (used right
after ``run-finish``) further events are dropped, so ``run-finish`` is always a run's last.

``text_delta``, ``reasoning_delta`` and ``status_update`` are the typed constructors of the hot path
(every streamed token goes through one).
"""

from __future__ import annotations

import asyncio
import logging
import time
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
    TextPayload,
    ToolErrorEvent,
    ToolErrorPayload,
    ToolInterruptedEvent,
)
from ..store.base import NewEvent

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def text_delta(agent_id: str, text: str, response_id: str | None = None) -> TextDeltaEvent:
    return TextDeltaEvent(agent_id=agent_id, response_id=response_id or None, payload=TextPayload(text=text))


def reasoning_delta(agent_id: str, text: str, response_id: str | None = None) -> ReasoningDeltaEvent:
    return ReasoningDeltaEvent(agent_id=agent_id, response_id=response_id or None, payload=TextPayload(text=text))


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


def error_event(agent_id: str, content: str, status_code: int | None = None) -> ErrorEvent:
    return ErrorEvent(agent_id=agent_id, payload=ErrorPayload(content=content, status_code=status_code))


def to_new_event(event: Event) -> NewEvent:
    """The one serialisation of an event on its way into the log."""
    return NewEvent(type=event.type, run_id=event.run_id, json=event.to_json())


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
        self.published = 0
        self.dropped = 0
        self.failures = 0
        #: id of the first event this emitter published (the run's ``run-start``)
        self.first_id: int | None = None
        #: the last error the bus raised (publishing continues with the next batch)
        self.last_error: BaseException | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def stamp(self, event: Event) -> Event:
        """Set the envelope fields this emitter owns (``runId``, ``ts``); returns ``event``."""
        event.run_id = self.run_id
        event.ts = self._clock()
        return event

    def emit(self, event: Event) -> None:
        """Stamp and queue one event; returns at once."""
        if self._closed:
            self.dropped += 1
            log.debug("run %s: dropped %s emitted after the run finished", self.run_id, event.type)
            return
        self._queue.append(self.stamp(event))
        self._idle.clear()
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"emit-{self.run_id}")

    async def _run_pump(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    stored = await self.bus.publish_many(self.thread_id, [to_new_event(event) for event in batch])
                    self.published += len(batch)
                    if self.first_id is None and stored:
                        self.first_id = stored[0].id
                except Exception as exc:  # noqa: BLE001 - the bus is ours: log and keep the run going
                    self.failures += 1
                    self.last_error = exc
                    log.error("run %s: publishing %d event(s) failed: %s", self.run_id, len(batch), exc)
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
