"""Lay a workflow out on a character grid: where each box, port, line and branch label goes.

Pure (no Textual): the canvas widget, ``instance-ai workflow show`` and the tests all use it;
``workflow_draw`` turns a ``Layout`` into characters.

**Layout** (left to right, as n8n's canvas) is the layered method of Sugiyama et al.:

1. *Sub-nodes* (an AI agent's model, memory, tools: nodes whose only connections are ``ai_*`` ones into one
   node) are not layered: each hangs under its agent in a row, so an agent and its sub-nodes form one
   cluster, as n8n draws them.
2. *Columns*: the nodes' own ``position`` when every main node has one and no two fall on the same cell
   after snapping x to columns (so the drawing looks like the editor); otherwise the longest path from the
   start nodes, with cycles (loops) broken by a depth-first search first.
3. *Dummies*: a connection spanning several columns gets a one-row item in each column it crosses, so lines
   never run through a box.
4. *Order*: by position (y), or barycentre sweeps that reduce crossings.
5. *Rows*: each item wants the row of what feeds it (or its scaled ``position``); items are pushed down
   so that they never overlap.
6. *Routing*: between two columns every net (one output port and its targets) gets its own vertical
   channel, ordered so that a net leaving a row lies left of a net arriving on that row; connections that
   go back (loops) run in their own lane under the drawing.

We wrote this instead of using ``grandalf`` (the one Python Sugiyama library, 0.8 of 2023): it lays out
floating-point points and leaves edge routing, ports, sub-node clusters and character cells to the caller,
which is most of the work here, and its layout of 200 nodes alone took longer than the whole budget (100 ms).
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from rich.cells import cell_len

from .workflow_graph import (
    NodeRun,
    WfEdge,
    Workflow,
    ai_order,
    connection_label,
    input_count,
    output_labels,
)


class Detail(IntEnum):
    """How much a box shows: FULL (name, type, state) or COMPACT (name; zoomed out)."""

    FULL = 0
    COMPACT = 1


ROW_GAP = 1
MIN_GAP = 4
#: n8n's canvas: about 220 px between columns, 160-200 between rows
X_CLUSTER = 90.0
Y_PER_ROW = 160.0


@dataclass(slots=True)
class Box:
    """A node's rectangle (cells) and where its ports are."""

    name: str
    x: int
    y: int
    w: int
    h: int
    #: output index -> row, input index -> row (on the right and left border)
    outputs: dict[int, int] = field(default_factory=dict)
    inputs: dict[int, int] = field(default_factory=dict)
    #: AI connection type -> column on the bottom border (an agent's sub-node ports)
    ai_ports: dict[str, int] = field(default_factory=dict)
    #: the column on the top border where a sub-node's line leaves (sub-nodes only), and its label
    top_port: int | None = None
    top_label: str = ""

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h

    def overlaps(self, other: Box) -> bool:
        return (self.x < other.x + other.w and other.x < self.x + self.w
                and self.y < other.y + other.h and other.y < self.y + self.h)


@dataclass(slots=True)
class Route:
    """A connection's line: the corners of a path of horizontal and vertical pieces, from the cell
    beside the source's port to the cell beside the target's."""

    edge: WfEdge
    points: list[tuple[int, int]]

    @property
    def cells(self) -> list[tuple[int, int]]:
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
class Layout:
    workflow: Workflow
    detail: Detail
    boxes: dict[str, Box]
    routes: list[Route]
    #: (x, y, text) branch labels on the lines
    labels: list[tuple[int, int, str]]
    width: int
    height: int
    #: whether boxes have a row for the execution state
    status_row: bool = False

# --------------------------------------------------------------------------- sizes


@dataclass(slots=True)
class _Item:
    """One thing stacked in a column: a node's cluster (node + sub-nodes) or a dummy."""

    key: str
    column: int
    w: int
    h: int
    dummy: bool = False
    order: float = 0.0
    y: int = 0
    want: float = 0.0
    #: row offset of the in/out port (dummies: 0)
    node: str = ""


