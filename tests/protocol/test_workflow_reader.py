"""The reader-trace over the corpus of real workflows: a program that follows the drawn characters from
every output port must read back exactly each workflow's connections (100 %), at every level of detail,
with and without an execution's state rows; and the drawing keeps n8n's order of the nodes on each axis."""

from __future__ import annotations

import itertools

import pytest

from instance_ai_tui.protocol.workflow_draw import draw
from instance_ai_tui.protocol.workflow_graph import NodeRun, RunState, connection_label, parse_workflow
from instance_ai_tui.protocol.workflow_layout import Detail, layout_workflow
from tests.support.workflow_shapes_gen import SHAPES

from .workflow_corpus import corpus_json, corpus_names
from .workflow_reader import read_drawing

NAMES = corpus_names()


@pytest.mark.parametrize("detail", list(Detail))
@pytest.mark.parametrize("name", NAMES)
def test_every_connection_reads_back(name: str, detail: Detail) -> None:
    wf = parse_workflow(corpus_json(name))
    # after a run: every other node ran 3 times, its outputs carried 3, 12, 1, 7... items (n8n's runData
    # per output); the items are written on the lines where they fit, and the lines still read back
    runs = ({n.name: NodeRun(RunState.RAN, 3, runs=3, items_by_output=(3, 12, 1, 7, 2, 9, 4, 5))
             for n in wf.nodes[::2]} if detail is Detail.FULL else None)
    layout = layout_workflow(wf, detail, runs=runs)
    drawing = draw(layout, runs=runs)
    assert not layout.failed
    read = read_drawing(drawing.chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    assert not read.defects, read.defects[:5]
    assert read.main == {(e.source, layout.ports[e], e.target, e.input) for e in wf.edges if not e.is_ai}
    assert read.ai == {(e.source, e.target, connection_label(e.kind)) for e in wf.edges if e.is_ai}
    boxes = list(layout.boxes.values())
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))


@pytest.mark.parametrize("positions", [True, False], ids=["positions", "no-positions"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_connection_of_a_big_generated_workflow_reads_back(shape: str, positions: bool) -> None:
    """1,000 nodes of each shape of the scale benchmark (a random graph's connections cross everywhere:
    some find no way among the boxes and go round the outside on lanes of their own): every connection
    is drawn and read back, none twice, nothing else."""
    wf = parse_workflow(SHAPES[shape](1000, positions))
    layout = layout_workflow(wf)
    assert not layout.failed, f"{len(layout.failed)} of {len(wf.edges)} connections not drawn"
    drawing = draw(layout)
    read = read_drawing(drawing.chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    assert not read.defects, read.defects[:5]
    assert read.main == {(e.source, layout.ports[e], e.target, e.input) for e in wf.edges if not e.is_ai}
    assert read.ai == {(e.source, e.target, connection_label(e.kind)) for e in wf.edges if e.is_ai}


def _grid(text: str) -> list[list[str]]:
    rows = text.strip("\n").splitlines()
    width = max(len(r) for r in rows)
    return [list(r.ljust(width)) for r in rows]


LEGEND = {"A": (0, 0, 4, 3), "B": (0, 3, 4, 3), "C": (10, 0, 4, 3), "D": (10, 3, 4, 3)}


def test_the_reader_reads_junctions_as_joins_and_crossings_as_crossings() -> None:
    """The reader is not a formality: a junction joining two sources reads as the connections a person
    would wrongly see; a crossing does not; a line that stops is a defect."""
    joined = _grid("""
╭──╮      ╭──╮
│A ├──┬──▶┤C │
╰──╯  │   ╰──╯
╭──╮  │   ╭──╮
│B ├──┴──▶┤D │
╰──╯      ╰──╯
""")
    assert read_drawing(joined, LEGEND).main == {("A", 0, "C", 0), ("A", 0, "D", 0), ("B", 0, "C", 0),
                                                 ("B", 0, "D", 0)}
    crossed = _grid("""
╭──╮       ╭──╮
│A ├──┐  ┌▶┤C │
╰──╯  │  │ ╰──╯
╭──╮  │  │ ╭──╮
│B ├──┼──┘┌▶┤D │
╰──╯  └───┘
""")
    legend = {"A": (0, 0, 4, 3), "B": (0, 3, 4, 3), "C": (11, 0, 4, 3), "D": (12, 3, 4, 3)}
    read = read_drawing(crossed, legend)
    assert read.main == {("A", 0, "D", 0), ("B", 0, "C", 0)} and not read.defects
    broken = _grid("""
╭──╮      ╭──╮
│A ├── ──▶┤C │
╰──╯      ╰──╯
""")
    assert read_drawing(broken, {"A": (0, 0, 4, 3), "C": (10, 0, 4, 3)}).defects


def _agreement(name: str) -> tuple[float, float]:
    wf = parse_workflow(corpus_json(name))
    layout = layout_workflow(wf)
    agree, total = [0, 0], [0, 0]
    placed = [n for n in wf.nodes if n.position is not None]
    for p, q in itertools.combinations(placed, 2):
        assert p.position is not None and q.position is not None
        bp, bq = layout.boxes[p.name], layout.boxes[q.name]
        for axis, (stored, drawn) in enumerate(((q.position[0] - p.position[0], bq.x - bp.x),
                                                (q.position[1] - p.position[1], bq.y - bp.y))):
            if stored:
                total[axis] += 1
                agree[axis] += (stored > 0) == (drawn > 0) and drawn != 0
    return (agree[0] / total[0] if total[0] else 1.0, agree[1] / total[1] if total[1] else 1.0)


@pytest.mark.parametrize("name", NAMES)
def test_the_drawing_keeps_n8ns_order_of_nodes(name: str) -> None:
    """Of every pair of nodes at different stored x (y), at least 97 % are drawn in the same order."""
    x, y = _agreement(name)
    assert x >= 0.97 and y >= 0.97, (x, y)
