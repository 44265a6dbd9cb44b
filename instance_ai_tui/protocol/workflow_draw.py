"""Draw a laid-out workflow on a grid of character cells, with a style code per cell.

``draw`` builds the cells of one window of the layout (the panel draws what is in view; the headless
drawing the whole), so its cost follows the window, not the workflow. A box is drawn from its ``Box``
alone (``draw_box``), so a change of one node's state redraws only its cells. Lines are drawn from the
routes' corners; where lines meet, turn or cross, the box-drawing character is chosen from the directions
that meet in the cell. Main connections are solid with an arrow into the target's input; AI connections
dotted, into a labelled port on the consumer's bottom border. Sticky notes are dotted frames behind,
with their heading. Every state is a glyph and a word (never colour alone).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from rich.cells import cell_len, get_character_cell_size

from .workflow_graph import RUN_GLYPH, NodeKind, NodeRun, RunState
from .workflow_layout import Box, Detail, Layout, LineEnds


class Style(IntEnum):
    """What a cell is, for colouring (the characters alone already say it)."""

    BLANK = 0
    BORDER = 1
    EDGE = 2
    AI_EDGE = 3
    LABEL = 4
    TRIGGER = 5
    ACTION = 6
    AI = 7
    FLOW = 8
    MUTED = 9
    RAN = 10
    FAILED = 11
    NOT_REACHED = 12
    NEW = 13
    CHANGED = 14
    ARROW = 15
    DISABLED = 16
    NOTE = 17
    ERROR_EDGE = 18
    #: items on a connection after a run
    COUNT = 19
    #: a sticky note's frame and label in n8n's colour of the note (``Sticky.color`` 1-7; its text is ``NOTE``)
    NOTE_YELLOW = 20
    NOTE_GOLD = 21
    NOTE_RED = 22
    NOTE_GREEN = 23
    NOTE_BLUE = 24
    NOTE_PURPLE = 25
    NOTE_GREY = 26
    #: the inside of a sticky note and its text, filled with the note's colour as n8n fills it (what is drawn
    #: over it, boxes and lines, keeps its own style)
    NOTE_FILL_YELLOW = 27
    NOTE_FILL_GOLD = 28
    NOTE_FILL_RED = 29
    NOTE_FILL_GREEN = 30
    NOTE_FILL_BLUE = 31
    NOTE_FILL_PURPLE = 32
    NOTE_FILL_GREY = 33


def note_style(color: int) -> Style:
    """The style of a note's frame and label for n8n's ``color`` (1-7; anything else as 1, yellow)."""
    return Style(Style.NOTE_YELLOW + (color - 1 if 1 <= color <= 7 else 0))


def note_fill(color: int) -> Style:
    """The style of a note's inside and text for n8n's ``color`` (as ``note_style``)."""
    return Style(Style.NOTE_FILL_YELLOW + (color - 1 if 1 <= color <= 7 else 0))


KIND_STYLE = {NodeKind.TRIGGER: Style.TRIGGER, NodeKind.ACTION: Style.ACTION, NodeKind.AI: Style.AI,
              NodeKind.FLOW: Style.FLOW}
STATE_STYLE = {"ran": Style.RAN, "failed": Style.FAILED, "not reached": Style.NOT_REACHED,
               "running": Style.MUTED}
#: marks of what a create/update call did to a node: glyph + word
MARKS = {"new": ("+ new", Style.NEW), "changed": ("~ changed", Style.CHANGED)}
#: the glyph of a disabled node (before its name, whatever the box's width) and its word
DISABLED_GLYPH = "⊘"

_U, _D, _L, _R = 1, 2, 4, 8
LINE = {
    _U: "│", _D: "│", _U | _D: "│", _L: "─", _R: "─", _L | _R: "─",
    _D | _R: "┌", _D | _L: "┐", _U | _R: "└", _U | _L: "┘",
    _U | _D | _R: "├", _U | _D | _L: "┤", _L | _R | _D: "┬", _L | _R | _U: "┴", _U | _D | _L | _R: "┼",
}
DOTTED = {**LINE, _U: "┆", _D: "┆", _U | _D: "┆", _L: "┄", _R: "┄", _L | _R: "┄"}
#: the arms of every line character (what a reader follows)
ARMS: dict[str, int] = {}
for _table in (LINE, DOTTED):
    for _mask, _char in _table.items():
        ARMS[_char] = ARMS.get(_char, 0) | _mask
ARMS["▶"] = _L
#: an output nothing is connected to
STUB = "╴"
#: sticky notes' frame
NOTE_CHAR = "·"
#: what text from outside written inside the drawing (a sticky note's) may not hold: every box-drawing
#: character (U+2500-U+257F: lines, corners, junctions, the stub) and the arrow, which read as lines
_LINE_LOOKALIKES = {**dict.fromkeys(range(0x2500, 0x2580), NOTE_CHAR), **dict.fromkeys(map(ord, ARMS), NOTE_CHAR),
                    ord(STUB): NOTE_CHAR}


# --------------------------------------------------------------------------- text in cells


def cells_of(text: str, width: int) -> list[str]:
    """``text`` as exactly ``width`` cells: a wide character is followed by ``""``; cut with ``…``."""
    out: list[str] = []
    used = 0
    for index, char in enumerate(text):
        size = get_character_cell_size(char)
        if size == 0:
            continue
        rest_fits = cell_len(text[index:]) <= width - used
        if used + size > width or (not rest_fits and used + size > width - 1):
            out.append("…")
            used += 1
            break
        out.append(char)
        if size == 2:
            out.append("")
        used += size
    out.extend(" " * (width - used))
    return out[:width] if len(out) > width else out


def status_text(run: NodeRun | None, *, compact: bool = False, cells: int | None = None) -> str:
    """``✓ ran · 3 items``, ``✓ 3 runs · 3 items``, ``✗ failed: <error>``, ``○ not reached``; zoomed out
    (``compact``) the state alone (``✓ 3 runs``). In ``cells``: the longest of its forms that is whole
    (the counts shortened, then left out: ``✓ 3 runs · 45000`` / ``✓ 3 runs``; only an error's message is
    ever cut, with ``…``), the glyph alone when not even the word fits (boxes are measured so it does)."""
    glyph = RUN_GLYPH[run.state if run else RunState.NOT_REACHED]
    forms = _status_forms(run, compact)
    if cells is None:
        return forms[0]
    failed_with = run is not None and run.state is RunState.FAILED and bool(run.error) and not compact
    if failed_with and cell_len(forms[0]) > cells >= 12:
        return "".join(cells_of(forms[0], cells)).rstrip()  # the error matters most: "✗ failed: chan…"
    for form in forms:
        if cell_len(form) <= cells:
            return form
    return glyph


def _status_forms(run: NodeRun | None, compact: bool) -> list[str]:
    if run is None or run.state is RunState.NOT_REACHED:
        return [f"{RUN_GLYPH[RunState.NOT_REACHED]} not reached"]
    glyph = RUN_GLYPH[run.state]
    word = f"{glyph} {run.state.value}"
    done = f"{glyph} {run.runs} runs" if run.runs > 1 and run.state is RunState.RAN else word
    if compact:
        return [done, word]
    if run.state is RunState.FAILED:
        forms = [f"{glyph} failed: {run.error}"] if run.error else []
        return [*forms, f"{glyph} {run.label}", f"{glyph} failed"]
    if run.state is RunState.RAN:
        return [f"{glyph} {run.label}", f"{done} · {run.items}", done]
    return [f"{glyph} {run.label}"]


# --------------------------------------------------------------------------- drawing


@dataclass(slots=True)
class Drawing:
    """One window of the canvas as rows of cells; ``styles`` has a ``Style`` per cell. ``x0``/``y0``: the
    window's top-left cell in the layout."""

    layout: Layout
    chars: list[list[str]]
    styles: list[list[int]]
    x0: int = 0
    y0: int = 0

    @property
    def width(self) -> int:
        return len(self.chars[0]) if self.chars else 0

    @property
    def height(self) -> int:
        return len(self.chars)

    def text(self) -> str:
        """Plain text (no escape codes), trailing blanks cut."""
        return "\n".join("".join(row).rstrip() for row in self.chars).rstrip("\n") + "\n"

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.chars]


