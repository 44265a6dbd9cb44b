"""``InProcessBus``: the ``EventBus`` protocol inside one process, on top of any ``Store``.

Publishing. Each thread has a channel. ``publish``/``publish_many`` queue their events on the
channel; one flush task per channel (alive while there is something to flush) takes everything
queued, appends it to the store in ONE call (so concurrent publishers of a thread share a
commit, and the store's group commit batches across threads), then delivers the stored events
to the subscribers and resolves the publishers. Publishers of one thread are thereby serialised:
ids are assigned and delivered in order, and nothing is delivered before it is persisted.

Subscribing. A subscription registers for live events FIRST (they collect in its buffer),
then replays the store from its cursor, then drains the buffer skipping ids it has already
yielded; an id beyond the next expected one is filled from the store. So it yields every
event with id > cursor exactly once, in order, even while events are being published.

Slow subscribers. Delivery never waits: it appends to the subscriber's bounded buffer. A
subscriber whose buffer would exceed ``queue_size`` events is switched back to catching up
from the store (its buffer is dropped, not the events), and rejoins live once caught up.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..aio import aclose
from ..protocol.ingest import Page
from ..store.base import EventLog, NewEvent, StoredEvent
from .base import OnStored, to_new_event

if TYPE_CHECKING:
    from ..protocol.events import Event

log = logging.getLogger(__name__)


async def _call_on_stored(callback: OnStored, stored: list[StoredEvent]) -> None:
    try:
        await callback(stored)
    except Exception:
        log.exception("the on_stored step of a publish failed; delivering anyway")

#: How long a subscriber waits, at most, for the store to show events older than one it got
#: live (only another writer on the same thread can make that happen).
GAP_WAIT_SECONDS = 2.0


class BusClosed(RuntimeError):
    """The bus was closed; nothing can be published or subscribed any more."""


@dataclass
class BusStats:
    """Counters for tests and benchmarks."""

    published: int = 0  # events persisted and delivered
    flushes: int = 0  # store appends made by flush tasks
    overflows: int = 0  # times a subscriber fell behind and was switched to catch-up
    gap_fills: int = 0  # times a subscriber read missing ids from the store


class _Subscriber:
    """A subscription's live buffer: batches of events, bounded by an event count."""

    __slots__ = ("batches", "closed", "count", "lagging", "limit", "waiter")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.batches: deque[list[StoredEvent]] = deque()
        self.count = 0
        self.lagging = False  # fell behind: the buffer was dropped, catch up from the store
        self.closed = False
        self.waiter: asyncio.Future[None] | None = None

    def push(self, events: list[StoredEvent]) -> bool:
        """Buffer a batch; False if this overflowed the buffer (the subscriber now lags)."""
        if self.lagging:
            return True
        overflow = self.count + len(events) > self.limit
        if overflow:
            self.lagging = True
            self.batches.clear()
            self.count = 0
        else:
            self.batches.append(events)
            self.count += len(events)
        self.wake()
        return not overflow

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def restart(self) -> None:
        """Before catching up from the store: drop the buffer, follow live again."""
        self.lagging = False
        self.batches.clear()
        self.count = 0

    async def wait(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None


#: one publish waiting for its flush: its events (serialised, with their models), its future, its on_stored
_Pending = tuple[list[NewEvent], "asyncio.Future[list[StoredEvent]]", "OnStored | None"]


class _Channel:
    __slots__ = ("flusher", "pending", "subscribers", "thread_id")

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.subscribers: dict[_Subscriber, None] = {}  # insertion-ordered set
        self.pending: list[_Pending] = []
        self.flusher: asyncio.Task[None] | None = None

    def idle(self) -> bool:
        return not self.subscribers and not self.pending and self.flusher is None


class InProcessBus:
    """Per-thread channels in this process, persisted in ``store``.

    ``queue_size``: how many live events a subscriber may have waiting before it is switched
    to catching up from the store.
    """

    def __init__(self, store: EventLog, queue_size: int = 2048) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.store = store
        self.queue_size = queue_size
        self.stats = BusStats()
        self._channels: dict[str, _Channel] = {}
        self._closed = False

    # -- publishing ------------------------------------------------------------------------

    async def publish(self, thread_id: str, event: Event) -> StoredEvent:
        """Persist one event, then deliver it; returns it with its id."""
        return (await self.publish_many(thread_id, (event,)))[0]

    async def publish_many(
        self, thread_id: str, events: Sequence[Event], *, on_stored: OnStored | None = None
    ) -> list[StoredEvent]:
        """Persist the events (consecutive ids, one commit), then deliver them, each with the
        model it was built from (``StoredEvent.event``). ``on_stored`` is awaited between the
        two (its failure is logged; delivery goes on)."""
        if self._closed:
            raise BusClosed("the event bus is closed")
        new = [to_new_event(event) for event in events]
        if not new:
            return []
        channel = self._channel(thread_id)
        future: asyncio.Future[list[StoredEvent]] = asyncio.get_running_loop().create_future()
        channel.pending.append((new, future, on_stored))
        if channel.flusher is None:
            channel.flusher = asyncio.get_running_loop().create_task(
                self._flush(channel), name=f"bus-flush-{thread_id}"
            )
        return await future

    async def _flush(self, channel: _Channel) -> None:
        batch: list[_Pending] = []
        try:
            while channel.pending:
                batch, channel.pending = channel.pending, []
                new = batch[0][0] if len(batch) == 1 else [event for part, _, _ in batch for event in part]
                try:
                    stored = await self.store.append_events(channel.thread_id, new)
                except Exception as exc:  # noqa: BLE001 - any storage failure is handed to every waiting publisher
                    for _, future, _ in batch:
                        if not future.done():
                            future.set_exception(exc)
                    batch = []
                    continue
                self.stats.flushes += 1
                self.stats.published += len(stored)
                start = 0
                for part, _, callback in batch:
                    if callback is not None:
                        await _call_on_stored(callback, stored[start : start + len(part)])
                    start += len(part)
                self._deliver(channel, stored)
                start = 0
                for part, future, _ in batch:
                    end = start + len(part)
                    if not future.done():
                        future.set_result(stored[start:end])
                    start = end
                batch = []
        except BaseException as exc:  # cancelled (loop shutting down): nobody waits forever
            failure = BusClosed(f"publishing to thread {channel.thread_id!r} was interrupted: {exc!r}")
            for _, future, _ in [*batch, *channel.pending]:
                if not future.done():
                    future.set_exception(failure)
            channel.pending = []
            raise
        finally:
            channel.flusher = None
            self._release(channel)

    def _deliver(self, channel: _Channel, stored: list[StoredEvent]) -> None:
        for subscriber in channel.subscribers:
            if not subscriber.push(stored):
                self.stats.overflows += 1

    # -- subscribing -----------------------------------------------------------------------

    def subscribe(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        """Every event with id > ``after``: stored ones, then live ones, each once and in
        order. Close the iterator (``aclose()``) to leave."""
        return self._subscription(thread_id, after)

    async def _subscription(self, thread_id: str, after: int) -> AsyncIterator[StoredEvent]:
        batches = self._batches(thread_id, after)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await aclose(batches)

    def subscribe_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        """``subscribe``'s events in lists (never empty): a page read from the store while catching
        up, the events one flush stored when live. A reader of a long log takes it a page at a
        time (``EmbeddedClient.batches``)."""
        return self._batches(thread_id, after)

    async def _batches(self, thread_id: str, after: int) -> AsyncIterator[list[StoredEvent]]:
        if self._closed:
            raise BusClosed("the event bus is closed")
        channel = self._channel(thread_id)
        subscriber = _Subscriber(self.queue_size)
        channel.subscribers[subscriber] = None
        last = after
        try:
            catch_up = True
            while True:
                if catch_up or subscriber.lagging:
                    # Everything delivered before restart() is committed, so the store has it;
                    # everything delivered after lands in the buffer (duplicates are skipped).
                    subscriber.restart()
                    catch_up = False
                    head = await self.store.last_event_id(thread_id)  # (what waits: the rows after each page)
                    pages = self.store.iter_event_pages(thread_id, after=last)
                    try:
                        async for page in pages:
                            if page[0].id <= last:
                                page = [event for event in page if event.id > last]
                                if not page:
                                    continue
                            last = page[-1].id
                            yield Page(page, max(0, head - last) + subscriber.count)
                    finally:
                        await aclose(pages)
                    continue
                if not subscriber.batches:
                    if subscriber.closed:
                        return
                    await subscriber.wait()
                    continue
                batch = subscriber.batches.popleft()
                subscriber.count -= len(batch)
                out: list[StoredEvent] = []
                for event in batch:
                    if event.id <= last:
                        continue
                    if event.id != last + 1:
                        out.extend(await self._read_gap(thread_id, last, event.id))
                        if out:
                            last = out[-1].id
                    last = event.id
                    out.append(event)
                if out:
                    yield Page(out, subscriber.count)
        finally:
            subscriber.closed = True
            channel.subscribers.pop(subscriber, None)
            self._release(channel)

    async def _read_gap(self, thread_id: str, last: int, upto: int) -> list[StoredEvent]:
        """The stored events last+1 .. upto-1 (another writer on this thread made them; they
        are committed before ``upto`` in every store we have, but wait a little if not)."""
        self.stats.gap_fills += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GAP_WAIT_SECONDS
        delay = 0.001
        found: list[StoredEvent] = []
        while True:
            for event in await self.store.read_events(thread_id, after=last, limit=upto - 1 - last):
                if last < event.id < upto:
                    found.append(event)
                    last = event.id
            if last >= upto - 1:
                return found
            if loop.time() >= deadline:
                log.warning("thread %s: events %d..%d never appeared in the store", thread_id, last + 1, upto - 1)
                return found
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    # -- the rest --------------------------------------------------------------------------

    async def last_id(self, thread_id: str) -> int:
        return await self.store.last_event_id(thread_id)

    def subscriber_count(self, thread_id: str | None = None) -> int:
        """Live subscriptions of one thread, or of all threads."""
        if thread_id is not None:
            channel = self._channels.get(thread_id)
            return len(channel.subscribers) if channel else 0
        return sum(len(channel.subscribers) for channel in self._channels.values())

    async def close(self) -> None:
        """Finish what is being published, then end every subscription (after it has yielded
        what it already received). The store is not closed (it is not ours)."""
        if self._closed:
            return
        self._closed = True
        flushers = [channel.flusher for channel in self._channels.values() if channel.flusher is not None]
        if flushers:
            await asyncio.gather(*flushers, return_exceptions=True)
        for channel in list(self._channels.values()):
            for subscriber in channel.subscribers:
                subscriber.closed = True
                subscriber.wake()

    def _channel(self, thread_id: str) -> _Channel:
        channel = self._channels.get(thread_id)
        if channel is None:
            if not isinstance(thread_id, str) or not thread_id:
                raise ValueError(f"thread id must be a non-empty string, got {thread_id!r}")
            channel = self._channels[thread_id] = _Channel(thread_id)
        return channel

    def _release(self, channel: _Channel) -> None:
        if channel.idle() and self._channels.get(channel.thread_id) is channel:
            del self._channels[channel.thread_id]
