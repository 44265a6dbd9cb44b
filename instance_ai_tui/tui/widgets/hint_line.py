"""A line of key hints ("1–4 choose · ↑/↓ move · Enter choose · s skip · ← back") that breaks only
between hints.

Textual wraps a ``Static`` at any space (a no-break space too), so a card's hint line cut a hint in
two or began its second row with "· ← back". ``HintLine`` packs the hints into rows of its own width
itself: a row holds whole hints joined by " · ", a break takes the separator's place, and only a
hint wider than the row is left to Textual's wrap."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from textual.widgets import Static

SEPARATOR = " · "


def pack_hints(hints: Iterable[str], width: int, separator: str = SEPARATOR) -> list[str]:
    """``hints`` in rows of at most ``width`` cells, whole hints only (a hint wider than ``width``
    takes a row of its own)."""
    rows: list[str] = []
    row = ""
    for hint in hints:
        if not hint:
            continue
        if row and cell_len(row) + cell_len(separator) + cell_len(hint) > width:
            rows.append(row)
            row = ""
        row = f"{row}{separator}{hint}" if row else hint
    if row:
        rows.append(row)
    return rows


class HintLine(Static):
    """Hints on as many rows as the width needs, broken between hints (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.hints: list[str] = []

    def set_hints(self, hints: Iterable[str]) -> None:
        self.hints = [hint for hint in hints if hint]
        self._draw()

    @property
    def text(self) -> str:
        """The hints on one line, as the footer and the help say them."""
        return SEPARATOR.join(self.hints)

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.size.width
        self.update("\n".join(pack_hints(self.hints, width)) if width > 0 else self.text)
