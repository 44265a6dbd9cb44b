"""The workflow model the canvas draws: parsing any source's JSON, what a call changed, executions."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.protocol.workflow_graph import (
    NodeKind,
    RunState,
    WfEdge,
    changed_nodes,
    is_workflow_tool,
    output_labels,
    parse_execution,
    parse_workflow,
    preview_from_args,
    unflatten,
    workflow_id_of,
)

from .workflow_shapes import SHAPES, ai_agent, if_merge, loop, switch4


def test_kinds_short_types_and_edges_of_an_ai_agent() -> None:
    wf = parse_workflow(ai_agent())
    kinds = {n.name: n.kind for n in wf.nodes}
    assert kinds["When chat message received"] is NodeKind.TRIGGER
    assert kinds["AI Agent"] is NodeKind.AI
    assert kinds["Send answer"] is NodeKind.ACTION
    assert wf.node("AI Agent") is not None and wf.node("AI Agent").short_type == "agent"  # type: ignore[union-attr]
    assert WfEdge("Calculator", "AI Agent", "ai_tool") in wf.edges
    assert WfEdge("AI Agent", "Send answer") in wf.edges
    assert parse_workflow(loop()).node("Loop over items").kind is NodeKind.FLOW  # type: ignore[union-attr]


def test_rest_envelope_and_public_api_give_the_same_graph() -> None:
    data = {**if_merge(), "id": "wf1"}
    assert parse_workflow({"data": data}) == parse_workflow(data)
    assert parse_workflow(data).id == "wf1"


def test_outputs_and_inputs_by_index() -> None:
    wf = parse_workflow(if_merge())
    assert WfEdge("Big order?", "Tag small", "main", 1, 0) in wf.edges
    assert WfEdge("Tag small", "Merge", "main", 0, 1) in wf.edges
    assert output_labels(wf.node("Big order?")) == {0: "true", 1: "false"}  # type: ignore[arg-type]
    assert output_labels(parse_workflow(switch4()).node("Route")) == {  # type: ignore[arg-type]
        0: "urgent", 1: "sales", 2: "support", 3: "spam"}
    assert output_labels(parse_workflow(loop()).node("Loop over items")) == {0: "done", 1: "loop"}  # type: ignore[arg-type]


def test_odd_shapes_never_raise_and_drop_what_is_not_a_graph() -> None:
    data = {"nodes": [{"name": "A", "type": "x.a"}, "junk", {"name": "A", "type": "dup"}, {"type": "x.noName"},
                      {"name": 5}], "connections": {"A": {"main": [[{"node": "missing"}, {"node": "noName"}]]},
                                                    "ghost": {"main": [[{"node": "A"}]]}, "noName": "A"}}
    wf = parse_workflow(data)
    assert [n.name for n in wf.nodes] == ["A", "noName"]
    assert set(wf.edges) == {WfEdge("A", "noName"), WfEdge("noName", "A")}
    for junk in (None, 3, "x", [], {"nodes": "x", "connections": []}):
        assert parse_workflow(junk).nodes == ()


def test_names_from_outside_reach_the_terminal_with_control_characters_visible() -> None:
    evil = "Evil\x1b]52;c;AAAA\x07\u202e"
    wf = parse_workflow({"nodes": [{"name": evil, "type": "n8n-nodes-base.set"}], "connections": {}})
    assert "\x1b" not in wf.nodes[0].name and "\u202e" not in wf.nodes[0].name
    assert wf.nodes[0].name.startswith("Evil")


def test_changed_nodes_marks_added_and_changed() -> None:
    before = parse_workflow(if_merge())
    data = if_merge()
    data["nodes"][2]["parameters"] = {"text": "new"}
    data["nodes"].append({"name": "Extra", "type": "n8n-nodes-base.set", "position": [1100, 100]})
    data["connections"]["Save row"] = {"main": [[{"node": "Extra", "type": "main", "index": 0}]]}
    added, changed = changed_nodes(before, parse_workflow(data))
    assert added == {"Extra"}
    assert changed == {"Notify sales", "Save row"}
    assert changed_nodes(None, before)[0] == {n.name for n in before.nodes}


def flatted(value: Any) -> str:
    """The ``flatted`` encoding (as n8n's REST sends execution data), written from its description."""
    table: list[Any] = []
    known: dict[int, str] = {}

    def ref(v: Any) -> Any:
        if isinstance(v, (dict, list, str)):
            if isinstance(v, str):
                table.append(v)
                return str(len(table) - 1)
            if id(v) in known:
                return known[id(v)]
            index = len(table)
            known[id(v)] = str(index)
            table.append(None)
            table[index] = {k: ref(x) for k, x in v.items()} if isinstance(v, dict) else [ref(x) for x in v]
            return str(index)
        return v

    ref(value)
    return json.dumps(table)


def test_unflatten_reads_flatted_text() -> None:
    assert unflatten('[{"a":"1"},["2"],"x"]') == {"a": ["x"]}
    shared: dict[str, Any] = {"k": 1}
    data = {"one": shared, "two": shared, "s": "text", "n": [1, 2.5, None, True]}
    assert unflatten(flatted(data)) == data


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=4), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_unflatten_round_trips_any_json(value: dict[str, Any]) -> None:
    assert unflatten(flatted(value)) == value


