"""Reducer ingest benchmark: a 100k-event, delta-heavy stream folded by ``RunReducer`` and
by ``Conversation``, from decoded wire dicts (``protocol.ingest.decode`` then the fold, as stored
events and SSE frames arrive; for the conversation a thousand at a time, joined, as a client's
batch) and from parsed models (what a live in-process stream gives), plus the cost of ``tree()``
and of a 30 Hz ``drain_changes`` cadence. Prints JSON.

    python benchmarks/reducer.py [--events N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import os

from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import Event, parse_event
from instance_ai_tui.protocol.ingest import DeltaRun, StreamItem, decode, join
from instance_ai_tui.protocol.reducer import RunReducer, fold_json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine


def make_stream(count: int) -> list[dict[str, Any]]:
    """run-start, then responses of ~500 events each: a burst of reasoning deltas, text
    deltas (a status change now and then), a tool call and its result; every fourth
    response also spawns a sub-agent that streams text. Ends with run-finish."""
    run, root = "run_bench", "orchestrator-run_bench"
    events: list[dict[str, Any]] = [
        {"type": "run-start", "runId": run, "agentId": root, "payload": {"messageId": "m1", "messageGroupId": "mg_1"}}
    ]
    response = 0
    while len(events) < count - 1:
        response += 1
        rid = f"r{response}"
        for _ in range(30):
            events.append({"type": "reasoning-delta", "runId": run, "agentId": root, "responseId": rid,
                           "payload": {"text": "thinking "}})
        for index in range(450):
            if index % 150 == 0:
                events.append({"type": "status", "runId": run, "agentId": root,
                               "payload": {"message": f"step {response}.{index}"}})
            events.append({"type": "text-delta", "runId": run, "agentId": root, "responseId": rid,
                           "payload": {"text": "token "}})
        call = f"tc_{response}"
        events.append({"type": "tool-call", "runId": run, "agentId": root, "responseId": rid,
                       "payload": {"toolCallId": call, "toolName": "workflows", "args": {"action": "list"}}})
        if response % 4 == 0:
            child = f"agent-{response}"
            events.append({"type": "agent-spawned", "runId": run, "agentId": child,
                           "payload": {"parentId": root, "role": "builder", "tools": []}})
            for _ in range(20):
                events.append({"type": "text-delta", "runId": run, "agentId": child, "responseId": f"c{response}",
                               "payload": {"text": "sub "}})
            events.append({"type": "agent-completed", "runId": run, "agentId": child,
                           "payload": {"role": "builder", "result": "ok"}})
        events.append({"type": "tool-result", "runId": run, "agentId": root,
                       "payload": {"toolCallId": call, "result": {"workflows": [{"id": "1"}]}}})
    del events[count - 1 :]
    events.append({"type": "run-finish", "runId": run, "agentId": root, "payload": {"status": "completed"}})
    return events


def bench_reducer(events: list[dict[str, Any]], drain_every: int = 0) -> float:
    reducer = RunReducer()
    apply = reducer.apply
    start = time.perf_counter()
    if drain_every:
        for index, event in enumerate(events):
            apply(_typed(event))
            if index % drain_every == 0:
                reducer.drain_changes()
    else:
        for event in events:
            apply(_typed(event))
    elapsed = time.perf_counter() - start
    assert not reducer.diagnostics, list(reducer.diagnostics)[:3]
    return elapsed


def bench_reducer_models(events: list[Event]) -> float:
    reducer = RunReducer()
    apply = reducer.apply
    start = time.perf_counter()
    for event in events:
        apply(event)
    elapsed = time.perf_counter() - start
    assert not reducer.diagnostics, list(reducer.diagnostics)[:3]
    return elapsed


def _typed(data: dict[str, Any]) -> Any:
    item = decode(None, data)
    return item if type(item) is DeltaRun else item.event  # type: ignore[union-attr]


def bench_conversation(events: list[dict[str, Any]]) -> float:
    conversation = Conversation("t")
    fold = conversation.fold
    start = time.perf_counter()
    for first in range(0, len(events), 1000):  # a client's batch: a page, joined
        fold(join([decode(None, event) for event in events[first:first + 1000]]))
    return time.perf_counter() - start


def bench_conversation_models(events: list[Event]) -> float:
    conversation = Conversation("t")
    fold = conversation.fold
    start = time.perf_counter()
    for event in events:
        fold([StreamItem(None, event)])
    return time.perf_counter() - start


def best(fn: Any, *args: Any, repeat: int = 3) -> float:
    return min(fn(*args) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    count = parser.parse_args().events
    events = make_stream(count)
    deltas = sum(1 for e in events if e["type"] in ("text-delta", "reasoning-delta", "status"))
    reducer_s = best(bench_reducer, events)
    # a UI draining at ~30 Hz while ingesting 300k events/s drains every ~10k events
    drained_s = best(bench_reducer, events, 10_000)
    conversation_s = best(bench_conversation, events)
    models = [parse_event(event) for event in events]
    reducer_models_s = best(bench_reducer_models, models)
    conversation_models_s = best(bench_conversation_models, models)
    reducer = fold_json(RunReducer(), events)
    start = time.perf_counter()
    tree_dict = reducer.tree_dict()
    tree_dict_s = time.perf_counter() - start
    start = time.perf_counter()
    tree = reducer.tree()
    tree_s = time.perf_counter() - start
    result = {
        "events": len(events),
        "hot_path_events": deltas,
        "reducer_events_per_s": round(len(events) / reducer_s),
        "reducer_with_drain_events_per_s": round(len(events) / drained_s),
        "conversation_events_per_s": round(len(events) / conversation_s),
        "reducer_models_events_per_s": round(len(events) / reducer_models_s),
        "conversation_models_events_per_s": round(len(events) / conversation_models_s),
        "tree_dict_ms": round(tree_dict_s * 1000, 2),
        "tree_ms": round(tree_s * 1000, 2),
        "timeline_entries": len(tree_dict["timeline"]),
        "text_chars": len(tree.text_content),
        "python": sys.version.split()[0],
    }
    print(json.dumps(with_machine(result)))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
