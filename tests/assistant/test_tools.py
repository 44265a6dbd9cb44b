"""Built-in tools through runs: workspace confinement, the n8n public API (fake server), OpenAI wire."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from instance_ai_tui.assistant.service import AssistantOptions
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.support import serve_asgi
from tests.support.openai_server import MockOpenAIServer, MockResponse

from .conftest import answer, collect, finish_status, of_type, types, without_status
from .fake_n8n import API_KEY, make_fake_n8n


async def test_file_tools_refuse_traversal_and_symlink_escape(make_ai: Any, workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", workspace / "escape.txt")
    model = ScriptedModel([
        ScriptedResponse(tool_calls=[
            ScriptedToolCall("read-file", {"path": "../secret.txt"}),
            ScriptedToolCall("read-file", {"path": "escape.txt"}),
            ScriptedToolCall("search-files", {"query": "secret"}),
            ScriptedToolCall("read-file", {"path": "README.md", "maxLines": 1}),
        ]),
        "ok",
    ])
    ai = await make_ai(model, workspace_root=workspace)
    await ai.send("fs", "read files")
    events = await collect(ai, "fs")
    outcomes = {e["payload"]["toolCallId"]: e for e in events if e["type"] in ("tool-result", "tool-error")}
    calls = of_type(events, "tool-call")
    first, second, third, fourth = (outcomes[c["payload"]["toolCallId"]] for c in calls)
    assert first["type"] == "tool-error" and "outside the workspace" in first["payload"]["error"]
    assert second["type"] == "tool-error" and "symlink" in second["payload"]["error"]
    assert third["type"] == "tool-result" and third["payload"]["result"]["matches"] == []
    assert fourth["payload"]["result"]["content"] == "# Demo project\n"
    db = ai.store.path.read_bytes()
    assert b"TOP SECRET" not in db


async def test_n8n_tools_against_the_public_api(make_ai: Any, db_path: Path) -> None:
    app, state = make_fake_n8n()
    async with serve_asgi(app) as url:
        settings = Settings(n8n_url=url, n8n_api_key=SecretStr(API_KEY))
        model = ScriptedModel([
            ScriptedResponse(tool_calls=[ScriptedToolCall("list-workflows", {}),
                                         ScriptedToolCall("get-execution", {"executionId": "missing"})]),
            ScriptedResponse.call("delete-workflow", {"workflowId": "w1"}),
            "Deleted it.",
        ])
        ai = await make_ai(model, settings=settings)
        tools = {t.name for t in ai.orchestrator.tools}
        assert {"list-workflows", "get-workflow", "create-workflow", "update-workflow", "activate-workflow",
                "deactivate-workflow", "delete-workflow", "list-executions", "get-execution"} <= tools
        assert "list-nodes" not in tools  # only the demo instance has a node catalogue
        await ai.send("n8n", "clean up my workflows")
        first = await collect(ai, "n8n", until=("confirmation-request",))
        listed = next(e for e in first if e["type"] == "tool-result")
        assert listed["payload"]["result"] == [{"id": "w1", "name": "Weather to Slack", "active": False, "nodeCount": 1}]
        missing = of_type(first, "tool-error")[0]
        assert missing["payload"]["error"] == "execution missing not found"
        request = first[-1]["payload"]
        assert request["toolName"] == "delete-workflow" and request["severity"] == "destructive"
        assert "w1" in state["workflows"]
        await answer(ai, request["requestId"], {"approved": True})
        rest = await collect(ai, "n8n", after=first[-1]["id"])
        assert rest[-1]["payload"]["status"] == "completed"
        assert "w1" not in state["workflows"]
        assert ("DELETE", "/api/v1/workflows/w1", {}) in state["requests"]
    # the key is never persisted
    await ai.shutdown()
    assert API_KEY.encode() not in db_path.read_bytes()
    for wal in db_path.parent.glob(db_path.name + "*"):
        assert API_KEY.encode() not in wal.read_bytes()


async def test_n8n_wrong_key_is_a_clear_tool_error(make_ai: Any) -> None:
    app, _ = make_fake_n8n()
    async with serve_asgi(app) as url:
        settings = Settings(n8n_url=url, n8n_api_key=SecretStr("wrong-key-42"))
        ai = await make_ai(ScriptedModel([ScriptedResponse.call("list-workflows", {}), "The key is wrong."]),
                           settings=settings)
        await ai.send("k", "list")
        events = await collect(ai, "k")
    error = of_type(events, "tool-error")[0]["payload"]["error"]
    assert error == "n8n refused the API key; check N8N_API_KEY"
    assert all("wrong-key-42" not in str(e) for e in events)


async def test_run_through_openai_wire_format(make_ai: Any, workspace: Path) -> None:
    def script(body: dict[str, Any]) -> MockResponse:
        messages = body["messages"]
        if "titles" in messages[0]["content"]:
            return MockResponse(text='{"title": "Workspace overview"}')
        if messages[-1]["role"] == "user":
            return MockResponse.call("list-files", {"path": "."}, reasoning="Let me look at the workspace.")
        return MockResponse(text="There is a README.")

    async with MockOpenAIServer(script) as server:
        settings = Settings.model_validate({"model": {"name": "gpt-test", "base_url": server.base_url, "api_key": "sk-test"}})
        ai = await make_ai("gpt-test", settings=settings, workspace_root=workspace,
                           options=AssistantOptions(generate_titles=True))
        assert ai.model_label == "gpt-test"
        run_id = await ai.send("oa", "what is in my workspace folder?")
        events = await collect(ai, "oa")
    assert without_status([t for t in types(events) if t != "thread-title-updated"]) == [
        "run-start", "reasoning-delta", "tool-call", "tool-result", "text-delta", "run-finish"]
    titles = [e["payload"] for e in of_type(events, "thread-title-updated")]
    assert titles == [{"title": "what is in my workspace folder?"}, {"title": "Workspace overview"}]  # first words, refined
    assert (await ai.get_thread("oa")).title == "Workspace overview"
    assert of_type(events, "tool-result")[0]["payload"]["result"]["entries"] == [
        {"path": "README.md", "type": "file", "size": 46}]
    assert "".join(e["payload"]["text"] for e in of_type(events, "text-delta")) == "There is a README."
    assert finish_status(events[-1]) == {"status": "completed"} and events[-1]["runId"] == run_id
    agent_requests = [r.body for r in server.requests if r.body.get("tools")]
    assert {t["function"]["name"] for t in agent_requests[0]["tools"]} >= {"plan", "delegate", "ask-user", "list-files"}
    assert agent_requests[1]["messages"][-1]["role"] == "tool"


async def test_n8n_write_tools_with_stored_allowances(make_ai: Any) -> None:
    app, state = make_fake_n8n()
    async with serve_asgi(app) as url:
        settings = Settings(n8n_url=url, n8n_api_key=SecretStr(API_KEY))
        model = ScriptedModel([
            ScriptedResponse(tool_calls=[
                ScriptedToolCall("create-workflow", {"name": "Fresh", "nodes": [{"type": "n8n-nodes-base.manualTrigger"}]}),
                ScriptedToolCall("update-workflow", {"workflowId": "w1", "name": "Weather to Slack v2"}),
                ScriptedToolCall("activate-workflow", {"workflowId": "w1"}),
            ]),
            ScriptedResponse.call("deactivate-workflow", {"workflowId": "w1"}),
            ScriptedResponse.call("update-workflow", {"workflowId": "w1"}),
            "All changed.",
        ])
        ai = await make_ai(model, settings=settings)
        # "always allow" chosen earlier in this thread (kept in the store)
        await ai.store.create_thread("w")
        await ai.store.set_setting("thread:w", "always_allow",
                                   ["update-workflow", "activate-workflow", "deactivate-workflow"])
        await ai.send("w", "change my workflows")
        events = await collect(ai, "w")
    assert "confirmation-request" not in types(events)
    by_call = {e["payload"]["toolCallId"]: (e["type"], e["payload"].get("result", e["payload"].get("error")))
               for e in events if e["type"] in ("tool-result", "tool-error")}
    calls = [e for e in of_type(events, "tool-call") if not e["payload"].get("autoApproved")]
    outcomes = [by_call[e["payload"]["toolCallId"]] for e in calls]  # in call order
    # a call run without asking because of the grant is marked (a repeated tool-call, autoApproved)
    marked = {e["payload"]["toolName"] for e in of_type(events, "tool-call") if e["payload"].get("autoApproved")}
    assert marked == {"update-workflow", "activate-workflow", "deactivate-workflow"} & {e["payload"]["toolName"] for e in calls}
    assert outcomes[0][1]["name"] == "Fresh"
    fresh = state["workflows"][outcomes[0][1]["id"]]  # what n8n was sent: completed as the real API needs
    assert fresh["settings"] == {"executionOrder": "v1"} and fresh["connections"] == {}
    assert [(n["type"], n["typeVersion"], n["position"]) for n in fresh["nodes"]] == \
        [("n8n-nodes-base.manualTrigger", 1, [0, 0])] and fresh["nodes"][0]["id"]
    assert outcomes[1][0] == "tool-result" and outcomes[2][0] == "tool-result"
    assert outcomes[3][1]["active"] is False and outcomes[3][1]["name"] == "Weather to Slack v2"
    assert outcomes[4] == ("tool-error", "nothing to update: give name, nodes, connections or settings")
    assert state["workflows"]["w1"]["name"] == "Weather to Slack v2"
