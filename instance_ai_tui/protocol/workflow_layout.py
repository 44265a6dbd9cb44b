"""Lay a workflow out on a character grid: where each box, port, line, label and sticky note goes.

Pure (no Textual): the canvas widget, ``instance-ai workflow show`` and the tests all use it;
``workflow_draw`` turns a ``Layout`` into characters. ``layout_workflow`` runs six phases, one function
each:

1. ``_roles``: sub-nodes (models, memories, tools, parsers: nodes whose connections are all ``ai_*``
   ones they send) and the nodes they serve — one sub-node may serve several (a model shared by chains).
2. ``_measure``: each box's size and ports: outputs on the right (``error`` the lowest, as n8n draws it),
   inputs on the left with one row per arriving line (so lines from two sources never join), AI ports on
   the bottom border with their labels (``model``, ``tool``, …; one ``┬`` per arriving sub-node), a
   sub-node's port on its top border.
3. ``pixels`` (``workflow_place``): each node's place in n8n's pixels: its stored position, always; nodes without one (the
   agent's fresh nodes) beside their neighbours; a layered layout (Sugiyama: longest path columns, loops
   broken by a depth-first search, barycentre order) only when no node has a position. Sub-nodes hang
   under a node they serve.
4. ``cells`` (``workflow_cells``): pixels to cells by two monotone maps, columns then rows: the editor's
   distances scaled, pushed apart only where two boxes would collide (and where lines need room), so the
   order of the nodes on each axis is the editor's.
5. ``_ports`` then ``_route``: which row or column of a box each line uses (sorted so lines cross less),
   then the lines themselves (``workflow_route``: a reader following them reads back exactly the
   connections). In a small workflow, a connection that finds no way widens the drawing where it starts,
   and routing runs again; then (5b, ``_escape``, ``workflow_escape``) what still found none goes round
   the outside on new columns and rows of its own: every main connection is drawn.
6. ``_regions``: sticky notes as rectangles behind the nodes, labelled with their first heading.

Every phase costs about the same per node and per connection, whatever the size of the workflow
(``benchmarks/workflow_scale.py``: growth from 1,000 to 5,000 nodes).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import heapq
import itertools
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from rich.cells import cell_len, get_character_cell_size

from .workflow_cells import Axis, cells, make_room
from .workflow_escape import Boundaries, Escape, insert, plan
from .workflow_graph import (
    NodeKind,
    NodeRun,
    WfEdge,
    Workflow,
    ai_order,
    connection_label,
    input_count,
    node_subtitle,
    output_labels,
)
from .workflow_place import pixels
from .workflow_route import Grid, Point, Rect, lay_main, route_main, route_up


class Detail(IntEnum):
    """How much a box shows: FULL (name, subtitle, state), COMPACT (name; zoomed out) or TIGHT (name cut
    shorter, branch labels shorter, the boxes closer: zoomed out further, where a fit would otherwise show
    only blocks)."""

    FULL = 0
    COMPACT = 1
    TIGHT = 2


#: cells per pixel of n8n's canvas: its usual 220 px between nodes in a row -> 34 columns; 200 px between
#: rows -> 7 rows (a character is about twice as tall as wide)
SX = 34 / 220
SY = 7 / 200
#: zoomed out, distances shrink with the boxes (as n8n's zoom does)
SCALE = {0: (SX, SY), 1: (SX * 0.55, SY * 0.65), 2: (SX * 0.3, SY * 0.4)}
#: branch labels are cut to this many cells (with ``…``); zoomed out furthest, to fewer
LABEL_CELLS = 12
LABEL_CELLS_TIGHT = 6
#: zoomed out furthest, a box is at most this wide (its name cut with ``…``, never two alike)
TIGHT_CELLS = 12
#: zoomed out (COMPACT), the widest box (a longer name is cut with ``…``); a view that has the room may ask for
#: wider boxes (``layout_workflow``'s ``box_cells``, up to ``ROOMY_CELLS``, full detail's widest) to keep names whole
COMPACT_CELLS = 18
ROOMY_CELLS = 30
#: a zoomed-out box after a run is wide enough for its state whole ("○ not reached", "✓ 120 runs")
STATE_CELLS = 13
#: how many times the layout widens the drawing for connections that found no way
WIDEN_ROUNDS = 4
#: widening is tried while at most this many connections (or 2 % of them) found no way
WIDEN_MAX_FAILED = 20
#: and only for workflows of at most this many connections (each round routes everything again; a
#: bigger workflow's connections that found no way go round the outside at once, phase 5b)
WIDEN_MAX_EDGES = 400
#: there, a connection tries this many track rows round boxes (each way) before it goes round the outside
BIG_TRACKS_NEAR = 3

#: the AI ports an agent-like node shows even when nothing is connected (as n8n's editor does)
DEFAULT_AI_PORTS: dict[str, tuple[str, ...]] = {
    "agent": ("ai_languageModel", "ai_memory", "ai_tool"),
    "chainLlm": ("ai_languageModel",),
    "chainSummarization": ("ai_languageModel",),
    "chainRetrievalQa": ("ai_languageModel", "ai_retriever"),
}


@dataclass(slots=True)
class Box:
    """A node's rectangle (cells) and where its ports are (absolute cells)."""

    name: str
    x: int
    y: int
    w: int
    h: int
    #: output port -> row on the right border; its branch label
    outputs: dict[int, int] = field(default_factory=dict)
    out_labels: dict[int, str] = field(default_factory=dict)
    #: input index -> rows on the left border (one per arriving line); the input's label (Merge: 1, 2)
    #: (tuples, here and in ``Route.flat``: a tuple of numbers is no work for the cyclic garbage
    #: collector, where a list is one more object each of its full passes walks, see ``Layout``)
    inputs: dict[int, tuple[int, ...]] = field(default_factory=dict)
    in_labels: dict[int, str] = field(default_factory=dict)
    #: AI connection type -> columns on the bottom border (one per arriving sub-node); the port's label
    ai_ports: dict[str, tuple[int, ...]] = field(default_factory=dict)
    ai_labels: dict[str, str] = field(default_factory=dict)
    #: the column on the top border where a sub-node's line leaves
    top_port: int | None = None
    #: the one-line text under the name (n8n's subtitle, else the node's type)
    subtitle: str = ""

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h

    def overlaps(self, other: Box) -> bool:
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)