def draw(layout: Layout, *, runs: Mapping[str, NodeRun] | None = None, marks: Mapping[str, str] | None = None,
         window: tuple[int, int, int, int] | None = None) -> Drawing:
    """The cells of ``window`` (x, y, width, height in the layout; the whole layout when ``None``)."""
    x0, y0, w, h = window if window is not None else (0, 0, layout.width, layout.height)
    w, h = max(0, w), max(0, h)
    chars = [[" "] * w for _ in range(h)]
    styles = [[0] * w for _ in range(h)]
    drawing = Drawing(layout, chars, styles, x0, y0)
    x1, y1 = x0 + w, y0 + h
    for region in layout.regions:
        if region.x < x1 and x0 < region.x + region.w and region.y < y1 and y0 < region.y + region.h:
            _draw_region(drawing, region.x, region.y, region.w, region.h, region.label, region.body,
                         note_style(region.color), note_fill(region.color))
    masks = _draw_lines(drawing, layout)
    if runs:
        _draw_counts(drawing, layout, runs, masks)
    for bx, by, text in layout.labels:
        if by < y0 or by >= y1 or bx >= x1 or bx + len(text) < x0:
            continue
        row, srow = chars[by - y0], styles[by - y0]
        for k, char in enumerate(cells_of(text, cell_len(text))):
            x = bx + k - x0
            if 0 <= x < w:
                if row[x] not in "─╴ " and char != "":
                    break  # the label ends where its line turns or another crosses
                row[x] = char
                srow[x] = Style.LABEL
    for sx, sy in layout.stubs:
        if x0 <= sx < x1 and y0 <= sy < y1:
            chars[sy - y0][sx - x0] = STUB
            styles[sy - y0][sx - x0] = Style.EDGE
    for box in layout.boxes.values():
        if box.x < x1 and x0 < box.x + box.w and box.y < y1 and y0 < box.y + box.h:
            draw_box(drawing, box.name, runs=runs, marks=marks)
    if window is not None and w:  # a wide character cut by the window's edge is not drawn by halves
        for row in chars:
            if row[0] == "":
                row[0] = " "
            if get_character_cell_size(row[-1]) == 2:
                row[-1] = " "
    return drawing


