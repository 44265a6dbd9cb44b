"""A Markdown table drawn as lines, as Textual's ``MarkdownTable`` draws it.

``MarkdownTable`` mounts a widget per cell in a grid (``MarkdownTableContent``: auto columns,
gutter 1, thin keylines) and re-lays the whole grid out when a streamed row arrives, so a
growing table cost a relayout of every cell per flush, and every removed cell became garbage
for the cyclic collector (the 100-300 ms pauses of ``benchmarks/tui_realistic.py``).

Here the same picture is computed from the cells' text: the column widths through Textual's
own ``resolve`` (auto widths, expanded to the table's width, shrunk to each column's longest
word when too wide), rows as high as their tallest wrapped cell, headers in ``$primary`` and
bottom-aligned, the keylines of a regular grid but between the rows: a rule under the header
only, as GitHub draws a table (a rule under every row made 15 rows 31 lines).
``tests/tui_parts/test_flat_markdown.py`` compares it cell by cell with ``MarkdownTable``, whose
rules between the body's rows it leaves out. A table whose columns would be crushed
narrower than their padding is left to ``Markdown`` (``lay_table`` returns ``None``), as are
tables ``parse_document`` does not draw flat (in a list, in a piece beside a quote): Textual's
grid draws those with a keyline under every row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.content import Content

from ..textual_internals import resolve_lengths

if TYPE_CHECKING:
    from markdown_it.token import Token

#: padding of a cell (``padding: 0 1``) and the grid's gutter
_PAD = 1
_GUTTER = 1


@dataclass(slots=True)
class Table:
    headers: list[Content] = field(default_factory=list)
    rows: list[list[Content]] = field(default_factory=list)
    #: the source line of the header row and of each row (``markdown_document`` re-parses
    #: only the last rows of a table that grows at the end of the text); -1: not known
    line: int = -1
    row_lines: list[int] = field(default_factory=list)


class TableBuilder:
    """Collects a table's cells from markdown-it's tokens (``table_open`` .. ``table_close``)."""

    __slots__ = ("_cell", "_in_head", "table")

    def __init__(self, line: int = -1) -> None:
        self.table = Table(line=line)
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
            self.table.row_lines.append(token.map[0] if token.map else -1)
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
        if not all(table.rows):
            kept = [(row, line) for row, line in zip(table.rows, table.row_lines, strict=True) if row]
            table.rows = [row for row, _line in kept]
            table.row_lines = [line for _row, line in kept]
        return table


#: a cell's text -> (its longest line, its longest word) in cells
_MEASURES: dict[str, tuple[int, int]] = {}


def _measure(content: Content) -> tuple[int, int]:
    """How wide a cell wants to be, and how narrow it may get (measured once per text: a
    streamed table is laid out again on every frame)."""
    plain = content.plain
    measured = _MEASURES.get(plain)
    if measured is None:
        longest_line = max((cell_len(line) for line in plain.split("\n")), default=0)
        longest_word = max((cell_len(word) for word in plain.split()), default=0)
        if len(_MEASURES) >= _ROWS_MAX:
            _MEASURES.clear()
        measured = _MEASURES[plain] = (longest_line, longest_word)
    return measured


#: laid-out rows by (cells, widths, header, base style): a streamed table is laid out again
#: on every frame, and only its last row (or its widths) changed; the same rows are the
#: same ``Content`` objects, so a caller can tell unchanged lines by identity
_ROWS: dict[tuple[object, ...], list[Content]] = {}
_ROWS_MAX = 4096
#: the keylines between rows by (widths, base style, which rule)
_RULES: dict[tuple[object, ...], Content] = {}


def _row_lines(row: list[Content], widths: tuple[int, ...], header: bool, bar: Content, base: str) -> list[Content]:
    """One grid row's lines: each cell wrapped in its column, padded, between keylines,
    ``base`` under everything."""
    key = (widths, header, base, *((cell.plain, tuple(cell.spans)) for cell in row))
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
        lines.append(Content("").join(parts).stylize_before(base))
    if len(_ROWS) >= _ROWS_MAX:
        _ROWS.clear()
    _ROWS[key] = lines
    return lines


def _has_link(content: Content) -> bool:
    return any(not isinstance(span.style, str) and "@click" in span.style.meta for span in content.spans)


def lay_table(table: Table, width: int, *, dark: bool = True, base: str = "") -> list[Content] | None:
    """The table's lines at ``width`` cells (style names ``.flat--th`` for header text,
    ``.flat--keyline`` for the lines, ``base`` under everything), or ``None`` when a column would be narrower than a
    cell's padding (``Markdown`` crops such a grid in ways not reproduced here), or in a
    light theme when a cell holds a link (its automatic colour is worked out against the
    table's own background there)."""
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
            longest_line, longest_word = _measure(cell)
            if longest_line + 2 * _PAD > natural[index]:
                natural[index] = longest_line + 2 * _PAD
            if longest_word + 2 * _PAD > minimums[index]:
                minimums[index] = longest_word + 2 * _PAD
    widths = resolve_lengths(natural, width - 2, _GUTTER, minimums)  # the keylines take a cell on each side
    if any(size < 2 * _PAD + 1 for size in widths) or sum(widths) + _GUTTER * (columns - 1) != width - 2:
        return None

    keyline = ".flat--keyline"
    sizes = tuple(widths)

    def rule(left: str, middle: str, right: str) -> Content:
        key = (sizes, base, left, middle, right)
        line = _RULES.get(key)
        if line is None:
            text = left + middle.join("─" * size for size in widths) + right
            if len(_RULES) >= _ROWS_MAX:
                _RULES.clear()
            line = _RULES[key] = Content.styled(text, keyline).stylize_before(base)
        return line

    bar = Content.styled("│", keyline)
    lines = [rule("┌", "┬", "┐")]
    for row_index, row in enumerate(grid):
        lines.extend(_row_lines(row, sizes, row_index == 0, bar, base))
        if row_index == 0 and len(grid) > 1:
            lines.append(rule("├", "┼", "┤"))  # a rule under the header only, as GitHub draws a table
    lines.append(rule("└", "┴", "┘"))
    return lines