def _execution(failed: bool) -> dict[str, Any]:
    run_data: dict[str, Any] = {
        "New order": [{"executionStatus": "success", "data": {"main": [[{"json": {"amount": 900}}]]}}],
        "Big order?": [{"executionStatus": "success", "data": {"main": [[{"json": {"amount": 900}}], []]}}],
    }
    if failed:
        run_data["Notify sales"] = [{"executionStatus": "error", "error": {"message": "channel not found"}}]
    return {"id": "77", "status": "error" if failed else "success",
            "data": {"resultData": {"runData": run_data, "lastNodeExecuted": "Notify sales" if failed else "Big order?",
                                    **({"error": {"message": "channel not found"}} if failed else {})}}}


def test_execution_per_node_ran_failed_not_reached_public_and_rest() -> None:
    public = _execution(failed=True)
    rest = {"data": {**public, "data": flatted(public["data"])}}
    for source in (public, rest):
        view = parse_execution(source)
        assert view is not None
        assert view.run("New order").state is RunState.RAN and view.run("New order").items == 1
        assert view.run("New order").output == ({"amount": 900},)
        assert view.run("Notify sales").state is RunState.FAILED
        assert view.run("Notify sales").error == "channel not found"
        assert view.run("Save row").state is RunState.NOT_REACHED
        assert view.status == "error"


def test_demo_instance_execution_shape() -> None:
    view = parse_execution({"id": "exec-9001", "status": "success",
                            "data": {"nodes": {"A": {"status": "success", "items": 2}, "B": {"status": "error",
                                                                                           "error": "boom"}}}})
    assert view is not None
    assert view.run("A").state is RunState.RAN and view.run("A").items == 2
    assert view.run("B").state is RunState.FAILED and view.run("B").error == "boom"


def test_workflow_id_of_tool_calls() -> None:
    assert workflow_id_of({"id": "wf-101", "name": "x"}, {"name": "x"}) == "wf-101"
    assert workflow_id_of(None, {"workflowId": "42"}) == "42"
    assert workflow_id_of('{"workflowId": "abc"}') == "abc"
    assert workflow_id_of({"workflow": {"id": "n1"}}) == "n1"
    assert workflow_id_of("no id here", {}) is None
    assert is_workflow_tool("create-workflow") and is_workflow_tool("workflows", {"action": "update"})
    assert not is_workflow_tool("workflows", {"action": "list"}) and not is_workflow_tool("list-workflows")


def test_preview_from_create_arguments_links_nodes_in_order() -> None:
    wf = preview_from_args({"name": "W", "nodes": [{"type": "n8n-nodes-base.scheduleTrigger"},
                                                   {"type": "n8n-nodes-base.slack", "name": "Post"}]})
    assert wf is not None and [n.name for n in wf.nodes] == ["scheduleTrigger", "Post"]
    assert wf.edges == (WfEdge("scheduleTrigger", "Post"),)
    assert preview_from_args({"name": "W"}) is None


def test_every_shape_parses_with_all_its_connections() -> None:
    for make in SHAPES.values():
        data = make()
        wf = parse_workflow(data)
        count = sum(len(t) for kinds in data["connections"].values() for outs in kinds.values() for t in outs)
        assert len(wf.edges) == count and len(wf.nodes) == len(data["nodes"])


def test_sticky_notes_are_not_steps() -> None:
    data = if_merge()
    data["nodes"].append({"name": "Note", "type": "n8n-nodes-base.stickyNote", "position": [0, -300],
                          "parameters": {"content": "## Read me"}})
    assert [n.name for n in parse_workflow(data).nodes] == [n["name"] for n in if_merge()["nodes"]]


def test_a_notes_markdown_table_reads_as_rows_of_cells() -> None:
    """Beside n8n's editor (the dub.co workflow's README note): n8n shows the note's markdown table as a
    table; the drawing wrote its source, pipes, a row of dashes and all (``| Required | Input Field |``,
    ``|----------|------…``). A table's rows read as their cells, two spaces apart, without the pipes and
    without the line under the header; an empty cell is left out."""
    from instance_ai_tui.protocol.workflow_graph import Sticky

    content = ("## README\n| Required | Input Field | Description |\n|----------|:-----:|---|\n"
               "|✓| Dub API Key | _API Key for **Dub.co**._|\n| | Custom Slug | Slug is the path |\n"
               "A line | with a pipe stays as it is")
    assert Sticky((0, 0), 300, 200, content).body == (
        "Required  Input Field  Description", "✓  Dub API Key  API Key for Dub.co.", "Custom Slug  Slug is the path",
        "A line | with a pipe stays as it is")