def _draw_lines(drawing: Drawing, layout: Layout) -> _Masks:
    """The lines in the window; returns the arms of each line cell drawn.

    The arms are or-ed into one list of ints per row of the window (with a bit for "a main line runs
    here" and one for "an error output's line runs here"), not into a dict of cells: a window of three
    screens in the middle of a big workflow holds some 70,000 cells of lines, and this is what the panel
    does before it paints."""
    x0, y0 = drawing.x0, drawing.y0
    w, h = drawing.width, drawing.height
    x1, y1 = x0 + w, y0 + h
    grid = [[0] * w for _ in range(h)]
    arrows: list[tuple[int, int]] = []
    for route in layout.routes:
        flat = route.flat
        xs, ys = flat[0::2], flat[1::2]
        if max(xs) < x0 or min(xs) >= x1 or max(ys) < y0 or min(ys) >= y1:
            continue
        pts = route.points
        main = not route.edge.is_ai
        flag = (_MAIN | (_ERROR if route.edge.kind != "main" or _is_error_port(layout, route) else 0)) if main else 0
        sx, sy = pts[0]
        if not route.joins and x0 <= sx < x1 and y0 <= sy < y1:  # towards the port it leaves
            grid[sy - y0][sx - x0] |= (_L if main else _D) | flag
        for (ax, ay), (bx, by) in itertools.pairwise(pts):
            if ay == by:
                if not y0 <= ay < y1:
                    continue
                row = grid[ay - y0]
                lo, hi = (ax, bx) if ax < bx else (bx, ax)
                if x0 <= lo < x1:
                    row[lo - x0] |= _R | flag
                if x0 <= hi < x1:
                    row[hi - x0] |= _L | flag
                through = _L | _R | flag
                for i in range(max(lo + 1, x0) - x0, min(hi, x1) - x0):
                    row[i] |= through
            else:
                if not x0 <= ax < x1:
                    continue
                i = ax - x0
                lo, hi = (ay, by) if ay < by else (by, ay)
                if y0 <= lo < y1:
                    grid[lo - y0][i] |= _D | flag
                if y0 <= hi < y1:
                    grid[hi - y0][i] |= _U | flag
                through = _U | _D | flag
                for j in range(max(lo + 1, y0) - y0, min(hi, y1) - y0):
                    grid[j][i] |= through
        ex, ey = pts[-1]
        if x0 <= ex < x1 and y0 <= ey < y1:
            grid[ey - y0][ex - x0] |= (_R if main else _U) | flag
        if main:
            arrows.append((ex, ey))
    chars, styles = drawing.chars, drawing.styles
    for j, row in enumerate(grid):
        if not any(row):
            continue
        crow, srow = chars[j], styles[j]
        for i, cell in enumerate(row):
            if cell:
                arms = cell & _ALL
                if cell & _MAIN:
                    crow[i] = LINE.get(arms, "┼")
                    srow[i] = Style.ERROR_EDGE if cell & _ERROR else Style.EDGE
                else:
                    crow[i] = DOTTED.get(arms, "┼")
                    srow[i] = Style.AI_EDGE
    for x, y in arrows:
        if x0 <= x < x1 and y0 <= y < y1:
            chars[y - y0][x - x0] = "▶"
            styles[y - y0][x - x0] = Style.ARROW
    return _Masks(grid, x0, y0)


