"""The router's cost per connection does not grow with the workflow (``workflow_route``): counted in
questions asked, not in seconds (the machine is shared; the benchmark ``workflow_scale`` measures time)."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace
from typing import Any

import pytest

from instance_ai_tui.protocol import workflow_layout, workflow_route
from instance_ai_tui.protocol.workflow_graph import WfEdge, parse_workflow
from instance_ai_tui.protocol.workflow_layout import layout_workflow
from tests.support.workflow_shapes_gen import SHAPES


def _free_v_per_connection(monkeypatch: pytest.MonkeyPatch, n: int) -> float:
    asked = 0
    free_v = workflow_route.Grid.free_v

    def counted(self: workflow_route.Grid, x: int, y0: int, y1: int, net: workflow_route.Net) -> bool:
        nonlocal asked
        asked += 1
        return free_v(self, x, y0, y1, net)

    monkeypatch.setattr(workflow_route.Grid, "free_v", counted)
    wf = parse_workflow(SHAPES["random_dag"](n, True))
    layout = layout_workflow(wf)
    monkeypatch.undo()
    assert not layout.failed
    return asked / len(wf.edges)


def test_a_crowded_channel_is_not_asked_column_by_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """A random DAG at n8n's positions: the gap after a column of nodes holds a vertical per connection
    crossing it (hundreds at 2,000 nodes), and each new line looked for its column by asking every taken
    one in turn (5,000 nodes: 26 questions per connection, 1,000 nodes: 8). The columns another net's
    vertical already takes are passed over by one AND of the column's mask: the questions per connection
    stay about the same from 400 to 2,000 nodes."""
    small = _free_v_per_connection(monkeypatch, 400)
    big = _free_v_per_connection(monkeypatch, 2000)
    assert big <= 1.5 * small, (small, big)



def _channel_order_lines(length: int, nets: int = 24) -> tuple[int, dict[tuple[str, int], int]]:
    """Lines of Python ``_channel_order`` runs (its own and its lambdas'): a count of the work, the same
    on a busy machine as on a quiet one. ``nets`` sources side by side, each with one line along the same
    row to a target ``length`` columns to the right: every net is in every other's way."""
    boxes = {}
    edges, row_of = [], {}
    for i in range(nets):
        boxes[f"S{i}"] = SimpleNamespace(x=10 * i, y=0, w=5, outputs={0: 0})
        boxes[f"T{i}"] = SimpleNamespace(x=length + 10 * i, y=0, w=5, outputs={0: 0})
        edge = WfEdge(f"S{i}", f"T{i}")
        edges.append(edge)
        row_of[edge] = 0
    ports = dict.fromkeys(edges, 0)
    lines = 0

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == workflow_layout.__file__ else None

    sys.settrace(calls)
    try:
        rank = workflow_layout._channel_order(edges, boxes, ports, row_of)  # type: ignore[arg-type]
    finally:
        sys.settrace(None)
    return lines, rank


def test_the_order_of_channels_costs_the_same_however_long_the_lines() -> None:
    """Which net takes its channel first (``_channel_order``): a net arriving on a row was filed in every
    64 columns its line crosses, and each net leaving the row looked at every net filed in every 64 columns
    it reaches (a random DAG's lines are long and its drawing widens with the workflow: 1,528 filings for
    556 nets at 1,000 nodes, 15,707 for 2,726 at 5,000). A sweep along the row finds the same nets in the
    way: the same order, and the same lines of Python run, for lines 1,000 or 64,000 columns long."""
    short_lines, short_rank = _channel_order_lines(1_000)
    long_lines, long_rank = _channel_order_lines(64_000)
    assert long_rank == short_rank
    assert long_lines == short_lines, (short_lines, long_lines)
