"""Approval cards show what a call would change: a diff of the file on disk, or of the workflow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.assistant.demo_instance import DemoN8n
from instance_ai_tui.assistant.previews import MAX_DIFF_LINES, file_change, workflow_change
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

from .conftest import answer, collect


def test_file_change_new_overwrite_and_same() -> None:
    new = file_change("a.md", None, "one\ntwo\n")
    assert new["summary"] == "new file, 2 lines" and "+one\n+two\n" in new["diff"] and "/dev/null" in new["diff"]
    over = file_change("a.md", "one\ntwo\nthree\n", "one\n2\nthree\nfour")
    assert over["summary"] == "overwrites 3 lines: +2 −1"
    assert "-two\n" in over["diff"] and "+2\n" in over["diff"] and "No newline at end of file" in over["diff"]
    assert file_change("a.md", "x\n", "x\n")["summary"].startswith("no change")
    big = file_change("big.txt", None, "".join(f"{n}\n" for n in range(1000)))
    assert big["omittedLines"] > 0 and len(big["diff"].splitlines()) == MAX_DIFF_LINES


def test_workflow_change_names_nodes_and_connections() -> None:
    current = {
        "name": "Weather",
        "nodes": [{"name": "Cron", "type": "n8n-nodes-base.scheduleTrigger", "parameters": {"hour": 7}},
                  {"name": "Slack", "type": "n8n-nodes-base.slack", "parameters": {"channel": "#a"}}],
        "connections": {"Cron": {"main": [[{"node": "Slack", "type": "main", "index": 0}]]}},
    }
    nodes = [{"name": "Cron", "type": "n8n-nodes-base.scheduleTrigger", "parameters": {"hour": 8}},
             {"name": "HTTP", "type": "n8n-nodes-base.httpRequest", "parameters": {}}]
    connections = {"Cron": {"main": [[{"node": "HTTP", "type": "main", "index": 0}]]}}
    change = workflow_change(current, nodes, connections, "Weather v2")
    assert change["summary"] == "nodes: +1 added, −1 removed, 1 changed; connections: 2 changed; renamed"
    diff = change["diff"]
    assert "@@ node Slack: removed @@" in diff and "@@ node HTTP: added @@" in diff
    assert '-    "hour": 7' in diff and '+    "hour": 8' in diff
    assert "- connection Cron → Slack" in diff and "+ connection Cron → HTTP" in diff
    assert workflow_change(current, None, None)["summary"] == "no change to nodes or connections"


async def test_write_file_card_carries_the_diff_against_the_file_on_disk(make_ai: Any, workspace: Path) -> None:
    write = ScriptedResponse(tool_calls=[ScriptedToolCall(
        "write-file", {"path": "README.md", "content": "# Demo project\nIt sends the weather to Teams.\n"})])
    ai = await make_ai(ScriptedModel([write, "Written."]), workspace_root=workspace)
    await ai.send("a", "switch the readme to teams")
    request = (await collect(ai, "a", until=("confirmation-request",)))[-1]
    preview = request["payload"]["preview"]
    assert preview["summary"] == "overwrites 2 lines: +1 −1"
    assert "-It sends the weather to Slack.\n+It sends the weather to Teams.\n" in preview["diff"]
    await answer(ai, request["payload"]["requestId"], {"approved": True})
    await collect(ai, "a", after=request["id"])
    assert "Teams" in (workspace / "README.md").read_text()


async def test_edit_file_card_and_a_failing_preview(make_ai: Any, workspace: Path) -> None:
    edit = ScriptedResponse(tool_calls=[ScriptedToolCall(
        "edit-file", {"path": "README.md", "oldText": "Slack", "newText": "Discord"})])
    missing = ScriptedResponse(tool_calls=[ScriptedToolCall(
        "edit-file", {"path": "nope.md", "oldText": "a", "newText": "b"})])
    ai = await make_ai(ScriptedModel([edit, "Edited.", missing, "Hm."]), workspace_root=workspace)
    await ai.send("a", "use discord")
    request = (await collect(ai, "a", until=("confirmation-request",)))[-1]
    assert "+It sends the weather to Discord." in request["payload"]["preview"]["diff"]
    await answer(ai, request["payload"]["requestId"], {"approved": False})
    done = await collect(ai, "a", after=request["id"])
    await ai.send("a", "edit a missing file")
    request = (await collect(ai, "a", after=done[-1]["id"], until=("confirmation-request",)))[-1]
    assert "preview" not in request["payload"]  # no preview; the card still asks


async def test_update_workflow_card_shows_the_workflow_diff(make_ai: Any) -> None:
    update = ScriptedResponse(tool_calls=[ScriptedToolCall("update-workflow", {"workflowId": "__ID__", "name": "Renamed"})])
    demo = DemoN8n()
    ai = await make_ai(ScriptedModel([update, "Updated."]), n8n=demo)
    first = (await demo.list_workflows())[0]
    update.tool_calls[0].arguments["workflowId"] = first["id"]
    await ai.send("a", "rename it")
    request = (await collect(ai, "a", until=("confirmation-request",)))[-1]
    assert "renamed" in request["payload"]["preview"]["summary"]
