"""A workflow and its layout as plain data (tuples, lists, strings, numbers), for another process.

The TUI lays a big workflow out in a worker process, so that the layout (up to a second of work) never
holds the interpreter its keys are answered in. What goes there and back is pickled, and pickling the
layout's own objects is slow where it hurts: frozen, slotted dataclasses are rebuilt attribute by
attribute in Python (0.7-0.9 s for a 5,000-node layout, longer than laying it out). Plain data is read
by the C unpickler in milliseconds. The layout comes back as several pickles (``CHUNK`` boxes or lines
each), which the receiver reads and rebuilds one at a time (``LayoutReader``), so it can answer a key
between any two of them.

``lay_out`` is what the worker runs: the workflow's pickles (``workflow_parts``) in, the layout's out.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from .workflow_draw import line_ends, row_extents, shown_names
from .workflow_graph import NodeKind, Sticky, WfEdge, WfNode, Workflow
from .workflow_layout import Box, Detail, Layout, LineEnds, Region, Route, layout_workflow

#: boxes or lines per pickle of a layout
CHUNK = 1000

def workflow_to_wire(workflow: Workflow) -> tuple[Any, ...]:
    return (workflow.id, workflow.name, _nodes(workflow.nodes),
            [(e.source, e.target, e.kind, e.output, e.input, e.input_kind) for e in workflow.edges],
            workflow.active, [(s.position, s.width, s.height, s.content, s.color) for s in workflow.stickies])


def _nodes(nodes: tuple[WfNode, ...]) -> list[tuple[Any, ...]]:
    return [(n.name, n.type, n.kind.value, n.position, n.disabled, n.type_version, dict(n.parameters), n.id,
             n.on_error) for n in nodes]


def workflow_from_wire(data: tuple[Any, ...]) -> Workflow:
    wid, name, nodes, edges, active, stickies = data
    return Workflow(
        wid, name,
        tuple(WfNode(n[0], n[1], NodeKind(n[2]), *n[3:]) for n in nodes),
        tuple(WfEdge(*e) for e in edges), active,
        tuple(Sticky(*s) for s in stickies))


def workflow_parts(workflow: Workflow) -> Iterator[bytes]:
    """The workflow as pickles: everything but the nodes, then ``CHUNK`` nodes per pickle (a caller can
    do other work between two)."""
    head = workflow_to_wire(Workflow(workflow.id, workflow.name, (), workflow.edges, workflow.active,
                                     workflow.stickies))
    yield pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)
    nodes = workflow.nodes
    for k in range(0, len(nodes), CHUNK):
        yield pickle.dumps(_nodes(nodes[k:k + CHUNK]), protocol=pickle.HIGHEST_PROTOCOL)


def lay_out(parts: list[bytes], detail: int, status_row: bool) -> list[bytes]:
    """In the worker: the workflow of ``workflow_parts`` laid out; the layout as pickles of plain data
    (``LayoutReader`` reads them)."""
    wid, name, _none, edges, active, stickies = pickle.loads(parts[0])  # our own pickles, never data from outside
    nodes = [n for part in parts[1:] for n in pickle.loads(part)]
    wf = workflow_from_wire((wid, name, nodes, edges, active, stickies))
    return list(_layout_chunks(layout_workflow(wf, Detail(detail), status_row=status_row)))


def _layout_chunks(layout: Layout) -> Iterator[bytes]:
    index = {e: k for k, e in enumerate(layout.workflow.edges)}
    ends = line_ends(layout)  # made here, in the worker: the app's first paint would pass over every line
    head = (int(layout.detail), layout.width, layout.height, layout.status_row, layout.labels,
            [(r.x, r.y, r.w, r.h, r.label, r.body, r.color) for r in layout.regions], layout.stubs,
            [index[e] for e in layout.failed], [layout.ports.get(e, -1) for e in layout.workflow.edges],
            len(layout.boxes), len(layout.routes), shown_names(layout),
            (ends.out_ports, ends.arrows, ends.stubs, ends.ai_sources), row_extents(layout))
    yield pickle.dumps(head, protocol=pickle.HIGHEST_PROTOCOL)
    boxes = list(layout.boxes.values())
    for k in range(0, len(boxes), CHUNK):
        yield pickle.dumps([
            (b.name, b.x, b.y, b.w, b.h, b.outputs, b.out_labels, b.inputs, b.in_labels, b.ai_ports, b.ai_labels,
             b.top_port, b.subtitle) for b in boxes[k:k + CHUNK]], protocol=pickle.HIGHEST_PROTOCOL)
    routes = layout.routes
    for k in range(0, len(routes), CHUNK):
        yield pickle.dumps([(index[r.edge], r.flat, r.net, r.joins) for r in routes[k:k + CHUNK]],
                           protocol=pickle.HIGHEST_PROTOCOL)


class LayoutReader:
    """Rebuilds a layout from ``lay_out``'s pickles, one ``feed`` per pickle (the caller may do other
    work between two); ``layout`` once every pickle has been fed."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self._head: tuple[Any, ...] | None = None
        self._boxes: dict[str, Box] = {}
        self._routes: list[Route] = []

    def feed(self, chunk: bytes) -> None:
        data = pickle.loads(chunk)  # our own worker's pickles
        if self._head is None:
            self._head = data
            return
        n_boxes = self._head[9]
        if len(self._boxes) < n_boxes:
            for (name, x, y, w, h, outputs, out_labels, inputs, in_labels, ai_ports, ai_labels, top_port,
                 subtitle) in data:
                self._boxes[name] = Box(name, x, y, w, h, outputs, out_labels, inputs, in_labels, ai_ports,
                                        ai_labels, top_port, subtitle)
            return
        edges = self.workflow.edges
        self._routes.extend(Route(edges[k], flat, net, joins) for k, flat, net, joins in data)

    @property
    def done(self) -> bool:
        head = self._head
        return head is not None and len(self._boxes) == head[9] and len(self._routes) == head[10]

    def layout(self) -> Layout:
        assert self._head is not None and self.done
        (detail, width, height, status_row, labels, regions, stubs, failed, ports, _nb, _nr, names_cut,
         ends, extents) = self._head
        edges = self.workflow.edges
        return Layout(self.workflow, Detail(detail), self._boxes, self._routes, labels, width, height,
                      status_row, [Region(*r) for r in regions], stubs, [edges[k] for k in failed],
                      {e: p for e, p in zip(edges, ports, strict=True) if p >= 0}, names_cut, LineEnds(*ends),
                      extents)
