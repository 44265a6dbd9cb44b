"""Orthogonal routing of a workflow's connections on a character grid, so that a reader can trust them.

A *net* is what leaves one output port: a main output (``(source, port)``) or a sub-node's top port.
Lines of one net may run together and branch (``┬``, ``├``); lines of two different nets may only
**cross** (``┼``: both go straight through the cell). So a reader following the characters from an
output port — turning at corners, taking every branch of a ``┬``, going straight on at a ``┼`` — reaches
exactly the inputs that port connects to. The router keeps that promise by checking every piece it lays
against what is there already (``Grid.free_h`` / ``free_v``):

- no box (with a one-cell margin left and right, so lines never run along a border or touch a port);
- no piece of another net on the same row (horizontal) or column (vertical) overlapping it;
- no corner or end of another net on it, and none of its own corners on another net's line.

Main connections leave right (``H-V-H``: out, one vertical channel, in), or — when boxes are in the way
or the target lies behind (loops) — go round on a free *track* row (``H-V-H-V-H``). Sub-node
connections leave upwards from the sub-node's top (``V-H-V``, or ``V-H-V-H-V``) into the consumer's
port on its bottom border. The router says which connections it could not lay (``Routing.failed``);
the layout then widens the drawing where they start and routes again.

Every query looks only at the row or column it concerns (dicts of short lists), so routing costs about
the same per connection whatever the size of the workflow.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

Point = tuple[int, int]
Net = Hashable

#: how far the router looks for a channel or a track before it gives up (cells)
SEARCH = 400


@dataclass(slots=True)
class Rect:
    x: int
    y: int
    w: int
    h: int


@dataclass(slots=True)
class Grid:
    """What occupies the grid: boxes (static) and the pieces laid so far (per row / per column)."""

    #: row -> merged (x0, x1) intervals of boxes with their margin; column -> (y0, y1) intervals
    row_boxes: dict[int, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    col_boxes: dict[int, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    #: row -> [(x0, x1, net)], column -> [(y0, y1, net)]
    hsegs: dict[int, list[tuple[int, int, Net]]] = field(default_factory=lambda: defaultdict(list))
    vsegs: dict[int, list[tuple[int, int, Net]]] = field(default_factory=lambda: defaultdict(list))
    #: corners and ends of lines (and label cells): row -> sorted [(x, net)], column -> sorted [(y, net)]
    corner_row: dict[int, list[tuple[int, Net]]] = field(default_factory=lambda: defaultdict(list))
    corner_col: dict[int, list[tuple[int, Net]]] = field(default_factory=lambda: defaultdict(list))
    #: the arms (U=1, D=2, L=4, R=8) of the lines at every corner and end laid so far
    arms: dict[Point, int] = field(default_factory=dict)
    #: the lowest row any box reaches (tracks of last resort run below it)
    bottom: int = 0

    @classmethod
    def of(cls, rects: Iterable[Rect]) -> Grid:
        grid = cls()
        rows: dict[int, list[tuple[int, int]]] = defaultdict(list)
        cols: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for r in rects:
            for y in range(r.y, r.y + r.h):
                rows[y].append((r.x - 1, r.x + r.w))
            for x in range(r.x - 1, r.x + r.w + 1):
                cols[x].append((r.y, r.y + r.h - 1))
            grid.bottom = max(grid.bottom, r.y + r.h)
        for store, source in ((grid.row_boxes, rows), (grid.col_boxes, cols)):
            for key, spans in source.items():
                store[key] = _merge(spans)
        return grid

    # ------------------------------------------------------------------ queries
    def box_on_h(self, y: int, x0: int, x1: int) -> bool:
        return _hits(self.row_boxes.get(y), x0, x1)

    def box_on_v(self, x: int, y0: int, y1: int) -> bool:
        return _hits(self.col_boxes.get(x), y0, y1)

    def _other_corner(self, table: dict[int, list[tuple[int, Net]]], key: int, a: int, b: int, net: Net) -> bool:
        points = table.get(key)
        if not points:
            return False
        i = bisect.bisect_left(points, (a,), key=lambda p: (p[0],))
        while i < len(points) and points[i][0] <= b:
            if points[i][1] != net:
                return True
            i += 1
        return False

    def _on_other_h(self, x: int, y: int, net: Net) -> bool:
        return any(a <= x <= b and n != net for a, b, n in self.hsegs.get(y, ()))

    def _on_other_v(self, x: int, y: int, net: Net) -> bool:
        return any(a <= y <= b and n != net for a, b, n in self.vsegs.get(x, ()))

    def free_h(self, y: int, x0: int, x1: int, net: Net, *, boxes_from: int | None = None,
               boxes_to: int | None = None) -> bool:
        """Whether a horizontal piece of ``net`` may lie on row ``y`` from ``x0`` to ``x1`` (its ends
        are corners). ``boxes_from``/``boxes_to`` narrow the box check (a port's own cell)."""
        a, b = min(x0, x1), max(x0, x1)
        if self.box_on_h(y, a if boxes_from is None else boxes_from, b if boxes_to is None else boxes_to):
            return False
        if any(p <= b and a <= q and n != net for p, q, n in self.hsegs.get(y, ())):
            return False
        if self._other_corner(self.corner_row, y, a, b, net):
            return False
        return not (self._on_other_v(a, y, net) or self._on_other_v(b, y, net))

    def free_v(self, x: int, y0: int, y1: int, net: Net) -> bool:
        a, b = min(y0, y1), max(y0, y1)
        if self.box_on_v(x, a, b):
            return False
        if any(p <= b and a <= q and n != net for p, q, n in self.vsegs.get(x, ())):
            return False
        if self._other_corner(self.corner_col, x, a, b, net):
            return False
        return not (self._on_other_h(x, a, net) or self._on_other_h(x, b, net))

    def free_cell(self, x: int, y: int, net: Net) -> bool:
        return self.free_h(y, x, x, net) and self.free_v(x, y, y, net)

    def reach_right(self, y: int, x0: int, net: Net, limit: int) -> int:
        """The farthest x a horizontal of ``net`` from ``x0`` can reach on row ``y`` (at most ``limit``)."""
        stop = limit
        for p, _q in self.row_boxes.get(y, ()):
            if p > x0:
                stop = min(stop, p - 1)
        for p, q, n in self.hsegs.get(y, ()):
            if n != net and q >= x0:
                stop = min(stop, max(p, x0) - 1)
        points = self.corner_row.get(y)
        if points:
            i = bisect.bisect_left(points, (x0,), key=lambda p: (p[0],))
            while i < len(points) and points[i][0] <= stop:
                if points[i][1] != net:
                    stop = min(stop, points[i][0] - 1)
                    break
                i += 1
        return stop

    def reach_left(self, y: int, x1: int, net: Net, limit: int) -> int:
        stop = limit
        for _p, q in self.row_boxes.get(y, ()):
            if q < x1:
                stop = max(stop, q + 1)
        for p, q, n in self.hsegs.get(y, ()):
            if n != net and p <= x1:
                stop = max(stop, min(q, x1) + 1)
        points = self.corner_row.get(y)
        if points:
            i = bisect.bisect_right(points, (x1, chr(0x10FFFF)), key=lambda p: (p[0], chr(0x10FFFF))) - 1
            while i >= 0 and points[i][0] >= stop:
                if points[i][1] != net:
                    stop = max(stop, points[i][0] + 1)
                    break
                i -= 1
        return stop

    def _arms_of_net(self, x: int, y: int, net: Net) -> int:
        """The arms ``net``'s lines already have in cell (x, y)."""
        arms = self.arms.get((x, y), 0)
        for a, b, n in self.hsegs.get(y, ()):
            if n == net and a <= x <= b:
                arms |= (_L if x > a else 0) | (_R if x < b else 0)
        for a, b, n in self.vsegs.get(x, ()):
            if n == net and a <= y <= b:
                arms |= (_U if y > a else 0) | (_D if y < b else 0)
        return arms

    def junctions_ok(self, points: list[Point], net: Net) -> bool:
        """Whether laying ``points`` keeps every cell with four arms a crossing of two straight lines:
        a junction of one net with four arms would read as a crossing (``┼``) and hide its branches."""
        own = _path_arms(points)
        for (x, y), arms in own.items():
            if arms | self._arms_of_net(x, y, net) == _ALL and arms not in (_L | _R, _U | _D):
                return False
        for (x0, y0), (x1, y1) in itertools.pairwise(points):  # corners of the net inside the new pieces
            if y0 == y1:
                for x, n in self._corners_between(self.corner_row, y0, min(x0, x1) + 1, max(x0, x1) - 1):
                    if n == net and self.arms.get((x, y0), 0) | _L | _R == _ALL \
                            and self.arms.get((x, y0), 0) != _U | _D:
                        return False
            else:
                for y, n in self._corners_between(self.corner_col, x0, min(y0, y1) + 1, max(y0, y1) - 1):
                    if n == net and self.arms.get((x0, y), 0) | _U | _D == _ALL \
                            and self.arms.get((x0, y), 0) != _L | _R:
                        return False
        return True

    @staticmethod
    def _corners_between(table: dict[int, list[tuple[int, Net]]], key: int, a: int, b: int
                         ) -> list[tuple[int, Net]]:
        points = table.get(key)
        if not points or a > b:
            return []
        i = bisect.bisect_left(points, (a,), key=lambda p: (p[0],))
        out = []
        while i < len(points) and points[i][0] <= b:
            out.append(points[i])
            i += 1
        return out

    # ------------------------------------------------------------------ laying
    def lay(self, points: list[Point], net: Net) -> None:
        """Record a path (corners) of ``net``."""
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if y0 == y1 and x0 != x1:
                self.hsegs[y0].append((min(x0, x1), max(x0, x1), net))
                for x, _n in self._corners_between(self.corner_row, y0, min(x0, x1) + 1, max(x0, x1) - 1):
                    self.arms[(x, y0)] = self.arms.get((x, y0), 0) | _L | _R
            elif x0 == x1 and y0 != y1:
                self.vsegs[x0].append((min(y0, y1), max(y0, y1), net))
                for y, _n in self._corners_between(self.corner_col, x0, min(y0, y1) + 1, max(y0, y1) - 1):
                    self.arms[(x0, y)] = self.arms.get((x0, y), 0) | _U | _D
        for point, arms in _path_arms(points).items():
            self.arms[point] = self._arms_of_net(point[0], point[1], net) | arms
        for x, y in points:
            self.mark(x, y, net)

    def mark(self, x: int, y: int, net: Net) -> None:
        """A cell only ``net`` may use (a corner, an end, a label's letter)."""
        bisect.insort(self.corner_row[y], (x, net), key=lambda p: (p[0],))
        bisect.insort(self.corner_col[x], (y, net), key=lambda p: (p[0],))


_U, _D, _L, _R = 1, 2, 4, 8
_ALL = 15


def _path_arms(points: list[Point]) -> dict[Point, int]:
    """The arms a path has at each of its corners and ends (ends: only towards the path)."""
    arms: dict[Point, int] = {}
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if y0 == y1:
            a, b = (_R, _L) if x1 > x0 else (_L, _R)
        else:
            a, b = (_D, _U) if y1 > y0 else (_U, _D)
        arms[(x0, y0)] = arms.get((x0, y0), 0) | a
        arms[(x1, y1)] = arms.get((x1, y1), 0) | b
    return arms


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans.sort()
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _hits(spans: list[tuple[int, int]] | None, a: int, b: int) -> bool:
    if not spans:
        return False
    i = bisect.bisect_right(spans, (b, 1 << 62)) - 1
    return i >= 0 and spans[i][1] >= a


def corners(points: list[Point]) -> list[Point]:
    """The points without repeats and without points in the middle of a straight piece."""
    out: list[Point] = []
    for p in points:
        if out and out[-1] == p:
            continue
        if len(out) >= 2:
            (ax, ay), (bx, by) = out[-2], out[-1]
            if (ax == bx == p[0] and (by - ay) * (p[1] - by) > 0) or (ay == by == p[1] and (bx - ax) * (p[0] - bx) > 0):
                out[-1] = p
                continue
        out.append(p)
    return out


# ---------------------------------------------------------------------------- main connections


def route_main(grid: Grid, net: Net, start: Point, end: Point, *, lead: int = 1, trunk: int | None = None) -> list[Point] | None:
    """A path from ``start`` (the cell right of an output port) to ``end`` (the arrow cell left of an
    input port), or ``None``. ``lead``: cells the path runs straight out of the port first (room for
    the branch label); ``trunk``: a channel this net already uses (tried first)."""
    (ax, ay), (bx, by) = start, end
    first = ax + lead
    if (ay == by and bx >= ax and grid.free_h(ay, ax, bx, net, boxes_from=ax + 1, boxes_to=bx - 1)
            and grid.junctions_ok([start, end], net)):
        return [start, end]
    if bx - 1 >= first:
        right = grid.reach_right(ay, ax, net, bx - 1)
        left = grid.reach_left(by, bx, net, first)
        candidates = range(max(first, left), min(right, bx - 1) + 1)
        order = ([trunk] if trunk is not None and trunk in candidates else []) + list(candidates)[:SEARCH]
        for cx in order:
            if (grid.free_v(cx, ay, by, net) and grid.free_h(ay, ax, cx, net, boxes_from=ax + 1)
                    and grid.free_h(by, cx, bx, net, boxes_to=bx - 1)):
                path = corners([start, (cx, ay), (cx, by), end])
                if grid.junctions_ok(path, net):
                    return path
    return _round(grid, net, start, end, first)


def _round(grid: Grid, net: Net, start: Point, end: Point, first: int) -> list[Point] | None:
    """Out of the port to a channel, along a free track row, to a channel before the target, in."""
    (ax, ay), (bx, by) = start, end
    right = grid.reach_right(ay, ax, net, ax + SEARCH)
    outs = [cx for cx in range(first, right + 1)][:12]
    left = grid.reach_left(by, bx, net, bx - SEARCH)
    ins = [cx for cx in range(bx - 1, left - 1, -1)][:12]
    if not outs or not ins:
        return None
    lo, hi = min(ay, by), max(ay, by)
    for yt in _tracks(grid, lo, hi):
        for c1 in outs:
            if not grid.free_v(c1, ay, yt, net) or not grid.free_h(ay, ax, c1, net, boxes_from=ax + 1):
                continue
            for c2 in ins:
                if (grid.free_h(yt, c1, c2, net) and grid.free_v(c2, yt, by, net)
                        and grid.free_h(by, c2, bx, net, boxes_to=bx - 1)):
                    path = corners([start, (c1, ay), (c1, yt), (c2, yt), (c2, by), end])
                    if grid.junctions_ok(path, net):
                        return path
            break  # the nearest channel out that reaches the track: others would cross the same rows
    return None


def _tracks(grid: Grid, lo: int, hi: int) -> Iterable[int]:
    """Track rows to try: just under and over the span, outwards, then below every box."""
    for k in range(1, 40):
        yield hi + k
        yield lo - k
    for k in range(1, SEARCH):
        yield grid.bottom + k


# ---------------------------------------------------------------------------- sub-node connections


def route_up(grid: Grid, net: Net, start: Point, end: Point) -> list[Point] | None:
    """From the cell above a sub-node's top port (``start``) up to the cell under a consumer's port
    (``end``): ``V-H-V`` on a bus row between them, else round a channel."""
    (sx, sy), (ex, ey) = start, end
    if sx == ex and sy >= ey and grid.free_v(sx, ey, sy, net) and grid.junctions_ok([start, end], net):
        return corners([start, end])
    if sy >= ey:
        for yb in range(ey, sy + 1):
            if grid.free_v(sx, yb, sy, net) and grid.free_h(yb, sx, ex, net) and grid.free_v(ex, ey, yb, net):
                path = corners([start, (sx, yb), (ex, yb), end])
                if grid.junctions_ok(path, net):
                    return path
    # round: up (or down) to a row, across to a channel, to a row under the consumer, across, up
    for y1 in _up_rows(sy, ey):
        if not grid.free_v(sx, y1, sy, net):
            continue
        for y2 in range(ey, ey + 12):
            if not grid.free_v(ex, ey, y2, net):
                break
            for cx in _channels(sx, ex):
                if (grid.free_h(y1, sx, cx, net) and grid.free_v(cx, y1, y2, net)
                        and grid.free_h(y2, cx, ex, net)):
                    path = corners([start, (sx, y1), (cx, y1), (cx, y2), (ex, y2), end])
                    if grid.junctions_ok(path, net):
                        return path
    return None


def _up_rows(sy: int, ey: int) -> Iterable[int]:
    for k in range(0, 12):
        if sy - k >= 0:
            yield sy - k


def _channels(a: int, b: int) -> Iterable[int]:
    lo, hi = min(a, b), max(a, b)
    yield from range(lo, hi + 1)
    for k in range(1, 40):
        yield hi + k
        yield lo - k
