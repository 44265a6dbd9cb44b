"""A finished run is stored as n8n stores it: one block per answer segment (issue 14 item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from instance_ai_tui.protocol.reducer import RunReducer, build_agent_tree_wire
from instance_ai_tui.store.coalesce import plan_coalesce
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.fold import apply_wire

from .conftest import new_event

RUN = "run_c"
ROOT = f"orchestrator-{RUN}"
SUB = "agent-sub"


def ev(kind: str, payload: dict[str, Any], agent: str = ROOT, response: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": kind, "runId": RUN, "agentId": agent, "payload": payload}
    if response is not None:
        data["responseId"] = response
    return data


def words(kind: str, text: str, agent: str = ROOT, response: str | None = "r1") -> list[dict[str, Any]]:
    return [ev(kind, {"text": w}, agent, response) for w in text.split("|")]


RUN_EVENTS: list[dict[str, Any]] = [
    ev("run-start", {"messageId": "m1", "messageGroupId": "g1"}),
    *words("reasoning-delta", "Let |me |look."),
    *words("text-delta", "Looking |it up"),  # a kind change closes the reasoning segment
    ev("tool-call", {"toolCallId": "c1", "toolName": "list-workflows", "args": {}}, response="r1"),
    ev("tool-result", {"toolCallId": "c1", "result": [1, 2]}, response="r1"),
    ev("agent-spawned", {"parentId": ROOT, "role": "builder", "tools": []}, agent=SUB),
    *words("text-delta", "Sub |agent |text", agent=SUB, response="s1"),
    *words("text-delta", "You |have |two.", response="r2"),  # a new responseId: a new segment
    ev("text-delta", {"text": "ünïcödé ✓"}, response="r2"),
    ev("agent-completed", {"role": "builder", "result": "ok"}, agent=SUB),
    *words("text-delta", " More", response="r3"),  # one delta: stays as it is
    ev("run-finish", {"status": "completed"}),
]


def stored(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(i + 1, json.dumps(e)) for i, e in enumerate(events)]


def test_the_plan_keeps_every_fact_and_one_block_per_segment() -> None:
    plan = plan_coalesce(stored(RUN_EVENTS))
    kept = {i: json.loads(raw) for i, raw in stored(RUN_EVENTS) if i not in plan.remove}
    for event_id, (kind, raw) in plan.replace.items():
        kept[event_id] = json.loads(raw)
        assert kept[event_id]["type"] == kind
    blocks = [(e["type"], e["agentId"], e.get("responseId"), e["payload"]["text"]) for e in kept.values()
              if e["type"].endswith("-block")]
    assert blocks == [
        ("reasoning-block", ROOT, "r1", "Let me look."),
        ("text-block", ROOT, "r1", "Looking it up"),
        ("text-block", SUB, "s1", "Sub agent text"),
        ("text-block", ROOT, "r2", "You have two.ünïcödé ✓"),
    ]
    # every other event stays, in order; the one-delta segment is left alone
    facts = [e["type"] for e in kept.values() if not e["type"].endswith(("-block", "-delta"))]
    assert facts == [e["type"] for e in RUN_EVENTS if not e["type"].endswith("-delta")]
    assert sum(1 for e in kept.values() if e["type"] == "text-delta") == 1
    # and the tree is the same
    assert build_agent_tree_wire(list(kept[i] for i in sorted(kept))) == build_agent_tree_wire(RUN_EVENTS)


async def test_sqlite_coalesces_a_finished_run_and_resuming_inside_a_segment_still_converges(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "c.sqlite3") as store:
        await store.append_events("t", [new_event(e) for e in RUN_EVENTS])
        other = ev("thread-title-updated", {"title": "x"}) | {"runId": ""}
        await store.append_events("t", [new_event(other)])
        before = await store.read_events("t")
        removed = await store.coalesce_run("t", RUN)
        after = await store.read_events("t")
        assert removed == len(before) - len(after) > 0
        ids = [e.id for e in after]
        assert ids == sorted(set(ids)) and ids[-1] == before[-1].id  # monotonic; the last id unchanged
        assert after[-1].data()["type"] == "thread-title-updated"  # other runs' events untouched
        assert build_agent_tree_wire([e.data() for e in after]) == build_agent_tree_wire([e.data() for e in before])
        # a client that saw the run up to the middle of a segment, then resumes after the rewrite
        for cursor in range(1, before[-1].id):
            reducer = RunReducer()
            for event in before:
                if event.id <= cursor:
                    apply_wire(reducer, event.data())
            for event in after:
                if event.id > cursor:
                    apply_wire(reducer, event.data())
            assert reducer.tree_dict() == build_agent_tree_wire([e.data() for e in before]).to_wire(), cursor
        assert await store.coalesce_run("t", RUN) == 0  # idempotent
