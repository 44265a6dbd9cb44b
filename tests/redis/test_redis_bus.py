"""RedisBus across two bus instances (as two server processes would have) on one real Redis."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from instance_ai_tui.aio import aclosing
from instance_ai_tui.bus.base import EventBus, to_new_event
from instance_ai_tui.bus.redis import RedisBus
from instance_ai_tui.protocol.events import TextDeltaEvent, TextPayload
from instance_ai_tui.store.redis import RedisStore
from tests.support.waiting import until


@pytest.fixture
async def buses(redis_url, redis_client):
    made = []
    for _ in range(2):
        store = RedisStore(aioredis.from_url(redis_url, decode_responses=True), prefix="b:")
        made.append(RedisBus(store, queue_size=64, poll_interval=0.2))
    yield made
    for bus in made:
        await bus.close()
        await bus._store.close()


def delta(i: int) -> TextDeltaEvent:
    return TextDeltaEvent(run_id="r", agent_id="a", payload=TextPayload(text=str(i)))


async def collect(bus: RedisBus, thread: str, after: int, until: int, slow: float = 0.0) -> list[int]:
    ids: list[int] = []
    async with aclosing(bus.subscribe(thread, after=after)) as events:
        async for event in events:
            ids.append(event.id)
            if slow:
                await asyncio.sleep(slow)
            if event.id >= until:
                break
    return ids


async def joined(bus: RedisBus, thread: str, count: int) -> None:
    """Until ``count`` subscriptions of ``bus`` follow ``thread`` live (subscribed to its channel)."""
    await until(lambda: len(bus._subs.get(thread, ())) >= count, what=f"{count} live subscriber(s) of {thread}")


async def test_is_an_event_bus(buses) -> None:
    assert isinstance(buses[0], EventBus)


async def test_cross_instance_subscribers_get_every_event_once(buses) -> None:
    a, b = buses
    total = 2000
    for i in range(100):
        await a.publish("t", delta(i))
    readers = [
        asyncio.create_task(collect(b, "t", 0, total)),
        asyncio.create_task(collect(b, "t", 50, total)),
        asyncio.create_task(collect(a, "t", 100, total)),
    ]
    await joined(b, "t", 2)
    await joined(a, "t", 1)
    for i in range(100, total, 10):
        await a.publish_many("t", [delta(j) for j in range(i, i + 10)])
        if i % 200 == 0:
            await asyncio.sleep(0)
    results = await asyncio.wait_for(asyncio.gather(*readers), timeout=30)
    assert results[0] == list(range(1, total + 1))
    assert results[1] == list(range(51, total + 1))
    assert results[2] == list(range(101, total + 1))


async def test_lost_pubsub_messages_are_filled_from_the_log(buses) -> None:
    a, b = buses
    reader = asyncio.create_task(collect(b, "t", 0, 30))
    await joined(b, "t", 1)
    await a.publish_many("t", [delta(i) for i in range(10)])
    # 10 events written to the log without any announcement (as if pub/sub dropped them) ...
    await a._store.append_events("t", [to_new_event(delta(i)) for i in range(10)])
    # ... then live again: the id jump is filled from the log
    await a.publish_many("t", [delta(i) for i in range(5)])
    # and a silent tail (no later message) is found by the poll
    await a._store.append_events("t", [to_new_event(delta(i)) for i in range(5)])
    assert await asyncio.wait_for(reader, timeout=10) == list(range(1, 31))


async def test_slow_subscriber_overflows_and_catches_up(buses) -> None:
    a, b = buses
    total = 600
    slow = asyncio.create_task(collect(b, "t", 0, total, slow=0.001))
    fast = asyncio.create_task(collect(b, "t", 0, total))
    await joined(b, "t", 2)
    for i in range(0, total, 50):
        await a.publish_many("t", [delta(j) for j in range(i, i + 50)])
    fast_ids, slow_ids = await asyncio.wait_for(asyncio.gather(fast, slow), timeout=30)
    assert fast_ids == list(range(1, total + 1))
    assert slow_ids == list(range(1, total + 1))


async def test_leaving_unsubscribes(buses) -> None:
    a, b = buses
    await a.publish("t", delta(0))
    assert await collect(b, "t", 0, 1) == [1]
    await until(lambda: "t" not in b._subs, what="the subscription left")
    assert await b.last_id("t") == 1
