"""A Markdown table drawn as lines, as Textual's ``MarkdownTable`` draws it.

``MarkdownTable`` mounts a widget per cell in a grid (``MarkdownTableContent``: auto columns,
gutter 1, thin keylines) and re-lays the whole grid out when a streamed row arrives, so a
growing table cost a relayout of every cell per flush, and every removed cell became garbage
for the cyclic collector (the 100-300 ms pauses of ``benchmarks/tui_realistic.py``).

Here the same picture is computed from the cells' text: the column widths through Textual's
own ``resolve`` (auto widths, expanded to the table's width, shrunk to each column's longest
word when too wide), rows as high as their tallest wrapped cell, headers in ``$primary`` and
bottom-aligned, the keylines of a regular grid. ``tests/tui_parts/test_flat_markdown.py``
compares it cell by cell with ``MarkdownTable``. A table whose columns would be crushed
narrower than their padding is left to ``Markdown`` (``lay_table`` returns ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.content import Content

if TYPE_CHECKING:
    from markdown_it.token import Token

#: padding of a cell (``padding: 0 1``) and the grid's gutter
_PAD = 1
_GUTTER = 1


@dataclass(slots=True)
class Table:
    headers: list[Content] = field(default_factory=list)
    rows: list[list[Content]] = field(default_factory=list)


class TableBuilder:
    """Collects a table's cells from markdown-it's tokens (``table_open`` .. ``table_close``)."""

    __slots__ = ("_cell", "_in_head", "table")

    def __init__(self) -> None:
        self.table = Table()
        self._in_head = False
        self._cell: Content | None = None

    def feed(self, token: Token, inline: Content | None) -> None:
        """One token inside the table; ``inline``: an inline token's content."""
        kind = token.type
        if kind == "thead_open":
            self._in_head = True
        elif kind == "thead_close":
            self._in_head = False
        elif kind == "tr_open" and not self._in_head:
            self.table.rows.append([])
        elif kind in ("th_open", "td_open"):
            self._cell = Content("")
        elif kind == "inline" and inline is not None:
            self._cell = inline
        elif kind in ("th_close", "td_close"):
            cell = self._cell if self._cell is not None else Content("")
            self._cell = None
            if self._in_head:
                self.table.headers.append(cell)
            elif self.table.rows:
                self.table.rows[-1].append(cell)

    def build(self) -> Table:
        table = self.table
        table.rows = [row for row in table.rows if row]
        return table


def _longest_line(content: Content) -> int:
    return max((cell_len(line) for line in content.plain.split("\n")), default=0)


def _longest_word(content: Content) -> int:
    words = content.plain.split()
    return max((cell_len(word) for word in words), default=0)


#: laid-out rows by (cells, widths, header): a streamed table is laid out again on every
#: frame, and only its last row (or its widths) changed
_ROWS: dict[tuple[object, ...], list[Content]] = {}
_ROWS_MAX = 4096


def _row_lines(row: list[Content], widths: tuple[int, ...], header: bool, bar: Content) -> list[Content]:
    """One grid row's lines: each cell wrapped in its column, padded, between keylines."""
    key = (widths, header, *((cell.plain, tuple(cell.spans)) for cell in row))
    cached = _ROWS.get(key)
    if cached is not None:
        return cached
    wrapped = [cell.wrap(max(1, widths[i] - 2 * _PAD), overflow="ellipsis") for i, cell in enumerate(row)]
    height = max((len(cell_lines) for cell_lines in wrapped), default=1)
    lines = []
    for y in range(height):
        parts = [bar]
        for index, size in enumerate(widths):
            text = Content("")
            if index < len(wrapped):
                cell_lines = wrapped[index]
                # a header is bottom-aligned in its row (``content-align: left bottom``)
                line_no = y - (height - len(cell_lines)) if header else y
                if 0 <= line_no < len(cell_lines):
                    text = cell_lines[line_no]
                    if header:
                        text = text.stylize_before(".flat--th")
            inner_width = size - 2 * _PAD
            if text.cell_length > inner_width:
                text = text.truncate(inner_width)
            parts.append(Content(" " * _PAD) + text.pad_right(inner_width - text.cell_length) + Content(" " * _PAD))
            parts.append(bar)
        lines.append(Content("").join(parts))
    if len(_ROWS) >= _ROWS_MAX:
        _ROWS.clear()
    _ROWS[key] = lines
    return lines


def _has_link(content: Content) -> bool:
    return any(not isinstance(span.style, str) and "@click" in span.style.meta for span in content.spans)


def lay_table(table: Table, width: int, *, dark: bool = True) -> list[Content] | None:
    """The table's lines at ``width`` cells (style names ``.flat--th`` for header text,
    ``.flat--keyline`` for the lines), or ``None`` when a column would be narrower than a
    cell's padding (``Markdown`` crops such a grid in ways not reproduced here), or in a
    light theme when a cell holds a link (its automatic colour is worked out against the
    table's own background there)."""
    from textual._resolve import resolve
    from textual.css.scalar import Scalar
    from textual.geometry import Size

    columns = len(table.headers)
    if columns == 0 or width < 3:
        return None
    cells = [*table.headers, *(cell for row in table.rows for cell in row)]
    if len(cells) % columns:
        return None  # a ragged grid: its keylines go round the cells there are
    if not dark and any(_has_link(cell) for cell in cells):
        return None
    grid = [cells[i : i + columns] for i in range(0, len(cells), columns)]
    natural = [0] * columns
    minimums = [1] * columns
    for row in grid:
        for index, cell in enumerate(row):
            natural[index] = max(natural[index], _longest_line(cell) + 2 * _PAD)
            minimums[index] = max(minimums[index], _longest_word(cell) + 2 * _PAD)
    inner = Size(width - 2, 0)  # the keylines take a cell on each side
    resolved = resolve(
        [Scalar.from_number(value) for value in natural],
        inner.width,
        _GUTTER,
        inner,
        inner,
        expand=True,
        shrink=True,
        minimums=minimums,
    )
    widths = [size for _offset, size in resolved]
    if any(size < 2 * _PAD + 1 for size in widths) or sum(widths) + _GUTTER * (columns - 1) != width - 2:
        return None

    keyline = ".flat--keyline"

    def rule(left: str, middle: str, right: str) -> Content:
        text = left + middle.join("─" * size for size in widths) + right
        return Content.styled(text, keyline)

    bar = Content.styled("│", keyline)
    lines = [rule("┌", "┬", "┐")]
    last = len(grid) - 1
    for row_index, row in enumerate(grid):
        lines.extend(_row_lines(row, tuple(widths), row_index == 0, bar))
        lines.append(rule("├", "┼", "┤") if row_index < last else rule("└", "┴", "┘"))
    return lines
