"""Issue 15 item 8: 500 (or 5,000) nested agents and deeply nested JSON never raise RecursionError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.protocol.reducer import MAX_AGENT_DEPTH, RunReducer, build_agent_tree_wire
from tests.support.fold import apply_all_wire

REPO = Path(__file__).resolve().parents[2]


def nested_agents(count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "run-start", "runId": "r", "agentId": "a0", "payload": {"messageId": "m"}}]
    for i in range(1, count):
        events.append({"type": "agent-spawned", "runId": "r", "agentId": f"a{i}",
                       "payload": {"parentId": f"a{i - 1}", "role": f"level {i}", "tools": []}})
    events.append({"type": "text-delta", "runId": "r", "agentId": f"a{count - 1}", "payload": {"text": "deepest"}})
    events.append({"type": "run-finish", "runId": "r", "agentId": "a0", "payload": {"status": "completed"}})
    return events


def depth(node: dict[str, Any]) -> int:
    level = 0
    while node["children"]:
        node = node["children"][0]
        level += 1
    return level


@pytest.mark.parametrize("count", [500, 5000])
def test_nested_agents_are_capped_and_nothing_is_lost(count: int) -> None:
    reducer = apply_all_wire(RunReducer(), nested_agents(count))
    wire = reducer.tree_dict()
    json.dumps(wire)
    assert depth(wire) == MAX_AGENT_DEPTH - 1
    deepest = wire
    while deepest["children"]:
        deepest = deepest["children"][0]
    assert deepest["textContent"] == "deepest"  # the folded agents' text landed in the deepest kept one
    assert any("nests deeper" in d for d in reducer.diagnostics)
    assert depth(build_agent_tree_wire(nested_agents(count)).to_wire()) == MAX_AGENT_DEPTH - 1


def test_adopting_a_deep_snapshot_is_capped_too() -> None:
    def node(level: int, count: int) -> dict[str, Any]:
        return {"agentId": f"a{level}", "role": "x", "status": "completed", "textContent": "", "reasoning": "",
                "toolCalls": [], "timeline": [], "children": [node(level + 1, count)] if level + 1 < count else []}

    adopted = RunReducer.from_tree(node(0, 150))
    assert depth(adopted.tree_dict()) == MAX_AGENT_DEPTH - 1
    assert any("nested deeper" in d for d in adopted.diagnostics)


def replay(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "instance_ai_tui", "replay", str(path)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_replay_of_500_nested_agents_and_of_deep_json(tmp_path: Path) -> None:
    agents = replay(tmp_path, [json.dumps(e) for e in nested_agents(500)])
    assert "Traceback" not in agents.stderr and agents.returncode == 0, agents.stderr[-2000:]
    assert "deepest" in agents.stdout
    deep = "[" * 100_000 + "]" * 100_000
    lines = [json.dumps(e) for e in nested_agents(3)]
    lines.insert(1, '{"type": "text-delta", "runId": "r", "agentId": "a0", "payload": {"x": ' + deep + "}}")
    mixed = replay(tmp_path, lines)
    assert "Traceback" not in mixed.stderr and "RecursionError" not in mixed.stderr, mixed.stderr[-2000:]
    assert "nested deeper" in mixed.stderr and "deepest" in mixed.stdout
