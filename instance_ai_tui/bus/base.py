"""The event bus interface: a per-thread channel with persistence-before-delivery and replay.

The bus takes typed events only (``protocol.events`` models, built and validated once by their
producer). ``publish`` serialises each event once (``to_new_event``: its wire JSON, which is what
the log keeps, beside the model), assigns the next id, persists, then delivers. In this process a
subscriber gets the ``StoredEvent`` with ``event`` set to the very model the producer built (the
store hands it on from the ``NewEvent``), so nothing parses it back; an event read from the log
(replay, catching up, another process) has ``event`` ``None`` and its JSON text.

``subscribe(thread, after=n)`` yields every stored event with id > n and then live events: no
gap and no duplicate, even when events are published during the replay. A slow subscriber never
blocks the publisher; if it falls behind its bounded queue it is resumed from storage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..store.base import NewEvent, StoredEvent

if TYPE_CHECKING:
    from ..protocol.events import Event

#: a step run after events are stored and before they are delivered (``publish_many``)
OnStored = Callable[[list[StoredEvent]], Awaitable[None]]


def to_new_event(event: Event) -> NewEvent:
    """The one serialisation of an event on its way into the log: its wire JSON
    (``WireModel.to_json``, inlined: every streamed token passes here)."""
    try:
        serializer = event.__pydantic_serializer__
    except AttributeError:
        raise TypeError(f"the bus takes protocol events, got {type(event).__name__}") from None
    if not event.type:
        raise ValueError("an event needs a non-empty 'type'")
    text = serializer.to_json(event, by_alias=True, exclude_none=True).decode()
    return NewEvent(event.type, event.run_id or "", text, event)


@runtime_checkable
class EventBus(Protocol):
    async def publish(self, thread_id: str, event: Event) -> StoredEvent:
        """Persist one event, then deliver it. Returns it with its id."""
        ...

    async def publish_many(
        self, thread_id: str, events: Sequence[Event], *, on_stored: OnStored | None = None
    ) -> list[StoredEvent]:
        """Persist the events with consecutive ids, then deliver them. ``on_stored(stored)``, when
        given, is awaited after they are durable and before any live subscriber gets them (e.g.
        the run manager records a run finished exactly between its ``run-finish`` being stored
        and being seen)."""
        ...

    def subscribe(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        """Replay from ``after`` (exclusive), then follow live.

        Leave by closing the iterator: ``async with aclosing(bus.subscribe(t)) as events``
        (``instance_ai_tui.aio.aclosing``).
        """
        ...

    def subscribe_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        """``subscribe``'s events in order, in lists (never empty) as the bus has them at hand
        (a page of the log, a live batch). Leave by closing the iterator."""
        ...

    async def last_id(self, thread_id: str) -> int: ...

    async def close(self) -> None: ...
