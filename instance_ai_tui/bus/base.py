"""The event bus interface: a per-thread channel with persistence-before-delivery and replay.

``publish`` assigns the next id, persists, then delivers. ``subscribe(thread, after=n)``
yields every stored event with id > n and then live events: no gap and no duplicate,
even when events are published during the replay. A slow subscriber never blocks the
publisher; if it falls behind its bounded queue it is resumed from storage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..store.base import NewEvent, StoredEvent

#: a step run after events are stored and before they are delivered (``publish_many``)
OnStored = Callable[[list[StoredEvent]], Awaitable[None]]


@runtime_checkable
class EventBus(Protocol):
    async def publish(self, thread_id: str, event: dict[str, Any]) -> StoredEvent:
        """Persist one wire-format event dict, then deliver it. Returns it with its id."""
        ...

    async def publish_many(
        self, thread_id: str, events: Sequence[dict[str, Any] | NewEvent], *, on_stored: OnStored | None = None
    ) -> list[StoredEvent]:
        """Persist the events (wire dicts, or ``NewEvent``s already serialised by their producer)
        with consecutive ids, then deliver them. ``on_stored(stored)``, when given, is awaited
        after they are durable and before any live subscriber gets them (e.g. the run manager
        records a run finished exactly between its ``run-finish`` being stored and being seen)."""
        ...

    def subscribe(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        """Replay from ``after`` (exclusive), then follow live.

        Leave by closing the iterator: ``async with contextlib.aclosing(bus.subscribe(t)) as events``.
        """
        ...

    async def last_id(self, thread_id: str) -> int: ...

    async def close(self) -> None: ...
