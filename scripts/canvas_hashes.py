"""One hash per drawing the canvas makes of a fixed corpus, to show that a change to the layout or the
router left every drawing byte-identical (issue 41's speed work):

- every real workflow of ``tests/workflow_corpus`` at each zoom level (full detail with and without the
  state row, compact with the usual and the roomy box width, tight): the whole drawing's text;
- every generated shape of ``tests/support/workflow_shapes_gen.py`` (with n8n-like positions and without)
  at 10, 100 and 1,000 nodes: the whole drawing's text; at 5,000 nodes: the layout itself (every box, line
  corner, label, stub and undrawn connection) and the drawing of its first 160x48 cells.

    python scripts/canvas_hashes.py [--out FILE] [--against FILE] [--big]

Prints the number of drawings and one hash over all of them; ``--out`` keeps the per-drawing hashes,
``--against`` names the drawings whose hash differs from a kept file. ``--big``: the 5,000-node cases too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from instance_ai_tui.protocol.workflow_draw import draw
from instance_ai_tui.protocol.workflow_graph import parse_workflow
from instance_ai_tui.protocol.workflow_layout import COMPACT_CELLS, ROOMY_CELLS, Detail, Layout, layout_workflow
from tests.protocol.workflow_corpus import corpus_json, corpus_names
from tests.support.workflow_shapes_gen import SHAPES

LEVELS = (("full", Detail.FULL, False, COMPACT_CELLS), ("full+state", Detail.FULL, True, COMPACT_CELLS),
          ("compact", Detail.COMPACT, False, COMPACT_CELLS), ("roomy", Detail.COMPACT, False, ROOMY_CELLS),
          ("tight", Detail.TIGHT, False, COMPACT_CELLS))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _layout_text(layout: Layout) -> str:
    """Everything a layout says, as text (the boxes and their ports, the lines' corners, the rest)."""
    parts = [f"{layout.width}x{layout.height}"]
    for b in layout.boxes.values():
        parts.append(f"B {b.name!r} {b.x} {b.y} {b.w} {b.h} {sorted(b.outputs.items())} {sorted(b.inputs.items())} "
                     f"{sorted(b.ai_ports.items())} {b.top_port} {b.out_labels} {b.in_labels} {b.ai_labels} "
                     f"{b.subtitle!r}")
    parts += [f"R {r.edge} {r.flat} {r.net} {r.joins}" for r in layout.routes]
    parts += [f"L {label}" for label in layout.labels]
    parts += [f"S {stub}" for stub in layout.stubs]
    parts += [f"F {e}" for e in layout.failed]
    parts += [f"G {g.x} {g.y} {g.w} {g.h} {g.label!r}" for g in layout.regions]
    return "\n".join(parts)


def drawings(big: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in corpus_names():
        wf = parse_workflow(corpus_json(name))
        for level, detail, state, cells in LEVELS:
            laid = layout_workflow(wf, detail, status_row=state, box_cells=cells)
            out[f"corpus/{name}/{level}"] = _digest(draw(laid).text())
    for shape, make in SHAPES.items():
        for positions in (True, False):
            for n in (10, 100, 1000):
                laid = layout_workflow(parse_workflow(make(n, positions)))
                out[f"shape/{shape}/{n}/{positions}"] = _digest(draw(laid).text())
            if big:
                laid = layout_workflow(parse_workflow(make(5000, positions)))
                out[f"shape/{shape}/5000/{positions}/layout"] = _digest(_layout_text(laid))
                out[f"shape/{shape}/5000/{positions}/view"] = _digest(draw(laid, window=(0, 0, 160, 48)).text())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    parser.add_argument("--against")
    parser.add_argument("--big", action="store_true")
    args = parser.parse_args()
    hashes = drawings(args.big)
    total = hashlib.sha256("\n".join(f"{k} {v}" for k, v in sorted(hashes.items())).encode()).hexdigest()
    print(f"{len(hashes)} drawings, one hash: {total}")
    if args.out:
        Path(args.out).write_text(json.dumps(hashes, indent=1, sort_keys=True))
    if args.against:
        kept = json.loads(Path(args.against).read_text())
        differ = sorted(k for k in kept.keys() & hashes.keys() if kept[k] != hashes[k])
        for k in differ:
            print(f"DIFFERS: {k}")
        print(f"{len(kept.keys() & hashes.keys()) - len(differ)} the same as in {args.against}, {len(differ)} differ, "
              f"{len(kept.keys() ^ hashes.keys())} in only one of the two")
        if differ:
            sys.exit(1)


if __name__ == "__main__":
    main()
