"""Assistant emit path benchmark: runtime text-delta chunks -> protocol events -> the log.

Every streamed token of a run goes this way: ``ChunkMapper.handle`` builds the event,
``RunEmitter`` stamps and queues it, its pump serialises the batch and hands it to the bus.
Prints one JSON object:

* ``build_and_serialise``: chunks/s through ``ChunkMapper`` + ``RunEmitter`` into a bus that
  only turns the batch into ``NewEvent``s (the bus's own conversion, no store): the cost of
  building and serialising the events;
* ``to_sqlite``: the same into the real ``InProcessBus`` over a ``SqliteStore`` file (commit
  before delivery), flushed: what a run pays end to end.

    python benchmarks/emitter.py [--events 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instance_ai_tui.assistant.emitter import RunEmitter
from instance_ai_tui.assistant.mapping import ChunkMapper
from instance_ai_tui.bus.base import to_new_event
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.runtime.chunks import TextDeltaChunk
from instance_ai_tui.store.base import NewEvent, StoredEvent
from instance_ai_tui.store.sqlite import SqliteStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine

RUN = "run_bench"


class ConvertingBus:
    """Takes a batch as ``InProcessBus.publish_many`` does (conversion to ``NewEvent``), stores nothing."""

    def __init__(self) -> None:
        self.last: NewEvent | None = None
        self.count = 0

    async def publish_many(self, thread_id: str, events: Sequence[Any]) -> list[StoredEvent]:
        new = [to_new_event(event) for event in events]
        self.count += len(new)
        self.last = new[-1]
        return []


def chunks(count: int) -> list[TextDeltaChunk]:
    return [TextDeltaChunk(RUN, f"r{n // 500}", "token ") for n in range(count)]


async def drive(bus: Any, items: list[TextDeltaChunk]) -> float:
    emitter = RunEmitter(bus, "t", RUN)
    mapper = ChunkMapper(emitter, f"orchestrator-{RUN}", status_events=False)
    started = time.perf_counter()
    for index, chunk in enumerate(items):
        mapper.handle(chunk)
        if index % 256 == 255:
            await asyncio.sleep(0)  # a model stream yields between chunks; the pump runs here
    await emitter.flush()
    elapsed = time.perf_counter() - started
    assert emitter.failures == 0, emitter.last_error
    return elapsed


async def main(args: argparse.Namespace) -> dict[str, Any]:
    items = chunks(args.events)
    best = float("inf")
    sample = ""
    for _ in range(3):
        bus = ConvertingBus()
        best = min(best, await drive(bus, items))
        assert bus.count == len(items)
        sample = bus.last.json if bus.last is not None else ""
    out: dict[str, Any] = {
        "events": len(items),
        "build_and_serialise": {"events_per_s": round(len(items) / best), "us_per_event": round(best / len(items) * 1e6, 2)},
        "sample": json.loads(sample),
    }
    with tempfile.TemporaryDirectory(prefix="emitter-bench-") as tmp:
        async with SqliteStore(Path(tmp) / "emit.sqlite3") as store:
            bus = InProcessBus(store)
            elapsed = await drive(bus, items)
            assert await bus.last_id("t") == len(items)
            await bus.close()
    out["to_sqlite"] = {"events_per_s": round(len(items) / elapsed), "seconds": round(elapsed, 2)}
    out["python"] = platform.python_version()
    out["cpus"] = os.cpu_count()
    return out


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    print(json.dumps(with_machine(asyncio.run(main(parser.parse_args())))))
