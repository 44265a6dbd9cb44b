"""Phase 3 of the workflow layout (``workflow_layout``): each node's place in n8n's pixels.

The stored position, always; nodes without one (the agent's fresh nodes) beside a neighbour that has
one; a layered layout (Sugiyama: longest-path columns, loops broken by a depth-first search,
barycentre order, a column as wide as its widest cluster) only when no node has a position. Sub-nodes
hang under a node they serve.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from .workflow_graph import Workflow


class Roles(Protocol):
    """Who serves whom (``workflow_layout._Roles``)."""

    @property
    def serves(self) -> Mapping[str, Sequence[str]]: ...

    @property
    def main_pred(self) -> Mapping[str, Sequence[str]]: ...

    @property
    def main_succ(self) -> Mapping[str, Sequence[str]]: ...



#: the layered layout's spacing, in n8n's pixels
LAYER_PX = 120.0
RANK_PX = 160.0
SUB_PX = (170.0, 220.0)


def pixels(workflow: Workflow, roles: Roles, roles_of: Callable[[Workflow], Roles]) -> dict[str, tuple[float, float]]:
    """Every node's place in n8n's pixels (see the module's docstring, phase 3)."""
    px: dict[str, tuple[float, float]] = {}
    taken: set[tuple[float, float]] = set()
    for node in workflow.nodes:
        if node.position is not None:
            x, y = node.position
            while (x, y) in taken:  # two nodes on the same spot: the later one a pixel lower
                y += 1.0
            taken.add((x, y))
            px[node.name] = (x, y)
    if not px:
        px = _layered(workflow, roles)
    else:
        _beside_neighbours(workflow, roles, px, roles_of)
    _hang_sub_nodes(workflow, roles, px)
    return px


def _hang_sub_nodes(workflow: Workflow, roles: Roles, px: dict[str, tuple[float, float]]) -> None:
    """A sub-node stays under a node it serves (the nearest one), also when its stored place is above."""
    order = [n.name for n in workflow.nodes if n.name in roles.serves]
    for _ in range(3):  # nested sub-nodes (an embedding under a vector store under a tool) settle in turns
        for name in order:
            consumers = [c for c in roles.serves[name] if c in px]
            if not consumers or name not in px:
                continue
            x, y = px[name]
            _cx, cy = min((px[c] for c in consumers), key=lambda p: abs(p[0] - x) + abs(p[1] - y))
            if y < cy + 100:
                px[name] = (x, cy + SUB_PX[1] * 0.75)


def _beside_neighbours(workflow: Workflow, roles: Roles, px: dict[str, tuple[float, float]],
                       roles_of: Callable[[Workflow], Roles]) -> None:
    """Nodes without a position next to a neighbour that has one (after its source, before its target,
    under what it serves); what has no placed neighbour goes below everything, laid out in layers."""
    missing = [n.name for n in workflow.nodes if n.name not in px]
    placed_near: dict[str, int] = defaultdict(int)
    progress = True
    while missing and progress:
        progress = False
        rest = []
        for name in missing:
            spot: tuple[float, float] | None = None
            anchor = ""
            if name in roles.serves:
                anchor = next((c for c in roles.serves[name] if c in px), "")
                if anchor:
                    k = placed_near[anchor]
                    spot = (px[anchor][0] + SUB_PX[0] * k, px[anchor][1] + SUB_PX[1])
            else:
                before = next((p for p in roles.main_pred.get(name, ()) if p in px), None)
                after = next((s for s in roles.main_succ.get(name, ()) if s in px), None)
                if before is not None:
                    k = placed_near[before]
                    spot = (px[before][0] + LAYER_PX, px[before][1] + RANK_PX * k)
                    anchor = before
                elif after is not None:
                    k = placed_near[after]
                    spot = (px[after][0] - LAYER_PX, px[after][1] + RANK_PX * k)
                    anchor = after
            if spot is None:
                rest.append(name)
                continue
            placed_near[anchor] += 1
            px[name] = spot
            progress = True
        missing = rest
    if missing:
        left_over = set(missing)
        sub = Workflow(workflow.id, workflow.name, tuple(n for n in workflow.nodes if n.name in left_over),
                       tuple(e for e in workflow.edges if e.source in left_over and e.target in left_over))
        laid = _layered(sub, roles_of(sub))
        top = max(y for _, y in px.values()) + 2 * RANK_PX
        left = min(x for x, _ in px.values())
        for name, (x, y) in laid.items():
            px[name] = (left + x, top + y)


def _layered(workflow: Workflow, roles: Roles) -> dict[str, tuple[float, float]]:
    """A layered layout in pixels for nodes none of which has a position."""
    names = [n.name for n in workflow.nodes if n.name not in roles.serves]
    known = set(names)
    edges = [(e.source, e.target) for e in workflow.edges if not e.is_ai and e.source in known and e.target in known]
    column = _longest_path_columns(names, edges)
    cols: list[list[str]] = [[] for _ in range(max(column.values(), default=-1) + 1)]
    for name in names:
        cols[column[name]].append(name)
    _barycentre(cols, edges)
    # a node with sub-nodes needs room under it for them
    depth: dict[str, int] = {}
    for name in roles.serves:
        for consumer in roles.serves[name]:
            depth[consumer] = max(depth.get(consumer, 0), 1)
    # a column is as wide as its widest cluster (a node and the sub-nodes hanging under it)
    hanging: dict[str, int] = defaultdict(int)
    for consumers in roles.serves.values():
        anchor = next((c for c in consumers if c in column), None)
        if anchor is not None:
            hanging[anchor] += 1
    px: dict[str, tuple[float, float]] = {}
    x = 0.0
    for col in cols:
        y = 0.0
        for name in col:
            px[name] = (x, y)
            y += RANK_PX + depth.get(name, 0) * SUB_PX[1]
        x += max([LAYER_PX] + [SUB_PX[0] * hanging[name] + 40 for name in col])
    counts: dict[str, int] = defaultdict(int)
    for _ in range(3):
        for name in (n.name for n in workflow.nodes if n.name in roles.serves):
            anchor = next((c for c in roles.serves[name] if c in px), None)
            if anchor is None or name in px:
                continue
            k = counts[anchor]
            counts[anchor] += 1
            px[name] = (px[anchor][0] + SUB_PX[0] * k, px[anchor][1] + SUB_PX[1])
    for k, name in enumerate(n.name for n in workflow.nodes if n.name not in px):  # sub-nodes of sub-nodes' cycles
        px[name] = (k * SUB_PX[0], -RANK_PX)
    return px


def _longest_path_columns(names: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Column of each node: its longest path from a start node, loops broken by a depth-first search."""
    succ: dict[str, list[str]] = defaultdict(list)
    indeg: dict[str, int] = dict.fromkeys(names, 0)
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    state: dict[str, int] = {}
    back: set[tuple[str, str]] = set()
    for start in [n for n in names if indeg[n] == 0] + names:
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
    for a, b in edges:
        if (a, b) not in back and a != b:
            fwd[a].append(b)
            deg[b] += 1
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
    return column


def _barycentre(cols: list[list[str]], edges: list[tuple[str, str]]) -> None:
    """Order within each column: barycentre sweeps (down and up) from the workflow's order."""
    pred: dict[str, list[str]] = defaultdict(list)
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
        pred[b].append(a)
    position: dict[str, float] = {}
    for col in cols:
        for k, name in enumerate(col):
            position[name] = k
    for sweep in range(4):
        rng = range(1, len(cols)) if sweep % 2 == 0 else range(len(cols) - 2, -1, -1)
        near = pred if sweep % 2 == 0 else succ
        for c in rng:
            keyed = []
            for k, name in enumerate(cols[c]):
                ns = [position[n] for n in near.get(name, ()) if n in position]
                keyed.append((sum(ns) / len(ns) if ns else position[name], k, name))
            keyed.sort()
            cols[c] = [name for _, _, name in keyed]
            for k, name in enumerate(cols[c]):
                position[name] = k