#: a cell's bits besides its arms: a main line runs there; an error output's line does
_MAIN, _ERROR = 16, 32
_ALL = _U | _D | _L | _R


class _Masks:
    """The arms of the line cells of a window (``_draw_lines``), read by cell."""

    __slots__ = ("grid", "x0", "y0")

    def __init__(self, grid: list[list[int]], x0: int, y0: int) -> None:
        self.grid, self.x0, self.y0 = grid, x0, y0

    def get(self, cell: tuple[int, int], default: int) -> int:
        i, j = cell[0] - self.x0, cell[1] - self.y0
        if 0 <= j < len(self.grid) and 0 <= i < len(self.grid[j]):
            return self.grid[j][i] & _ALL or default
        return default


def count_text(run: NodeRun | None, port: int, *, compact: bool = False) -> str:
    """What a connection from output ``port`` carried in an execution, as n8n writes it on the line
    (``3 items``; ``3 items total`` summed over the passes of a node that ran several times, a loop's;
    ``3`` zoomed out); "" when nothing (or not known: a node of several outputs without per-output counts)."""
    if run is None or run.state not in (RunState.RAN, RunState.FAILED):
        return ""
    counts = run.items_by_output
    if port < len(counts):
        n = counts[port]
    elif not counts and port == 0:
        n = run.items
    else:
        return ""
    if n <= 0:
        return ""
    if compact:
        return str(n)
    return f"{n} item{'s' if n != 1 else ''}{' total' if run.runs > 1 else ''}"


def _draw_counts(drawing: Drawing, layout: Layout, runs: Mapping[str, NodeRun],
                 masks: _Masks) -> None:
    """Items on connections where they fit: on the line's last straight piece that has room for the
    words and a cell of line either side, nothing crossing it there (else the one before; else the number
    alone the same way; else none)."""
    x0, y0, w, h = drawing.x0, drawing.y0, drawing.width, drawing.height
    compact = layout.detail is not Detail.FULL
    taken = {(x + k, y) for x, y, text in layout.labels if y0 <= y < y0 + h
             for k in range(-1, cell_len(text) + 1)}  # branch labels (and a cell either side)
    for route in layout.routes:
        edge = route.edge
        if edge.is_ai:
            continue
        text = count_text(runs.get(edge.source), layout.ports.get(edge, edge.output), compact=compact)
        if not text:
            continue
        xs, ys = route.flat[0::2], route.flat[1::2]
        if not (min(ys) < y0 + h and max(ys) >= y0 and min(xs) < x0 + w and max(xs) >= x0):
            continue
        pts = route.points
        pieces = list(itertools.pairwise(pts))
        number = text.split(" ", 1)[0]
        shorter = text.removesuffix(" total")
        for form in dict.fromkeys((text, shorter, number)):  # the words; else the number alone (a short line)
            if _write_count(drawing, form, pieces, masks, taken):
                break


