"""Draw a laid-out workflow on a grid of character cells, with a style code per cell.

A box is drawn from its ``Box`` alone (``draw_box``), so a change of one node's state redraws only its
cells; lines are drawn from the routes' corners, and where lines meet, turn or cross the right box-drawing
character is chosen from the directions that meet in the cell. Main connections are solid with an arrow
into the target's input; AI sub-connections are dotted. Every state is a glyph and a word.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from rich.cells import cell_len, get_character_cell_size

from .workflow_graph import RUN_GLYPH, NodeKind, NodeRun, RunState, Workflow
from .workflow_layout import Box, Detail, Layout, layout_workflow


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


KIND_STYLE = {NodeKind.TRIGGER: Style.TRIGGER, NodeKind.ACTION: Style.ACTION, NodeKind.AI: Style.AI,
              NodeKind.FLOW: Style.FLOW}
STATE_STYLE = {"ran": Style.RAN, "failed": Style.FAILED, "not reached": Style.NOT_REACHED,
               "running": Style.MUTED}
#: marks of what a create/update call did to a node: glyph + word
MARKS = {"new": ("+ new", Style.NEW), "changed": ("~ changed", Style.CHANGED)}


_U, _D, _L, _R = 1, 2, 4, 8
_LINE = {
    _U: "│", _D: "│", _U | _D: "│", _L: "─", _R: "─", _L | _R: "─",
    _D | _R: "┌", _D | _L: "┐", _U | _R: "└", _U | _L: "┘",
    _U | _D | _R: "├", _U | _D | _L: "┤", _L | _R | _D: "┬", _L | _R | _U: "┴", _U | _D | _L | _R: "┼",
}
_DOTTED = {**_LINE, _U: "┆", _D: "┆", _U | _D: "┆", _L: "┄", _R: "┄", _L | _R: "┄"}


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

def _status_text(run: NodeRun | None) -> str:
    if run is None:
        return ""
    return f"{RUN_GLYPH[run.state]} {run.label}"

# --------------------------------------------------------------------------- drawing


@dataclass(slots=True)
class Drawing:
    """The canvas as rows of cells; ``styles`` has a ``Style`` per cell."""

    layout: Layout
    chars: list[list[str]]
    styles: list[list[int]]

    def text(self) -> str:
        """Plain text (no escape codes), trailing blanks cut."""
        return "\n".join("".join(row).rstrip() for row in self.chars).rstrip("\n") + "\n"


def draw(layout: Layout, *, runs: Mapping[str, NodeRun] | None = None,
         marks: Mapping[str, str] | None = None) -> Drawing:
    w, h = layout.width, layout.height
    chars = [[" "] * w for _ in range(h)]
    styles = [[0] * w for _ in range(h)]
    masks = [[0] * w for _ in range(h)]
    joints: set[tuple[int, int]] = set()
    arrows: list[tuple[int, int]] = []
    # AI lines first: a cell a main line also crosses is drawn as main
    for route in sorted(layout.routes, key=lambda r: r.edge.is_main):
        pts = route.points
        main = route.edge.is_main
        style = Style.EDGE if main else Style.AI_EDGE
        x, y = pts[0]
        masks[y][x] |= _L if main else _D  # towards the port it leaves
        joints.add(pts[0])
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if y0 == y1:
                a, b = (x0, x1) if x0 < x1 else (x1, x0)
                row, srow = masks[y0], styles[y0]
                row[a] |= _R
                row[b] |= _L
                if b - a > 1:
                    row[a + 1:b] = [v | 12 for v in row[a + 1:b]]
                    chars[y0][a + 1:b] = ["─" if main else "┄"] * (b - a - 1)
                    srow[a + 1:b] = [style] * (b - a - 1)
            else:
                a, b = (y0, y1) if y0 < y1 else (y1, y0)
                masks[a][x0] |= _D
                masks[b][x0] |= _U
                for yy in range(a + 1, b):
                    masks[yy][x0] |= 3
                    styles[yy][x0] = style
                    joints.add((x0, yy))
            joints.add((x1, y1))
            styles[y1][x1] = style
        x, y = pts[-1]
        masks[y][x] |= _R if main else _U
        styles[pts[0][1]][pts[0][0]] = style
        if main:
            arrows.append(pts[-1])
    for x, y in joints:
        mask = masks[y][x]
        dotted = styles[y][x] == Style.AI_EDGE
        chars[y][x] = (_DOTTED if dotted else _LINE).get(mask, "┼")
        if not styles[y][x]:
            styles[y][x] = Style.EDGE
    for x, y in arrows:
        chars[y][x] = "▶"
        styles[y][x] = Style.ARROW
    for x, y, text in layout.labels:
        for k, char in enumerate(text):
            if 0 <= x + k < w and chars[y][x + k] in "─┄":
                chars[y][x + k] = char
                styles[y][x + k] = Style.LABEL
    drawing = Drawing(layout, chars, styles)
    for box in layout.boxes.values():
        draw_box(drawing, box.name, runs=runs, marks=marks)
    return drawing


def draw_box(drawing: Drawing, name: str, *, runs: Mapping[str, NodeRun] | None = None,
             marks: Mapping[str, str] | None = None) -> Box:
    """(Re)draw one node's box in place; returns it (its rectangle is what changed)."""
    layout = drawing.layout
    box = layout.boxes[name]
    node = layout.workflow.node(name)
    assert node is not None
    chars, styles = drawing.chars, drawing.styles
    x0, y0, w, h = box.x, box.y, box.w, box.h
    border = Style.BORDER
    for y in range(y0, y0 + h):
        row, srow = chars[y], styles[y]
        for x in range(x0, x0 + w):
            row[x] = " "
            srow[x] = 0
    top, bottom = chars[y0], chars[y0 + h - 1]
    for x in range(x0 + 1, x0 + w - 1):
        top[x] = bottom[x] = "─"
        styles[y0][x] = styles[y0 + h - 1][x] = border
    top[x0], top[x0 + w - 1], bottom[x0], bottom[x0 + w - 1] = "╭", "╮", "╰", "╯"
    for y in range(y0 + 1, y0 + h - 1):
        chars[y][x0] = chars[y][x0 + w - 1] = "│"
    for y in (y0, y0 + h - 1):
        styles[y][x0] = styles[y][x0 + w - 1] = border
    for y in range(y0 + 1, y0 + h - 1):
        styles[y][x0] = styles[y][x0 + w - 1] = border
    for y in box.outputs.values():
        chars[y][x0 + w - 1] = "├" if _connected(drawing, x0 + w, y) else "│"
    for y in box.inputs.values():
        chars[y][x0] = "┤" if _connected(drawing, x0 - 1, y) else "│"
    for px in box.ai_ports.values():
        bottom[px] = "┬"
    if box.top_port is not None:
        top[box.top_port] = "┴"
        end = x0 + w - 1
        for k, char in enumerate(box.top_label[: max(0, end - box.top_port - 2)]):
            top[box.top_port + 1 + k] = char
            styles[y0][box.top_port + 1 + k] = Style.LABEL
    inner = w - 2
    name_style = Style.DISABLED if node.disabled else KIND_STYLE[node.kind]
    label = f"{node.glyph} {node.name}" + (" (off)" if node.disabled else "")
    _put(drawing, x0 + 1, y0 + 1, cells_of(label, inner), name_style)
    run = runs.get(name) if runs else None
    status = _status_text(run) if run is not None else ""
    if runs and run is None:
        status = f"{RUN_GLYPH[RunState.NOT_REACHED]} not reached"
    state_style = STATE_STYLE.get(run.state.value if run else "not reached", Style.MUTED)
    if layout.detail is Detail.FULL:
        if h > 3:
            _put(drawing, x0 + 1, y0 + 2, cells_of(node.short_type, inner), Style.MUTED)
        if layout.status_row and h > 4:
            _put(drawing, x0 + 1, y0 + 3, cells_of(status, inner), state_style)
    elif status:
        state = run.state if run is not None else RunState.NOT_REACHED
        text = f"{RUN_GLYPH[state]} {state.value}"  # zoomed out: the word without the item count
        _put(drawing, x0 + 1, y0 + h - 1, cells_of(text, min(len(text), inner)), state_style)
    mark = (marks or {}).get(name)
    if mark in MARKS:
        text, style = MARKS[mark]
        _put(drawing, x0 + 1, y0, cells_of(text, min(len(text), inner)), style)
    return box


def _connected(drawing: Drawing, x: int, y: int) -> bool:
    return 0 <= x < len(drawing.chars[0]) and drawing.chars[y][x] not in (" ", "")


def _put(drawing: Drawing, x: int, y: int, cells: list[str], style: int) -> None:
    row, srow = drawing.chars[y], drawing.styles[y]
    for k, char in enumerate(cells):
        row[x + k] = char
        srow[x + k] = style


def render_text(workflow: Workflow, detail: Detail = Detail.FULL, *, runs: Mapping[str, NodeRun] | None = None,
                marks: Mapping[str, str] | None = None) -> str:
    """The workflow drawn as plain text (``instance-ai workflow show``, snapshots)."""
    return draw(layout_workflow(workflow, detail, runs=runs), runs=runs, marks=marks).text()