def flat_points(points: Iterable[Point]) -> tuple[int, ...]:
    """(x, y) pairs as one flat tuple ``Route.flat``."""
    return tuple(itertools.chain.from_iterable(points))


@dataclass(slots=True)
class Route:
    """A connection's line: the corners of a path of horizontal and vertical pieces, from the cell
    beside the source's port to the cell beside the target's."""

    edge: WfEdge
    #: the corners as one flat tuple of ints, x0, y0, x1, y1, … (``points`` reads them as pairs): a 5,000-node
    #: layout left 43.5 k point tuples, each an object the young collection walked when the layout returned
    flat: tuple[int, ...]
    #: what leaves one port: lines of the same net may join, lines of different nets only cross
    net: Hashable = None
    #: the line starts on its net's earlier line (a branch of a fan-out), not at the port
    joins: bool = False

    @property
    def points(self) -> tuple[Point, ...]:
        """The corners as (x, y) pairs (made on each read: hot loops read ``flat``)."""
        flat = self.flat
        return tuple(zip(flat[0::2], flat[1::2], strict=True))

    @points.setter
    def points(self, points: Iterable[Point]) -> None:
        self.flat = flat_points(points)

    @property
    def cells(self) -> list[Point]:
        """Every cell of the line, in order."""
        pts = self.points
        out = [pts[0]]
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if y0 == y1:
                step = 1 if x1 > x0 else -1
                out += [(x, y0) for x in range(x0 + step, x1 + step, step)]
            else:
                step = 1 if y1 > y0 else -1
                out += [(x0, y) for y in range(y0 + step, y1 + step, step)]
        return out


@dataclass(slots=True)
class Region:
    """A sticky note: a rectangle behind the nodes and its label."""

    x: int
    y: int
    w: int
    h: int
    label: str
    #: the note's text under its label (``Sticky.body``), as many lines as the frame holds are drawn
    body: tuple[str, ...] = ()
    #: n8n's colour of the note (``Sticky.color``, 1-7): its frame and label are drawn in it
    color: int = 1


@dataclass(slots=True, weakref_slot=True)
class Layout:
    workflow: Workflow
    detail: Detail
    boxes: dict[str, Box]
    routes: list[Route]
    #: (x, y, text) branch labels on the lines, and of outputs nothing is connected to
    labels: list[tuple[int, int, str]]
    width: int
    height: int
    #: whether boxes have a row for the execution state
    status_row: bool = False
    regions: list[Region] = field(default_factory=list)
    #: outputs nothing is connected to, drawn as a stub: (x, y) of the stub cell
    stubs: list[Point] = field(default_factory=list)
    #: connections no way was found for (not drawn; the title says so)
    failed: list[WfEdge] = field(default_factory=list)
    #: the port each connection leaves from: edge -> output port number of its source
    ports: dict[WfEdge, int] = field(default_factory=dict)
    #: what drawing any box needs to know of the whole layout, made once (``workflow_draw.shown_names`` and
    #: ``line_ends`` fill them at the first box drawn; the worker process sends them with the layout, so
    #: the app's first paint of a big workflow makes no pass over all of its boxes and lines)
    names_cut: dict[str, str] | None = None
    line_ends: LineEnds | None = None
    #: per row, the first column anything is drawn in and the column after the last (``workflow_draw.row_extents``:
    #: the panel's edges say whether the drawing goes on past them)
    row_extents: tuple[list[int], list[int]] | None = None


