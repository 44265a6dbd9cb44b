"""Benchmark of the SQLite store and the in-process event bus; prints one JSON object.

    python benchmarks/bus_store.py                # full run (1M-event replay), about a minute
    python benchmarks/bus_store.py --replay 100000 --quick

Measured (events/s unless noted), each on a fresh database file in a temporary directory:

- publish_*: ``InProcessBus`` publish + persist (committed before delivery), no subscribers:
  one producer awaiting every ``publish`` (commit latency bound); one producer bursting
  text-deltas without awaiting each (the store's group commit batches them); one producer
  using ``publish_many`` chunks; N concurrent producers on N threads and on one thread.
- fanout: N subscribers following one thread that gets a steady event rate: delivery latency
  from ``publish`` call to each subscriber (p50/p99/max ms) and the CPU used.
- bulk_insert: ``append_events`` in big batches (how the 1M events are loaded).
- replay_*: reading the 1M stored events back with ``iter_events`` and with
  ``InProcessBus.subscribe(after=0)`` (what an SSE reconnect from scratch does), plus the peak
  memory growth during the replay (it pages; it never loads the log at once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.events import Event, parse_event
from instance_ai_tui.store.base import NewEvent
from instance_ai_tui.store.sqlite import SqliteStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine


def text_delta(n: int) -> Event:
    """A typed event (the bus takes nothing else)."""
    return parse_event({"type": "text-delta", "runId": "run-1", "agentId": "agent-1", "payload": {"text": f"token {n} "}})


def stored_delta(n: int) -> NewEvent:
    """The log record of ``text_delta(n)`` (type, run id, compact JSON), built without json.dumps (faster load)."""
    return NewEvent(
        "text-delta",
        "run-1",
        '{"type":"text-delta","runId":"run-1","agentId":"agent-1","payload":{"text":"token ' + str(n) + ' "}}',
    )


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def with_bus(folder: Path, name: str, body: Callable[[InProcessBus, SqliteStore], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    async with SqliteStore(folder / f"{name}.sqlite3") as store:
        bus = InProcessBus(store)
        try:
            result = await body(bus, store)
        finally:
            await bus.close()
        result["transactions"] = store.stats.transactions
        return result


async def publish_sequential(bus: InProcessBus, store: SqliteStore, count: int) -> dict[str, Any]:
    started = time.perf_counter()
    for n in range(count):
        await bus.publish("t", text_delta(n))
    elapsed = time.perf_counter() - started
    return {"events": count, "events_per_s": rate(count, elapsed), "mean_latency_us": round(elapsed / count * 1e6, 1)}


async def publish_burst(bus: InProcessBus, store: SqliteStore, count: int, window: int) -> dict[str, Any]:
    """One producer firing text-deltas without awaiting each one (at most ``window`` in flight)."""
    started = time.perf_counter()
    in_flight: list[asyncio.Future[Any]] = []
    for n in range(count):
        in_flight.append(asyncio.ensure_future(bus.publish("t", text_delta(n))))
        if len(in_flight) >= window:
            await asyncio.gather(*in_flight)
            in_flight = []
    await asyncio.gather(*in_flight)
    elapsed = time.perf_counter() - started
    return {"events": count, "window": window, "events_per_s": rate(count, elapsed)}


async def publish_chunks(bus: InProcessBus, store: SqliteStore, count: int, chunk: int) -> dict[str, Any]:
    started = time.perf_counter()
    for first in range(0, count, chunk):
        await bus.publish_many("t", [text_delta(n) for n in range(first, min(count, first + chunk))])
    elapsed = time.perf_counter() - started
    return {"events": count, "chunk": chunk, "events_per_s": rate(count, elapsed)}


async def publish_concurrent(bus: InProcessBus, store: SqliteStore, producers: int, each: int, same_thread: bool) -> dict[str, Any]:
    async def producer(p: int) -> None:
        thread = "t" if same_thread else f"t{p}"
        for n in range(each):
            await bus.publish(thread, text_delta(n))

    started = time.perf_counter()
    await asyncio.gather(*(producer(p) for p in range(producers)))
    elapsed = time.perf_counter() - started
    total = producers * each
    return {"producers": producers, "same_thread": same_thread, "events": total, "events_per_s": rate(total, elapsed)}


async def fanout(bus: InProcessBus, store: SqliteStore, subscribers: int, per_second: int, seconds: float) -> dict[str, Any]:
    total = int(per_second * seconds)
    sent: dict[int, float] = {}
    latencies: list[float] = []

    async def follow() -> None:
        async for item in bus.subscribe("t"):
            latencies.append(time.perf_counter() - sent[item.data()["payload"]["n"]])
            if item.id >= total:
                return

    followers = [asyncio.ensure_future(follow()) for _ in range(subscribers)]
    while bus.subscriber_count("t") < subscribers:
        await asyncio.sleep(0.001)

    async def publish(n: int) -> None:
        sent[n] = time.perf_counter()
        await bus.publish("t", parse_event({"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "x", "n": n}}))

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    pending = []
    for n in range(total):
        due = started + n / per_second
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        pending.append(asyncio.ensure_future(publish(n)))
    await asyncio.gather(*pending)
    await asyncio.gather(*followers)
    elapsed = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    latencies.sort()

    def ms(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1e3, 2)

    return {
        "subscribers": subscribers,
        "target_events_per_s": per_second,
        "events": total,
        "deliveries": len(latencies),
        "achieved_events_per_s": rate(total, elapsed),
        "latency_ms": {"p50": ms(0.5), "p99": ms(0.99), "max": round(latencies[-1] * 1e3, 2)},
        "cpu_s_per_s": round((usage.ru_utime + usage.ru_stime - cpu_before) / elapsed, 2),
    }


async def replay(folder: Path, count: int) -> dict[str, Any]:
    path = folder / "replay.sqlite3"
    out: dict[str, Any] = {"events": count}
    async with SqliteStore(path) as store:
        batch = 50_000
        started = time.perf_counter()
        for first in range(0, count, batch):
            await store.append_events("t", [stored_delta(n) for n in range(first, min(count, first + batch))])
        elapsed = time.perf_counter() - started
        out["bulk_insert"] = {"batch": batch, "events_per_s": rate(count, elapsed), "seconds": round(elapsed, 2)}
        out["db_size_mb"] = round(path.stat().st_size / 2**20, 1)

    async with SqliteStore(path) as store:
        for page in (1000,):
            rss_before = peak_rss_mb()
            started = time.perf_counter()
            seen = last = 0
            async for item in store.iter_events("t", batch=page):
                seen += 1
                last = item.id
            elapsed = time.perf_counter() - started
            assert seen == count and last == count, (seen, last)
            out[f"replay_iter_events_batch_{page}"] = {
                "events_per_s": rate(count, elapsed),
                "seconds": round(elapsed, 2),
                "peak_rss_growth_mb": round(peak_rss_mb() - rss_before, 1),
            }

        bus = InProcessBus(store)
        started = time.perf_counter()
        seen = 0
        async for item in bus.subscribe("t"):
            seen += 1
            if item.id >= count:
                break
        elapsed = time.perf_counter() - started
        await bus.close()
        assert seen == count
        out["replay_bus_subscribe"] = {"events_per_s": rate(count, elapsed), "seconds": round(elapsed, 2)}
    return out


async def main(args: argparse.Namespace) -> dict[str, Any]:
    scale = 0.2 if args.quick else 1.0
    n = int(20_000 * scale)
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "sqlite": __import__("sqlite3").sqlite_version,
    }
    with tempfile.TemporaryDirectory(prefix="bus-store-bench-", dir=args.dir) as tmp:
        folder = Path(tmp)
        results["publish_single_producer_awaiting_each"] = await with_bus(
            folder, "seq", lambda b, s: publish_sequential(b, s, n // 4)
        )
        results["publish_single_producer_burst"] = await with_bus(folder, "burst", lambda b, s: publish_burst(b, s, n * 2, 1000))
        results["publish_many_chunks_of_64"] = await with_bus(folder, "chunks", lambda b, s: publish_chunks(b, s, n * 5, 64))
        results["publish_8_producers_8_threads"] = await with_bus(
            folder, "conc8", lambda b, s: publish_concurrent(b, s, 8, n // 8, same_thread=False)
        )
        results["publish_8_producers_same_thread"] = await with_bus(
            folder, "conc1", lambda b, s: publish_concurrent(b, s, 8, n // 8, same_thread=True)
        )
        results["publish_64_producers_64_threads"] = await with_bus(
            folder, "conc64", lambda b, s: publish_concurrent(b, s, 64, n // 32, same_thread=False)
        )
        results["fanout_200_subscribers_1000_per_s"] = await with_bus(
            folder, "fanout", lambda b, s: fanout(b, s, 200, 1000, 1.0 if args.quick else 4.0)
        )
        results["replay"] = await replay(folder, args.replay)
    results["peak_rss_mb"] = peak_rss_mb()
    return results


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replay", type=int, default=1_000_000, help="events stored and replayed (default 1M)")
    parser.add_argument("--quick", action="store_true", help="smaller publish runs")
    parser.add_argument("--dir", default=None, help="where the temporary database files go")
    started = time.perf_counter()
    output = asyncio.run(main(parser.parse_args()))
    output["total_seconds"] = round(time.perf_counter() - started, 1)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    output["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 1)  # < total_seconds: other load
    output["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(with_machine(output), indent=2))
