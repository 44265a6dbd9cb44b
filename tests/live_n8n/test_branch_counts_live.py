"""Live: per-branch item counts of IF and Switch as a real n8n 2.41.1 ran them (issue 42.7; the canvas
draws them, issue 41). n8n's agent runs a workflow made through the public API (a Code node making 5
items, an IF keeping n > 2, a Switch on n % 3); the execution the canvas reads (``N8nRestSource``,
n8n's REST) gives each output its own count, as n8n's editor shows one per branch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.client.workflows import N8nRestSource
from instance_ai_tui.protocol.workflow_graph import parse_execution
from tests.support.waiting import until_async

from .driving import peer_client
from .test_failed_node_live import RunIt

pytestmark = pytest.mark.timeout(400)


def branching_workflow(peer: Any, name: str) -> str:
    def node(name: str, kind: str, version: float, x: int, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"id": str(uuid.uuid4()), "name": name, "type": f"n8n-nodes-base.{kind}", "typeVersion": version,
                "position": [x, 0], "parameters": parameters}

    condition = {"options": {"caseSensitive": True, "leftValue": "", "typeValidation": "strict", "version": 2},
                 "combinator": "and"}
    rules = [{"outputKey": f"r{r}", "conditions": {**condition, "conditions": [{
        "id": str(uuid.uuid4()), "leftValue": "={{ $json.n % 3 }}", "rightValue": r,
        "operator": {"type": "number", "operation": "equals"}}]}} for r in range(3)]
    nodes = [
        node("Start", "manualTrigger", 1, 0, {}),
        node("Make", "code", 2, 200, {"jsCode": "return [1,2,3,4,5].map(n => ({json: {n}}));"}),
        node("If", "if", 2.2, 400, {"conditions": {**condition, "conditions": [{
            "id": str(uuid.uuid4()), "leftValue": "={{ $json.n }}", "rightValue": 2,
            "operator": {"type": "number", "operation": "gt"}}]}, "options": {}}),
        node("Switch", "switch", 3.2, 400, {"rules": {"values": rules}, "options": {}}),
    ]
    connections = {"Start": {"main": [[{"node": "Make", "type": "main", "index": 0}]]},
                   "Make": {"main": [[{"node": "If", "type": "main", "index": 0},
                                      {"node": "Switch", "type": "main", "index": 0}]]}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", headers={"X-N8N-API-KEY": peer.api_key}, timeout=30,
                          json={"name": name, "nodes": nodes, "connections": connections, "settings": {}})
    response.raise_for_status()
    return str(response.json()["id"])


async def test_if_and_switch_give_one_count_per_branch(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    workflow_id = await asyncio.to_thread(branching_workflow, n8n, f"Live branches {uuid.uuid4().hex[:4]}")
    mark = "live-branch-" + uuid.uuid4().hex[:6]
    script = RunIt(mark)
    responder(script)
    client = peer_client(n8n, tmp_path / "cfg")
    try:
        thread = await client.create_thread()
        await client.send(thread.id, f"{mark}: run workflow {workflow_id}")

        async def answered() -> bool:  # the run's approval (as the card's y would), then its result
            status = await client.status(thread.id)
            if status.is_suspended:
                from instance_ai_tui.protocol.conversation import Conversation

                conversation = Conversation(thread.id)
                conversation.load_history(await client.messages(thread.id))
                conversation.resume_waiting()
                for pending in conversation.pending_confirmations(include_expired=True):
                    await client.confirm(pending.request_id, {"approved": True})
            return bool(script.results)

        await until_async(answered, 120, "n8n ran the workflow")
        source = N8nRestSource(client)
        execution = parse_execution(await source.last_execution(workflow_id))
    finally:
        await client.close()
    assert execution is not None and execution.status == "success", execution
    assert execution.runs["If"].items_by_output == (3, 2), execution.runs["If"]  # true: 3, 4, 5; false: 1, 2
    assert execution.runs["Switch"].items_by_output == (1, 2, 2), execution.runs["Switch"]  # n % 3 = 0, 1, 2
    assert execution.runs["If"].items == 5
