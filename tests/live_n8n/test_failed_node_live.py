"""Live: a workflow that fails a node, run by a real n8n 2.41.1's own agent, reads *failed* everywhere (issue 26).

n8n's agent (driven by the suite's scripted OpenAI-wire model) calls its ``executions`` tool with
``action: "run"`` on a workflow made through the public API whose Code node throws. n8n's adapter
(``extractExecutionOutcome`` in ``modules/instance-ai/instance-ai.adapter.service.js``) returns that as a
tool *result*, not a tool error: ``{executionId, status: "error", nodeErrors: [{nodeName, message}],
error, lastNodeExecuted}``. The call must read failed, with the node's name and n8n's message, never
``✓``:

1. live in the TUI connected to n8n by URL (the approval answered with keys, as a person would);
2. after a reload (a second app opening the same n8n thread);
3. in ``instance-ai export THREAD --url``;
4. in headless ``instance-ai run --url`` (its tool line; the run itself completed, so exit code 0).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.dom import DOMNode

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ConfirmCard
from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
from tests.support.openai_server import MockResponse
from tests.support.waiting import until

from .conftest import called, tool_names, user_text

pytestmark = pytest.mark.timeout(420)

SIZE = (160, 44)
#: n8n's words for the failure: the Code node's own message
BOOM = "boom from the failed-node test"
FINISHED = ("done", "failed", "denied", "not-run", "expired", "unresolved")


def failing_workflow(peer: Any, name: str) -> str:
    """A manual trigger, a Code node that throws, and a node after it (never reached)."""
    nodes = [
        {"id": str(uuid.uuid4()), "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1,
         "position": [0, 0], "parameters": {}},
        {"id": str(uuid.uuid4()), "name": "Boom", "type": "n8n-nodes-base.code", "typeVersion": 2,
         "position": [220, 0], "parameters": {"jsCode": f"throw new Error('{BOOM}');"}},
        {"id": str(uuid.uuid4()), "name": "After", "type": "n8n-nodes-base.set", "typeVersion": 3.4,
         "position": [440, 0], "parameters": {}},
    ]
    connections = {"Start": {"main": [[{"node": "Boom", "type": "main", "index": 0}]]},
                   "Boom": {"main": [[{"node": "After", "type": "main", "index": 0}]]}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", headers={"X-N8N-API-KEY": peer.api_key}, timeout=30,
                          json={"name": name, "nodes": nodes, "connections": connections,
                                "settings": {"executionOrder": "v1"}})
    response.raise_for_status()
    return str(response.json()["id"])


def delete_workflow(peer: Any, workflow_id: str) -> None:
    httpx.delete(f"{peer.url}/api/v1/workflows/{workflow_id}", headers={"X-N8N-API-KEY": peer.api_key}, timeout=30)



class RunIt:
    """The scripted model: for a message carrying ``mark`` and ``run workflow ID``, n8n's agent calls
    ``executions`` (``action: "run"``; through ``load_tool`` if n8n defers it), then answers. Every
    result n8n's tool gave the model is kept."""

    def __init__(self, mark: str) -> None:
        self.mark = mark
        self.results: list[str] = []

    def __call__(self, body: dict[str, Any]) -> MockResponse:
        user = user_text(body)
        if self.mark not in user:
            return MockResponse(text="Failed node thread")  # titles and other side calls
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if last.get("role") == "tool" and called(body)[-1:] == ["executions"]:
            self.results.append(str(last.get("content")))
            return MockResponse(text=f"{self.mark}-DONE: the run came back.")
        wanted = re.findall(r"run workflow (\S+)", user)
        if "executions" in tool_names(body) and wanted:
            return MockResponse.call("executions", {"action": "run", "workflowId": wanted[-1],
                                                    "approvalSummary": "Run the failing test workflow once"})
        if "load_tool" in tool_names(body) and called(body)[-1:] != ["load_tool"]:
            return MockResponse.call("load_tool", {"toolName": "executions"})
        return MockResponse(text=f"{self.mark}-NO-TOOL {tool_names(body)}")


def executions_cards(app: InstanceAiApp) -> list[ToolCallCard]:
    return [c for c in app.query(ToolCallCard) if c.tc.tool_name == "executions"]


def header(card: ToolCallCard) -> str:
    return str(card.header.visual)


def assert_failed_words(text: str, where: str) -> None:
    assert "Boom" in text and BOOM in text, f"{where}: the node and n8n's message are not named: {text!r}"


async def reach_card(app: InstanceAiApp, pilot: Any) -> ConfirmCard:
    """Ctrl+G until the approval card holds the focus (a card takes keys once the person goes to it)."""

    def focused_card() -> ConfirmCard | None:
        node: DOMNode | None = app.focused
        while node is not None and not isinstance(node, ConfirmCard):
            node = node.parent
        return node

    await until(lambda: bool(app.query(ConfirmCard)), pilot, 120, "the approval card of the run")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        await pilot.press("ctrl+g")
        card = focused_card()
        if card is not None and card.is_attached:
            break
        await pilot.pause(0.2)
    card = focused_card()
    assert card is not None, "Ctrl+G reached no card"
    # the card ignores keys for GRACE_SECONDS after it is drawn (a key typed before is not an answer)
    await until(lambda: not card.in_grace, pilot, GRACE_SECONDS + 30, "the card's grace time over")
    return card