@dataclass(slots=True)
class LineEnds:
    """Which ports lines leave and where they arrive (a box's border shows ``├`` / ``┤`` / ``┴`` there)."""

    #: (source, output port) of every main line; the cell each main line ends on (beside an input)
    out_ports: set[tuple[str, int]]
    arrows: set[Point]
    #: the stubs of outputs nothing is connected to; the sub-nodes whose line leaves their top
    stubs: set[Point]
    ai_sources: set[str]


# --------------------------------------------------------------------------- 1. roles


@dataclass(slots=True)
class _Roles:
    #: sub-node -> the nodes it serves (in the workflow's order)
    serves: dict[str, list[str]]
    #: main-connection neighbours (both ways), for placing nodes without a position
    main_pred: dict[str, list[str]]
    main_succ: dict[str, list[str]]


def _roles(workflow: Workflow) -> _Roles:
    """Which nodes are sub-nodes (they send only ``ai_*`` connections and take part in no main one)."""
    in_main: set[str] = set()
    serves: dict[str, list[str]] = defaultdict(list)
    pred: dict[str, list[str]] = defaultdict(list)
    succ: dict[str, list[str]] = defaultdict(list)
    for e in workflow.edges:
        if e.is_ai:
            if e.target not in serves[e.source] and e.target != e.source:
                serves[e.source].append(e.target)
        else:
            in_main.update((e.source, e.target))
            succ[e.source].append(e.target)
            pred[e.target].append(e.source)
    subs = {name: targets for name, targets in serves.items() if name not in in_main and targets}
    return _Roles(subs, pred, succ)


# --------------------------------------------------------------------------- 2. sizes and ports


@dataclass(slots=True)
class _Shape:
    w: int
    h: int
    #: output port -> (row offset, label); main outputs first, then other kinds (n8n's ``error`` type)
    outputs: dict[int, tuple[int, str]]
    #: input index -> number of rows (arriving lines); labels
    input_rows: dict[int, int]
    in_labels: dict[int, str]
    #: AI kind -> number of columns (arriving sub-nodes), in n8n's order
    ai_ports: dict[str, int]
    top_port: bool
    subtitle: str


def _port_numbers(workflow: Workflow, roles: _Roles) -> tuple[dict[str, int], dict[WfEdge, int]]:
    """How many output ports each node has, and the port of every non-AI connection."""
    main_count: dict[str, int] = {}
    extra_kinds: dict[str, list[str]] = defaultdict(list)
    for node in workflow.nodes:
        labels = output_labels(node)
        main_count[node.name] = 0 if node.name in roles.serves else max(1, max(labels, default=-1) + 1)
    for e in workflow.edges:
        if e.is_main:
            main_count[e.source] = max(main_count[e.source], e.output + 1)
        elif not e.is_ai and e.kind not in extra_kinds[e.source]:
            extra_kinds[e.source].append(e.kind)
    ports: dict[WfEdge, int] = {}
    counts = dict(main_count)
    offsets: dict[tuple[str, str, int], int] = {}
    for e in workflow.edges:
        if e.is_ai:
            continue
        if e.is_main:
            ports[e] = e.output
            continue
        key = (e.source, e.kind, e.output)
        if key not in offsets:
            offsets[key] = counts[e.source]
            counts[e.source] += 1
        ports[e] = offsets[key]
    return counts, ports


