"""A long thread must not get slower to use (issue 14 item 7): the context a run loads.

    python benchmarks/long_thread.py [--runs 1000] [--repeats 20]

Builds a real SQLite file with one thread of ``--runs`` runs (each: a user message, an assistant tool
call, a tool result and an answer, as the runtime stores them) and a fresh thread with 10 runs, then
measures ``StoreMemory.load_history`` (the last 40 messages a new run sends to the model) in both
(the fresh thread has 10 runs, so both send 40 messages):
``long_ms`` vs ``fresh_ms`` (best of ``--repeats``), and the rows read. Target: a run in the long
thread costs ≤ 1.1× a run in a fresh thread, so the context load must not grow with the thread.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # PYTHONPATH first: another checkout can be measured the same way

from instance_ai_tui.runtime.memory import StoreMemory, message_to_record  # noqa: E402
from instance_ai_tui.runtime.messages import Message, ToolCallPart  # noqa: E402
from instance_ai_tui.store.sqlite import SqliteStore  # noqa: E402


def one_run(index: int) -> list[Message]:
    call = f"call_{index}"
    return [
        Message.user(f"question {index}: list my workflows and tell me which ones failed yesterday"),
        Message.assistant("", tool_calls=[ToolCallPart(id=call, name="list-workflows",
                                                       arguments={"limit": 20})]),
        Message.tool(call, "list-workflows", json.dumps({"items": [{"id": f"wf-{i}", "name": f"Workflow {i}"}
                                                                    for i in range(10)]})),
        Message.assistant(f"Answer {index}: " + "all of them ran fine. " * 20),
    ]


async def fill(store: SqliteStore, thread_id: str, runs: int) -> None:
    await store.create_thread(thread_id)
    for index in range(runs):
        records = [message_to_record(thread_id, m, f"run_{thread_id}_{index}") for m in one_run(index)]
        await store.upsert_messages(thread_id, records)


async def best_ms(memory: StoreMemory, thread_id: str, repeats: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeats):
        started = time.perf_counter()
        history = await memory.load_history(thread_id)
        best = min(best, time.perf_counter() - started)
        count = len(history)
    return round(best * 1000, 2), count


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="long-thread-") as tmp:
        async with SqliteStore(Path(tmp) / "long.sqlite3") as store:
            await fill(store, "long", args.runs)
            await fill(store, "fresh", 10)  # the same 40 messages to send: only the length differs
            memory = StoreMemory(store, last_messages=40)
            long_ms, long_count = await best_ms(memory, "long", args.repeats)
            fresh_ms, fresh_count = await best_ms(memory, "fresh", args.repeats)
    out = {
        "runs": args.runs, "messages_in_long_thread": args.runs * 4,
        "load_history_long_ms": long_ms, "load_history_fresh_ms": fresh_ms,
        "messages_sent_long": long_count, "messages_sent_fresh": fresh_count,
        "long_vs_fresh": round(long_ms / fresh_ms, 2) if fresh_ms else None,
        "target_long_vs_fresh": 1.1,
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
