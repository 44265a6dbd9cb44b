"""The cells a screen update writes to a terminal, as the terminal applies them: the character
and style at each (x, y) (a cursor move that writes nothing writes no cell; a wide character
takes its cells)."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.segment import ControlType


def painted_cells(update: Any, console: Any) -> dict[tuple[int, int], tuple[str, object]]:
    """What one update (a Textual ``ChopsUpdate``/``LayoutUpdate``) writes, cell by cell."""
    cells: dict[tuple[int, int], tuple[str, object]] = {}
    x = y = 0
    for segment in update.__rich_console__(console, console.options):
        if segment.control:
            for control in segment.control:
                if control[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = control[1], control[2]
            continue
        for char in segment.text:
            if char == "\n":
                x, y = 0, y + 1
                continue
            cells[(x, y)] = (char, segment.style)
            x += cell_len(char)
    return cells
