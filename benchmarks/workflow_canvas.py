"""Workflow canvas benchmark: a 200-node workflow parsed, laid out and drawn (what ``/workflow`` and
``instance-ai workflow show`` wait for), and one node's state redrawn (what a running execution
costs per node). Prints JSON with the machine's load and a floor measured in the same run: building
and printing an empty grid of the same size, which any character drawing pays.

    python benchmarks/workflow_canvas.py [--nodes 200] [--repeat 15]

The issue's budget: 200 nodes laid out and drawn in < 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instance_ai_tui.protocol.workflow_draw import draw, draw_box
from instance_ai_tui.protocol.workflow_graph import NodeRun, RunState, parse_workflow
from instance_ai_tui.protocol.workflow_layout import Detail, layout_workflow
from tests.protocol.workflow_shapes import big, without_positions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine


def random_dag(count: int, seed: int) -> dict[str, Any]:
    """A harder case than people build: connections between random earlier and later nodes."""
    rng = random.Random(seed)
    nodes = [{"name": f"N{i}", "type": "n8n-nodes-base.set"} for i in range(count)]
    connections: dict[str, Any] = {}
    for i in range(1, count):
        src = rng.randrange(0, i)
        connections.setdefault(f"N{src}", {"main": [[]]})["main"][0].append({"node": f"N{i}", "type": "main",
                                                                           "index": 0})
    return {"name": "random", "nodes": nodes, "connections": connections}


def timed(fn: Any, repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(times), 2), "max_ms": round(max(times), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cases = {"built_by_people_with_positions": big(args.nodes),
             "built_by_people_no_positions": without_positions(big(args.nodes)),
             "random_tree_no_positions": random_dag(args.nodes, 1)}
    out: dict[str, Any] = {"nodes": args.nodes, "load_avg_1m": round(os.getloadavg()[0], 2),
                           "cpus": os.cpu_count(), "budget_ms": 100, "cases": {}}
    for name, data in cases.items():
        text = json.dumps(data)

        def whole(text: str = text) -> str:
            layout = layout_workflow(parse_workflow(json.loads(text)), Detail.FULL)
            return draw(layout).text()

        wf = parse_workflow(data)
        layout = layout_workflow(wf)
        width, height = layout.width, layout.height

        def floor(width: int = width, height: int = height) -> str:
            grid = [[" "] * width for _ in range(height)]
            return "\n".join("".join(row) for row in grid)

        runs = {n.name: NodeRun(RunState.RAN, 1) for n in wf.nodes}
        with_runs = layout_workflow(wf, runs=runs)
        drawing = draw(with_runs, runs=runs)
        target = wf.nodes[len(wf.nodes) // 2].name
        failed = {**runs, target: NodeRun(RunState.FAILED, 0, "boom")}
        out["cases"][name] = {
            "canvas_cells": f"{width}x{height}",
            "parse_layout_draw_text": timed(whole, args.repeat),
            "layout_only": timed(lambda wf=wf: layout_workflow(wf), args.repeat),
            "floor_empty_grid_text": timed(floor, args.repeat),
            "redraw_one_node": timed(lambda d=drawing, t=target, f=failed: draw_box(d, t, runs=f), args.repeat),
            "zoomed_out": timed(lambda wf=wf: draw(layout_workflow(wf, Detail.COMPACT)), args.repeat),
        }
    worst = max(c["parse_layout_draw_text"]["median_ms"] for c in out["cases"].values())
    out["within_budget"] = worst < 100
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