def cli_env(peer: Any, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("N8N_", "INSTANCE_AI_"))}
    return {**env, "N8N_PASSWORD": peer.password, "XDG_CONFIG_HOME": str(tmp_path / "cli-config"),
            "XDG_DATA_HOME": str(tmp_path / "cli-data"), "NO_COLOR": "1"}


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "xdg-config" / "config.toml"))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


async def test_a_failed_node_reads_failed_live_after_reload_in_export_and_in_run(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    mark = "live-failnode-" + uuid.uuid4().hex[:6]
    script = RunIt(mark)
    responder(script)
    workflow_id = await asyncio.to_thread(failing_workflow, n8n, f"Failed node {mark}")
    shown: dict[str, str] = {}
    try:
        # 1. live: the app connected by URL; the run's approval answered with "y"
        client = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=tmp_path / "cfg", interactive=False)
        thread = await client.create_thread()
        app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, thread_id=thread.id)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            await until(lambda: app.thread_id == thread.id and app.conversation is not None, pilot, 30, "thread open")
            app.prompt.focus()
            app.prompt.load_text(f"{mark}: run workflow {workflow_id}")
            await pilot.press("enter")
            await reach_card(app, pilot)
            await pilot.press("y")
            await until(lambda: bool(script.results), pilot, 180, "n8n's tool result reaching the model")
            await until(lambda: executions_cards(app) and executions_cards(app)[-1].state in FINISHED, pilot, 60,
                        "the executions call finished on screen")
            await until(lambda: app.conversation is not None and not app.conversation.is_streaming, pilot, 60,
                        "the run's end")
            card = executions_cards(app)[-1]
            shown["live"] = header(card)
            assert card.state == "failed", (card.state, shown["live"])
            assert "✓" not in shown["live"], shown["live"]
            assert_failed_words(shown["live"], "live")
        # what n8n's own tool answered: a result (not an error) with the failed node and its message
        outcome = json.loads(script.results[0])
        assert outcome["status"] == "error", outcome
        assert [e["nodeName"] for e in outcome["nodeErrors"]] == ["Boom"] and BOOM in outcome["nodeErrors"][0]["message"]

        # 2. after a reload: another app opens the same thread from n8n's history
        client2 = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=tmp_path / "cfg", interactive=False)
        app2 = InstanceAiApp(client2, Settings(), watch_themes=False, persist_theme=False, thread_id=thread.id)
        async with app2.run_test(size=SIZE) as pilot:
            await app2.wait_until_ready()
            await until(lambda: app2.thread_id == thread.id and bool(executions_cards(app2)), pilot, 60,
                        "the restored executions call")
            await until(lambda: executions_cards(app2)[-1].state in FINISHED, pilot, 30, "its state")
            card = executions_cards(app2)[-1]
            shown["reload"] = header(card)
            assert card.state == "failed", (card.state, shown["reload"])
            assert "✓" not in shown["reload"], shown["reload"]
            assert_failed_words(shown["reload"], "after reload")

        # 3. export of the n8n thread
        env = cli_env(n8n, tmp_path)
        exported = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "instance_ai_tui", "export", thread.id, "--url", n8n.url,
                             "--email", n8n.email], env=env, capture_output=True, text=True, timeout=120, check=False)
        assert exported.returncode == 0, exported.stderr[-2000:]
        tool_lines = [line for line in exported.stdout.splitlines() if line.startswith("**🔧 executions**")]
        assert len(tool_lines) == 1, exported.stdout[-3000:]
        shown["export"] = tool_lines[0]
        assert "(failed" in shown["export"] and "(done" not in shown["export"], shown["export"]
        assert_failed_words(shown["export"], "export")

        # 4. headless run on a new thread of the same n8n (the approval given by --approve all)
        run_thread = str(uuid.uuid4())
        ran = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "instance_ai_tui", "run", "--url", n8n.url, "--email", n8n.email,
                             "--approve", "all", "--timeout", "240", "--thread", run_thread,
                             f"{mark}: run workflow {workflow_id}"],
            env=env, capture_output=True, text=True, timeout=300, check=False)
        outcome_lines = [line.strip() for line in ran.stderr.splitlines() if re.match(r"\s+[✓✗⊘] executions", line)]
        assert len(outcome_lines) == 1, (ran.returncode, ran.stderr[-3000:])
        shown["run"] = outcome_lines[0]
        assert shown["run"].startswith("✗ executions: failed"), shown["run"]
        assert_failed_words(shown["run"], "run")
        # the run itself ended as n8n says (completed: its agent answered after the failed call)
        assert ran.returncode == 0, (ran.returncode, ran.stderr[-2000:])
        assert f"{mark}-DONE" in ran.stdout
        print("\n".join(f"{where}: {line}" for where, line in shown.items()))  # what each view showed (-s)
    finally:
        await asyncio.to_thread(delete_workflow, n8n, workflow_id)
