"""``RedisBus``: the event bus across several server processes.

``publish`` appends to the durable log in Redis (``RedisStore``: a stream per thread with
ids from an atomic counter) and announces the batch on the thread's pub/sub channel in the
same Lua script (one message per batch, so channel order is id order).
Each process keeps ONE pub/sub connection and fans events out to its local subscribers.

Pub/sub loses messages (a slow connection, a reconnect), so nothing depends on it alone:
a subscriber that sees an id jump fills the gap from the log, and one that hears nothing
for ``poll_interval`` seconds checks the log's last id and catches up. A subscriber whose
bounded queue overflows is switched to reading the log until it is level again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ..aio import aclose
from ..store.base import StoredEvent
from ..store.redis import RedisStore, decode_records
from .base import OnStored, to_new_event

if TYPE_CHECKING:
    from ..protocol.events import Event

log = logging.getLogger(__name__)


class _Subscriber:
    __slots__ = ("overflowed", "queue")

    def __init__(self, size: int) -> None:
        self.queue: asyncio.Queue[StoredEvent] = asyncio.Queue(maxsize=size)
        self.overflowed = False


class RedisBus:
    def __init__(self, store: RedisStore, *, queue_size: int = 2048, poll_interval: float = 1.0) -> None:
        self._store = store
        self._redis = store.redis
        self._queue_size = queue_size
        self._poll = poll_interval
        self._subs: dict[str, set[_Subscriber]] = {}
        self._pubsub: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._subscribed = asyncio.Event()  # set when a channel is subscribed: wakes the listener
        self._closed = False

    def channel(self, thread_id: str) -> str:
        return self._store.key("live", thread_id)

    # ----------------------------------------------------------------- publish

    async def publish(self, thread_id: str, event: Event) -> StoredEvent:
        return (await self.publish_many(thread_id, [event]))[0]

    async def publish_many(
        self, thread_id: str, events: Sequence[Event], *, on_stored: OnStored | None = None
    ) -> list[StoredEvent]:
        """Serialised once (``to_new_event``), stored and announced; the ``StoredEvent``s returned
        carry their models. Subscribers read the JSON (they may be in another process)."""
        new = [to_new_event(event) for event in events]
        if on_stored is None:
            return await self._store.append_events(thread_id, new, publish=self.channel(thread_id))
        stored = await self._store.append_events(thread_id, new)
        try:
            await on_stored(stored)
        except Exception:
            log.exception("the on_stored step of a publish failed; delivering anyway")
        frame = "\x00".join(f"{e.id}\t{e.type}\t{e.run_id}\t{e.json}" for e in stored)
        await self._redis.publish(self.channel(thread_id), frame)
        return stored

    async def last_id(self, thread_id: str) -> int:
        return await self._store.last_event_id(thread_id)

    # ----------------------------------------------------------------- live fan-out

    async def _ensure_listener(self) -> None:
        if self._pubsub is None:
            self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        if self._listener is None or self._listener.done():
            self._listener = asyncio.create_task(self._listen(), name="redis-bus-listener")

    async def _listen(self) -> None:
        prefix = self._store.key("live", "")
        while not self._closed:
            try:
                self._subscribed.clear()
                if not self._pubsub.subscribed:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._subscribed.wait(), 1.0)
                    continue
                message = await self._pubsub.get_message(timeout=1.0)
            except Exception as exc:  # noqa: BLE001 - connection trouble: subscribers catch up from the log
                log.warning("redis pub/sub listener: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if not message or message.get("type") != "message":
                continue
            thread_id = str(message["channel"])[len(prefix) :]
            events = decode_records(thread_id, message["data"])
            for sub in list(self._subs.get(thread_id, ())):
                for event in events:
                    if sub.overflowed:
                        break
                    try:
                        sub.queue.put_nowait(event)
                    except asyncio.QueueFull:
                        sub.overflowed = True

    async def _join(self, thread_id: str) -> _Subscriber:
        sub = _Subscriber(self._queue_size)
        async with self._lock:
            await self._ensure_listener()
            subs = self._subs.setdefault(thread_id, set())
            if not subs:
                await self._pubsub.subscribe(self.channel(thread_id))
                self._subscribed.set()
            subs.add(sub)
        return sub

    async def _leave(self, thread_id: str, sub: _Subscriber) -> None:
        async with self._lock:
            subs = self._subs.get(thread_id)
            if subs is None:
                return
            subs.discard(sub)
            if not subs:
                del self._subs[thread_id]
                if self._pubsub is not None and not self._closed:
                    with contextlib.suppress(Exception):
                        await self._pubsub.unsubscribe(self.channel(thread_id))

    # ----------------------------------------------------------------- subscribe

    async def subscribe(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        sub = await self._join(thread_id)
        cursor = after
        try:
            async for event in self._store.iter_events(thread_id, after=cursor):
                yield event
                cursor = event.id
            while not self._closed:
                if sub.overflowed:
                    # Level up from the log, then rejoin the live queue.
                    while not sub.queue.empty():
                        sub.queue.get_nowait()
                    sub.overflowed = False
                    async for event in self._store.iter_events(thread_id, after=cursor):
                        yield event
                        cursor = event.id
                    continue
                try:
                    event = await asyncio.wait_for(sub.queue.get(), timeout=self._poll)
                except TimeoutError:
                    if await self._store.last_event_id(thread_id) > cursor:
                        async for missed in self._store.iter_events(thread_id, after=cursor):
                            yield missed
                            cursor = missed.id
                    continue
                if event.id <= cursor:
                    continue
                if event.id > cursor + 1:
                    for missed in await self._store.read_events(thread_id, after=cursor, limit=event.id - cursor - 1):
                        yield missed
                        cursor = missed.id
                yield event
                cursor = event.id
        finally:
            await self._leave(thread_id, sub)

    async def subscribe_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        """``subscribe``'s events, one per list (the live queue hands them one by one)."""
        events = self.subscribe(thread_id, after)
        try:
            async for event in events:
                yield [event]
        finally:
            await aclose(events)

    async def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
