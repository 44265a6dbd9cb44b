"""Completing model-written workflows into what n8n's public API accepts, and the API's own checks."""

from __future__ import annotations

import pytest

from instance_ai_tui.assistant.n8n_workflow import (
    NodeCatalogue,
    WorkflowError,
    activation_error,
    complete_workflow,
    public_api_error,
)

CATALOGUE = NodeCatalogue.built_in()


def test_nodes_as_models_write_them_are_completed_and_laid_out_left_to_right() -> None:
    body = complete_workflow("Weather", [
        {"type": "n8n-nodes-base.scheduleTrigger", "parameters": {"rule": {"interval": [{"field": "hours"}]}}},
        {"type": "httpRequest", "name": "Fetch", "parameters": {"url": "https://example.com"}},
        {"type": "n8n-nodes-base.set"},
    ], None, None, CATALOGUE)
    assert public_api_error(body) is None
    nodes = body["nodes"]
    assert [(n["name"], n["type"], n["typeVersion"]) for n in nodes] == [
        ("Schedule Trigger", "n8n-nodes-base.scheduleTrigger", 1.4),
        ("Fetch", "n8n-nodes-base.httpRequest", 4.5),
        ("Edit Fields (Set)", "n8n-nodes-base.set", 3.5),
    ]
    assert [n["position"][0] for n in nodes] == [0, 220, 440] and len({n["id"] for n in nodes}) == 3
    assert body["connections"] == {
        "Schedule Trigger": {"main": [[{"node": "Fetch", "type": "main", "index": 0}]]},
        "Fetch": {"main": [[{"node": "Edit Fields (Set)", "type": "main", "index": 0}]]},
    }
    assert body["settings"] == {"executionOrder": "v1"}


def test_layout_follows_connections_not_list_order_and_branches_stack() -> None:
    body = complete_workflow("Branches", [
        {"type": "n8n-nodes-base.noOp", "name": "B"},
        {"type": "n8n-nodes-base.noOp", "name": "C"},
        {"type": "n8n-nodes-base.webhook", "name": "Start"},
        {"type": "n8n-nodes-base.if", "name": "Check", "position": [500, 500]},
    ], {"Start": ["Check"], "Check": {"main": [["B"], ["C"]]}}, None, CATALOGUE)
    pos = {n["name"]: n["position"] for n in body["nodes"]}
    assert pos["Start"] == [0, 0] and pos["Check"] == [500, 500]  # a given position is kept
    assert pos["B"][0] == pos["C"][0] == 440 and pos["B"][1] != pos["C"][1]
    assert body["connections"]["Check"]["main"][1] == [{"node": "C", "type": "main", "index": 0}]


@pytest.mark.parametrize(("nodes", "connections", "expected"), [
    ([{"type": "n8n-nodes-base.httpRequst"}], None, "closest known types: n8n-nodes-base.httpRequest"),
    ([{"type": "slackk"}], None, "n8n-nodes-base.slack"),
    ([{"type": "n8n-nodes-base.httpRequest", "typeVersion": 9}], None, "no typeVersion 9 (known: 1, 2, 3, 4, 4.1"),
    ([{"name": "x"}], None, "needs a 'type'"),
    ([{"type": "n8n-nodes-base.set", "url": "x"}], None, "keys n8n does not accept: url"),
    ([{"type": "n8n-nodes-base.set", "name": "A"}, {"type": "n8n-nodes-base.set", "name": "A"}], None, "unique"),
    ([{"type": "n8n-nodes-base.set", "name": "A"}], {"A": ["Nope"]}, "target 'Nope' is not a node"),
    ([{"type": "n8n-nodes-base.set", "name": "A"}], {"Z": ["A"]}, "source 'Z' is not a node"),
    ([{"type": "n8n-nodes-base.set", "position": "left"}], None, "position must be [x, y]"),
    ([{"type": "community-pkg.thing"}], None, "give its 'typeVersion'"),
])
def test_problems_are_tool_errors_before_anything_is_sent(nodes: list, connections: object, expected: str) -> None:
    with pytest.raises(WorkflowError) as err:
        complete_workflow("x", nodes, connections, None, CATALOGUE)
    assert expected in err.value.message


def test_community_nodes_pass_with_a_version_and_settings_are_checked() -> None:
    body = complete_workflow("x", [{"type": "n8n-nodes-foo.bar", "typeVersion": 2}], None, None, CATALOGUE)
    assert body["nodes"][0]["typeVersion"] == 2
    with pytest.raises(WorkflowError, match="settings has keys n8n does not accept: colour"):
        complete_workflow("x", [], None, {"colour": "red"}, CATALOGUE)


def test_catalogue_from_the_instance_wins_over_the_table() -> None:
    catalogue = NodeCatalogue.from_nodes_json([
        {"name": "n8n-nodes-base.httpRequest", "version": [3, 4, 4.1], "defaultVersion": 4.1,
         "displayName": "HTTP Request", "group": ["output"]},
        {"name": "n8n-nodes-base.httpRequest", "version": 2, "displayName": "HTTP Request", "group": ["output"]},
    ])
    assert catalogue.resolve("httpRequest").default_version == 4.1  # type: ignore[union-attr]
    assert catalogue.resolve("n8n-nodes-base.httpRequest").versions == (2, 3, 4, 4.1)  # type: ignore[union-attr]
    with pytest.raises(WorkflowError, match="not in the instance's node catalogue"):
        complete_workflow("x", [{"type": "n8n-nodes-base.set"}], None, None, catalogue)


def test_public_api_checks_say_what_n8n_says() -> None:
    node = {"name": "M", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}}
    assert public_api_error({"name": "x", "nodes": [node], "connections": {}}) == \
        "request/body must have required property 'settings'"
    assert public_api_error({"name": "x", "nodes": [], "connections": {}, "settings": {}, "active": False}) == \
        "request/body/active is read-only"
    no_position = {k: v for k, v in node.items() if k != "position"}
    assert public_api_error({"name": "x", "nodes": [no_position], "connections": {}, "settings": {}}) == \
        "Workflow structure is invalid. nodes[0].position (invalid_type): Required"
    assert public_api_error({"name": "x", "nodes": [{**node, "foo": 1}], "connections": {}, "settings": {}}) == \
        "request/body/nodes/0 Unrecognized key(s) in object: 'foo'"
    assert public_api_error({"name": "x", "nodes": [{**node, "type": "n8n-nodes-base.nope"}], "connections": {},
                             "settings": {}}) is None  # n8n 2.41.1 stores unknown types
    assert activation_error({"nodes": [node]}) is not None
    assert activation_error({"nodes": [{**node, "type": "n8n-nodes-base.scheduleTrigger"}]}) is None
