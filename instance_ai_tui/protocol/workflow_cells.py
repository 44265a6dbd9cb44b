"""Phase 4 of the workflow layout (``workflow_layout``): n8n's pixels to cells.

Two monotone maps, columns then rows: the editor's distances scaled, pushed apart only where two boxes
would collide (and, ``make_room``, where the lines leaving a column of nodes need more channels than the
gap after it has), so the order of the nodes on each axis is the editor's.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from rich.cells import cell_len

from .workflow_graph import WfEdge, Workflow

#: nodes of the editor whose boxes overlap on the y axis (n8n's nodes are 100 px high) stand side by side
SIDE_BY_SIDE_PX = 100.0
#: the smallest room between two boxes side by side (columns) and one above another (rows)
MIN_GAP = 4
ROW_GAP = 1


class Shape(Protocol):
    """A box's size and ports (``workflow_layout._Shape``)."""

    @property
    def w(self) -> int: ...

    @property
    def h(self) -> int: ...

    @property
    def outputs(self) -> Mapping[int, tuple[int, str]]: ...

    @property
    def ai_ports(self) -> Mapping[str, int]: ...


@dataclass(slots=True)
class Axis:
    """A monotone map of one axis from n8n's pixels to cells (piecewise linear between the keys)."""

    keys: list[float]
    cells: list[int]
    slope: float

    def __call__(self, value: float) -> int:
        keys, cells = self.keys, self.cells
        if not keys:
            return 0
        i = bisect.bisect_left(keys, value)
        if i < len(keys) and keys[i] == value:
            return cells[i]
        if i == 0:
            return cells[0] - round((keys[0] - value) * self.slope)
        if i == len(keys):
            return cells[-1] + round((value - keys[-1]) * self.slope)
        a, b = keys[i - 1], keys[i]
        return cells[i - 1] + round((value - a) / (b - a) * (cells[i] - cells[i - 1]))


#: rows of n8n's canvas (pixels) in which boxes standing side by side are looked for
BAND_PX = 25.0