def _box_size(workflow: Workflow, name: str, detail: Detail, status_row: bool, n_out: int,
              n_in: int) -> tuple[int, int]:
    node = workflow.node(name)
    assert node is not None
    label = f"{node.glyph} {node.name}"
    if detail is Detail.FULL:
        w = max(14, min(26, max(cell_len(label), len(node.short_type)) + 3))
        h = 4 + (1 if status_row else 0)
        if status_row:  # "✓ ran · 12 items", "○ not reached"
            w = max(w, 19)
    else:
        w = max(8, min(16, cell_len(label) + 2))
        h = 3
        if status_row:  # "○ not reached" on the bottom border
            w = max(w, 15)
    return w, max(h, n_out + 2, n_in + 2)


def _clusters(workflow: Workflow) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``(children by parent, parent by sub-node)``: which nodes hang under which (AI sub-nodes)."""
    main_touch: set[str] = set()
    ai_targets: dict[str, set[str]] = defaultdict(set)
    incoming_ai: dict[str, set[str]] = defaultdict(set)
    for e in workflow.edges:
        if e.is_main:
            main_touch.add(e.source)
            main_touch.add(e.target)
        else:
            ai_targets[e.source].add(e.target)
            incoming_ai[e.target].add(e.source)
    sub = {n.name for n in workflow.nodes
           if n.name not in main_touch and len(ai_targets.get(n.name, ())) == 1
           and next(iter(ai_targets[n.name])) != n.name}
    changed = True
    while changed:  # a sub-node fed by a node that is not its own sub-node is drawn as a node
        changed = False
        for name in list(sub):
            if any(src not in sub for src in incoming_ai.get(name, ())):
                sub.discard(name)
                changed = True
    parent: dict[str, str] = {}
    for name in sub:
        target = next(iter(ai_targets[name]))
        # walk up; a cycle of sub-nodes makes them all nodes
        seen = {name}
        cursor = target
        while cursor in sub and cursor not in seen:
            seen.add(cursor)
            cursor = next(iter(ai_targets[cursor]))
        if cursor in sub:
            continue
        parent[name] = target
    order = {n.name: i for i, n in enumerate(workflow.nodes)}
    kind_of = {e.source: e.kind for e in workflow.edges if not e.is_main and e.source in parent}
    children: dict[str, list[str]] = defaultdict(list)
    for name, target in parent.items():
        children[target].append(name)
    for kids in children.values():
        kids.sort(key=lambda c: (ai_order(kind_of[c]), order[c]))
    return dict(children), parent


# --------------------------------------------------------------------------- layout


def layout_workflow(workflow: Workflow, detail: Detail = Detail.FULL, *,
                    runs: Mapping[str, NodeRun] | None = None) -> Layout:
    """Where every box and line goes. ``runs`` (an execution's outcome) adds a state row to boxes."""
    status_row = bool(runs)
    children, parent = _clusters(workflow)
    labels_of = {n.name: output_labels(n) for n in workflow.nodes}
    n_out: dict[str, int] = defaultdict(lambda: 1)
    for e in workflow.edges:
        if e.is_main or e.source not in parent:
            n_out[e.source] = max(n_out[e.source], e.output + 1)
    for name, branches in labels_of.items():
        if branches:
            n_out[name] = max(n_out[name], max(branches) + 1)
    n_in = {n.name: input_count(workflow, n.name) for n in workflow.nodes}
    ai_kinds: dict[str, list[str]] = defaultdict(list)
    kind_of: dict[str, str] = {}
    for e in workflow.edges:
        if e.source in parent and parent[e.source] == e.target:
            kind_of.setdefault(e.source, e.kind)
            if e.kind not in ai_kinds[e.target]:
                ai_kinds[e.target].append(e.kind)
    for kinds in ai_kinds.values():
        kinds.sort(key=ai_order)
    sizes: dict[str, tuple[int, int]] = {}
    for node in workflow.nodes:
        sizes[node.name] = _box_size(workflow, node.name, detail, status_row, n_out[node.name], n_in[node.name])

    # clusters: a node and the row of sub-nodes under it (offsets within the cluster)
    cluster_size: dict[str, tuple[int, int]] = {}
    kid_dx: dict[str, int] = {}
    port_dx: dict[str, dict[str, int]] = {}

    def measure(name: str) -> tuple[int, int]:
        if name in cluster_size:
            return cluster_size[name]
        w, h = sizes[name]
        kids = children.get(name, [])
        if kids:
            kx, kid_ports = 0, set()
            for kid in kids:
                kid_dx[kid] = kx
                kid_ports.add(kx + 2)
                kx += measure(kid)[0] + 2
            px = 2 + (len("○ not reached") + 1 if runs and detail is Detail.COMPACT else 0)
            ports: dict[str, int] = {}
            for kind in ai_kinds[name]:
                first = next(k for k in kids if kind_of[k] == kind)
                if px <= kid_dx[first] + 2 <= w - 2:  # straight above its (first) sub-node
                    px = kid_dx[first] + 2
                while px in kid_ports and px != kid_dx[first] + 2:  # never on another sub-node's line
                    px += 1
                ports[kind] = px
                px += 3
            port_dx[name] = ports
            if px > w - 1:  # the ports need a wider box
                w = px + 1
                sizes[name] = (w, h)
            h_kids = max(measure(k)[1] for k in kids)
            cluster_size[name] = (max(w, kx - 2), h + len(ai_kinds[name]) + 1 + h_kids)
        else:
            cluster_size[name] = (w, h)
        return cluster_size[name]

    main_nodes = [n.name for n in workflow.nodes if n.name not in parent]
    for name in main_nodes:
        measure(name)
    main_edges = [e for e in workflow.edges if e.source not in parent and e.target not in parent]
    in_cluster_edges = [e for e in workflow.edges if e.source in parent and parent[e.source] == e.target]
    # an edge touching a sub-node that is not its link to its parent cannot happen (_clusters), but
    # anything else is routed as a main connection
    column, by_position = _columns(workflow, main_nodes, main_edges)
    items: dict[str, _Item] = {}
    for name in main_nodes:
        w, h = cluster_size[name]
        items[name] = _Item(name, column[name], w, h, node=name)
    # dummies for forward connections that skip columns; back connections go in lanes
    chains: dict[int, list[str]] = {}
    back: list[int] = []
    dummy_of_net: dict[tuple[str, int, int], str] = {}
    for index, e in enumerate(main_edges):
        c0, c1 = column[e.source], column[e.target]
        if c1 <= c0:
            back.append(index)
            continue
        path = [e.source]
        for c in range(c0 + 1, c1):
            # connections from one port share their dummies: they run together as far as they can
            key = (e.source, e.output, c)
            if key not in dummy_of_net:
                dummy = f"\0d{index}:{c}"
                items[dummy] = _Item(dummy, c, 1, 1, dummy=True)
                dummy_of_net[key] = dummy
            path.append(dummy_of_net[key])
        path.append(e.target)
        chains[index] = path
    n_cols = max((it.column for it in items.values()), default=-1) + 1
    cols: list[list[_Item]] = [[] for _ in range(n_cols)]
    for it in items.values():
        cols[it.column].append(it)
    succ: dict[str, set[str]] = defaultdict(set)
    pred: dict[str, set[str]] = defaultdict(set)
    for path in chains.values():
        for a, b in itertools.pairwise(path):
            succ[a].add(b)
            pred[b].add(a)
    node_index = {n.name: i for i, n in enumerate(workflow.nodes)}
    _order(cols, succ, pred, node_index, workflow, by_position)

    # rows: each item wants the row of what feeds it; pushed down so nothing overlaps
    def port_offset_out(name: str, output: int) -> int:
        return 0 if items[name].dummy else 1 + output

    def port_offset_in(name: str, index: int) -> int:
        return 0 if items[name].dummy else 1 + index

    min_y = min((n.position[1] for n in workflow.nodes if n.position and n.name in items), default=0.0)
    pitch = (sizes[main_nodes[0]][1] + ROW_GAP + 1) if main_nodes else 6
    edge_in: dict[str, list[tuple[str, int, int]]] = defaultdict(list)  # item -> (source item, out, in)
    for index, path in chains.items():
        e = main_edges[index]
        for k_hop, (a, b) in enumerate(itertools.pairwise(path)):
            edge_in[b].append((a, e.output if k_hop == 0 else 0, e.input if k_hop == len(path) - 2 else 0))
    for col in cols:
        for it in col:
            wants = [items[a].y + port_offset_out(a, o) - port_offset_in(it.key, i) for a, o, i in edge_in[it.key]
                     if items[a].column < it.column]
            if by_position and not it.dummy:
                placed = workflow.node(it.key)
                assert placed is not None and placed.position is not None
                it.want = (placed.position[1] - min_y) / Y_PER_ROW * pitch
            elif wants:
                it.want = sum(wants) / len(wants)
            else:
                it.want = 0.0
        floor = 0
        for it in col:
            it.y = max(round(it.want), floor)
            floor = it.y + it.h + ROW_GAP
    # columns' widths; each gap's width comes from its nets
    col_w = [max((it.w for it in col), default=0) for col in cols]
    nets = _nets(items, chains, main_edges, back, labels_of)
    lane0 = max((it.y + it.h for it in items.values()), default=0) + 1
    lane_of = {index: lane0 + k for k, index in enumerate(back)}
    gap_w: dict[int, int] = {}
    channel_of: dict[tuple[int, object], int] = {}  # (gap, net key) -> channel number
    lead_of: dict[int, int] = {}
    for gap in range(-1, n_cols):
        gap_nets = nets.get(gap, {})
        lead = 1
        for net in gap_nets.values():
            if net.label:
                room = col_w[gap] - sizes[net.source][0] if net.source in sizes else 0
                lead = max(lead, len(net.label) + 2 - room)
        needing = [net_id for net_id, net in gap_nets.items() if net.needs_channel(lane_of)]
        ordered = _channel_order(needing, gap_nets)
        for k, net_id in enumerate(ordered):
            channel_of[(gap, net_id)] = k
        lead_of[gap] = lead
        gap_w[gap] = max(MIN_GAP, lead + len(ordered) + 2) if (gap_nets or 0 <= gap < n_cols - 1) else 0
    col_x: list[int] = []
    x = gap_w.get(-1, 0)
    for c in range(n_cols):
        col_x.append(x)
        x += col_w[c] + gap_w.get(c, 0)
    width = x

    boxes: dict[str, Box] = {}

    def place(name: str, x0: int, y0: int) -> None:
        w, h = sizes[name]
        box = Box(name, x0, y0, w, h)
        for o in range(n_out[name]):
            box.outputs[o] = y0 + 1 + o
        for i in range(n_in[name]):
            box.inputs[i] = y0 + 1 + i
        boxes[name] = box
        kids = children.get(name, [])
        if not kids:
            return
        kid_y = y0 + h + len(ai_kinds[name]) + 1
        for kid in kids:
            place(kid, x0 + kid_dx[kid], kid_y)
            boxes[kid].top_port = x0 + kid_dx[kid] + 2
            boxes[kid].top_label = connection_label(kind_of[kid])
        box.ai_ports = {kind: x0 + dx for kind, dx in port_dx[name].items()}

    for c, col in enumerate(cols):
        for it in col:
            if not it.dummy:
                place(it.key, col_x[c], it.y)
    # routes
    routes: list[Route] = []
    labels: list[tuple[int, int, str]] = []

    def channel_x(gap: int, key: object) -> int | None:
        k = channel_of.get((gap, key))
        if k is None:
            return None
        start = (col_x[gap] + col_w[gap]) if gap >= 0 else 0
        return start + lead_of[gap] + k

    def hop(gap: int, key: object, x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
        cx = channel_x(gap, key)
        if cx is None or y0 == y1:
            return [(x0, y0), (x1, y1)]
        return [(x0, y0), (cx, y0), (cx, y1), (x1, y1)]

    for index, e in enumerate(main_edges):
        src, tgt = boxes[e.source], boxes[e.target]
        sy, ty = src.outputs.get(e.output, src.y + 1), tgt.inputs.get(e.input, tgt.y + 1)
        if index in chains:
            path = chains[index]
            points: list[tuple[int, int]] = []
            x0, y0 = src.x + src.w, sy
            for step in range(len(path) - 1):
                nxt = items[path[step + 1]]
                gap = items[path[step]].column
                net_key = _net_key(path, step, e)
                if nxt.dummy:
                    bx, by = col_x[nxt.column], nxt.y
                    points += hop(gap, net_key, x0, y0, bx - 1, by)
                    x0, y0 = bx + col_w[nxt.column], by
                else:
                    points += hop(gap, net_key, x0, y0, tgt.x - 1, ty)
        else:
            lane = lane_of[index]
            c0, c1 = column[e.source], column[e.target]
            cx0 = channel_x(c0, ("out", e.source, e.output))
            cx1 = channel_x(c1 - 1, ("back", index))
            assert cx0 is not None and cx1 is not None
            points = [(src.x + src.w, sy), (cx0, sy), (cx0, lane), (cx1, lane), (cx1, ty), (tgt.x - 1, ty)]
        routes.append(Route(e, _corners(points)))
    for e in in_cluster_edges:
        kid, agent = boxes[e.source], boxes[e.target]
        assert kid.top_port is not None
        kinds = ai_kinds[e.target]
        # the leftmost port's line runs lowest, so that lines going right never cross
        bus = agent.y + agent.h + len(kinds) - 1 - kinds.index(e.kind)
        px = agent.ai_ports[e.kind]
        points = [(kid.top_port, kid.y - 1), (kid.top_port, bus), (px, bus), (px, agent.y + agent.h)]
        routes.append(Route(e, _corners(points)))
    for node in workflow.nodes:
        for output, text in labels_of[node.name].items():
            box = boxes[node.name]
            if any(r.edge.source == node.name and r.edge.output == output for r in routes):
                labels.append((box.x + box.w, box.outputs[output], text))
    height = max([b.y + b.h for b in boxes.values()] + [y + 1 for r in routes for _, y in r.points] + [0])
    width = max([width] + [b.x + b.w for b in boxes.values()] + [x + 1 for r in routes for x, _ in r.points])
    return Layout(workflow, detail, boxes, routes, labels, width, height, status_row)


def _corners(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The points without repeats and without points in the middle of a straight piece."""
    out: list[tuple[int, int]] = []
    for p in points:
        if out and out[-1] == p:
            continue
        if len(out) >= 2 and (out[-2][0] == out[-1][0] == p[0] or out[-2][1] == out[-1][1] == p[1]):
            # still straight: drop the middle point unless the line turns back on itself
            a, b = out[-2], out[-1]
            if (b[0] - a[0]) * (p[0] - b[0]) >= 0 and (b[1] - a[1]) * (p[1] - b[1]) >= 0:
                out[-1] = p
                continue
        out.append(p)
    return out


def _columns(workflow: Workflow, names: list[str], edges: list[WfEdge]) -> tuple[dict[str, int], bool]:
    """Column of each main node, and whether it comes from the nodes' positions."""
    nodes = [workflow.node(n) for n in names]
    if nodes and all(n is not None and n.position is not None for n in nodes):
        xs = sorted({n.position[0] for n in nodes if n is not None and n.position is not None})
        rank: dict[float, int] = {}
        c, prev = 0, xs[0]
        for x in xs:
            if x - prev > X_CLUSTER:
                c += 1
            rank[x] = c
            prev = x
        column = {n.name: rank[n.position[0]] for n in nodes if n is not None and n.position is not None}
        by_col: dict[int, list[float]] = defaultdict(list)
        for n in nodes:
            assert n is not None and n.position is not None
            by_col[column[n.name]].append(n.position[1])
        fits = all(b - a >= Y_PER_ROW / 2 for ys in by_col.values() for a, b in zip(sorted(ys), sorted(ys)[1:],
                                                                                    strict=False))
        if fits:
            return column, True
    # longest path from the start nodes, loops broken by a depth-first search
    succ: dict[str, list[str]] = defaultdict(list)
    indeg: dict[str, int] = dict.fromkeys(names, 0)
    for e in edges:
        succ[e.source].append(e.target)
        indeg[e.target] += 1
    state: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    starts = [n for n in names if indeg[n] == 0] + names
    for start in starts:
        if start in state:
            continue
        stack = [(start, iter(succ[start]))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            for nxt in it:
                if state.get(nxt) == 1:
                    back.add((node, nxt))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(succ[nxt])))
                    break
            else:
                state[node] = 2
                stack.pop()
    fwd: dict[str, list[str]] = defaultdict(list)
    deg: dict[str, int] = dict.fromkeys(names, 0)
    for e in edges:
        if (e.source, e.target) not in back and e.source != e.target:
            fwd[e.source].append(e.target)
            deg[e.target] += 1
    column = dict.fromkeys(names, 0)
    queue = [n for n in names if deg[n] == 0]
    head = 0
    while head < len(queue):
        node = queue[head]
        head += 1
        for nxt in fwd[node]:
            column[nxt] = max(column[nxt], column[node] + 1)
            deg[nxt] -= 1
            if deg[nxt] == 0:
                queue.append(nxt)
    return column, False


def _order(cols: list[list[_Item]], succ: Mapping[str, set[str]], pred: Mapping[str, set[str]],
           node_index: Mapping[str, int], workflow: Workflow, by_position: bool) -> None:
    """Order within each column: by position, else barycentre sweeps from a first-seen order."""
    if by_position:
        pos_y: dict[str, float] = {}
        for n in workflow.nodes:
            if n.position is not None:
                pos_y[n.name] = n.position[1]
        for col in cols:
            for it in col:
                if not it.dummy:
                    it.order = pos_y.get(it.key, 0.0)
        for col in cols:  # dummies take the row of what feeds them
            for it in col:
                if it.dummy:
                    feeders = [pos_y[p] for p in pred.get(it.key, ()) if p in pos_y]
                    it.order = (sum(feeders) / len(feeders) if feeders else 0.0) + 0.5
                    pos_y[it.key] = it.order
            col.sort(key=lambda i: (i.order, node_index.get(i.key, 1 << 30), i.key))
        return
    for col in cols:
        col.sort(key=lambda i: (node_index.get(i.key, 1 << 30), i.key))
    position: dict[str, float] = {}
    for col in cols:
        for k, it in enumerate(col):
            position[it.key] = k
    for sweep in range(4):
        rng = range(1, len(cols)) if sweep % 2 == 0 else range(len(cols) - 2, -1, -1)
        for c in rng:
            near = pred if sweep % 2 == 0 else succ
            for it in cols[c]:
                ns = [position[n] for n in near.get(it.key, ()) if n in position]
                it.order = sum(ns) / len(ns) if ns else position[it.key]
            cols[c].sort(key=lambda i: (i.order, node_index.get(i.key, 1 << 30)))
            for k, it in enumerate(cols[c]):
                position[it.key] = k


@dataclass(slots=True)
class _Net:
    """What runs through one gap for one output port (or one loop): rows on its left and right."""

    source: str
    left: set[int] = field(default_factory=set)
    right: set[int] = field(default_factory=set)
    lane: bool = False
    label: str = ""

    def needs_channel(self, lanes: Mapping[int, int]) -> bool:
        return self.lane or len(self.left | self.right) > 1


def _net_key(path: list[str], hop: int, e: WfEdge) -> object:
    return ("out", e.source, e.output) if hop == 0 else ("dummy", path[hop])


def _nets(items: Mapping[str, _Item], chains: Mapping[int, list[str]], edges: list[WfEdge], back: list[int],
          labels: Mapping[str, Mapping[int, str]]) -> dict[int, dict[object, _Net]]:
    nets: dict[int, dict[object, _Net]] = defaultdict(dict)
    for index, path in chains.items():
        e = edges[index]
        for hop in range(len(path) - 1):
            a, b = items[path[hop]], items[path[hop + 1]]
            key = _net_key(path, hop, e)
            net = nets[a.column].setdefault(key, _Net(a.key))
            net.left.add(a.y + (0 if a.dummy else 1 + e.output))
            net.right.add(b.y + (0 if b.dummy else 1 + (e.input if hop == len(path) - 2 else 0)))
            if hop == 0:
                net.label = labels[e.source].get(e.output, "")
    for index in back:
        e = edges[index]
        a, b = items[e.source], items[e.target]
        net = nets[a.column].setdefault(("out", e.source, e.output), _Net(a.key))
        net.left.add(a.y + 1 + e.output)
        net.lane = True
        net.label = labels[e.source].get(e.output, "")
        into = nets[b.column - 1].setdefault(("back", index), _Net(""))
        into.right.add(b.y + 1 + e.input)
        into.lane = True
    return nets


def _channel_order(keys: list[object], nets: Mapping[object, _Net]) -> list[object]:
    """Channels left to right: a net leaving row r lies left of a net arriving on row r (so their
    horizontal pieces do not overlap). Otherwise, to spare crossings, nets going up come first,
    the one leaving the highest row leftmost, then nets going down, the one leaving the lowest row
    leftmost."""
    def sort_key(k: object) -> tuple[int, int]:
        n = nets[k]
        left = min(n.left) if n.left else (max(n.right) if n.right else 0)
        if n.lane and n.left:
            return (1, -left)
        if not n.left:  # coming up from the lanes
            return (0, -left)
        down = sum(n.right) / len(n.right) - sum(n.left) / len(n.left) if n.right else 0
        return (1, -left) if down >= 0 else (0, left)

    keys = sorted(keys, key=sort_key)
    rank = {id(k): i for i, k in enumerate(keys)}
    by_right: dict[int, list[object]] = defaultdict(list)
    for k in keys:
        for row in nets[k].right:
            by_right[row].append(k)
    after: dict[int, set[int]] = {i: set() for i in range(len(keys))}  # must lie right of i
    indeg = [0] * len(keys)
    for i, a in enumerate(keys):
        for row in nets[a].left:
            for b in by_right.get(row, ()):
                j = rank[id(b)]
                if j != i and j not in after[i]:
                    after[i].add(j)
                    indeg[j] += 1
    ready = [i for i in range(len(keys)) if indeg[i] == 0]
    heapq.heapify(ready)
    placed: list[object] = []
    done = [False] * len(keys)
    while len(placed) < len(keys):
        if not ready:  # a cycle: give up one constraint (the first net not placed yet)
            ready = [next(i for i in range(len(keys)) if not done[i])]
        i = heapq.heappop(ready)
        if done[i]:
            continue
        done[i] = True
        placed.append(keys[i])
        for j in after[i]:
            indeg[j] -= 1
            if indeg[j] == 0 and not done[j]:
                heapq.heappush(ready, j)
    return placed

