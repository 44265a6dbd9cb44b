"""The router's cost per connection does not grow with the workflow (``workflow_route``): counted in
questions asked, not in seconds (the machine is shared; the benchmark ``workflow_scale`` measures time)."""

from __future__ import annotations

import pytest

from instance_ai_tui.protocol import workflow_route
from instance_ai_tui.protocol.workflow_graph import parse_workflow
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
