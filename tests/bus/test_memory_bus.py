"""InProcessBus on a real SQLite store: replay + live with no gap and no duplicate, order,
slow subscribers, closing."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from instance_ai_tui.aio import aclosing
from instance_ai_tui.bus.base import EventBus, to_new_event
from instance_ai_tui.bus.memory import BusClosed, InProcessBus
from instance_ai_tui.protocol.events import UnknownEvent, parse_event
from instance_ai_tui.store.base import NewEvent, StoredEvent
from instance_ai_tui.store.errors import StoreClosed
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.waiting import until

from .conftest import collect, event


async def publish_range(bus: InProcessBus, thread: str, first: int, last: int, rng: random.Random) -> None:
    """Publish events first..last: single ``publish`` calls mixed with ``publish_many`` bursts."""
    n = first
    while n <= last:
        size = min(rng.choice([1, 1, 2, 5, 8, 16, 24]), last - n + 1)
        if size == 1:
            stored = [await bus.publish(thread, event(n))]
        else:
            stored = await bus.publish_many(thread, [event(k) for k in range(n, n + size)])
        assert [s.data()["payload"]["n"] for s in stored] == list(range(n, n + size))
        n += size


async def wait_for_subscribers(bus: InProcessBus, thread: str, count: int) -> None:
    await until(lambda: bus.subscriber_count(thread) >= count, what=f"{count} subscriber(s) of {thread}")


def test_implements_the_event_bus_protocol(store: SqliteStore) -> None:
    assert isinstance(InProcessBus(store), EventBus)


async def test_three_subscribers_joining_at_different_cursors_get_exactly_their_range(bus: InProcessBus) -> None:
    """Acceptance: while a producer publishes 10,000 events, subscribers that join at different
    times with different cursors each receive exactly ids cursor+1..N, in order."""
    total = 10_000
    rng = random.Random(42)
    reached = {2_000: asyncio.Event(), 5_000: asyncio.Event(), 8_000: asyncio.Event()}

    async def producer() -> None:
        n = 1
        while n <= total:
            upto = min(total, n + rng.randint(0, 300))
            await publish_range(bus, "t", n, upto, rng)
            n = upto + 1
            for mark, flag in reached.items():
                if n > mark:
                    flag.set()

    async def subscriber(join_at: int | None, cursor: int) -> list[tuple[int, int]]:
        if join_at is not None:
            await reached[join_at].wait()
        got: list[tuple[int, int]] = []
        stream = bus.subscribe("t", after=cursor)
        async for item in stream:
            got.append((item.id, item.data()["payload"]["n"]))
            if item.id >= total:
                break
        await stream.aclose()  # type: ignore[attr-defined]
        return got

    async with asyncio.timeout(60):
        _, from_start, behind, ahead = await asyncio.gather(
            producer(),
            subscriber(None, 0),  # from the beginning, live from the first event
            subscriber(5_000, 1_234),  # joins late: replays 1,235..~5,000 while events keep coming
            subscriber(2_000, 7_000),  # cursor ahead of the log when it joins
        )
    for cursor, got in ((0, from_start), (1_234, behind), (7_000, ahead)):
        assert [i for i, _ in got] == list(range(cursor + 1, total + 1)), cursor
        assert all(i == n for i, n in got)
    assert bus.subscriber_count() == 0
    assert bus.stats.gap_fills == 0  # replay + live buffer alone closed every gap


async def test_subscribe_to_an_empty_thread_then_follow_live(bus: InProcessBus) -> None:
    task = asyncio.ensure_future(collect(bus.subscribe("empty"), upto=5))
    await wait_for_subscribers(bus, "empty", 1)
    for n in range(1, 6):
        stored = await bus.publish("empty", event(n))
        assert stored.id == n and stored.thread_id == "empty"
    assert await asyncio.wait_for(task, 5) == [1, 2, 3, 4, 5]
    assert await bus.last_id("empty") == 5


async def test_events_published_during_the_replay_are_neither_lost_nor_repeated(bus: InProcessBus, store: SqliteStore) -> None:
    await store.append_events("t", [to_new_event(event(n)) for n in range(1, 3001)])
    last = 3000
    ids = []
    async with asyncio.timeout(20):
        async for item in bus.subscribe("t"):
            ids.append(item.id)
            # 500, 1500, 2999: while full pages are replayed; 3140: while the LAST page (read
            # before these events existed) is being yielded, so only the live buffer has them.
            if item.id in (500, 1500, 2999, 3140):
                await bus.publish_many("t", [event(n) for n in range(last + 1, last + 51)])
                last += 50
            if item.id >= 3200:
                break
    assert ids == list(range(1, 3201))
    assert bus.stats.gap_fills == 0


async def test_every_delivered_event_is_already_persisted(bus: InProcessBus, store: SqliteStore) -> None:
    async def check() -> int:
        seen = 0
        async for item in bus.subscribe("t"):
            assert await store.last_event_id("t") >= item.id
            seen += 1
            if item.id >= 300:
                return seen
        return seen

    task = asyncio.ensure_future(check())
    await wait_for_subscribers(bus, "t", 1)
    await publish_range(bus, "t", 1, 300, random.Random(1))
    assert await asyncio.wait_for(task, 10) == 300


async def test_concurrent_publishers_of_one_thread_are_delivered_in_id_order(bus: InProcessBus) -> None:
    producers, each = 8, 150
    total = producers * each
    watchers = [asyncio.ensure_future(collect(bus.subscribe("t"), upto=total)) for _ in range(3)]
    await wait_for_subscribers(bus, "t", 3)
    flushes_before = bus.stats.flushes

    async def producer(p: int) -> list[int]:
        ids = []
        for k in range(each):
            ids.append((await bus.publish("t", parse_event({"type": "status", "runId": "r", "payload": {"p": p, "k": k}}))).id)
        return ids

    per_producer = await asyncio.gather(*(producer(p) for p in range(producers)))
    for ids in per_producer:
        assert ids == sorted(ids)  # a producer's own events keep its order
    assert sorted(i for ids in per_producer for i in ids) == list(range(1, total + 1))
    assert bus.stats.flushes - flushes_before < total  # publishers of a thread share appends
    for watcher in watchers:
        assert await asyncio.wait_for(watcher, 10) == list(range(1, total + 1))


async def test_a_stalled_subscriber_blocks_neither_the_publisher_nor_others(store: SqliteStore) -> None:
    bus = InProcessBus(store, queue_size=32)
    total = 2_000
    release = asyncio.Event()
    slow_ids: list[int] = []

    async def slow() -> None:
        async for item in bus.subscribe("t"):
            slow_ids.append(item.id)
            if item.id == 1:
                await release.wait()  # stops reading entirely
            if item.id >= total:
                return

    slow_task = asyncio.ensure_future(slow())
    fast_task = asyncio.ensure_future(collect(bus.subscribe("t"), upto=total))
    await wait_for_subscribers(bus, "t", 2)
    async with asyncio.timeout(20):
        await publish_range(bus, "t", 1, total, random.Random(3))  # finishes although "slow" reads nothing
        assert await fast_task == list(range(1, total + 1))
    assert slow_ids == [1]
    assert bus.stats.overflows >= 1  # "slow" was switched to catching up from the store
    release.set()
    await asyncio.wait_for(slow_task, 10)
    assert slow_ids == list(range(1, total + 1))
    assert bus.stats.gap_fills == 0
    await bus.close()


async def test_a_subscriber_that_keeps_falling_behind_rejoins_live_each_time(store: SqliteStore) -> None:
    bus = InProcessBus(store, queue_size=16)
    total = 3_000
    ids: list[int] = []

    async def dawdler() -> None:
        async for item in bus.subscribe("t"):
            ids.append(item.id)
            if item.id in (100, 700, 1500):
                await asyncio.sleep(0.05)  # the scenario: a slow subscriber
            if item.id >= total:
                return

    task = asyncio.ensure_future(dawdler())
    await wait_for_subscribers(bus, "t", 1)
    await publish_range(bus, "t", 1, total, random.Random(5))
    await asyncio.wait_for(task, 20)
    assert ids == list(range(1, total + 1))
    assert bus.stats.overflows >= 2
    assert bus.stats.gap_fills == 0
    await bus.close()


async def test_a_batch_larger_than_the_queue_is_caught_up_from_the_store(store: SqliteStore) -> None:
    bus = InProcessBus(store, queue_size=10)
    task = asyncio.ensure_future(collect(bus.subscribe("t"), upto=1000))
    await wait_for_subscribers(bus, "t", 1)
    stored = await bus.publish_many("t", [event(n) for n in range(1, 1001)])
    assert [s.id for s in stored] == list(range(1, 1001))
    assert await asyncio.wait_for(task, 10) == list(range(1, 1001))
    await bus.close()


async def test_many_subscribers_all_get_everything(bus: InProcessBus) -> None:
    tasks = [asyncio.ensure_future(collect(bus.subscribe("t", after=k), upto=400)) for k in range(50)]
    await wait_for_subscribers(bus, "t", 50)
    await publish_range(bus, "t", 1, 400, random.Random(9))
    results = await asyncio.wait_for(asyncio.gather(*tasks), 20)
    for k, ids in enumerate(results):
        assert ids == list(range(k + 1, 401))
    assert bus.stats.gap_fills == 0


async def test_events_written_by_another_writer_fill_the_gap(bus: InProcessBus, store: SqliteStore) -> None:
    seen: list[int] = []

    async def follow() -> None:
        async with aclosing(bus.subscribe("t")) as stream:
            async for item in stream:
                seen.append(item.id)
                if item.id >= 20:
                    return

    task = asyncio.ensure_future(follow())
    await wait_for_subscribers(bus, "t", 1)
    await bus.publish_many("t", [event(n) for n in range(1, 11)])
    # live and level (not still replaying the store, which would read the next five as well)
    await until(lambda: seen[-1:] == [10], what="the subscriber got 1..10 live")
    await store.append_events("t", [to_new_event(event(n)) for n in range(11, 16)])  # not through the bus
    await bus.publish_many("t", [event(n) for n in range(16, 21)])
    await asyncio.wait_for(task, 30)
    assert seen == list(range(1, 21))
    assert bus.stats.gap_fills == 1


async def test_closing_a_subscription_frees_it(bus: InProcessBus, store: SqliteStore) -> None:
    await store.append_events("t", [to_new_event(event(n)) for n in range(1, 2001)])
    # closed while replaying from the store
    stream = bus.subscribe("t")
    async for item in stream:
        if item.id == 10:
            break
    assert bus.subscriber_count("t") == 1
    await stream.aclose()  # type: ignore[attr-defined]
    assert bus.subscriber_count("t") == 0
    # closed while following live
    live = bus.subscribe("t", after=2000)
    pending = asyncio.ensure_future(live.__anext__())
    await wait_for_subscribers(bus, "t", 1)
    await bus.publish("t", event(2001))
    assert (await pending).id == 2001
    await live.aclose()  # type: ignore[attr-defined]
    assert bus.subscriber_count() == 0
    assert bus._channels == {}  # nothing of the thread is kept
    # dropped without aclose(): the event loop's async-generator hook closes it
    async for _item in bus.subscribe("t", after=1990):
        break
    await until(lambda: bus.subscriber_count() == 0, what="the subscriber gone")
    # publishing to a thread nobody follows keeps nothing either
    await bus.publish("t", event(2002))
    assert bus._channels == {}


async def test_cancelling_a_waiting_subscriber_frees_it(bus: InProcessBus) -> None:
    task = asyncio.ensure_future(collect(bus.subscribe("t"), upto=10))
    await wait_for_subscribers(bus, "t", 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bus.subscriber_count() == 0


async def test_publish_many_is_one_append_with_consecutive_ids(bus: InProcessBus, store: SqliteStore) -> None:
    await bus.publish("t", event(1))
    before = (bus.stats.flushes, store.stats.transactions)
    stored = await bus.publish_many("t", [event(n) for n in range(2, 12)])
    assert [s.id for s in stored] == list(range(2, 12))
    assert (bus.stats.flushes, store.stats.transactions) == (before[0] + 1, before[1] + 1)
    assert await bus.publish_many("t", []) == []


async def test_bad_events_are_refused_and_nothing_is_stored(bus: InProcessBus, store: SqliteStore) -> None:
    """The bus takes typed events only: a wire dict, text, or an event that cannot be serialised is refused."""
    bad: list[Any] = ["text", {"type": "text-delta", "runId": "r", "payload": {"text": "a dict"}},
                      NewEvent(type="text-delta", run_id="r", json="{}"), UnknownEvent(type="")]
    for item in bad:
        with pytest.raises((TypeError, ValueError)):
            await bus.publish("t", item)
    with pytest.raises(TypeError, match="protocol events"):
        await bus.publish_many("t", [event(1), {"type": "x"}])
    with pytest.raises(ValueError):
        await bus.publish_many("t", [event(1), UnknownEvent.model_construct(type="x", payload={"o": object()})])
    with pytest.raises(ValueError, match="thread id"):
        await bus.publish("", event(1))
    assert await store.last_event_id("t") == 0


async def test_a_store_failure_reaches_the_publisher_and_the_bus_recovers(store: SqliteStore) -> None:
    bus = InProcessBus(store)
    await bus.publish("t", event(1))
    await store.close()
    with pytest.raises(StoreClosed):
        await bus.publish("t", event(2))
    await store.open()
    assert (await bus.publish("t", event(2))).id == 2
    await bus.close()


async def test_close_ends_subscriptions_after_what_they_received(store: SqliteStore) -> None:
    bus = InProcessBus(store)
    received: list[StoredEvent] = []

    async def follow() -> None:
        async for item in bus.subscribe("t"):
            received.append(item)

    task = asyncio.ensure_future(follow())
    await wait_for_subscribers(bus, "t", 1)
    await bus.publish_many("t", [event(n) for n in range(1, 6)])
    await bus.close()
    await asyncio.wait_for(task, 5)
    assert [e.id for e in received] == [1, 2, 3, 4, 5]
    with pytest.raises(BusClosed):
        await bus.publish("t", event(6))
    with pytest.raises(BusClosed):
        await bus.subscribe("t").__anext__()
    await bus.close()  # idempotent
