"""The Redis event bus and log beside the SQLite store + in-process bus; prints one JSON object.

    python benchmarks/redis_bus.py                      # 100k live events, 200k-event replay
    python benchmarks/redis_bus.py --events 20000 --replay 50000

Starts its own ``redis-server`` (no persistence) on a free port. For each backend:

- live_*: events/s from the first ``publish`` to the last event received by ONE subscriber,
  and the publish -> receive latency (p50/p99/max ms). Redis: published on one ``RedisBus``
  (its own connections) and received on another, as between two server processes; SQLite:
  ``InProcessBus`` (one process is all it serves). Two publishers: one awaiting every
  ``publish`` (a slow producer's pace), one sending ``publish_many`` chunks (what a run's
  emitter does under load).
- replay: ``--replay`` stored events read back with ``store.iter_events`` (batches of 1000) and
  with ``bus.subscribe(after=0)`` (an SSE reconnect from scratch), plus the bulk load rate.

Everything runs in this one Python process (2 cores here: Python on one, redis-server on the other).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from instance_ai_tui.bus.base import EventBus
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.bus.redis import RedisBus
from instance_ai_tui.protocol.events import Event, parse_event
from instance_ai_tui.store.base import NewEvent
from instance_ai_tui.store.redis import RedisStore
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.net import free_port, wait_for_port

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine


def delta(n: int) -> Event:
    """A typed event (the bus takes nothing else)."""
    return parse_event({"type": "text-delta", "runId": "run-1", "agentId": "agent-1", "payload": {"text": f"token {n} "}})


def stored_delta(n: int) -> NewEvent:
    return NewEvent("text-delta", "run-1",
                    '{"type":"text-delta","runId":"run-1","agentId":"agent-1","payload":{"text":"token ' + str(n) + ' "}}')


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


def quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)

    def at(q: float) -> float:
        return round(values[min(len(values) - 1, int(len(values) * q))] * 1e3, 2)

    return {"p50": at(0.5), "p99": at(0.99), "max": round(values[-1] * 1e3, 2)}


# --------------------------------------------------------------------------- redis-server


@contextlib.contextmanager
def redis_server() -> Any:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="redis-bench-") as workdir:
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wait_for_port(port, timeout=10):
                raise SystemExit("redis-server did not start")
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(10)


# --------------------------------------------------------------------------- live delivery


async def live(publisher: EventBus, subscriber: EventBus, thread: str, count: int, chunk: int) -> dict[str, Any]:
    """``count`` events to one subscriber: published one by one (``chunk`` 1) or in chunks."""
    sent: dict[int, float] = {}
    latencies: list[float] = []
    warm = asyncio.Event()
    done = asyncio.Event()
    base = await publisher.last_id(thread) + 1  # the warm-up event's id
    last = base + count

    async def follow() -> None:
        async with contextlib.aclosing(subscriber.subscribe(thread, after=base - 1)) as events:
            async for event in events:
                if event.id == base:
                    warm.set()
                    continue
                latencies.append(time.perf_counter() - sent[(event.id - base - 1) // chunk])
                if event.id >= last:
                    done.set()
                    return

    follower = asyncio.create_task(follow())
    await publisher.publish(thread, delta(-1))  # the subscriber is live before the clock starts
    try:
        await asyncio.wait_for(warm.wait(), 10)
    except TimeoutError:
        raise SystemExit("the subscriber did not receive the warm-up event") from None
    started = time.perf_counter()
    for index, first in enumerate(range(0, count, chunk)):
        sent[index] = time.perf_counter()
        if chunk == 1:
            await publisher.publish(thread, delta(first))
        else:
            await publisher.publish_many(thread, [delta(n) for n in range(first, min(count, first + chunk))])
    published = time.perf_counter() - started
    await asyncio.wait_for(done.wait(), 120)
    elapsed = time.perf_counter() - started
    await follower
    return {
        "events": count,
        "chunk": chunk,
        "publish_events_per_s": rate(count, published),
        "delivered_events_per_s": rate(count, elapsed),
        "latency_ms": quantiles(latencies),
    }


# --------------------------------------------------------------------------- replay


async def replay(store: Any, bus: EventBus, thread: str, count: int) -> dict[str, Any]:
    out: dict[str, Any] = {"events": count}
    batch = 2000
    started = time.perf_counter()
    for first in range(0, count, batch):
        await store.append_events(thread, [stored_delta(n) for n in range(first, min(count, first + batch))])
    out["bulk_load_events_per_s"] = rate(count, time.perf_counter() - started)

    started = time.perf_counter()
    seen = 0
    async for _event in store.iter_events(thread, batch=1000):
        seen += 1
    assert seen == count, (seen, count)
    out["iter_events_per_s"] = rate(count, time.perf_counter() - started)

    started = time.perf_counter()
    seen = 0
    async with contextlib.aclosing(bus.subscribe(thread)) as events:
        async for event in events:
            seen += 1
            if event.id >= count:
                break
    assert seen == count, (seen, count)
    out["bus_subscribe_replay_events_per_s"] = rate(count, time.perf_counter() - started)
    return out


# --------------------------------------------------------------------------- backends


@contextlib.asynccontextmanager
async def redis_pair(url: str) -> AsyncIterator[tuple[RedisStore, RedisBus, RedisBus]]:
    """Two buses with their own connections (two "processes"), on one Redis."""
    one, two = RedisStore.from_url(url), RedisStore.from_url(url)
    await one.open()
    await two.open()
    bus_one, bus_two = RedisBus(one), RedisBus(two)
    try:
        yield one, bus_one, bus_two
    finally:
        for bus in (bus_one, bus_two):
            await bus.close()
        for store in (one, two):
            await store.close()


async def bench_redis(url: str, events: int, single: int, replay_count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with redis_pair(url) as (store, publisher, subscriber):
        out["live_publish_awaiting_each"] = await live(publisher, subscriber, "live-1", single, 1)
        out["live_publish_many_chunks_of_100"] = await live(publisher, subscriber, "live-100", events, 100)
        info = await store.redis.info("memory")
        before = int(info["used_memory"])
        out["replay"] = await replay(store, subscriber, "replay", replay_count)
        info = await store.redis.info("memory")
        out["replay"]["redis_memory_mb_for_log"] = round((int(info["used_memory"]) - before) / 2**20, 1)
        out["redis_version"] = (await store.redis.info("server"))["redis_version"]
    return out


async def bench_sqlite(folder: Path, events: int, single: int, replay_count: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with SqliteStore(folder / "live.sqlite3") as store:
        bus = InProcessBus(store)
        out["live_publish_awaiting_each"] = await live(bus, bus, "live-1", single, 1)
        out["live_publish_many_chunks_of_100"] = await live(bus, bus, "live-100", events, 100)
        await bus.close()
    async with SqliteStore(folder / "replay.sqlite3") as store:
        bus = InProcessBus(store)
        out["replay"] = await replay(store, bus, "replay", replay_count)
        await bus.close()
    out["sqlite_version"] = __import__("sqlite3").sqlite_version
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    single = max(1000, args.events // 10)
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with redis_server() as url:
        results["redis"] = await bench_redis(url, args.events, single, args.replay)
    with tempfile.TemporaryDirectory(prefix="redis-bus-bench-") as tmp:
        results["sqlite"] = await bench_sqlite(Path(tmp), args.events, single, args.replay)
    return results


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="live events in chunks (default 100k; "
                                                                     "a tenth of it one by one)")
    parser.add_argument("--replay", type=int, default=200_000, help="events stored and replayed (default 200k)")
    started = time.perf_counter()
    output = asyncio.run(main(parser.parse_args()))
    output["total_seconds"] = round(time.perf_counter() - started, 1)
    output["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(with_machine(output), indent=2))