def _measure(workflow: Workflow, roles: _Roles, detail: Detail, status_row: bool,
             counts: Mapping[str, int], ports: Mapping[WfEdge, int], box_cells: int = COMPACT_CELLS) -> dict[str, _Shape]:
    nets_in: dict[tuple[str, int], set[tuple[str, int]]] = defaultdict(set)
    ai_in: dict[tuple[str, str], set[str]] = defaultdict(set)
    extra_labels: dict[str, dict[int, str]] = defaultdict(dict)
    for e in workflow.edges:
        if e.is_ai:
            ai_in[(e.target, e.kind)].add(e.source)
        else:
            nets_in[(e.target, e.input)].add((e.source, ports[e]))
            if not e.is_main:
                extra_labels[e.source][ports[e]] = e.kind
    ai_sources = {e.source for e in workflow.edges if e.is_ai}
    inputs_used: dict[str, int] = {}
    for (target, index) in nets_in:
        inputs_used[target] = max(inputs_used.get(target, 0), index + 1)
    ai_kinds: dict[str, list[str]] = defaultdict(list)
    for (target, kind) in ai_in:
        ai_kinds[target].append(kind)
    shapes: dict[str, _Shape] = {}
    for node in workflow.nodes:
        name = node.name
        kinds = set(ai_kinds.get(name, ()))
        kinds.update(DEFAULT_AI_PORTS.get(node.short_type, ()))
        if node.short_type in ("agent", "chainLlm") and node.parameters.get("hasOutputParser") is True:
            kinds.add("ai_outputParser")
        ai_ports = {k: max(1, len(ai_in.get((name, k), ()))) for k in sorted(kinds, key=lambda k: (ai_order(k), k))}
        labels = {**output_labels(node), **extra_labels.get(name, {})}
        n_out = counts[name]
        label_cells = LABEL_CELLS_TIGHT if detail is Detail.TIGHT else LABEL_CELLS
        outputs = {p: (1 + p, _cut(labels.get(p, ""), label_cells) if n_out > 1 or p in labels else "")
                   for p in range(n_out)}
        n_in = 0 if (node.kind is NodeKind.TRIGGER or name in roles.serves) else input_count(node)
        n_in = max(n_in, inputs_used.get(name, 0))
        input_rows = {i: max(1, len(nets_in.get((name, i), ()))) for i in range(n_in)}
        in_labels = {i: str(i + 1) for i in range(n_in)} if n_in > 1 else {}
        label = f"{node.glyph} {name}"
        pad = 2 if in_labels else 0
        if detail is Detail.FULL:
            w = max(14, min(30, cell_len(label) + 3 + pad))
            h = 5 if status_row else 4
            if status_row:
                w = max(w, 22)
        else:
            w = max(8, min(box_cells if detail is Detail.COMPACT else TIGHT_CELLS, cell_len(label) + 2 + pad))
            h = 3
            if status_row:  # the state written whole on the bottom border: "○ not reached" (13 cells)
                w = max(w, 2 + STATE_CELLS)
        ports_w = 2 + sum(count + cell_len(connection_label(k)) + 1 for k, count in ai_ports.items()) + 1
        w = max(w, ports_w if ai_ports else 0)
        h = max(h, 2 + n_out, 2 + sum(input_rows.values()))
        subtitle = node_subtitle(node) or node.short_type
        shapes[name] = _Shape(w, h, outputs, input_rows, in_labels, ai_ports, name in ai_sources, subtitle)
    return shapes


