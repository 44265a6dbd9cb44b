"""Whole drawings as one string, for tests that compare them. The product writes them a line at
a time (``text_render.text_lines`` for an agent tree) or draws a window of them
(``workflow_draw.draw``); these join what the product draws, nothing else."""

from __future__ import annotations

from instance_ai_tui.protocol.text_render import text_lines
from instance_ai_tui.protocol.tree import AgentNode


def tree_text(tree: AgentNode, *, ascii: bool = False) -> str:
    """The agent tree as the ``replay``/``run`` printers draw it, lines joined (no trailing newline)."""
    return "\n".join(text_lines(tree, ascii=ascii))
