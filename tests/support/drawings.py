"""Whole drawings as one string, for tests that compare them. The product writes them a line at
a time (``text_render.text_lines`` for an agent tree) or draws a window of them
(``workflow_draw.draw``); these join what the product draws, nothing else."""

from __future__ import annotations

from collections.abc import Mapping

from instance_ai_tui.protocol.text_render import text_lines
from instance_ai_tui.protocol.tree import AgentNode
from instance_ai_tui.protocol.workflow_draw import draw
from instance_ai_tui.protocol.workflow_graph import NodeRun, Workflow
from instance_ai_tui.protocol.workflow_layout import Detail, layout_workflow


def tree_text(tree: AgentNode, *, ascii: bool = False) -> str:
    """The agent tree as the ``replay``/``run`` printers draw it, lines joined (no trailing newline)."""
    return "\n".join(text_lines(tree, ascii=ascii))


def workflow_text(workflow: Workflow, detail: Detail = Detail.FULL, *, runs: Mapping[str, NodeRun] | None = None,
                  marks: Mapping[str, str] | None = None) -> str:
    """The whole workflow drawn as plain text (what the canvas and ``workflow show`` draw a window of)."""
    return draw(layout_workflow(workflow, detail, runs=runs), runs=runs, marks=marks).text()
