"""The context budget's cost (issue 47): fitting the history per request in a 1,000-turn thread, and one
compaction.

    python benchmarks/context_budget.py [--turns 1000] [--requests 200]

Prints one JSON object with the machine's load:

* ``fit``: a run whose message list holds ``--turns`` turns (a question, a tool call, a tool result of 2 to
  20 k characters, an answer) asks for ``--requests`` requests, one message added between them, as the
  agent loop does. Per request: ``for_llm`` (building the messages: what every request cost before the
  budget, the **baseline**) and ``fit_request`` on top (sizes looked up, stubs, drops, cuts: **ours**),
  for a 128 k window (the thread does not fit: older results are stubbed, old turns leave) and an 8 k
  one, in CPU time of the benchmark's thread (what the work costs, however busy the machine is) and in
  wall time. The goal: fitting at most 5 ms a request.
* ``compaction``: one ``Agent._compact`` of the oldest turns of such a thread on a real SQLite file, the
  observer a ``ScriptedModel`` that answers at once (the model's own time is excluded: what is left is
  ours: choosing turns, the transcript, identifiers, the store write); beside it the cost of reading the
  same history from the store (``load_history``), the floor any run pays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from machine import load, machine  # noqa: E402

from instance_ai_tui.runtime.agent import Agent  # noqa: E402
from instance_ai_tui.runtime.context import ContextBudget, Sizes, fit_request  # noqa: E402
from instance_ai_tui.runtime.memory import StoreMemory  # noqa: E402
from instance_ai_tui.runtime.messages import Message, MessageList, ToolCallPart  # noqa: E402
from instance_ai_tui.runtime.run import Run  # noqa: E402
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse  # noqa: E402
from instance_ai_tui.store.sqlite import SqliteStore  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": f"tool-{i}", "description": "A tool. " * 20,
                                            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}
         for i in range(12)]


def turn(index: int) -> list[Message]:
    call = f"call_{index}"
    size = 2_000 + (index * 7_919) % 18_000
    return [
        Message.user(f"Please read workflow wf_{index:04d} and tell me what it does."),
        Message.assistant("", tool_calls=[ToolCallPart(id=call, name="get-workflow", arguments={"id": f"wf_{index:04d}"})]),
        Message.tool(call, "get-workflow", json.dumps({"id": f"wf_{index:04d}", "name": f"Flow {index}",
                                                       "nodes": "x" * size})),
        Message.assistant(f"Workflow wf_{index:04d} copies rows from a sheet to a table, {index} times a day."),
    ]


def thread(turns: int) -> list[Message]:
    out: list[Message] = []
    for index in range(turns):
        out += turn(index)
    return out


def bench_fit(turns: int, requests: int, window: int, history: list[Message] | None = None,
              what: str = "worst case: the whole thread in one list (nothing compacted, nothing read away)",
              ) -> dict[str, Any]:
    history = thread(turns) if history is None else history
    lst = MessageList()
    lst.add_history(history)
    lst.add_input([Message.user("What did the first workflow do?")])
    budget = ContextBudget("bench", window=window)
    budget.calibrate(1_000, 1_200)
    sizes = Sizes()
    base: list[float] = []
    ours: list[float] = []
    wall: list[float] = []
    last = None
    clock = time.thread_time  # CPU of this thread: what fitting costs, whoever else runs on the machine
    for index in range(requests):
        start = clock()
        messages = lst.for_llm("You help with n8n workflows.", [])
        built, built_wall = clock(), time.perf_counter()
        last = fit_request(messages, TOOLS, budget, {"max_tokens": 1024}, sizes)
        done, done_wall = clock(), time.perf_counter()
        base.append((built - start) * 1e3)
        ours.append((done - built) * 1e3)
        wall.append((done_wall - built_wall) * 1e3)
        # the loop adds the answer's tool call and result before the next request
        call = f"live_{index}"
        lst.add_response([Message.assistant("", tool_calls=[ToolCallPart(id=call, name="get-workflow", arguments={})]),
                          Message.tool(call, "get-workflow", "ok " * 50)])
    assert last is not None
    ours.sort()
    base.sort()
    wall.sort()
    return {
        "what": what, "window": window, "messages": len(history), "requests": requests,
        "fit_cpu_ms": {"median": round(statistics.median(ours), 3), "p95": round(ours[int(len(ours) * 0.95) - 1], 3),
                       "max": round(ours[-1], 3)},
        "fit_wall_ms": {"median": round(statistics.median(wall), 3), "p95": round(wall[int(len(wall) * 0.95) - 1], 3)},
        "baseline_for_llm_cpu_ms": {"median": round(statistics.median(base), 3),
                                "p95": round(base[int(len(base) * 0.95) - 1], 3)},
        "last_request": {"messages_sent": len(last.messages), "tokens": last.tokens, "available": last.available,
                         "stubbed": last.stubbed, "dropped": last.dropped, "cut": last.cut},
        "goal_ms": 5.0,
    }


async def stored_history(turns: int) -> list[Message]:
    """What a run of a ``turns``-turn thread reads: memory's ``load_history`` (the messages after the
    observations' cursor, at most ``last_messages`` = 200 as the assistant configures it)."""
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteStore(Path(folder) / "bench.sqlite3") as store:
            memory = StoreMemory(store, last_messages=200)
            await memory.save_messages("t", thread(turns), run_id="r0")
            return await memory.load_history("t")


async def bench_compaction(turns: int) -> dict[str, Any]:
    observer = ScriptedModel(lambda request: ScriptedResponse(text="## The user wants\n- workflows read"))
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteStore(Path(folder) / "bench.sqlite3") as store:
            memory = StoreMemory(store, last_messages=None)
            await memory.save_messages("t", thread(turns), run_id="r0")
            agent = Agent("bench", "You help.", observer, memory=memory)
            start = time.perf_counter()
            history = await memory.load_history("t")
            loaded = time.perf_counter()
            run = Run("bench", observer, "run", "t", 1, {})
            run.list.add_history(history)
            budget = ContextBudget("bench", window=128_000)
            before = time.perf_counter()
            result = await agent._compact(run, budget, reason="manual", everything=True)
            done = time.perf_counter()
            assert result is not None
            observer_s = 0.0  # the scripted observer answers at once; its time is in ``compaction_ms``
            return {"turns": turns, "messages_observed": result.messages, "facts_kept": len(result.observations.facts),
                    "compaction_ms": round((done - before) * 1e3, 1), "observer_model_s": observer_s,
                    "baseline_load_history_ms": round((loaded - start) * 1e3, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    started = load()
    read = asyncio.run(stored_history(args.turns))
    out = {
        "fit": [bench_fit(args.turns, args.requests, window, read, "a run of the thread: the history memory reads "
                          "(after the observations' cursor, at most 200 messages)") for window in (128_000, 8_192)]
        + [bench_fit(args.turns, args.requests, window) for window in (128_000, 8_192)],
        "compaction": asyncio.run(bench_compaction(args.turns)),
        "machine": machine(started),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
