"""The canvas on workflows nobody here wrote: public template collections and n8n's own fixtures
(``tests/workflow_corpus``). Every node, sticky note and connection of the JSON is in the graph."""

from __future__ import annotations

import pytest

from instance_ai_tui.protocol.workflow_graph import STICKY_TYPE, parse_workflow

from .workflow_corpus import corpus_json, corpus_names

NAMES = corpus_names()


def test_the_corpus_has_what_the_canvas_must_handle() -> None:
    """At least 40 workflows, with shared AI sub-nodes, Switch nodes, loops, error outputs, disabled
    nodes, sticky notes and one of 200+ nodes."""
    assert len(NAMES) >= 40
    found: dict[str, int] = dict.fromkeys(("shared_ai", "switch", "loop", "error_output", "disabled", "sticky",
                                           "big"), 0)
    for name in NAMES:
        wf = parse_workflow(corpus_json(name))
        ai_targets: dict[str, set[str]] = {}
        for e in wf.edges:
            if e.is_ai:
                ai_targets.setdefault(e.source, set()).add(e.target)
        found["shared_ai"] += any(len(t) > 1 for t in ai_targets.values())
        found["switch"] += any(n.short_type == "switch" for n in wf.nodes)
        found["loop"] += any(n.short_type == "splitInBatches" for n in wf.nodes)
        found["error_output"] += any(n.error_output for n in wf.nodes)
        found["disabled"] += any(n.disabled for n in wf.nodes)
        found["sticky"] += bool(wf.stickies)
        found["big"] += len(wf.nodes) + len(wf.stickies) >= 200
    assert all(found.values()), found
    assert found["shared_ai"] >= 10


@pytest.mark.parametrize("name", NAMES)
def test_every_node_sticky_and_connection_is_read(name: str) -> None:
    data = corpus_json(name)
    wf = parse_workflow(data)
    raw = [n for n in data["nodes"] if isinstance(n, dict)]
    assert len(wf.nodes) == sum(1 for n in raw if n.get("type") != STICKY_TYPE)
    assert len(wf.stickies) == sum(1 for n in raw if n.get("type") == STICKY_TYPE)
    names = {n.name for n in wf.nodes}
    expected = set()
    for source, kinds in data["connections"].items():
        for kind, outputs in kinds.items():
            for index, targets in enumerate(outputs or []):
                for t in targets or []:
                    if source in names and t["node"] in names:
                        expected.add((source, kind, index, t["node"], t.get("index", 0)))
    assert {(e.source, e.kind, e.output, e.target, e.input) for e in wf.edges} == expected
