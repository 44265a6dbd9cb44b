"""Phase 5b of the workflow layout: a way for every main connection the router found none for.

The router (``workflow_route``) lays lines in the room the boxes leave. In a dense workflow (a random
graph of thousands of nodes) some connections find none, and widening the drawing and routing again
costs a whole routing per round. Those connections get lanes of their own instead:

- a **new column** inserted right of where the connection leaves its port (the line runs out of the
  port along its row to it),
- a **row above or below everything** (rows out there are shared by connections whose stretches do
  not overlap: the left-edge algorithm of channel routing),
- a **new column** inserted left of where it arrives (the line runs along the target's row into it).

Inserting a column moves everything right of it one cell right: a line that crosses the column gets one
cell longer, a box that spans it one cell wider. So nothing else has a corner, an end or a label's
letter in a new column, and the rows out there hold only these connections: a line in them can only
*cross* another one straight (``┼``), never join it, and a reader following the characters reads back
exactly the connections. A column is only inserted where no box (with its one-cell margins) spans it
along the rows the line runs, never between a port and the cell beside it, never inside a branch label
on those rows.

Cost: a few queries of the router's grid per connection, then one pass over what is drawn to move it.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from .workflow_route import Grid, Point, corners

#: how far along its row a connection looks for a place for its new column (cells)
REACH = 400


@dataclass(slots=True)
class Escape:
    """One connection's way round: its row pieces and the boundaries its new columns go in."""

    key: Hashable
    net: Hashable
    start: Point
    end: Point
    #: the new columns go between cell ``b`` and ``b + 1`` of the drawing before insertion
    out_boundary: int
    in_boundary: int
    up: bool
    #: filled in when the columns are inserted: the new columns' x, the outer row's y
    out_x: int = 0
    in_x: int = 0
    row: int = 0

    def points(self, shift: Callable[[int], int]) -> list[Point]:
        (ax, ay), (bx, by) = self.start, self.end
        return corners([(shift(ax), ay), (self.out_x, ay), (self.out_x, self.row), (self.in_x, self.row),
                        (self.in_x, by), (shift(bx), by)])


class Boundaries:
    """Where a new column may go: between cells ``b`` and ``b + 1``, no box (with its margins) spanning
    both along the rows asked about, no port beside its box's border, no branch label split."""

    def __init__(self, grid: Grid, rects: Sequence[tuple[int, int, int, int]],
                 labels: Sequence[tuple[int, int, int]]) -> None:
        self.grid = grid
        #: boundaries no new column may ever go in: between a port and the cell beside it
        self.never: set[int] = set()
        for x, _y, w, _h in rects:
            self.never.update((x - 1, x + w - 1))
        #: boundary -> sorted rows on which a label spans it
        self.label_rows: dict[int, list[int]] = {}
        for x, y, length in labels:
            for b in range(x, x + length - 1):
                bisect.insort(self.label_rows.setdefault(b, []), y)

    def free(self, b: int, y0: int, y1: int) -> bool:
        """Whether a new column between ``b`` and ``b + 1`` may run from row ``y0`` to ``y1``."""
        if b in self.never:
            return False
        lo, hi = min(y0, y1), max(y0, y1)
        rows = self.label_rows.get(b)
        if rows is not None and bisect.bisect_right(rows, hi) > bisect.bisect_left(rows, lo):
            return False
        return not self.grid.boxes.across(b, lo, hi)