def _cut(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, cut with ``…``; spaces drawn as ``_`` (a label is part of a
    line), characters of no width (variation selectors, combining keycaps) left out: the label takes
    exactly the cells it is measured in, whatever the terminal does with them."""
    text = "_".join("".join(ch for ch in text if get_character_cell_size(ch) > 0).split())
    if cell_len(text) <= cells:
        return text
    out = ""
    for char in text:
        if cell_len(out + char) > cells - 1:
            break
        out += char
    return out + "…"


# --------------------------------------------------------------------------- 5. ports and routes


def _boxes(workflow: Workflow, shapes: Mapping[str, _Shape], at: Mapping[str, tuple[int, int]],
           origin: tuple[int, int]) -> dict[str, Box]:
    boxes: dict[str, Box] = {}
    ox, oy = origin
    for node in workflow.nodes:
        shape = shapes[node.name]
        x, y = at[node.name][0] - ox, at[node.name][1] - oy
        box = Box(node.name, x, y, shape.w, shape.h, subtitle=shape.subtitle)
        for port, (row, label) in shape.outputs.items():
            box.outputs[port] = y + row
            if label:
                box.out_labels[port] = label
        row = y + 1
        for index, count in shape.input_rows.items():
            box.inputs[index] = tuple(range(row, row + count))
            row += count
        box.in_labels = dict(shape.in_labels)
        px = x + 2
        for kind, count in shape.ai_ports.items():
            box.ai_ports[kind] = tuple(range(px, px + count))
            box.ai_labels[kind] = connection_label(kind)
            px += count + cell_len(box.ai_labels[kind]) + 1
        if shape.top_port:
            box.top_port = x + shape.w // 2
        boxes[node.name] = box
    return boxes


def _ports(workflow: Workflow, boxes: Mapping[str, Box], ports: Mapping[WfEdge, int]
           ) -> tuple[dict[WfEdge, int], dict[WfEdge, int]]:
    """The row each main line arrives on (per input, lines sorted by where they come from, one row per
    source port) and the column each sub-node's line arrives at (sorted by the sub-node's column)."""
    arrivals: dict[tuple[str, int], dict[tuple[str, int], list[WfEdge]]] = defaultdict(dict)
    ai_arrivals: dict[tuple[str, str], dict[str, list[WfEdge]]] = defaultdict(dict)
    for e in workflow.edges:
        if e.is_ai:
            ai_arrivals[(e.target, e.kind)].setdefault(e.source, []).append(e)
        else:
            arrivals[(e.target, e.input)].setdefault((e.source, ports[e]), []).append(e)
    row_of: dict[WfEdge, int] = {}
    for (target, index), nets in arrivals.items():
        rows = boxes[target].inputs.get(index, ())
        order = sorted(nets, key=lambda n: (boxes[n[0]].outputs.get(n[1], boxes[n[0]].y), boxes[n[0]].x))
        for k, net in enumerate(order):
            for e in nets[net]:
                row_of[e] = rows[min(k, len(rows) - 1)]
    column_of: dict[WfEdge, int] = {}
    for (target, kind), sources in ai_arrivals.items():
        columns = boxes[target].ai_ports.get(kind, ())
        for k, source in enumerate(sorted(sources, key=lambda s: boxes[s].x)):
            for e in sources[source]:
                column_of[e] = columns[min(k, len(columns) - 1)]
    return row_of, column_of


@dataclass(slots=True)
class _Routing:
    routes: list[Route]
    #: connections no way was found for
    failed: list[WfEdge]
    #: outputs nothing is connected to
    stubs: list[Point]
    grid: Grid
    #: the row each main connection arrives on
    row_of: dict[WfEdge, int]


def _route(workflow: Workflow, boxes: Mapping[str, Box], ports: Mapping[WfEdge, int],
           first: Mapping[WfEdge, int] | None = None, count_room: int = 0) -> _Routing:
    """Every connection's line (phase 5): sub-nodes' first (short, under their consumers), then main
    connections, the nearest first (``first``: those that found no way in an earlier round go before
    the others, the latest to fail first). Returns the routes, the connections with no way, and the stubs of outputs nothing is
    connected to."""
    grid = Grid.of(Rect(b.x, b.y, b.w, b.h) for b in boxes.values())
    if len(workflow.edges) > WIDEN_MAX_EDGES:  # a few tracks each; the rest go round the outside
        grid.tracks_near, grid.tracks_below = BIG_TRACKS_NEAR, 0
    row_of, column_of = _ports(workflow, boxes, ports)
    used_ports: set[tuple[str, int]] = {(e.source, ports[e]) for e in workflow.edges if not e.is_ai}
    # reserve what belongs to one net: label letters, stubs, the cells under AI ports and over top ports
    stubs: list[Point] = []
    for box in boxes.values():
        for port, row in box.outputs.items():
            label = box.out_labels.get(port, "")
            net = (box.name, port)
            connected = (box.name, port) in used_ports
            if not connected and len(box.outputs) < 2 and not label:
                continue
            x0 = box.x + box.w
            if not connected:
                stubs.append((x0, row))
                grid.mark(x0, row, net)
            for k in range(cell_len(label)):
                if not grid.box_on_h(row, x0 + 1 + k, x0 + 1 + k):
                    grid.mark(x0 + 1 + k, row, net)
        if box.top_port is not None:
            grid.mark(box.top_port, box.y - 1, (box.name, "ai"))
    for e, column in column_of.items():
        grid.mark(column, boxes[e.target].y + boxes[e.target].h, (e.source, "ai"))
    legs: dict[Hashable, int] = defaultdict(int)
    for e in workflow.edges:
        legs[(e.source, "ai") if e.is_ai else (e.source, ports[e])] += 1
    grid.branching = {net for net, count in legs.items() if count > 1}
    routes: list[Route] = []
    failed: list[WfEdge] = []
    first = first or {}
    ai_edges = sorted((e for e in workflow.edges if e.is_ai),
                      key=lambda e: (-first.get(e, -1), boxes[e.source].y, boxes[e.source].x))
    for e in ai_edges:
        src, tgt = boxes[e.source], boxes[e.target]
        ai_net = (e.source, "ai")
        if src.top_port is None:
            failed.append(e)
            continue
        start, end = (src.top_port, src.y - 1), (column_of[e], tgt.y + tgt.h)
        points = route_up(grid, ai_net, start, end)
        if points is None:
            failed.append(e)
            continue
        grid.lay(points, ai_net)
        routes.append(Route(e, flat_points(points), ai_net))
    main_edges = [e for e in workflow.edges if not e.is_ai]
    rank = _channel_order(main_edges, boxes, ports, row_of)
    main_edges.sort(key=lambda e: (-first.get(e, -1), boxes[e.target].x < boxes[e.source].x,  # loops last
                                   rank[(e.source, ports[e])],
                                   abs(boxes[e.target].x - boxes[e.source].x) + abs(row_of[e] - boxes[e.source].y)))
    # every line of a node with branch labels turns right of all its labels, so that none crosses
    # a label of its neighbours
    widest_label = {b.name: max(map(cell_len, b.out_labels.values())) for b in boxes.values() if b.out_labels}
    for e in main_edges:
        src, tgt = boxes[e.source], boxes[e.target]
        port = ports[e]
        main_net = (e.source, port)
        start, end = (src.x + src.w, src.outputs[port]), (tgt.x - 1, row_of[e])
        label_cells = widest_label.get(e.source, 0)
        lead = 1 + label_cells + (count_room if label_cells else 0)  # after a run: room for the items beside the label
        found = route_main(grid, main_net, start, end, lead=lead)
        if found is None and lead > 1:
            found = route_main(grid, main_net, start, end, lead=1)
        if found is None:
            failed.append(e)
            continue
        points, joins = found
        lay_main(grid, main_net, points)
        routes.append(Route(e, flat_points(points), main_net, joins))
    return _Routing(routes, failed, stubs, grid, row_of)


def _channel_order(edges: list[WfEdge], boxes: Mapping[str, Box], ports: Mapping[WfEdge, int],
                   row_of: Mapping[WfEdge, int]) -> dict[tuple[str, int], int]:
    """The order nets are routed in, so that channels fall left to right as they must: a net leaving on
    row r turns left of a net arriving on row r further right (else their horizontal pieces on row r
    would overlap). A topological order of those constraints (the nearest first where free; a cycle is
    broken at the nearest), as in channel routing."""
    nets: dict[tuple[str, int], list[WfEdge]] = defaultdict(list)
    for e in edges:
        nets[(e.source, ports[e])].append(e)
    leaving: dict[int, list[tuple[int, tuple[str, int]]]] = defaultdict(list)
    arriving: dict[int, list[tuple[int, tuple[str, int]]]] = defaultdict(list)
    reach: dict[tuple[str, int], tuple[int, int]] = {}
    for net, legs in nets.items():
        src = boxes[net[0]]
        start = src.x + src.w
        end = max(boxes[e.target].x for e in legs)
        reach[net] = (start, end)
        leaving[src.outputs.get(net[1], src.y)].append((start, net))
        for e in legs:
            if boxes[e.target].x > start:
                arriving[row_of[e]].append((boxes[e.target].x, net))
    after: dict[tuple[str, int], set[tuple[str, int]]] = defaultdict(set)
    indeg: dict[tuple[str, int], int] = dict.fromkeys(nets, 0)
    for row, outs in leaving.items():
        ins = arriving.get(row)
        if not ins:
            continue
        # a sweep along the row: the nets leaving it by how far they reach, the nets arriving on it by
        # where they start; those started left of a leaving net's reach are kept by the column they
        # arrive at, so the ones arriving right of its start are one slice (what gets in its way and
        # nothing else: the work is the conflicts found, not the columns the lines cross)
        ins.sort(key=lambda item: reach[item[1]][0])
        arrive_x: list[int] = []  # the started ones' columns, sorted, and the nets beside them
        started: list[tuple[str, int]] = []
        k = 0
        for start, a in sorted(outs, key=lambda item: reach[item[1]][1]):
            end = reach[a][1]
            if end // _OVERTAKE_CHUNK < start // _OVERTAKE_CHUNK:
                continue  # all its lines go back (a loop) farther than a chunk: it gets in no one's way
            while k < len(ins) and reach[ins[k][1]][0] < end:
                target_x, b = ins[k]
                i = bisect.bisect_right(arrive_x, target_x)
                arrive_x.insert(i, target_x)
                started.insert(i, b)
                k += 1
            for b in started[bisect.bisect_right(arrive_x, start):]:
                if a != b and b not in after[a]:
                    after[a].add(b)
                    indeg[b] += 1

    def near(net: tuple[str, int]) -> tuple[int, int, str, int]:
        src = boxes[net[0]]
        span = min(abs(boxes[e.target].x - src.x) + abs(row_of[e] - src.y) for e in nets[net])
        return (span, src.x, net[0], net[1])
    keys = {n: near(n) for n in nets}  # once per net (a net waiting for others was measured twice)
    ready = [(keys[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    waiting = sorted(((keys[n], n) for n, d in indeg.items() if d > 0), reverse=True)
    rank: dict[tuple[str, int], int] = {}
    while len(rank) < len(nets):
        if not ready:  # a cycle: the nearest net still waiting goes first
            while waiting and waiting[-1][1] in rank:
                waiting.pop()
            ready.append(waiting.pop())
        _key, net = heapq.heappop(ready)
        if net in rank:
            continue
        rank[net] = len(rank)
        for b in after[net]:
            indeg[b] -= 1
            if indeg[b] == 0 and b not in rank:
                heapq.heappush(ready, (keys[b], b))
    return rank


#: a net whose lines all go back (a loop) is ordered with the nets arriving on its row only when its
#: start and its farthest target lie in one chunk of this many columns (as the filing by chunks that
#: came before the sweep did: the drawings stay the same)
_OVERTAKE_CHUNK = 64


# --------------------------------------------------------------------------- 6. sticky notes


def _regions(workflow: Workflow, x_axis: Axis, y_axis: Axis, origin: tuple[int, int]) -> list[Region]:
    ox, oy = origin
    regions = []
    for s in workflow.stickies:
        x0, y0 = x_axis(s.position[0]) - ox, y_axis(s.position[1]) - oy
        x1, y1 = x_axis(s.position[0] + s.width) - ox, y_axis(s.position[1] + s.height) - oy
        if x1 - x0 >= 4 and y1 - y0 >= 2:
            regions.append(Region(x0, y0, x1 - x0, y1 - y0, s.label, s.body, s.color))
    return regions


# --------------------------------------------------------------------------- the phases together


def layout_workflow(workflow: Workflow, detail: Detail = Detail.FULL, *,
                    runs: Mapping[str, NodeRun] | None = None, status_row: bool | None = None,
                    box_cells: int = COMPACT_CELLS) -> Layout:
    """Where every box and line goes (the six phases of the module's docstring). ``runs`` (an
    execution's outcome) adds a state row to boxes (``status_row`` says so without the runs). ``box_cells``:
    zoomed out (``Detail.COMPACT``), the widest box (names longer than it leaves are cut).

    The cyclic garbage collector is paused meanwhile: the layout makes hundreds of thousands of small
    tuples, lists and dicts and no cycles, and every collection of the oldest generation walks all of
    them again (a quarter of the time of a 5,000-node layout, measured)."""
    with _collector_paused():
        return _layout(workflow, detail, bool(runs) if status_row is None else status_row,
                       min(ROOMY_CELLS, max(COMPACT_CELLS, box_cells)))


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: after a run, the columns a line with a branch label (``done``, ``loop``, ``true``) keeps straight after
#: the label for the items it carried, as n8n writes them beside it: "12 items total", a cell of line either
#: side and the cell after the label
COUNT_ROOM = len("99 items total") + 3


def _layout(workflow: Workflow, detail: Detail, status_row: bool, box_cells: int = COMPACT_CELLS) -> Layout:
    roles = _roles(workflow)
    counts, ports = _port_numbers(workflow, roles)
    shapes = _measure(workflow, roles, detail, status_row, counts, ports, box_cells)
    px = pixels(workflow, roles, _roles)
    stickies = [(s.position[0], s.position[1], s.position[0] + s.width, s.position[1] + s.height)
                for s in workflow.stickies]
    extra: dict[float, int] = defaultdict(int)
    x_keys = sorted({p[0] for p in px.values()})
    first: dict[WfEdge, int] = {}
    scale = SCALE[int(detail)]
    count_room = COUNT_ROOM if status_row and detail is Detail.FULL else 0
    at, x_axis, y_axis = cells(workflow, shapes, px, extra, stickies, scale, count_room)
    if make_room(workflow, shapes, px, at, ports, x_keys, extra, count_room):
        at, x_axis, y_axis = cells(workflow, shapes, px, extra, stickies, scale, count_room)
    for attempt in range(WIDEN_ROUNDS + 1):
        if attempt:
            at, x_axis, y_axis = cells(workflow, shapes, px, extra, stickies, scale, count_room)
        boxes = _boxes(workflow, shapes, at, (0, 0))
        routing = _route(workflow, boxes, ports, first, count_room)
        failed = routing.failed
        if (not failed or len(workflow.edges) > WIDEN_MAX_EDGES
                or len(failed) > max(WIDEN_MAX_FAILED, len(workflow.edges) // 50)):
            break  # all drawn; or too big to route again (or so many found no way that room here and
            # there will not help): what is left goes round the outside (phase 5b)
        first.update(dict.fromkeys(failed, attempt))
        for e in failed:  # more room right of where the connection starts and left of where it ends
            after = bisect.bisect_right(x_keys, px[e.source][0])
            if after < len(x_keys):
                extra[x_keys[after]] += 3
            extra[px[e.target][0]] += 3
    regions = _regions(workflow, x_axis, y_axis, (0, 0))
    routes, stubs = routing.routes, routing.stubs
    labels = [(b.x + b.w + 1, b.outputs[p], text) for b in boxes.values() for p, text in b.out_labels.items()]
    if any(not e.is_ai for e in failed):
        failed = _escape(boxes, routing, regions, labels, ports)
    layout = Layout(workflow, detail, boxes, routes, labels, 0, 0, status_row, regions, stubs, failed, dict(ports))
    _normalise(layout)
    return layout


def _escape(boxes: Mapping[str, Box], routing: _Routing, regions: list[Region],
            labels: list[tuple[int, int, str]], ports: Mapping[WfEdge, int]) -> list[WfEdge]:
    """Phase 5b (``workflow_escape``): each main connection the router found no way for goes round the
    outside, on new columns and rows of its own; everything drawn moves right by the columns inserted.
    Returns the connections still without a way (sub-nodes' lines; a port with no room at all)."""
    grid = routing.grid
    rects = [(b.x, b.y, b.w, b.h) for b in boxes.values()]
    label_cells = [(x, y, cell_len(text)) for x, y, text in labels]
    ys = [y for r in routing.routes for y in r.flat[1::2]]
    ys += [b.y - (1 if b.top_port is not None else 0) for b in boxes.values()]
    ys += [b.y + b.h for b in boxes.values()] + [r.y for r in regions] + [r.y + r.h - 1 for r in regions]
    top, bottom = min(ys), max(ys)
    places = Boundaries(grid, rects, label_cells)
    escapes: list[Escape] = []
    still: list[WfEdge] = []
    for e in routing.failed:
        if e.is_ai:
            still.append(e)
            continue
        src, tgt = boxes[e.source], boxes[e.target]
        port = ports[e]
        lead = 1 + max((cell_len(text) for text in src.out_labels.values()), default=0)
        found = plan(grid, places, e, (e.source, port), (src.x + src.w, src.outputs[port]),
                     (tgt.x - 1, routing.row_of[e]), top, bottom, lead)
        if found is None:
            still.append(e)
        else:
            escapes.append(found)
    if not escapes:
        return still
    shift = insert(escapes, top, bottom)
    for b in boxes.values():
        right = shift(b.x + b.w - 1)
        b.x = shift(b.x)
        b.w = right - b.x + 1
        b.ai_ports = {k: tuple(shift(x) for x in cols) for k, cols in b.ai_ports.items()}
        if b.top_port is not None:
            b.top_port = shift(b.top_port)
    for r in routing.routes:
        flat = list(r.flat)
        flat[0::2] = [shift(x) for x in flat[0::2]]
        r.flat = tuple(flat)
    routing.stubs[:] = [(shift(x), y) for x, y in routing.stubs]
    labels[:] = [(shift(x), y, text) for x, y, text in labels]
    for reg in regions:
        right = shift(reg.x + reg.w - 1)
        reg.x = shift(reg.x)
        reg.w = right - reg.x + 1
    for esc in escapes:
        edge = esc.key
        assert isinstance(edge, WfEdge)
        routing.routes.append(Route(edge, flat_points(esc.points(shift)), esc.net))
    return still


def _normalise(layout: Layout) -> None:
    """Move everything so the drawing starts at cell (0, 0), and measure it."""
    boxes, routes, regions = layout.boxes.values(), layout.routes, layout.regions
    xs = ([b.x - (1 if b.inputs else 0) for b in boxes] + [x for r in routes for x in r.flat[0::2]]
          + [r.x for r in regions])
    ys = ([b.y - (1 if b.top_port is not None else 0) for b in boxes] + [y for r in routes for y in r.flat[1::2]]
          + [r.y for r in regions])
    dx, dy = -min(xs, default=0), -min(ys, default=0)
    for b in boxes:
        b.x += dx
        b.y += dy
        b.outputs = {p: y + dy for p, y in b.outputs.items()}
        b.inputs = {i: tuple(y + dy for y in rows) for i, rows in b.inputs.items()}
        b.ai_ports = {k: tuple(x + dx for x in cols) for k, cols in b.ai_ports.items()}
        if b.top_port is not None:
            b.top_port += dx
    for r in routes:
        flat = list(r.flat)
        flat[0::2] = [x + dx for x in flat[0::2]]
        flat[1::2] = [y + dy for y in flat[1::2]]
        r.flat = tuple(flat)
    for reg in regions:
        reg.x += dx
        reg.y += dy
    layout.labels = [(x + dx, y + dy, t) for x, y, t in layout.labels]
    layout.stubs = [(x + dx, y + dy) for x, y in layout.stubs]
    layout.width = max([b.x + b.w + (1 if b.outputs else 0) for b in boxes] + [x + 1 for r in routes for x in r.flat[0::2]]
                       + [r.x + r.w for r in regions] + [x + cell_len(t) for x, _, t in layout.labels] + [0])
    layout.height = max([b.y + b.h + (1 if b.ai_ports else 0) for b in boxes] + [y + 1 for r in routes for y in r.flat[1::2]]
                        + [r.y + r.h for r in regions] + [0])