def cells(workflow: Workflow, shapes: Mapping[str, Shape], px: Mapping[str, tuple[float, float]],
           extra: Mapping[float, int], stickies: list[tuple[float, float, float, float]],
           scale: tuple[float, float], count_room: int = 0) -> tuple[dict[str, tuple[int, int]], Axis, Axis]:
    """Cells of each box's top-left corner (phase 4): columns first — boxes that stand side by side in
    the editor (their 100 px high nodes overlap vertically) are kept apart by their width and a gap —,
    then rows — boxes whose columns overlap are kept apart by their height and a gap. Both maps are
    monotone and every push carries on to what lies beyond, so the order on each axis is the editor's
    and the distances elsewhere stay as they were. ``extra``: more room before a column (px x -> cells).
    ``count_room``: more room after a node with branch labels (after a run: for the items beside them)."""
    names = [n.name for n in workflow.nodes]
    # ------------------------------------------------------------- columns
    by_x: dict[float, list[str]] = defaultdict(list)
    for name in names:
        by_x[px[name][0]].append(name)
    keys = sorted(set(by_x) | {v for x0, _y0, x1, _y1 in stickies for v in (x0, x1)})
    band_right: dict[int, int] = {}
    cells_x: list[int] = []
    shift = 0
    prev_key: float | None = None
    prev_cell = 0
    for key in keys:
        base = round((key - keys[0]) * scale[0])
        cand = base + shift + extra.get(key, 0)
        group = by_x.get(key, ())
        if group and prev_key is not None and key - prev_key >= 1:
            cand = max(cand, prev_cell + 1)  # distinct columns stay distinct: the order is kept
        for name in group:
            y = px[name][1]
            for band in range(int(y // BAND_PX), int((y + SIDE_BY_SIDE_PX) // BAND_PX)):
                right = band_right.get(band)
                if right is not None and right > cand:
                    cand = right
        shift = cand - base
        cells_x.append(cand)
        if group:
            for name in group:
                y = px[name][1]
                label = max((cell_len(label) for _, label in shapes[name].outputs.values()), default=0)
                gap = MIN_GAP + label + (count_room if label else 0)
                right = cand + shapes[name].w + gap
                for band in range(int(y // BAND_PX), int((y + SIDE_BY_SIDE_PX) // BAND_PX)):
                    if band_right.get(band, -1) < right:
                        band_right[band] = right
            prev_key, prev_cell = key, cand
    x_axis = Axis(keys, cells_x, scale[0])
    at_key = dict(zip(keys, cells_x, strict=True))  # every node's x is a key: what the axis maps it to
    col = {name: at_key[px[name][0]] for name in names}
    # ------------------------------------------------------------- rows
    by_y: dict[float, list[str]] = defaultdict(list)
    for name in names:
        by_y[px[name][1]].append(name)
    ykeys = sorted(set(by_y) | {v for _x0, y0, _x1, y1 in stickies for v in (y0, y1)})
    # per column (from column -1, a box's left margin), the lowest row taken so far; -1: none (rows start at 0)
    col_bottom = [-1] * (max((col[name] + shapes[name].w for name in names), default=0) + 3)
    cells_y: list[int] = []
    shift = 0
    prev_key, prev_cell = None, 0
    for key in ykeys:
        base = round((key - ykeys[0]) * scale[1])
        cand = base + shift
        group = by_y.get(key, ())
        if group and prev_key is not None and key - prev_key >= 1:
            cand = max(cand, prev_cell + 1)
        for name in group:  # the box's columns and its margins: col - 1 .. col + w, from index col
            lowest = max(col_bottom[col[name]:col[name] + shapes[name].w + 2])
            if lowest > cand:
                cand = lowest
        shift = cand - base
        cells_y.append(cand)
        if group:
            for name in group:
                shape = shapes[name]
                bottom = cand + shape.h + ROW_GAP + (1 + sum(shape.ai_ports.values()) if shape.ai_ports else 0)
                lo, hi = col[name], col[name] + shape.w + 2
                col_bottom[lo:hi] = [v if v >= bottom else bottom for v in col_bottom[lo:hi]]
            prev_key, prev_cell = key, cand
    y_axis = Axis(ykeys, cells_y, scale[1])
    at_key = dict(zip(ykeys, cells_y, strict=True))
    return {name: (col[name], at_key[px[name][1]]) for name in names}, x_axis, y_axis


def make_room(workflow: Workflow, shapes: Mapping[str, Shape], px: Mapping[str, tuple[float, float]],
               at: Mapping[str, tuple[int, int]], ports: Mapping[WfEdge, int], x_keys: list[float],
               extra: dict[float, int], count_room: int = 0) -> bool:
    """Room for the vertical channels before routing: the lines leaving a column of nodes turn in the gap
    after it; they need as many channels there as the most of their vertical spans that overlap. Where
    the gap is narrower, it is widened (``extra``). ``count_room``: the columns lines with a branch label
    run straight after it (after a run, for their items). Returns whether anything was widened."""
    spans: dict[float, dict[tuple[str, int], list[int]]] = defaultdict(dict)
    for e in workflow.edges:
        if e.is_ai:
            continue
        sy = at[e.source][1] + shapes[e.source].outputs.get(ports[e], (1, ""))[0]
        ty = at[e.target][1] + 1
        if sy == ty:
            continue
        net = spans[px[e.source][0]].setdefault((e.source, ports[e]), [sy, sy])
        net[0], net[1] = min(net[0], ty), max(net[1], ty)
    right: dict[float, int] = defaultdict(int)
    for name, (x, _y) in at.items():
        key = px[name][0]
        label = max((cell_len(label) for _, label in shapes[name].outputs.values()), default=0)
        right[key] = max(right[key], x + shapes[name].w + MIN_GAP + (label + count_room if label and count_room else 0))
    left = {px[name][0]: x for name, (x, _y) in at.items()}
    widened = False
    for key, nets in spans.items():
        events = sorted([(a, 1) for a, _b in nets.values()] + [(b + 1, -1) for _a, b in nets.values()])
        depth = most = 0
        for _y, step in events:
            depth += step
            most = max(most, depth)
        after = bisect.bisect_right(x_keys, key)
        if after >= len(x_keys):
            continue
        room = left[x_keys[after]] - right[key]
        if most + 2 > room:
            extra[x_keys[after]] += most + 2 - room
            widened = True
    return widened
