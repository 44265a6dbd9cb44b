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


class _Segments:
    """The pieces of lines on one row (or column), sorted by where they start. Pieces of one net that
    overlap are merged into one; pieces of two nets never overlap (the router checks before it lays), so
    the pieces are disjoint and their ends rise with their starts: every question is a bisection and a
    walk over the pieces it concerns, however many the row holds. (Should two nets' pieces ever be laid
    over each other, the row is marked ``tangled`` and answered by looking at every piece.)"""

    __slots__ = ("items", "starts", "tangled")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.items: list[tuple[int, int, Net]] = []
        self.tangled = False

    def _around(self, a: int, b: int) -> tuple[int, int]:
        """``items[j:i]``: the pieces that overlap cells ``a``..``b`` (when not tangled)."""
        items = self.items
        i = bisect.bisect_right(self.starts, b)
        j = i
        while j > 0 and items[j - 1][1] >= a:
            j -= 1
        return j, i

    def add(self, a: int, b: int, net: Net) -> None:
        if self.tangled:
            self.items.append((a, b, net))
            self.items.sort(key=_start)
            self.starts = [p for p, _q, _n in self.items]
            return
        j, i = self._around(a, b)
        others = []
        for p, q, n in self.items[j:i]:
            if n == net:
                a, b = min(a, p), max(b, q)
            else:
                others.append((p, q, n))
        merged = sorted([*others, (a, b, net)], key=_start)
        if others:
            self.tangled = True
        self.items[j:i] = merged
        self.starts[j:i] = [p for p, _q, _n in merged]

    def _overlapping(self, a: int, b: int) -> list[tuple[int, int, Net]]:
        if self.tangled:
            return [(p, q, n) for p, q, n in self.items if p <= b and a <= q]
        j, i = self._around(a, b)
        return self.items[j:i]

    def overlaps_other(self, a: int, b: int, net: Net) -> bool:
        if not self.tangled:
            items = self.items
            k = bisect.bisect_right(self.starts, b) - 1
            while k >= 0:
                _p, q, n = items[k]
                if q < a:
                    return False
                if n != net:
                    return True
                k -= 1
            return False
        return any(n != net for _p, _q, n in self._overlapping(a, b))

    def overlaps_own(self, a: int, b: int, net: Net) -> bool:
        return any(n == net for _p, _q, n in self._overlapping(a, b))

    def of_net(self, x: int, net: Net) -> list[tuple[int, int]]:
        if not self.tangled:  # at most one piece holds a cell
            k = bisect.bisect_right(self.starts, x) - 1
            if k >= 0:
                p, q, n = self.items[k]
                if q >= x and n == net:
                    return [(p, q)]
            return []
        return [(p, q) for p, q, n in self._overlapping(x, x) if n == net]

    def arms_of_net(self, x: int, net: Net, before: int, after: int) -> int:
        """``before`` | ``after`` (the arms towards lower and higher cells) of ``net``'s pieces through cell
        ``x``: ``of_net`` without its list."""
        arms = 0
        if not self.tangled:
            k = bisect.bisect_right(self.starts, x) - 1
            if k >= 0:
                p, q, n = self.items[k]
                if q >= x and n == net:
                    arms = (before if x > p else 0) | (after if x < q else 0)
            return arms
        for p, q in self.of_net(x, net):
            arms |= (before if x > p else 0) | (after if x < q else 0)
        return arms

    def first_other_from(self, x0: int, limit: int, net: Net) -> int | None:
        """The first cell >= x0 (up to ``limit``) on a piece of another net."""
        if self.tangled:
            hits = [max(p, x0) for p, q, n in self.items if n != net and q >= x0 and p <= limit]
            return min(hits, default=None)
        items = self.items
        k = max(0, bisect.bisect_right(self.starts, x0) - 1)
        while k < len(items):
            p, q, n = items[k]
            if p > limit:
                return None
            if n != net and q >= x0:
                return max(p, x0)
            k += 1
        return None

    def last_other_until(self, x1: int, limit: int, net: Net) -> int | None:
        """The last cell <= x1 (down to ``limit``) on a piece of another net."""
        if self.tangled:
            hits = [min(q, x1) for p, q, n in self.items if n != net and p <= x1 and q >= limit]
            return max(hits, default=None)
        items = self.items
        k = bisect.bisect_right(self.starts, x1) - 1
        while k >= 0:
            _p, q, n = items[k]
            if q < limit:
                return None
            if n != net:
                return min(q, x1)
            k -= 1
        return None