def plan(grid: Grid, boundaries: Boundaries, key: Hashable, net: Hashable, start: Point, end: Point,
         top: int, bottom: int, lead: int) -> Escape | None:
    """A way round for one connection from ``start`` (the cell right of its output port) to ``end`` (the
    arrow cell left of its input), above or below the rows ``top``..``bottom``; ``None`` when its port's
    row or its target's row has no room for even one cell of it. The row pieces are laid in ``grid`` at
    once, so the next connection sees them."""
    (ax, ay), (bx, by) = start, end
    right = grid.reach_right(ay, ax, net, ax + REACH)
    left = grid.reach_left(by, bx, net, bx - REACH)
    if right < ax or left > bx:
        return None
    best: tuple[int, int, int, bool] | None = None
    for up in (True, False):
        far = top if up else bottom
        out_b = _first(boundaries, grid, net, ay, far, range(ax + lead - 1, right + 1), (ax, ay), True)
        if out_b is None and lead > 1:
            out_b = _first(boundaries, grid, net, ay, far, range(ax, right + 1), (ax, ay), True)
        if out_b is None:
            continue
        in_b = _first(boundaries, grid, net, by, far, range(bx - 1, left - 2, -1), (bx, by), False)
        if in_b is None:
            continue
        cost = abs(ay - far) + abs(by - far)
        if best is None or cost < best[0]:
            best = (cost, out_b, in_b, up)
    if best is None:
        return None
    _cost, out_b, in_b, up = best
    grid.lay(corners([(ax, ay), (out_b, ay)]), net)
    grid.lay(corners([(in_b + 1, by), (bx, by)]), net)
    return Escape(key, net, start, end, out_b, in_b, up)


def _first(boundaries: Boundaries, grid: Grid, net: Hashable, row: int, far: int, candidates: range,
           port: Point, leaving: bool) -> int | None:
    """The first boundary of ``candidates`` a new column may go in, for the piece of the row between it
    and ``port``."""
    px = port[0]
    for b in candidates:
        if not boundaries.free(b, row, far):
            continue
        if _no_second_contact(grid, net, row, px, b) if leaving else _no_second_contact(grid, net, row, b + 1, px,
                                                                                        prefix=False):
            return b
    return None


def _no_second_contact(grid: Grid, net: Hashable, row: int, a: int, b: int, *, prefix: bool = True) -> bool:
    """Whether a piece of ``net`` on ``row`` from ``a`` to ``b`` touches the net's other lines only on
    their common start (``prefix``: the net's piece that leaves the same port at ``a``). A second
    contact would close a loop: a reader walking it comes back to the port."""
    if net not in grid.branching:
        return True
    segs, points = grid.hsegs.get(row), grid.corner_row.get(row)
    start = a
    if prefix and segs is not None:
        reach = a
        for p, q in segs.of_net(a, net):  # the net's pieces through the port's cell
            if p <= a:
                reach = max(reach, q)
        start = reach + 1
    if start > b:
        return True
    if segs is not None and segs.overlaps_own(start, b, net):
        return False
    return not (points is not None and points.of_net_between(start, b, net))


def insert(escapes: Sequence[Escape], top: int, bottom: int) -> Callable[[int], int]:
    """Insert the escapes' new columns and give each its outer row; returns the map of old columns to
    new ones (everything drawn before moves by it)."""
    at: dict[int, list[tuple[Escape, bool]]] = {}
    for esc in escapes:
        at.setdefault(esc.out_boundary, []).append((esc, True))
        at.setdefault(esc.in_boundary, []).append((esc, False))
    order = sorted(at)
    before = [0]
    for b in order:
        before.append(before[-1] + len(at[b]))

    def shift(x: int) -> int:
        return x + before[bisect.bisect_left(order, x)]

    for b in order:
        base = shift(b)
        for k, (esc, leaving) in enumerate(at[b], start=1):
            if leaving:
                esc.out_x = base + k
            else:
                esc.in_x = base + k
    for up in (True, False):
        spans = sorted((min(e.out_x, e.in_x), max(e.out_x, e.in_x), i)
                       for i, e in enumerate(escapes) if e.up is up)
        free: list[int] = []
        busy: list[tuple[int, int]] = []  # (last column used, level)
        levels = 0
        for lo, hi, i in spans:
            while busy and busy[0][0] < lo:
                heapq.heappush(free, heapq.heappop(busy)[1])
            if free:
                level = heapq.heappop(free)
            else:
                level, levels = levels, levels + 1
            heapq.heappush(busy, (hi, level))
            escapes[i].row = top - 1 - level if up else bottom + 1 + level
    return shift