def _write_count(drawing: Drawing, text: str, pieces: list[tuple[tuple[int, int], tuple[int, int]]],
                 masks: _Masks, taken: set[tuple[int, int]]) -> bool:
    """``text`` on the last straight piece of a line with room for it and a cell of line either side,
    nothing crossing or joining it there; whether it was written."""
    x0, y0, w, h = drawing.x0, drawing.y0, drawing.width, drawing.height
    size = cell_len(text)
    for index in range(len(pieces) - 1, -1, -1):
        (ax, ay), (bx, by) = pieces[index]
        if ay != by or not y0 <= ay < y0 + h:
            continue
        # not the corners (nor the arrow's cell); the first cell out of the port is plain line
        lo, hi = min(ax, bx) + (0 if index == 0 and ax < bx else 1), max(ax, bx) - 1
        if hi - lo + 1 < size + 2:
            continue
        # in the middle of the piece; else at its end (after a branch label: "├─done─3 items total─┐")
        for start in dict.fromkeys((lo + (hi - lo + 1 - size) // 2, hi - size)):
            cells = range(start - 1, start + size + 1)
            if not any(masks.get((x, ay), _L | _R) != _L | _R or (x, ay) in taken for x in cells if x0 <= x < x0 + w):
                break  # nothing crosses or joins the line there, and no branch label is written on it
        else:
            continue
        row, srow = drawing.chars[ay - y0], drawing.styles[ay - y0]
        for k, char in enumerate(cells_of(text, size)):
            if x0 <= start + k < x0 + w:
                row[start + k - x0] = char
                srow[start + k - x0] = Style.COUNT
        return True
    return False


def _is_error_port(layout: Layout, route: object) -> bool:
    edge = route.edge  # type: ignore[attr-defined]
    box = layout.boxes.get(edge.source)
    return box is not None and box.out_labels.get(layout.ports.get(edge, -1)) == "error"


def _draw_region(drawing: Drawing, rx: int, ry: int, rw: int, rh: int, label: str,
                 body: tuple[str, ...] = (), frame: Style = Style.NOTE_YELLOW,
                 fill: Style = Style.NOTE_FILL_YELLOW) -> None:
    """A sticky note: a dotted frame, its heading on the top edge (both in the note's colour, ``frame``: the
    heading says what the note is whatever the colour), its inside filled with the colour (``fill``: blank
    cells, the same characters), the first lines of its text inside (each cut to the frame with ``…``; what
    does not fit below is left out). The text is the author's,
    from outside: already made visible (``Sticky``), and here no character of it may read as a line
    (``│``, ``┼``, ``▶``…: a reader following the lines would take it for one)."""
    chars, styles = drawing.chars, drawing.styles
    x0, y0 = drawing.x0, drawing.y0
    w, h = drawing.width, drawing.height
    for y in (ry, ry + rh - 1):
        if 0 <= y - y0 < h:
            row, srow = chars[y - y0], styles[y - y0]
            for x in range(max(rx, x0), min(rx + rw, x0 + w)):
                row[x - x0] = NOTE_CHAR
                srow[x - x0] = frame
    for y in range(max(ry + 1, y0), min(ry + rh - 1, y0 + h)):
        for x in (rx, rx + rw - 1):
            if 0 <= x - x0 < w:
                chars[y - y0][x - x0] = NOTE_CHAR
                styles[y - y0][x - x0] = frame
    for y in range(max(ry + 1, y0), min(ry + rh - 1, y0 + h)):
        srow = styles[y - y0]
        for x in range(max(rx + 1, x0), min(rx + rw - 1, x0 + w)):
            srow[x - x0] = fill
    text = f" {label} "
    if rw > 6 and 0 <= ry - y0 < h:
        _put(drawing, rx + 2, ry, cells_of(_not_a_line(text), min(cell_len(text), rw - 4)), frame)
    if rw > 6:
        for k, line in enumerate(body[:max(0, rh - 2)]):
            y = ry + 1 + k
            if y0 <= y < y0 + h:
                _put(drawing, rx + 2, y, cells_of(_not_a_line(line), min(cell_len(line), rw - 4)), fill)


def _not_a_line(text: str) -> str:
    """``text`` with every character that reads as a piece of line (a box-drawing character, an arrow,
    the stub) as ``·``."""
    return text.translate(_LINE_LOOKALIKES)


def draw_box(drawing: Drawing, name: str, *, runs: Mapping[str, NodeRun] | None = None,
             marks: Mapping[str, str] | None = None) -> Box:
    """(Re)draw one node's box in the window; returns it (its rectangle is what changed)."""
    layout = drawing.layout
    box = layout.boxes[name]
    node = layout.workflow.node(name)
    assert node is not None
    x0, y0, w, h = box.x, box.y, box.w, box.h
    border = Style.BORDER
    blank = [" "] * (w - 2)
    for y in range(y0 + 1, y0 + h - 1):
        _put(drawing, x0, y, ["│", *blank, "│"], border)
    _put(drawing, x0, y0, ["╭", *["─"] * (w - 2), "╮"], border)
    bottom = ["╰", *["─"] * (w - 2), "╯"]
    bottom_styles: list[int] = [border] * w
    for kind, columns in box.ai_ports.items():
        for col in columns:
            bottom[col - x0] = "┬"
        label = box.ai_labels.get(kind, "")
        start = columns[-1] + 1 - x0
        for k, char in enumerate(label):
            if start + k < w - 1:
                bottom[start + k] = char
                bottom_styles[start + k] = Style.LABEL
    _put_styled(drawing, x0, y0 + h - 1, bottom, bottom_styles)
    lines = line_ends(layout)
    for port, row in box.outputs.items():
        connected = (name, port) in lines.out_ports or (x0 + w, row) in lines.stubs
        _put(drawing, x0 + w - 1, row, ["├" if connected else "│"], border)
    for rows in box.inputs.values():
        for row in rows:
            if (x0 - 1, row) in lines.arrows:
                _put(drawing, x0, row, ["┤"], border)
    if box.top_port is not None and name in lines.ai_sources:
        _put(drawing, box.top_port, y0, ["┴"], border)
    inner = w - 2
    pad = 0
    if box.in_labels:  # Merge: the inputs' numbers inside the left border
        pad = 2
        for index, rows in box.inputs.items():
            for row in rows:
                _put(drawing, x0 + 1, row, [box.in_labels.get(index, ""), " "], Style.LABEL)
    glyph = DISABLED_GLYPH if node.disabled else node.glyph
    name_style = Style.DISABLED if node.disabled else KIND_STYLE[node.kind]
    shown = shown_names(layout).get(name, node.name)
    _put(drawing, x0 + 1 + pad, y0 + 1, cells_of(f"{glyph} {shown}", inner - pad), name_style)
    run = runs.get(name) if runs else None
    status = status_text(run, cells=inner - pad) if runs else ""
    state_style = STATE_STYLE.get(run.state.value if run else "not reached", Style.MUTED)
    if layout.detail is Detail.FULL:
        if h > 3:
            sub = f"off · {box.subtitle}" if node.disabled else box.subtitle
            _put(drawing, x0 + 1 + pad, y0 + 2, cells_of(sub, inner - pad),
                 Style.DISABLED if node.disabled else Style.MUTED)
        if layout.status_row and h > 4:
            _put(drawing, x0 + 1 + (pad if box.in_labels and 3 <= sum(map(len, box.inputs.values())) else 0),
                 y0 + 3, cells_of(status, inner - pad), state_style)
    else:
        if node.disabled:
            _put(drawing, x0 + 1, y0, cells_of("off", 3), Style.DISABLED)
        if runs:
            text = status_text(run, compact=True, cells=inner)
            _put(drawing, x0 + 1, y0 + h - 1, cells_of(text, min(cell_len(text), inner)), state_style)
    mark = (marks or {}).get(name)
    if mark in MARKS:
        text, style = MARKS[mark]
        _put(drawing, x0 + 1, y0, cells_of(text, min(len(text), inner)), style)
    return box


def shown_names(layout: Layout) -> dict[str, str]:
    """The names cut so that no two boxes read the same (made once per layout, kept on it). A name too long for its box
    is cut at the end with ``…`` (``Send an emai…``); where two or more would then read the same
    ("Chat Memory M…" for "Chat Memory Manager" and "…Manager1"), each keeps its start, ``…``, and the
    part where it differs from the others (``Chat…y Manager`` / ``Chat… Manager1``). Only the names that
    are cut are in the map."""
    if layout.names_cut is not None:
        return layout.names_cut
    room: dict[str, int] = {}
    cut: dict[str, str] = {}
    for name, box in layout.boxes.items():
        node = layout.workflow.node(name)
        glyph = DISABLED_GLYPH if node is None or node.disabled else node.glyph
        cells = box.w - 2 - (2 if box.in_labels else 0) - cell_len(glyph) - 1
        if cell_len(name) > cells > 0:
            room[name] = cells
            cut[name] = "".join(cells_of(name, cells))
    groups: dict[str, list[str]] = {}
    for name, text in cut.items():
        groups.setdefault(text, []).append(name)
    for names in groups.values():
        if len(names) < 2:
            continue
        tried = {n: _cut_where_it_differs(n, [m for m in names if m != n], room[n]) for n in names}
        if len(set(tried.values())) == len(names):
            cut.update(tried)
    layout.names_cut = cut
    return cut


def _common(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` have in common at their start."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return k


def _cut_where_it_differs(name: str, others: list[str], cells: int) -> str:
    """``name`` in ``cells``: its first third, ``…``, then from a little before where it first differs
    from every name of ``others`` (cut at the end with ``…`` if that is still too long)."""
    same = max((_common(name, o) for o in others), default=0)
    head_cells = max(2, cells // 3)
    head = "".join(cells_of(name, head_cells)).rstrip(" …")
    if name[:len(head)] != head:  # a wide character at the edge
        head = ""
    budget = cells - cell_len(head) - 1
    if budget < 2:
        return "".join(cells_of(name, cells))
    start = max(len(head), min(max(0, same - 1), len(name) - budget))
    while start > len(head) and cell_len(name[start:]) < budget:
        start -= 1
    return head + "…" + "".join(cells_of(name[start:], budget)).rstrip()


def line_ends(layout: Layout) -> LineEnds:
    """Which ports have lines (made once per layout, kept on it: boxes are drawn one by one)."""
    ends = layout.line_ends
    if ends is None:
        ends = layout.line_ends = LineEnds(
            {(r.edge.source, layout.ports[r.edge]) for r in layout.routes if not r.edge.is_ai},
            {(r.flat[-2], r.flat[-1]) for r in layout.routes if not r.edge.is_ai}, set(layout.stubs),
            {r.edge.source for r in layout.routes if r.edge.is_ai})
    return ends


def row_extents(layout: Layout) -> tuple[list[int], list[int]]:
    """Per row of ``layout``: the first column anything is drawn in and the column after the last (a row with
    nothing: ``width`` and 0). From the boxes, notes, labels, stubs and every piece of every line, swept
    row by row (a line's vertical piece spans many rows): the edges of a view say whether the drawing goes
    on past them without drawing the rows whole."""
    if layout.row_extents is not None:
        return layout.row_extents
    rects: list[tuple[int, int, int, int]] = []  # (first row, last row, first column, column after the last)
    rects += [(b.y, b.y + b.h - 1, b.x, b.x + b.w) for b in layout.boxes.values()]
    rects += [(r.y, r.y + r.h - 1, r.x, r.x + r.w) for r in layout.regions]
    rects += [(y, y, x, x + cell_len(text)) for x, y, text in layout.labels]
    rects += [(y, y, x, x + 1) for x, y in layout.stubs]
    for route in layout.routes:
        for (ax, ay), (bx, by) in itertools.pairwise(route.points):
            rects.append((min(ay, by), max(ay, by), min(ax, bx), max(ax, bx) + 1))
    rects.sort()
    height = layout.height
    left, right = [layout.width] * height, [0] * height
    lows: list[tuple[int, int]] = []  # (first column, last row) of the pieces open on this row
    highs: list[tuple[int, int]] = []  # (-column after the last, last row)
    i = 0
    for y in range(height):
        while i < len(rects) and rects[i][0] <= y:
            _, last, x0, x1 = rects[i]
            heapq.heappush(lows, (x0, last))
            heapq.heappush(highs, (-x1, last))
            i += 1
        while lows and lows[0][1] < y:
            heapq.heappop(lows)
        while highs and highs[0][1] < y:
            heapq.heappop(highs)
        if lows:  # (within the drawing: a note's frame may reach a cell past its width)
            left[y], right[y] = max(0, lows[0][0]), min(layout.width, -highs[0][0])
    layout.row_extents = (left, right)
    return left, right


def _put(drawing: Drawing, x: int, y: int, cells: list[str], style: int) -> None:
    """Write cells at layout cell (x, y), clipped to the window."""
    ry = y - drawing.y0
    if not 0 <= ry < drawing.height:
        return
    row, srow = drawing.chars[ry], drawing.styles[ry]
    w = drawing.width
    for k, char in enumerate(cells):
        rx = x + k - drawing.x0
        if 0 <= rx < w:
            row[rx] = char
            srow[rx] = style


def _put_styled(drawing: Drawing, x: int, y: int, cells: list[str], styles: list[int]) -> None:
    ry = y - drawing.y0
    if not 0 <= ry < drawing.height:
        return
    row, srow = drawing.chars[ry], drawing.styles[ry]
    for k, char in enumerate(cells):
        rx = x + k - drawing.x0
        if 0 <= rx < drawing.width:
            row[rx] = char
            srow[rx] = styles[k]