def _start(item: tuple[int, int, Net]) -> int:
    return item[0]


class _Points:
    """Corners, ends and reserved cells on one row (or column): all of them sorted, and per net."""

    __slots__ = ("all", "by_net")

    def __init__(self) -> None:
        self.all: list[int] = []
        self.by_net: dict[Net, list[int]] = {}

    def add(self, v: int, net: Net) -> None:
        bisect.insort(self.all, v)
        own = self.by_net.get(net)
        if own is None:
            self.by_net[net] = [v]
        else:
            bisect.insort(own, v)

    def other_between(self, a: int, b: int, net: Net) -> bool:
        total = bisect.bisect_right(self.all, b) - bisect.bisect_left(self.all, a)
        if not total:
            return False
        own = self.by_net.get(net)
        mine = bisect.bisect_right(own, b) - bisect.bisect_left(own, a) if own else 0
        return total > mine

    def first_other_from(self, v: int, limit: int, net: Net) -> int | None:
        own = self.by_net.get(net) or []
        i = bisect.bisect_left(self.all, v)
        while i < len(self.all) and self.all[i] <= limit:
            x = self.all[i]
            if _count(self.all, x) > _count(own, x):
                return x
            i = bisect.bisect_right(self.all, x)
        return None

    def last_other_until(self, v: int, limit: int, net: Net) -> int | None:
        own = self.by_net.get(net) or []
        i = bisect.bisect_right(self.all, v) - 1
        while i >= 0 and self.all[i] >= limit:
            x = self.all[i]
            if _count(self.all, x) > _count(own, x):
                return x
            i = bisect.bisect_left(self.all, x) - 1
        return None

    def of_net_between(self, a: int, b: int, net: Net) -> list[int]:
        own = self.by_net.get(net)
        if not own:
            return []
        return own[bisect.bisect_left(own, a):bisect.bisect_right(own, b)]


def _count(values: list[int], v: int) -> int:
    return bisect.bisect_right(values, v) - bisect.bisect_left(values, v)


