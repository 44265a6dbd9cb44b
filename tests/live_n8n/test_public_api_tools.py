"""Each n8n tool against the real public API, and the fakes' validation against the real server's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from instance_ai_tui.assistant.n8n_client import N8nPublicApi
from instance_ai_tui.assistant.n8n_workflow import public_api_error
from instance_ai_tui.assistant.tools.n8n_api import n8n_tools
from instance_ai_tui.runtime.tools import ToolContext, ToolError
from tests.support.waiting import until_async


async def call(tools: dict[str, Any], tool_name: str, /, **args: Any) -> Any:
    tool = tools[tool_name]
    parsed = tool.args_model.model_validate(args)
    return await tool.handler(parsed, ToolContext(run_id="r", tool_call_id="c", tool_name=tool_name, agent_name="live"))


async def test_lifecycle_create_update_activate_executions_deactivate_archive_delete(n8n: Any) -> None:
    api = N8nPublicApi(n8n.url, n8n.api_key)
    tools = {t.name: t for t in n8n_tools(api)}
    assert "run-workflow" not in tools  # the public API of n8n 2.41 has no way to run a workflow
    try:
        catalogue = await api.node_catalogue()
        assert catalogue.source == "the node table of n8n 2.41.1"  # an API key cannot read /types/nodes.json
        created = await call(tools, "create-workflow", name="Live lifecycle", nodes=[
            {"type": "n8n-nodes-base.scheduleTrigger", "name": "Every second",
             "parameters": {"rule": {"interval": [{"field": "seconds", "secondsInterval": 1}]}}},
            {"type": "n8n-nodes-base.set", "name": "Mark", "parameters": {}},
        ])
        wid = created["id"]
        assert created["connections"] == {"Every second": ["Mark"]}
        updated = await call(tools, "update-workflow", workflowId=wid, name="Live lifecycle v2", nodes=[
            {"type": "n8n-nodes-base.scheduleTrigger", "name": "Every second",
             "parameters": {"rule": {"interval": [{"field": "seconds", "secondsInterval": 1}]}}},
            {"type": "n8n-nodes-base.set", "name": "Mark", "parameters": {}},
            {"type": "n8n-nodes-base.noOp", "name": "Done"},
        ], connections={"Every second": ["Mark"], "Mark": ["Done"]})
        assert updated["name"] == "Live lifecycle v2" and updated["connections"]["Mark"] == ["Done"]
        positions = {n["name"]: n["position"] for n in updated["nodes"]}
        assert positions["Every second"] == created["nodes"][0]["position"]  # kept
        assert positions["Mark"][0] < positions["Done"][0]
        assert (await call(tools, "activate-workflow", workflowId=wid))["active"] is True
        got = await call(tools, "get-workflow", workflowId=wid)
        assert got["active"] is True and len(got["nodes"]) == 3
        executions: list[dict[str, Any]] = []

        async def listed() -> bool:
            executions[:] = await call(tools, "list-executions", workflowId=wid)
            return bool(executions)

        await until_async(listed, 30, "an execution listed", interval=1.0)
        assert executions and executions[0]["workflowId"] == wid
        full: dict[str, Any] = {}

        async def finished() -> bool:  # (listed while it runs: on a busy machine it is still "running")
            full.clear()
            full.update(await call(tools, "get-execution", executionId=executions[0]["id"], includeData=True))
            return full["status"] not in ("new", "running", "waiting")

        await until_async(finished, 30, "the execution finished", interval=0.5)
        assert full["status"] == "success" and "Mark" in str(full["data"]["resultData"]["runData"])
        assert (await call(tools, "deactivate-workflow", workflowId=wid))["active"] is False
        assert (await call(tools, "archive-workflow", workflowId=wid))["isArchived"] is True
        await call(tools, "delete-workflow", workflowId=wid)
        with pytest.raises(ToolError, match="not found"):
            await call(tools, "get-workflow", workflowId=wid)
        # a workflow without a trigger cannot be activated: n8n's own message comes back
        manual = await call(tools, "create-workflow", name="Live manual", nodes=[{"type": "manualTrigger"}])
        with pytest.raises(ToolError, match="no trigger node"):
            await call(tools, "activate-workflow", workflowId=manual["id"])
    finally:
        await api.aclose()


NODE = {"name": "M", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}}
BODIES = [
    {"name": "ok", "nodes": [NODE], "connections": {}, "settings": {}},
    {"name": "no settings", "nodes": [NODE], "connections": {}},
    {"name": "no connections", "nodes": [NODE], "settings": {}},
    {"nodes": [], "connections": {}, "settings": {}},
    {"name": "read-only", "active": True, "nodes": [], "connections": {}, "settings": {}},
    {"name": "no position", "nodes": [{k: v for k, v in NODE.items() if k != "position"}], "connections": {},
     "settings": {}},
    {"name": "no node name", "nodes": [{k: v for k, v in NODE.items() if k != "name"}], "connections": {},
     "settings": {}},
    {"name": "extra node key", "nodes": [{**NODE, "url": "x"}], "connections": {}, "settings": {}},
    {"name": "extra setting", "nodes": [], "connections": {}, "settings": {"colour": "red"}},
    {"name": "duplicate names", "nodes": [NODE, NODE], "connections": {}, "settings": {}},
    {"name": "bad connection", "nodes": [NODE], "connections": {"M": {"main": [[{"node": "Q", "type": "main",
                                                                                    "index": 0}]]}}, "settings": {}},
    {"name": "text version", "nodes": [{**NODE, "typeVersion": "1"}], "connections": {}, "settings": {}},
    {"name": "unknown type", "nodes": [{**NODE, "type": "n8n-nodes-base.nope"}], "connections": {}, "settings": {}},
]


@pytest.mark.parametrize("body", BODIES, ids=[str(b.get("name", "no name")) for b in BODIES])
def test_fake_validation_matches_the_real_public_api(n8n: Any, body: dict[str, Any]) -> None:
    response = httpx.post(f"{n8n.url}/api/v1/workflows", json=body, headers={"X-N8N-API-KEY": n8n.api_key},
                          timeout=30)
    expected = public_api_error(body)
    if expected is None:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400 and response.json()["message"] == expected
