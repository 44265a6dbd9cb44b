"""Drawings of workflows (snapshots) and the layout's promises: boxes never overlap, every
connection runs from the right port of its source to the right port of its target."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from instance_ai_tui.protocol.workflow_draw import Drawing, Style, draw, draw_box
from instance_ai_tui.protocol.workflow_graph import NodeRun, RunState, Workflow, connection_label, parse_workflow
from instance_ai_tui.protocol.workflow_layout import Detail, Layout, layout_workflow
from tests.support.drawings import workflow_text

from .workflow_reader import read_drawing
from .workflow_shapes import SHAPES, ai_agent, big, if_merge, without_positions


def check_layout(layout: Layout, drawing: Drawing, *, may_fail: bool = False) -> None:
    """No two boxes overlap, everything lies inside the drawing, every connection found a way (``may_fail``:
    random graphs denser than people build may leave some undrawn), and a reader following the characters
    (``workflow_reader``) reads back exactly the connections drawn, with nothing broken or dangling: a
    line never joins two sources."""
    boxes = list(layout.boxes.values())
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)
        assert a.x >= 0 and a.y >= 0 and a.x + a.w <= layout.width and a.y + a.h <= layout.height
    if not may_fail:
        assert not layout.failed
    read = read_drawing(drawing.chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    wf = layout.workflow
    drawn = [e for e in wf.edges if e not in layout.failed]
    assert read.main == {(e.source, layout.ports[e], e.target, e.input) for e in drawn if not e.is_ai}
    assert read.ai == {(e.source, e.target, connection_label(e.kind)) for e in drawn if e.is_ai}
    assert not read.defects, read.defects[:5]
    for box in boxes:  # names are drawn inside their box
        node = wf.node(box.name)
        assert node is not None
        row = "".join(drawing.chars[box.y + 1][box.x + 1: box.x + box.w - 1])
        assert node.name[:3].strip() in row or "…" in row


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_drawing_with_positions(shape: str, snapshot: Any) -> None:
    wf = parse_workflow(SHAPES[shape]())
    layout = layout_workflow(wf)
    drawing = draw(layout)
    check_layout(layout, drawing)
    assert drawing.text() == snapshot


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_drawing_laid_out_compact(shape: str, snapshot: Any) -> None:
    """Without positions (what a model sends): the layered layout, zoomed out."""
    wf = parse_workflow(without_positions(SHAPES[shape]()))
    layout = layout_workflow(wf, Detail.COMPACT)
    drawing = draw(layout)
    check_layout(layout, drawing)
    assert drawing.text() == snapshot


def test_positions_are_kept_per_node_and_pushed_apart_only_where_boxes_collide() -> None:
    data = if_merge()
    by_pos = layout_workflow(parse_workflow(data))
    # the editor put "Notify sales" above "Tag small": the drawing keeps it
    assert by_pos.boxes["Notify sales"].y < by_pos.boxes["Tag small"].y
    data["nodes"][3]["position"] = [440, 10]  # "Tag small" on top of "Notify sales" (10 px lower)
    overlapped = layout_workflow(parse_workflow(data))
    check_layout(overlapped, draw(overlapped))
    sales, small = overlapped.boxes["Notify sales"], overlapped.boxes["Tag small"]
    assert sales.x == small.x and small.y >= sales.y + sales.h  # pushed down, below, in the same column
    # the other nodes did not move relative to each other: one pair of close nodes changes nothing else
    for a, b in (("New order", "Big order?"), ("Merge", "Save row")):
        assert overlapped.boxes[b].x - overlapped.boxes[a].x == by_pos.boxes[b].x - by_pos.boxes[a].x


def test_execution_states_are_glyph_and_word(snapshot: Any) -> None:
    wf = parse_workflow(if_merge())
    runs = {"New order": NodeRun(RunState.RAN, 1), "Big order?": NodeRun(RunState.RAN, 1),
            "Notify sales": NodeRun(RunState.FAILED, 0, "channel not found")}
    text = workflow_text(wf, runs=runs)
    assert "✓ ran · 1 item" in text and "✗ failed" in text and "○ not reached" in text
    compact = workflow_text(wf, Detail.COMPACT, runs=runs)
    assert "✗ failed" in compact
    assert text + compact == snapshot


def test_a_state_is_never_cut_whatever_the_box_width() -> None:
    """Zoomed out (what ``workflow show`` prints at 80 columns) a box as narrow as "▪ After" showed
    "○ not rea…": every state is written whole (the box grows to its state), zoomed in too, where a long
    count falls back to a shorter whole form ("✓ 120 runs · 45000 items" -> "✓ 120 runs · 45000")."""
    wf = parse_workflow(if_merge())
    runs = {"New order": NodeRun(RunState.RAN, 1), "Big order?": NodeRun(RunState.RAN, 45000, runs=120),
            "Notify sales": NodeRun(RunState.FAILED, 0, "channel not found", runs=3),
            "Tag small": NodeRun(RunState.RUNNING)}
    whole = {"✓ ran", "✓ 120 runs", "✗ failed", "◐ running", "○ not reached"}
    for detail in (Detail.FULL, Detail.COMPACT):
        layout = layout_workflow(wf, detail, runs=runs)
        drawing = draw(layout, runs=runs)
        for name, box in layout.boxes.items():
            row = box.y + (3 if detail is Detail.FULL else box.h - 1)
            inside = "".join(drawing.chars[row][box.x + 1:box.x + box.w - 1]).strip(" ─")
            assert inside.startswith(tuple(whole)), (name, inside, drawing.text())
            if not inside.startswith("✗ failed:"):  # only an error's message may be cut
                assert "…" not in inside, (name, inside)
    text = workflow_text(wf, Detail.COMPACT, runs=runs)
    assert text.count("○ not reached") == 2  # Merge, Save row


def test_items_are_written_on_the_lines_after_a_run() -> None:
    """As n8n writes "3 items" on a connection after a run: per output (an IF's branches, from runData),
    "1 item", nothing for 0 or before a run, the number alone zoomed out; the lines still read back."""
    wf = parse_workflow(if_merge())
    runs = {n.name: NodeRun(RunState.RAN, 5, items_by_output=(5,)) for n in wf.nodes}
    runs["Big order?"] = NodeRun(RunState.RAN, 5, items_by_output=(3, 2))
    runs["Notify sales"] = NodeRun(RunState.RAN, 3, items_by_output=(3,))
    runs["Tag small"] = NodeRun(RunState.RAN, 1, items_by_output=(1,))
    runs["Merge"] = NodeRun(RunState.RAN, 0, items_by_output=(0,))
    text = workflow_text(wf, runs=runs)
    lines = text.splitlines()
    assert any("New order" in line and "──5 items──▶┤◇ Big order?" in line for line in lines), text
    assert any("─3 items─▶┤1 ◇ Merge" in line for line in lines), text
    assert any("─1 item──▶┤2 merge" in line for line in lines), text
    assert "0 item" not in text.replace("✓ ran · 0 items", "")  # Merge passed nothing on
    assert "item" not in workflow_text(wf).replace("items", "")  # before a run: nothing on the lines
    compact = workflow_text(wf, Detail.COMPACT, runs=runs)
    assert "─3──▶┤▪ Notify sales" in compact, compact  # the IF's true branch: 3 of its 5 items
    for detail in (Detail.FULL, Detail.COMPACT):
        layout = layout_workflow(wf, detail, runs=runs)
        read = read_drawing(draw(layout, runs=runs).chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
        assert not read.defects and read.main == {(e.source, layout.ports[e], e.target, e.input) for e in wf.edges}


def test_marks_of_a_change(snapshot: Any) -> None:
    text = workflow_text(parse_workflow(if_merge()), marks={"Save row": "new", "Notify sales": "changed"})
    assert "+ new" in text and "~ changed" in text
    assert text == snapshot


def test_ai_sub_nodes_hang_under_their_agent_with_dotted_lines() -> None:
    layout = layout_workflow(parse_workflow(ai_agent()))
    drawing = draw(layout)
    agent = layout.boxes["AI Agent"]
    for sub in ("OpenAI Chat Model", "Simple Memory", "Calculator", "Wikipedia"):
        assert layout.boxes[sub].y > agent.y + agent.h
    assert set(agent.ai_ports) == {"ai_languageModel", "ai_memory", "ai_tool"}
    text = drawing.text()
    # the consumer's labelled ports; two tools arrive on two ┬ of the one tool port
    assert "┆" in text and "┬model" in text and "┬memory" in text and "┬┬tool" in text
    for route in layout.routes:
        if route.edge.is_ai:
            assert all(drawing.styles[y][x] in (Style.AI_EDGE, Style.EDGE) for x, y in route.cells)
    check_layout(layout, drawing)


def test_redrawing_one_node_changes_only_its_box() -> None:
    wf = parse_workflow(big(60))
    runs = {n.name: NodeRun(RunState.RAN, 1) for n in wf.nodes}
    layout = layout_workflow(wf, runs=runs)
    drawing = draw(layout, runs=runs)
    before = [row[:] for row in drawing.chars]
    name = wf.nodes[10].name
    box = draw_box(drawing, name, runs={**runs, name: NodeRun(RunState.FAILED, 0, "boom")})
    changed = {(x, y) for y, row in enumerate(drawing.chars) for x, c in enumerate(row) if before[y][x] != c}
    assert changed and all(box.contains(x, y) for x, y in changed)
    assert "✗ failed" in "".join(drawing.chars[box.y + 3])


@st.composite
def dags(draw_: Any) -> dict[str, Any]:
    """A workflow of 1-200 nodes: connections from earlier to later nodes on outputs 0-3 into inputs
    0-1, a few loops back, maybe positions (possibly overlapping), maybe AI sub-nodes."""
    n = draw_(st.integers(1, 200))
    types = ["n8n-nodes-base.set", "n8n-nodes-base.if", "n8n-nodes-base.switch", "n8n-nodes-base.merge",
             "@n8n/n8n-nodes-langchain.agent"]
    nodes = [{"name": f"N{i}", "type": "n8n-nodes-base.manualTrigger" if i == 0 else draw_(st.sampled_from(types))}
             for i in range(n)]
    if draw_(st.booleans()):
        for i, node in enumerate(nodes):
            node["position"] = [draw_(st.integers(0, 30)) * 200, draw_(st.integers(0, 12)) * 180 + i % 2]
    connections: dict[str, Any] = {}
    edges = draw_(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 3),
                                     st.integers(0, 1), st.booleans()), max_size=min(300, 2 * n)))
    for a, b, out, inp, backwards in edges:
        if a == b and not backwards:
            continue
        src, tgt = (min(a, b), max(a, b)) if not backwards else (max(a, b), min(a, b))
        outs = connections.setdefault(f"N{src}", {}).setdefault("main", [[], [], [], []])
        outs[out].append({"node": f"N{tgt}", "type": "main", "index": inp})
    for k in range(draw_(st.integers(0, 3))):  # sub-nodes of an agent
        if n > 1:
            agent = f"N{draw_(st.integers(0, n - 1))}"
            kind = draw_(st.sampled_from(["ai_languageModel", "ai_memory", "ai_tool"]))
            nodes.append({"name": f"S{k}", "type": "@n8n/n8n-nodes-langchain.toolCalculator"})
            connections[f"S{k}"] = {kind: [[{"node": agent, "type": kind, "index": 0}]]}
    return {"name": "random", "nodes": nodes, "connections": connections}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(dags(), st.sampled_from([Detail.FULL, Detail.COMPACT]))
def test_random_workflows_never_overlap_and_connect_the_right_ports(data: dict[str, Any], detail: Detail) -> None:
    wf: Workflow = parse_workflow(data)
    layout = layout_workflow(wf, detail)
    check_layout(layout, draw(layout), may_fail=True)
    assert len(layout.failed) <= max(3, len(wf.edges) // 10)


def test_wide_and_accented_names_keep_every_row_the_same_width() -> None:
    from rich.cells import cell_len

    wf = parse_workflow({"nodes": [{"name": "開始トリガー", "type": "n8n-nodes-base.manualTrigger"},
                                   {"name": "🚀 Launch rocket now please", "type": "n8n-nodes-base.httpRequest"},
                                   {"name": "Ünïcödé ñame", "type": "n8n-nodes-base.set"}],
                         "connections": {"開始トリガー": ["🚀 Launch rocket now please"],
                                         "🚀 Launch rocket now please": ["Ünïcödé ñame"]}})
    for detail in (Detail.FULL, Detail.COMPACT):
        layout = layout_workflow(wf, detail)
        drawing = draw(layout)
        check_layout(layout, drawing)
        assert {cell_len("".join(row)) for row in drawing.chars} == {layout.width}
        assert "開始トリガ" in drawing.text() and "…" in drawing.text()


def _names_shown(layout: Layout, drawing: Drawing) -> dict[str, str]:
    return {name: "".join(drawing.chars[b.y + 1][b.x + 1:b.x + b.w - 1]).strip() for name, b in layout.boxes.items()}


@pytest.mark.parametrize("corpus", ["enescingoz__Chat_with_OpenAI_Assistant_by_adding_a_memory",
                                    "enescingoz__Open_Deep_Research_AI_Powered_Autonomous_Research_Workflow"])
def test_two_long_names_cut_never_read_the_same(corpus: str) -> None:
    """Beside n8n's editor, zoomed out: "Chat Memory Manager" and "Chat Memory Manager1" both read
    "Chat Memory M…", and so did "LLM Memory Buffer (Input Context)" / "(Report Context)". A cut name keeps
    where it differs from the names it would be confused with ("LLM …(Input C…")."""
    from .workflow_corpus import corpus_json

    wf = parse_workflow(corpus_json(corpus))
    for detail in (Detail.FULL, Detail.COMPACT):
        layout = layout_workflow(wf, detail)
        shown = _names_shown(layout, draw(layout))
        assert len(set(shown.values())) == len(shown), sorted(shown.values())
        assert all(text.endswith(name) or "…" in text for name, text in shown.items())


def test_a_cut_name_keeps_its_start_and_where_it_differs() -> None:
    names = ["Chat Memory Manager", "Chat Memory Manager1", "LLM Memory Buffer (Input Context)",
             "LLM Memory Buffer (Report Context)", "Send an email to the customer"]
    wf = parse_workflow({"nodes": [{"name": n, "type": "n8n-nodes-base.set", "position": [i * 300, 0],
                                    "parameters": {}} for i, n in enumerate(names)], "connections": {}})
    layout = layout_workflow(wf, Detail.COMPACT)
    shown = _names_shown(layout, draw(layout))
    assert len(set(shown.values())) == len(names), shown
    assert shown["Send an email to the customer"] == "▪ Send an email…"  # no twin: cut at the end only
    assert "Input" in shown["LLM Memory Buffer (Input Context)"] and shown["LLM Memory Buffer (Input Context)"].startswith("▪ LLM")
    assert shown["Chat Memory Manager1"].endswith("Manager1")


def test_a_short_line_carries_the_number_of_items() -> None:
    """Beside n8n's editor: n8n writes "1 item" on the trigger's short line to Code; that line has room
    for no words ("├───▶┤"), so it carries the number alone ("├─1─▶┤", as zoomed out), and still reads back;
    a node that ran once per pass of a loop carried "3 items total"."""
    from .workflow_corpus import corpus_json

    wf = parse_workflow(corpus_json("n8n__Workflow_loop"))
    runs = {n.name: NodeRun(RunState.RAN, 3, items_by_output=(3,)) for n in wf.nodes}
    runs["When clicking ‘Execute workflow’"] = NodeRun(RunState.RAN, 1, items_by_output=(1,))
    layout = layout_workflow(wf, runs=runs)
    drawing = draw(layout, runs=runs)
    text = drawing.text()
    assert "├─1─▶┤▪ Code" in text, text
    # as n8n writes it on the line back from Wait, which ran once per pass: "3 items total"
    runs["Wait"] = NodeRun(RunState.RAN, 3, runs=3, items_by_output=(3,))
    assert "─3 items total─" in draw(layout_workflow(wf, runs=runs), runs=runs).text()
    read = read_drawing(drawing.chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    assert not read.defects and read.main == {(e.source, layout.ports[e], e.target, e.input) for e in wf.edges}


@pytest.mark.parametrize("name", ["n8n__GHC_7765_error_connections", "n8n__Workflow_loop",
                                  "enescingoz__Open_Deep_Research_AI_Powered_Autonomous_Research_Workflow"])
def test_a_window_holds_the_same_lines_as_the_whole_drawing(name: str) -> None:
    """The panel draws a window around the view (``draw(window=)``), never the whole workflow: every cell
    of lines in any window (main, dotted AI, an error output's, arrows, crossings, joins) reads and is
    styled as in the whole drawing, windows cutting lines anywhere."""
    from .workflow_corpus import corpus_json

    layout = layout_workflow(parse_workflow(corpus_json(name)))
    whole = draw(layout)
    line_styles = {Style.EDGE, Style.AI_EDGE, Style.ERROR_EDGE, Style.ARROW}
    assert any(Style.ERROR_EDGE in row for row in whole.styles) or "error" not in name
    for wy in range(0, layout.height, 7):
        for wx in range(0, layout.width, 23):
            part = draw(layout, window=(wx, wy, 40, 12))
            for j, row in enumerate(part.styles):
                for i, style in enumerate(row):
                    x, y = wx + i, wy + j
                    if x >= layout.width or y >= layout.height:
                        continue
                    if style in line_styles or whole.styles[y][x] in line_styles:
                        assert (part.chars[j][i], style) == (whole.chars[y][x], whole.styles[y][x]), (x, y)


def test_a_sticky_note_shows_the_first_lines_of_its_text_cut_to_its_frame() -> None:
    """n8n shows a sticky note's markdown; the drawing writes its heading on the frame and the first lines of
    the rest inside: plain text (marks, link targets, images, tags taken off), each cut to the frame with
    ``…``, as many as its height holds. The text is the author's, from outside: a control character never
    reaches the terminal raw, and no character of it reads as a line (a reader following the lines would
    take a ``│`` or ``▶`` for one)."""
    from instance_ai_tui.protocol.workflow_wire import LayoutReader, lay_out, workflow_parts

    data = if_merge()
    content = ("## Read me first\n\nBuilt by [Ada](https://example.com) with **care**\n- step\tone\n---\n"
               "\x1b]52;c;evil\x07 ─│▶┼ lines\n![logo](https://example.com/a.png)\n" + "more\n" * 20)
    data["nodes"].append({"name": "Note", "type": "n8n-nodes-base.stickyNote", "position": [-40, -260],
                          "parameters": {"content": content, "width": 300, "height": 140}})
    wf = parse_workflow(data)
    layout = layout_workflow(wf)
    (region,) = layout.regions
    text = draw(layout).lines()
    inside = [row[region.x + 1: region.x + region.w - 1].strip(" ·") for row in text[region.y + 1: region.y + region.h - 1]]
    assert "Read me first" in text[region.y]
    assert inside[:3] == ["Built by Ada with care", "• step one", "␛]52;c;evil␇ ···· lines"]
    assert all("more" in line for line in inside[4:]) and len(inside) == region.h - 2  # first lines only
    assert not any(ch in "\x1b\x07\t" for row in text for ch in row)
    narrow = layout_workflow(parse_workflow({**data, "nodes": [*data["nodes"][:-1], {
        **data["nodes"][-1], "parameters": {"content": "# N\nA line longer than this note is wide", "width": 120}}]}))
    (small,) = narrow.regions
    row = draw(narrow).lines()[small.y + 1][small.x: small.x + small.w]
    assert row.rstrip(" ·").endswith("…") and "A line" in row
    read = read_drawing(draw(layout).chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    assert not read.defects and len(read.main) == len(wf.edges)
    # the worker process's layout (a big workflow's) carries the same text
    reader = LayoutReader(wf)
    for chunk in lay_out(list(workflow_parts(wf)), 0, False):
        reader.feed(chunk)
    assert reader.layout().regions == layout.regions


def test_a_sticky_notes_inside_is_filled_with_its_colour() -> None:
    """n8n fills a note with its colour (the author's grouping reads at a glance); the drawing coloured only
    its frame and heading. Every cell inside the frame that nothing else is drawn on takes the note's fill
    (blank cells and its text), per colour; boxes and lines over the note keep their own styles; the
    characters are the same as without colours."""
    from instance_ai_tui.protocol.workflow_draw import note_fill

    data = if_merge()
    for k, colour in enumerate((4, 2)):
        data["nodes"].append({"name": f"Note{k}", "type": "n8n-nodes-base.stickyNote",
                              "position": [-40 + 400 * k, -300],
                              "parameters": {"content": f"## Part {k}\ntext", "width": 300, "height": 160,
                                             "color": colour}})
    layout = layout_workflow(parse_workflow(data))
    drawing = draw(layout)
    for region, colour in zip(layout.regions, (4, 2), strict=True):
        inside = [(x, y) for y in range(region.y + 1, region.y + region.h - 1)
                  for x in range(region.x + 1, region.x + region.w - 1)]
        blank = [(x, y) for x, y in inside if drawing.chars[y][x] == " "
                 and not any(b.contains(x, y) for b in layout.boxes.values())]
        assert blank and {drawing.styles[y][x] for x, y in blank} == {note_fill(colour)}, region.label
        assert drawing.styles[region.y + 1][region.x + 2] == note_fill(colour)  # its text too
    assert note_fill(4) != note_fill(2)
    for box in layout.boxes.values():  # a box over a note keeps its own styles
        assert not {drawing.styles[box.y][x] for x in range(box.x, box.x + box.w)} & set(map(note_fill, range(1, 8)))


def test_a_sticky_notes_colour_is_drawn_beside_its_heading_never_instead() -> None:
    """n8n colours its notes (``color`` 1-7: yellow, gold, red, green, blue, purple, grey; 213 grey, 27 red of
    the corpus's 251): authors group and warn with them. The frame and heading are drawn in the note's colour
    (a style per colour, and in the worker's layout too); the characters are the same whatever the colour, so
    the heading still says what the note is; anything that is not 1-7 is n8n's default, yellow."""
    from instance_ai_tui.protocol.workflow_draw import note_fill, note_style
    from instance_ai_tui.protocol.workflow_wire import LayoutReader, lay_out, workflow_parts

    def with_notes(colours: list[Any]) -> dict[str, Any]:
        data = if_merge()
        for k, colour in enumerate(colours):
            data["nodes"].append({"name": f"Note{k}", "type": "n8n-nodes-base.stickyNote",
                                  "position": [-40 + 400 * k, -300],
                                  "parameters": {"content": f"## Part {k}\ntext", "width": 300, "height": 120,
                                                 **({"color": colour} if colour is not None else {})}})
        return data

    coloured = parse_workflow(with_notes([3, 5, 7, None, 99, "4"]))
    assert [s.color for s in coloured.stickies] == [3, 5, 7, 1, 1, 4]
    plain = parse_workflow(with_notes([1, 1, 1, 1, 1, 1]))
    layout = layout_workflow(coloured)
    drawing = draw(layout)
    assert drawing.text() == draw(layout_workflow(plain)).text()  # the same characters: colour is never alone
    for region, colour in zip(layout.regions, [3, 5, 7, 1, 1, 4], strict=True):
        frame = {drawing.styles[region.y][x] for x in range(region.x, region.x + region.w)}
        assert frame == {note_style(colour)}, (region.label, frame)  # frame and heading in the note's colour
        assert f"Part {region.label[-1]}" in drawing.lines()[region.y]
        inside = drawing.styles[region.y + 1][region.x + 2]
        assert inside == note_fill(colour)  # the text on the note's fill
    assert len({note_style(c) for c in range(1, 8)}) == 7
    reader = LayoutReader(coloured)
    for chunk in lay_out(list(workflow_parts(coloured)), 0, False):
        reader.feed(chunk)
    assert [r.color for r in reader.layout().regions] == [3, 5, 7, 1, 1, 4]


def test_the_items_of_a_labelled_output_stand_beside_its_label_in_words() -> None:
    """Beside n8n's editor after a run of the loop workflow: n8n writes "3 items total" next to the loop's
    ``done`` and ``loop`` labels and "1 item" beside an IF's ``true``; the drawing turned right after the
    label, so its lines had room for the number alone ("┌──3──▶"). After a run, a line with a branch label
    runs straight on after it for the words, and the drawing printed at 80 columns never has a wider line."""
    import re

    from instance_ai_tui.cli.workflow import fit

    from .workflow_corpus import corpus_json

    wf = parse_workflow(corpus_json("n8n__Workflow_loop"))
    runs = {n.name: NodeRun(RunState.RAN, 3, items_by_output=(3,)) for n in wf.nodes}
    runs["Loop Over Items"] = NodeRun(RunState.RAN, 6, runs=4, items_by_output=(3, 3))
    layout = layout_workflow(wf, runs=runs)
    drawing = draw(layout, runs=runs)
    text = drawing.text()
    assert re.search(r"├─done─+3 items total─", text) and re.search(r"├─loop─+3 items total─", text), text
    read = read_drawing(drawing.chars, {n: (b.x, b.y, b.w, b.h) for n, b in layout.boxes.items()})
    assert not read.defects and read.main == {(e.source, layout.ports[e], e.target, e.input) for e in wf.edges}
    if_wf = parse_workflow(if_merge())
    if_runs = {n.name: NodeRun(RunState.RAN, 1, items_by_output=(1,)) for n in if_wf.nodes}
    assert re.search(r"├─true─+1 item─", draw(layout_workflow(if_wf, runs=if_runs), runs=if_runs).text())
    for name in ("n8n__Workflow_loop", "enescingoz__Auto_Categorise_Outlook_Emails_with_AI"):
        big = parse_workflow(corpus_json(name))
        big_runs = {n.name: NodeRun(RunState.RAN, 12, runs=3, items_by_output=(12, 12, 12, 12)) for n in big.nodes}
        assert max(len(cells) for cells, _styles in fit(big, 80, runs=big_runs).lines) <= 80


def _two_full_collections() -> None:
    """Two full collections that ran after this call. ``gc.collect()`` returns at once, collecting
    nothing, while a collection is under way in another thread (one whose callbacks or finalizers let
    this thread run: threads left by earlier tests on this worker, hypothesis's gc callback): the whole
    run beside stress-ng found 223 of a layout's tuples still tracked after one such call. The first
    of the two may have begun before the call; the second began after it."""
    import gc
    import time

    full = gc.get_stats()[2]["collections"]
    for _ in range(10_000):
        if gc.get_stats()[2]["collections"] >= full + 2:
            return
        gc.collect()
        time.sleep(0.001)  # (lets a collection under way in another thread end)
    raise AssertionError("no two full collections in 10 s")


def test_a_layout_leaves_the_garbage_collector_one_object_per_box_and_line() -> None:
    """Keys waited behind full (generation 2) collections while a big layout was read back from the worker
    process and first painted: each collection walks every object the collector tracks, and a 5,000-node
    layout brought 26,000 of them (a list per line's corners, a list per input's rows and the dict holding
    them, beside the boxes and lines themselves), enough new old objects to start a full pass on its own.
    Corners and port rows are tuples of numbers, which the collector stops tracking at its first young
    pass: once collected, what is left to walk is the boxes and the lines, in the layout made here and in
    the one read back from the worker's pickles."""
    import gc

    from instance_ai_tui.protocol.workflow_wire import LayoutReader, lay_out, workflow_parts
    from tests.support.workflow_shapes_gen import SHAPES as GENERATED

    for shape in ("random_dag", "ai_clusters"):
        wf = parse_workflow(GENERATED[shape](200, True))
        here = layout_workflow(wf)
        reader = LayoutReader(wf)
        for chunk in lay_out(list(workflow_parts(wf)), 0, False):
            reader.feed(chunk)
        read_back = reader.layout()
        gc.unfreeze()  # (an app of an earlier test on this worker may have frozen the heap: what is frozen
        _two_full_collections()  # is never collected, so its tuples would stay tracked; a whole run saw 223)
        for layout in (here, read_back):
            assert any(box.inputs for box in layout.boxes.values())
            assert shape != "ai_clusters" or any(box.ai_ports for box in layout.boxes.values())
            # a line's corners are kept as one flat tuple of ints (no tuple per point for a young pass to walk)
            assert all(type(v) is int for route in layout.routes for v in route.flat)
            parts = ([route.flat for route in layout.routes]
                     + [part for box in layout.boxes.values()
                        for part in (box.inputs, box.ai_ports, *box.inputs.values(), *box.ai_ports.values())])
            tracked = [part for part in parts if gc.is_tracked(part)]
            assert not tracked, (shape, len(tracked), len(parts), type(tracked[0]).__name__)


def test_the_worker_sends_what_drawing_a_box_needs_of_the_whole_layout() -> None:
    """The first paint of a big workflow read back from the worker process passed over every box (the names
    cut so that no two read the same) and every line (the ports lines leave and reach) before its first box
    was drawn: the longest turn of the app's loop then. The worker makes both with the layout and sends
    them; the layout read back carries them, the same as the ones made here."""
    from instance_ai_tui.protocol.workflow_draw import line_ends, row_extents, shown_names
    from instance_ai_tui.protocol.workflow_wire import LayoutReader, lay_out, workflow_parts
    from tests.protocol.workflow_corpus import corpus_json

    wf = parse_workflow(corpus_json("enescingoz__Open_Deep_Research_AI_Powered_Autonomous_Research_Workflow"))
    here = layout_workflow(wf, Detail.COMPACT)
    reader = LayoutReader(wf)
    for chunk in lay_out(list(workflow_parts(wf)), int(Detail.COMPACT), False):
        reader.feed(chunk)
    read_back = reader.layout()
    assert read_back.names_cut is not None and read_back.line_ends is not None
    assert read_back.names_cut == shown_names(here) and read_back.names_cut  # two names cut apart here
    assert read_back.line_ends == line_ends(here)
    assert draw(read_back).text() == draw(here).text()
    # and the rows' extents (the panel's edges say what lies past them: 85-90 ms at 5,000 nodes)
    assert read_back.row_extents is not None and read_back.row_extents == row_extents(here)
    left, right = read_back.row_extents
    for y, row in enumerate(draw(here).chars):  # exactly the cells drawn on each row ("" after a wide character)
        drawn = [x for x, char in enumerate(row) if char not in (" ", "")]
        assert (left[y], right[y]) == ((drawn[0], drawn[-1] + 1) if drawn else (here.width, 0)), y


def test_a_layout_drawn_then_dropped_is_freed() -> None:
    """The names cut apart and the lines' ends were cached per layout in module dicts that held the last
    nine layouts drawn: a canvas showing one big workflow after another kept eight it no longer showed
    (measured: four 2,000-node random DAGs drawn and dropped, 21 MB still held). They live on the layout."""
    import gc
    import weakref

    refs = []
    for shape in (if_merge, ai_agent):
        layout = layout_workflow(parse_workflow(shape()))
        draw(layout).text()
        refs.append(weakref.ref(layout))
        del layout
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