class _Boxes:
    """Where the boxes are (each widened by its one-column margins): filed per band of ``BAND`` columns
    and per band of ``BAND`` rows; a row's (column's) merged intervals are made the first time that row
    (column) is asked about, so a long line is checked by one bisection."""

    __slots__ = ("col_bands", "cols", "row_bands", "rows")

    def __init__(self, rects: Iterable[Rect]) -> None:
        self.col_bands: dict[int, list[tuple[int, int, int, int]]] = {}
        self.row_bands: dict[int, list[tuple[int, int, int, int]]] = {}
        for r in rects:
            box = (r.x - 1, r.x + r.w, r.y, r.y + r.h - 1)
            for band in range(box[0] // BAND, box[1] // BAND + 1):
                self.col_bands.setdefault(band, []).append(box)
            for band in range(box[2] // BAND, box[3] // BAND + 1):
                self.row_bands.setdefault(band, []).append(box)
        self.rows: dict[int, list[tuple[int, int]]] = {}
        self.cols: dict[int, list[tuple[int, int]]] = {}

    def row(self, y: int) -> list[tuple[int, int]]:
        spans = self.rows.get(y)
        if spans is None:
            spans = _merge([(x0, x1) for x0, x1, y0, y1 in self.row_bands.get(y // BAND, ()) if y0 <= y <= y1])
            self.rows[y] = spans
        return spans

    def col(self, x: int) -> list[tuple[int, int]]:
        spans = self.cols.get(x)
        if spans is None:
            spans = _merge([(y0, y1) for x0, x1, y0, y1 in self.col_bands.get(x // BAND, ()) if x0 <= x <= x1])
            self.cols[x] = spans
        return spans

    def on_h(self, y: int, a: int, b: int) -> bool:
        return _hits(self.row(y), a, b)

    def on_v(self, x: int, a: int, b: int) -> bool:
        return _hits(self.col(x), a, b)

    def across(self, b: int, y0: int, y1: int) -> bool:
        """Whether one box (with its margins) covers both column ``b`` and ``b + 1`` on a row of
        ``y0``..``y1``: a column inserted between them would run through it."""
        if not (self.on_v(b, y0, y1) and self.on_v(b + 1, y0, y1)):
            return False
        return any(x0 <= b and x1 > b and r0 <= y1 and y0 <= r1
                   for x0, x1, r0, r1 in self.col_bands.get(b // BAND, ()))

    def first_right(self, y: int, x: int, limit: int) -> int | None:
        """The left edge of the first box right of ``x`` on row ``y`` (up to ``limit``)."""
        spans = self.row(y)
        i = bisect.bisect_right(spans, (x, 1 << 62))
        return spans[i][0] if i < len(spans) and spans[i][0] <= limit else None

    def last_left(self, y: int, x: int, limit: int) -> int | None:
        spans = self.row(y)
        i = bisect.bisect_left(spans, (x, -(1 << 62))) - 1
        while i >= 0 and spans[i][1] >= x:
            i -= 1
        return spans[i][1] if i >= 0 and spans[i][1] >= limit else None


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans.sort()
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _hits(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    i = bisect.bisect_right(spans, (b, 1 << 62)) - 1
    return i >= 0 and spans[i][1] >= a


BAND = 8
#: past any cell (the end of a bisection key)
_FAR = 1 << 62
#: rows above 0 the column masks cover (lines go a few rows above the top box at most)
MASK_BASE = 64


@dataclass(slots=True)
class Grid:
    """What occupies the grid: boxes (static) and the pieces laid so far (per row / per column)."""

    #: the boxes, each with a one-column margin left and right
    boxes: _Boxes = field(default_factory=lambda: _Boxes(()))
    #: pieces of lines: row -> horizontal pieces, column -> vertical pieces
    hsegs: dict[int, _Segments] = field(default_factory=lambda: defaultdict(_Segments))
    vsegs: dict[int, _Segments] = field(default_factory=lambda: defaultdict(_Segments))
    #: corners and ends of lines (and reserved cells: label letters, ports): per row, per column
    corner_row: dict[int, _Points] = field(default_factory=lambda: defaultdict(_Points))
    corner_col: dict[int, _Points] = field(default_factory=lambda: defaultdict(_Points))
    #: the arms (U=1, D=2, L=4, R=8) of the lines at every corner and end laid so far, keyed by the cell as
    #: one int, ``(y << 32) + x`` (a point tuple per key was one more object to hash and keep per corner)
    arms: dict[int, int] = field(default_factory=dict)
    #: corners whose arms include both left and right (per column), both up and down (per row)
    lr_corners: dict[int, _Points] = field(default_factory=lambda: defaultdict(_Points))
    ud_corners: dict[int, _Points] = field(default_factory=lambda: defaultdict(_Points))
    #: a net's vertical trunks (a fan-out's spines): net -> [(column, top row, bottom row)]
    trunks: dict[Net, list[tuple[int, int, int]]] = field(default_factory=dict)
    #: the lowest row any box reaches (tracks of last resort run below it)
    bottom: int = 0
    #: nets with more than one line (a fan-out, a shared sub-node): only they can make a junction, so
    #: only their arms are kept
    branching: set[Net] = field(default_factory=set)
    #: how many more tracks the routes round boxes may try in all (a bound on a hopeless layout's cost)
    round_budget: int = 20_000
    #: how many track rows one connection tries round boxes: near its span (each way), then below every
    #: box (a big workflow tries few: what finds no way there goes round the outside, ``workflow_escape``)
    tracks_near: int = 40
    tracks_below: int = 60
    #: column -> the rows (bit ``y + MASK_BASE``) any line's vertical pieces cover: one AND says that a
    #: column is taken along a stretch, however many pieces it holds (``free_v``'s first question)
    vmask: dict[int, int] = field(default_factory=dict)
    #: net -> the columns it has vertical pieces in (where the mask cannot tell its own lines from others')
    vcols: dict[Net, set[int]] = field(default_factory=dict)
    #: the last path ``junctions_ok`` checked (a branching net's) and its arms (``_path_arms``), for ``lay``
    checked: tuple[list[Point], dict[Point, int]] | None = None

    @classmethod
    def of(cls, rects: Iterable[Rect]) -> Grid:
        rects = list(rects)
        return cls(boxes=_Boxes(rects), bottom=max((r.y + r.h for r in rects), default=0))

    # ------------------------------------------------------------------ queries
    def box_on_h(self, y: int, x0: int, x1: int) -> bool:
        return self.boxes.on_h(y, x0, x1)

    def box_on_v(self, x: int, y0: int, y1: int) -> bool:
        return self.boxes.on_v(x, y0, y1)

    def free_h(self, y: int, x0: int, x1: int, net: Net, *, boxes_from: int | None = None,
               boxes_to: int | None = None) -> bool:
        """Whether a horizontal piece of ``net`` may lie on row ``y`` from ``x0`` to ``x1`` (its ends
        are corners). ``boxes_from``/``boxes_to`` narrow the box check (a port's own cell). (The checks
        of the boxes and of other nets' verticals at its ends written out: the router asks this some 10 times per line.)"""
        a, b = (x0, x1) if x0 <= x1 else (x1, x0)
        spans = self.boxes.rows.get(y)
        if spans is None:
            spans = self.boxes.row(y)
        if spans:
            i = bisect.bisect_right(spans, (b if boxes_to is None else boxes_to, _FAR)) - 1
            if i >= 0 and spans[i][1] >= (a if boxes_from is None else boxes_from):
                return False
        segs = self.hsegs.get(y)
        if segs is not None and segs.overlaps_other(a, b, net):
            return False
        points = self.corner_row.get(y)
        if points is not None and points.other_between(a, b, net):
            return False
        vsegs = self.vsegs
        segs = vsegs.get(a)
        if segs is not None and segs.overlaps_other(y, y, net):
            return False
        segs = vsegs.get(b)
        return segs is None or not segs.overlaps_other(y, y, net)

    def free_v(self, x: int, y0: int, y1: int, net: Net) -> bool:
        a, b = (y0, y1) if y0 <= y1 else (y1, y0)
        mask = self.vmask.get(x)
        if (mask and a >= -MASK_BASE and (mask >> (a + MASK_BASE)) & ((1 << (b - a + 1)) - 1)
                and x not in self.vcols.get(net, ())):
            return False  # a line's vertical is there, and not one of this net: another net's
        spans = self.boxes.cols.get(x)
        if spans is None:
            spans = self.boxes.col(x)
        if spans:
            i = bisect.bisect_right(spans, (b, _FAR)) - 1
            if i >= 0 and spans[i][1] >= a:
                return False
        segs = self.vsegs.get(x)
        if segs is not None and segs.overlaps_other(a, b, net):
            return False
        points = self.corner_col.get(x)
        if points is not None and points.other_between(a, b, net):
            return False
        hsegs = self.hsegs
        segs = hsegs.get(a)
        if segs is not None and segs.overlaps_other(x, x, net):
            return False
        segs = hsegs.get(b)
        return segs is None or not segs.overlaps_other(x, x, net)

    def channels(self, columns: Iterable[int], y0: int, y1: int, net: Net) -> Iterable[int]:
        """Of ``columns``, those where a vertical of ``net`` from ``y0`` to ``y1`` is not ruled out at once
        by another net's vertical (one AND of the column's mask each, no call): a crowded channel between
        two columns of boxes holds a vertical per connection crossing it, and a line looking for its own
        column walks past all of them (what ``free_v`` says of the rest is still asked)."""
        a, b = min(y0, y1), max(y0, y1)
        if a < -MASK_BASE:
            yield from columns
            return
        bits = ((1 << (b - a + 1)) - 1) << (a + MASK_BASE)
        masks, own = self.vmask, self.vcols.get(net, ())
        for x in columns:
            mask = masks.get(x)
            if mask and mask & bits and x not in own:
                continue
            yield x

    def reach_right(self, y: int, x0: int, net: Net, limit: int) -> int:
        """The farthest x a horizontal of ``net`` from ``x0`` can reach on row ``y`` (at most ``limit``)."""
        stop = limit
        box = self.boxes.first_right(y, x0, limit)
        if box is not None:
            stop = min(stop, box - 1)
        segs = self.hsegs.get(y)
        if segs is not None:
            hit = segs.first_other_from(x0, stop, net)
            if hit is not None:
                stop = min(stop, hit - 1)
        points = self.corner_row.get(y)
        if points is not None:
            hit = points.first_other_from(x0, stop, net)
            if hit is not None:
                stop = min(stop, hit - 1)
        return stop

    def reach_left(self, y: int, x1: int, net: Net, limit: int) -> int:
        stop = limit
        box = self.boxes.last_left(y, x1, limit)
        if box is not None:
            stop = max(stop, box + 1)
        segs = self.hsegs.get(y)
        if segs is not None:
            hit = segs.last_other_until(x1, stop, net)
            if hit is not None:
                stop = max(stop, hit + 1)
        points = self.corner_row.get(y)
        if points is not None:
            hit = points.last_other_until(x1, stop, net)
            if hit is not None:
                stop = max(stop, hit + 1)
        return stop

    def _arms_of_net(self, x: int, y: int, net: Net) -> int:
        """The arms ``net``'s lines already have in cell (x, y)."""
        arms = self.arms.get((y << 32) + x, 0)
        segs = self.hsegs.get(y)
        if segs is not None:
            arms |= segs.arms_of_net(x, net, _L, _R)
        segs = self.vsegs.get(x)
        if segs is not None:
            arms |= segs.arms_of_net(y, net, _U, _D)
        return arms

    def junctions_ok(self, points: list[Point], net: Net) -> bool:
        """Whether laying ``points`` keeps every cell with four arms a crossing of two straight lines:
        a junction of one net with four arms would read as a crossing (``┼``) and hide its branches."""
        if net not in self.branching:
            return True
        path_arms = _path_arms(points)
        self.checked = (points, path_arms)  # (``lay`` lays this path next, mostly: its arms are made once)
        for (x, y), arms in path_arms.items():
            if arms | self._arms_of_net(x, y, net) == _ALL and arms not in (_L | _R, _U | _D):
                return False
        for (x0, y0), (x1, y1) in itertools.pairwise(points):  # corners of the net inside the new pieces
            if y0 == y1:
                ud = self.ud_corners.get(y0)
                if ud is not None and ud.of_net_between(min(x0, x1) + 1, max(x0, x1) - 1, net):
                    return False
            else:
                lr = self.lr_corners.get(x0)
                if lr is not None and lr.of_net_between(min(y0, y1) + 1, max(y0, y1) - 1, net):
                    return False
        return True

    def touches_own(self, points: list[Point], net: Net) -> bool:
        """Whether the pieces of ``points`` after the first touch a line ``net`` has already: a second
        contact of two lines of one net makes a loop (a reader walking it comes back to the port)."""
        if net not in self.branching:
            return False
        for (x0, y0), (x1, y1) in itertools.islice(itertools.pairwise(points), 1, None):
            if y0 == y1:
                a, b = min(x0, x1), max(x0, x1)
                segs, pts = self.hsegs.get(y0), self.corner_row.get(y0)
            else:
                a, b = min(y0, y1), max(y0, y1)
                segs, pts = self.vsegs.get(x0), self.corner_col.get(x0)
            if segs is not None and segs.overlaps_own(a, b, net):
                return True
            if pts is not None and pts.of_net_between(a, b, net):
                return True
        return False

    # ------------------------------------------------------------------ laying
    def lay(self, points: list[Point], net: Net) -> None:
        """Record a path (corners) of ``net``."""
        if net not in self.branching:
            for (x0, y0), (x1, y1) in itertools.pairwise(points):
                if y0 == y1 and x0 != x1:
                    self.hsegs[y0].add(min(x0, x1), max(x0, x1), net)
                elif x0 == x1 and y0 != y1:
                    self.vsegs[x0].add(min(y0, y1), max(y0, y1), net)
                    self._mask_v(x0, min(y0, y1), max(y0, y1), net)
            for x, y in points:
                self.mark(x, y, net)
            return
        touched: set[Point] = set()
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if y0 == y1 and x0 != x1:
                a, b = min(x0, x1), max(x0, x1)
                self.hsegs[y0].add(a, b, net)
                points_row = self.corner_row.get(y0)
                for x in points_row.of_net_between(a + 1, b - 1, net) if points_row is not None else ():
                    key = (y0 << 32) + x
                    self.arms[key] = self.arms.get(key, 0) | _L | _R
                    touched.add((x, y0))
            elif x0 == x1 and y0 != y1:
                a, b = min(y0, y1), max(y0, y1)
                self.vsegs[x0].add(a, b, net)
                self._mask_v(x0, a, b, net)
                points_col = self.corner_col.get(x0)
                for y in points_col.of_net_between(a + 1, b - 1, net) if points_col is not None else ():
                    key = (y << 32) + x0
                    self.arms[key] = self.arms.get(key, 0) | _U | _D
                    touched.add((x0, y))
        checked = self.checked
        path_arms = checked[1] if checked is not None and checked[0] is points else _path_arms(points)
        self.checked = None
        for point, arms in path_arms.items():
            x, y = point
            key = (y << 32) + x
            before = self.arms.get(key)
            self.arms[key] = self._arms_of_net(x, y, net) | arms
            if before is None:
                self.mark(x, y, net)
            touched.add(point)
        for x, y in touched:
            arms = self.arms[(y << 32) + x]
            if arms & (_L | _R) == _L | _R:
                self.lr_corners[x].add(y, net)
            if arms & (_U | _D) == _U | _D:
                self.ud_corners[y].add(x, net)

    def _mask_v(self, x: int, a: int, b: int, net: Net) -> None:
        a = max(a, -MASK_BASE)
        if b >= a:
            self.vmask[x] = self.vmask.get(x, 0) | (((1 << (b - a + 1)) - 1) << (a + MASK_BASE))
        self.vcols.setdefault(net, set()).add(x)

    def mark(self, x: int, y: int, net: Net) -> None:
        """A cell only ``net`` may use (a corner, an end, a label's letter)."""
        self.corner_row[y].add(x, net)
        self.corner_col[x].add(y, net)


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


def route_main(grid: Grid, net: Net, start: Point, end: Point, *, lead: int = 1) -> tuple[list[Point], bool] | None:
    """A path from ``start`` (the cell right of an output port) to ``end`` (the arrow cell left of an
    input port), or ``None``; and whether it starts on the net's trunk (a branch of a fan-out: only
    the new part is returned). ``lead``: cells the path runs straight out of the port first (room for
    the branch labels)."""
    (ax, ay), (bx, by) = start, end
    first = ax + lead
    for cx, t0, t1 in grid.trunks.get(net, ()):  # a fan-out: branch off a vertical the net already has
        if not first <= cx <= bx - 1:
            continue
        join = min(max(by, t0), t1)
        if abs(join - by) > max(8, (t1 - t0) // 2):
            continue  # far beyond this trunk: another one (or a new one) serves better
        path = corners([(cx, join), (cx, by), end])
        if ((join == by or grid.free_v(cx, join, by, net)) and grid.free_h(by, cx, bx, net, boxes_to=bx - 1)
                and grid.junctions_ok(path, net)):
            return path, True
        # the row is taken at the trunk (a junction there would have four arms): leave the trunk a row
        # above or below and step onto the target's row further right
        for jy in (by - 1, by + 1, by - 2, by + 2):
            if not t0 <= jy <= t1:
                continue
            for cx2 in range(cx + 1, min(cx + 8, bx - 1)):
                path = corners([(cx, jy), (cx2, jy), (cx2, by), end])
                if (grid.free_h(jy, cx, cx2, net) and grid.free_v(cx2, jy, by, net)
                        and grid.free_h(by, cx2, bx, net, boxes_to=bx - 1) and grid.junctions_ok(path, net)):
                    return path, True
    if (ay == by and bx >= ax and grid.free_h(ay, ax, bx, net, boxes_from=ax + 1, boxes_to=bx - 1)
            and grid.junctions_ok([start, end], net)):
        return [start, end], False
    if bx - 1 >= first:
        right = grid.reach_right(ay, ax, net, bx - 1)
        left = grid.reach_left(by, bx, net, first)
        for cx in grid.channels(range(max(first, left), min(right, bx - 1) + 1)[:SEARCH], ay, by, net):
            if (grid.free_v(cx, ay, by, net) and grid.free_h(ay, ax, cx, net, boxes_from=ax + 1)
                    and grid.free_h(by, cx, bx, net, boxes_to=bx - 1)):
                path = corners([start, (cx, ay), (cx, by), end])
                if grid.junctions_ok(path, net):
                    return path, False
    found = _round(grid, net, start, end, first)
    return (found, False) if found is not None else None


def lay_main(grid: Grid, net: Net, path: list[Point]) -> None:
    """Lay a main path and remember its vertical as one of the net's trunks (where later branches of a
    fan-out join)."""
    grid.lay(path, net)
    verticals = [(a, b) for a, b in itertools.pairwise(path) if a[0] == b[0] and a[1] != b[1]]
    if len(verticals) != 1:
        return
    (x, y0), (_, y1) = verticals[0]
    trunks = grid.trunks.setdefault(net, [])
    for k, (tx, t0, t1) in enumerate(trunks):
        if tx == x and min(y0, y1) <= t1 + 1 and max(y0, y1) >= t0 - 1:
            trunks[k] = (x, min(t0, y0, y1), max(t1, y0, y1))
            return
    if len(trunks) < 4:
        trunks.append((x, min(y0, y1), max(y0, y1)))


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
    # the pieces out of the port and into the target do not depend on the track: asked once per channel
    # (nothing is laid meanwhile, so the answers hold for every track)
    out_free: dict[int, bool] = {}
    in_free: dict[int, bool] = {}
    for yt in _tracks(grid, lo, hi):
        grid.round_budget -= 1
        if grid.round_budget < 0:
            return None
        for c1 in grid.channels(outs, ay, yt, net):
            if not grid.free_v(c1, ay, yt, net):
                continue
            free = out_free.get(c1)
            if free is None:
                free = out_free[c1] = grid.free_h(ay, ax, c1, net, boxes_from=ax + 1)
            if not free:
                continue
            for c2 in ins:
                if not grid.free_h(yt, c1, c2, net) or not grid.free_v(c2, yt, by, net):
                    continue
                free = in_free.get(c2)
                if free is None:
                    free = in_free[c2] = grid.free_h(by, c2, bx, net, boxes_to=bx - 1)
                if free:
                    path = corners([start, (c1, ay), (c1, yt), (c2, yt), (c2, by), end])
                    if grid.junctions_ok(path, net) and not grid.touches_own(path, net):
                        return path
            break  # the nearest channel out that reaches the track: others would cross the same rows
    return None


def _tracks(grid: Grid, lo: int, hi: int) -> Iterable[int]:
    """Track rows to try: just under and over the span, outwards, then below every box."""
    for k in range(1, grid.tracks_near):
        yield hi + k
        yield lo - k
    for k in range(1, grid.tracks_below):
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
