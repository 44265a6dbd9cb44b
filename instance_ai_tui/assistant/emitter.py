"""Publishing one run's protocol events: envelope stamping, ordering and batching.

``RunEmitter.emit`` is synchronous and never blocks: the event dict is stamped (``type``,
``runId``, ``agentId``, ``ts`` in epoch ms, optional ``responseId``) and queued. One pump task
per emitter hands everything queued to ``EventBus.publish_many`` in order, so a burst of
text deltas becomes one store commit and the call order is the id order. ``flush()`` waits
until everything emitted so far is persisted and delivered. After ``close()`` (used right
after ``run-finish``) further events are dropped, so ``run-finish`` is always a run's last.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from ..bus.base import EventBus

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class RunEmitter:
    """The event publisher of one run of one thread."""

    def __init__(self, bus: EventBus, thread_id: str, run_id: str, *, clock: Callable[[], int] = now_ms) -> None:
        self.bus = bus
        self.thread_id = thread_id
        self.run_id = run_id
        self._clock = clock
        self._queue: list[dict[str, Any]] = []
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

    def event(self, type: str, agent_id: str, payload: dict[str, Any] | None = None,
              response_id: str | None = None) -> dict[str, Any]:
        """The wire dict of an event of this run (not emitted)."""
        data: dict[str, Any] = {"type": type, "runId": self.run_id, "agentId": agent_id}
        if response_id:
            data["responseId"] = response_id
        data["ts"] = self._clock()
        data["payload"] = payload if payload is not None else {}
        return data

    def emit(self, type: str, agent_id: str, payload: dict[str, Any] | None = None,
             response_id: str | None = None) -> None:
        """Queue one event; returns at once."""
        if self._closed:
            self.dropped += 1
            log.debug("run %s: dropped %s emitted after the run finished", self.run_id, type)
            return
        self._queue.append(self.event(type, agent_id, payload, response_id))
        self._idle.clear()
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"emit-{self.run_id}")

    async def _run_pump(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    stored = await self.bus.publish_many(self.thread_id, batch)
                    self.published += len(batch)
                    if self.first_id is None and stored:
                        self.first_id = stored[0].id
                except Exception as exc:  # the bus is ours: log and keep the run going
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

    def run_finish(self, agent_id: str, status: str, reason: str | None = None, **extra: Any) -> dict[str, Any]:
        """The ``run-finish`` event dict (not emitted: see ``finish``)."""
        payload: dict[str, Any] = {"status": status}
        if reason:
            payload["reason"] = reason
        payload.update(extra)
        return self.event("run-finish", agent_id, payload)

    async def finish(self, event: dict[str, Any]) -> None:
        """Publish ``event`` (a ``run-finish``) as the run's last event, flush, and close."""
        if self._closed:
            return
        self._queue.append(event)
        self._idle.clear()
        self._closed = True
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._run_pump(), name=f"emit-{self.run_id}")
        await self.flush()
