"""Generated workflows for the canvas's scale benchmark (``benchmarks/workflow_scale.py``) and the
reader-trace test at 1,000 nodes (``tests/protocol/test_workflow_reader.py``): chains, fan-outs, diamonds,
AI clusters (agents sharing a model, each with tools) and random DAGs, with or without n8n-like positions.
Plain workflow JSON, as n8n exports it."""

from __future__ import annotations

import random
from typing import Any

SET = "n8n-nodes-base.set"
LC = "@n8n/n8n-nodes-langchain."


def _node(name: str, type_name: str = SET, pos: tuple[float, float] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"name": name, "type": type_name, "typeVersion": 1, "parameters": {}}
    if pos is not None:
        node["position"] = [pos[0], pos[1]]
    return node


def _link(conns: dict[str, Any], a: str, b: str, output: int = 0, index: int = 0, kind: str = "main") -> None:
    outs = conns.setdefault(a, {}).setdefault(kind, [])
    while len(outs) <= output:
        outs.append([])
    outs[output].append({"node": b, "type": kind, "index": index})


def chain(n: int, positions: bool = True) -> dict[str, Any]:
    nodes = [_node(f"N{i}", "n8n-nodes-base.manualTrigger" if i == 0 else SET, (i * 220.0, 0.0) if positions else None)
             for i in range(n)]
    conns: dict[str, Any] = {}
    for i in range(1, n):
        _link(conns, f"N{i - 1}", f"N{i}")
    return {"name": f"chain {n}", "nodes": nodes, "connections": conns}


def fan_out(n: int, positions: bool = True) -> dict[str, Any]:
    nodes = [_node("Start", "n8n-nodes-base.manualTrigger", (0.0, n * 80.0) if positions else None)]
    conns: dict[str, Any] = {}
    for i in range(1, n):
        nodes.append(_node(f"N{i}", SET, (220.0, i * 160.0) if positions else None))
        _link(conns, "Start", f"N{i}")
    return {"name": f"fan-out {n}", "nodes": nodes, "connections": conns}


def diamonds(n: int, positions: bool = True) -> dict[str, Any]:
    """IF -> two branches -> Merge, repeated."""
    nodes = [_node("Start", "n8n-nodes-base.manualTrigger", (0.0, 100.0) if positions else None)]
    conns: dict[str, Any] = {}
    prev, k, x = "Start", 0, 220.0
    while len(nodes) + 4 <= n:
        a, t, f, m = f"If{k}", f"T{k}", f"F{k}", f"M{k}"
        nodes += [_node(a, "n8n-nodes-base.if", (x, 100.0) if positions else None),
                  _node(t, SET, (x + 220, 0.0) if positions else None),
                  _node(f, SET, (x + 220, 200.0) if positions else None),
                  _node(m, "n8n-nodes-base.merge", (x + 440, 100.0) if positions else None)]
        _link(conns, prev, a)
        _link(conns, a, t, 0)
        _link(conns, a, f, 1)
        _link(conns, t, m, 0, 0)
        _link(conns, f, m, 0, 1)
        prev, k, x = m, k + 1, x + 660
    return {"name": f"diamonds {n}", "nodes": nodes, "connections": conns}


def ai_clusters(n: int, positions: bool = True) -> dict[str, Any]:
    """Agents in a chain, each with a memory and two tools; every 4 agents share one model."""
    nodes = [_node("Chat", LC + "chatTrigger", (0.0, 0.0) if positions else None)]
    conns: dict[str, Any] = {}
    prev, k = "Chat", 0
    while len(nodes) + 5 <= n:
        x = 300.0 + k * 700
        agent = f"Agent{k}"
        nodes.append(_node(agent, LC + "agent", (x, 0.0) if positions else None))
        _link(conns, prev, agent)
        if k % 4 == 0:
            nodes.append(_node(f"Model{k // 4}", LC + "lmChatOpenAi", (x, 240.0) if positions else None))
        _link(conns, f"Model{k // 4}", agent, kind="ai_languageModel")
        for j, (sub, kind) in enumerate((("Memory", "ai_memory"), ("ToolA", "ai_tool"), ("ToolB", "ai_tool"))):
            name = f"{sub}{k}"
            nodes.append(_node(name, LC + "toolCode", (x + 140 * (j + 1), 240.0) if positions else None))
            _link(conns, name, agent, kind=kind)
        prev, k = agent, k + 1
    return {"name": f"AI clusters {n}", "nodes": nodes, "connections": conns}


def random_dag(n: int, positions: bool = False, seed: int = 1) -> dict[str, Any]:
    """Each node fed by a random earlier one (plus a few more edges and loops back)."""
    rng = random.Random(seed)
    nodes = [_node(f"N{i}", "n8n-nodes-base.manualTrigger" if i == 0 else SET) for i in range(n)]
    conns: dict[str, Any] = {}
    for i in range(1, n):
        _link(conns, f"N{rng.randrange(0, i)}", f"N{i}")
    for _ in range(n // 10):
        a, b = sorted(rng.sample(range(n), 2))
        _link(conns, f"N{a}", f"N{b}")
    for _ in range(n // 50):
        a, b = sorted(rng.sample(range(1, n), 2))
        _link(conns, f"N{b}", f"N{a}")
    if positions:
        depth = [0] * n
        for source, kinds in conns.items():
            for targets in kinds["main"]:
                for t in targets:
                    a, b = int(source[1:]), int(t["node"][1:])
                    if a < b:
                        depth[b] = max(depth[b], depth[a] + 1)
        rows: dict[int, int] = {}
        for i, node in enumerate(nodes):
            row = rows.get(depth[i], 0)
            rows[depth[i]] = row + 1
            node["position"] = [depth[i] * 220.0, row * 160.0]
    return {"name": f"random {n}", "nodes": nodes, "connections": conns}


SHAPES = {"chain": chain, "fan_out": fan_out, "diamonds": diamonds, "ai_clusters": ai_clusters,
          "random_dag": random_dag}
