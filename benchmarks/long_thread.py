"""A long thread must not get slower to use (issue 14 item 7): the context a run loads.

    python benchmarks/long_thread.py [--runs 1000] [--repeats 20]

Builds a real SQLite file with one thread of ``--runs`` runs (each: a user message, an assistant tool
call, a tool result and an answer, as the runtime stores them) and a fresh thread with 10 runs, then
measures ``StoreMemory.load_history`` (the last 40 messages a new run sends to the model) in both
(the fresh thread has 10 runs, so both send 40 messages):
``long_ms`` vs ``fresh_ms`` (best of ``--repeats``), and the rows read. Target: a run in the long
thread costs ≤ 1.1× a run in a fresh thread, so the context load must not grow with the thread.

Then the restore: each run also gets its run record and agent-tree snapshot (as a finished run
leaves them), and the real app (headless, embedded, this database) opens the thread: seconds from
starting the app to the newest answer mounted and drawn, ``restore_long_s`` vs ``restore_fresh_s``,
and ``restore_long_whole_s`` for the same thread read whole (as before history was paged; the
``Client.recent_messages`` of the app replaced by ``messages``). Target: < 0.3 s.
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
from tests.support.finished_runs import fill_runs  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402


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


async def restore_s(db: Path, thread_id: str, *, whole: bool) -> float:
    """The real app opens ``thread_id``: seconds until its newest answer is mounted and drawn."""
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import Settings
    from instance_ai_tui.protocol.api import ThreadMessages
    from instance_ai_tui.tui.app import InstanceAiApp

    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
    client = EmbeddedClient(settings)
    if whole:
        async def whole_history(thread: str, limit: int) -> ThreadMessages:
            return await client.messages(thread)

        client.recent_messages = whole_history  # type: ignore[method-assign]
    started = time.perf_counter()
    app = InstanceAiApp(client, settings, thread_id=thread_id, watch_themes=False, persist_theme=False)
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            conversation = app.conversation
            if (
                conversation is not None
                and conversation.messages
                and conversation.messages[-1].id in app.view.turns
                and app.projection.rendered
            ):
                await pilot.pause()
                return time.perf_counter() - started
            if time.perf_counter() - started > 60:
                raise TimeoutError("the thread did not open in 60 s")
            await asyncio.sleep(0.002)


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
            await fill_runs(store, "long", args.runs)
            await fill_runs(store, "fresh", 10)
        db = Path(tmp) / "long.sqlite3"
        restore = {}
        for name, thread, whole in (("long", "long", False), ("fresh", "fresh", False), ("long_whole", "long", True)):
            restore[f"restore_{name}_s"] = round(min([await restore_s(db, thread, whole=whole) for _ in range(3)]), 3)
    out = {
        "runs": args.runs, "messages_in_long_thread": args.runs * 4,
        "load_history_long_ms": long_ms, "load_history_fresh_ms": fresh_ms,
        "messages_sent_long": long_count, "messages_sent_fresh": fresh_count,
        "long_vs_fresh": round(long_ms / fresh_ms, 2) if fresh_ms else None,
        "target_long_vs_fresh": 1.1,
        **restore,
        "target_restore_s": 0.3,
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    asyncio.run(main())
