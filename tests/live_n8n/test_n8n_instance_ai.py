"""``run --url`` and ``N8nClient`` against n8n's own Instance AI (the checks of scripts/n8n-interop.sh).

n8n's agent talks to the scripted model server: rules keyed on a marker in the user's message, on the
tools n8n offers (``workflows``) and on the tool results that came back, as the fakellm rules did.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.client.n8n import N8nClient
from tests.support.openai_server import MockResponse

from .conftest import REPO, tool_names, tool_results, user_text

_spec = importlib.util.spec_from_file_location("n8n_interop", REPO / "scripts" / "n8n_interop.py")
assert _spec is not None and _spec.loader is not None
interop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(interop)


def workflows_script(approve_id: str, approve_name: str, deny_id: str):  # type: ignore[no-untyped-def]
    def script(body: dict[str, Any]) -> MockResponse:
        user = user_text(body)
        results = "\n".join(tool_results(body))
        if "interop-run-" not in user or "workflows" not in tool_names(body):
            return MockResponse(text="Interop thread")
        if "user denied" in results.lower():
            return MockResponse(text="INTEROP-DENIED: I left the workflow alone.")
        if re.search(r'"success"\s*:\s*true', results):
            return MockResponse(text=f"INTEROP-DONE: {approve_name} is archived. It was one of your workflows.")
        if "interop-run-approve-" in user and approve_id in results:
            return MockResponse.call("workflows", {"action": "delete", "workflowId": approve_id})
        if "interop-run-deny-" in user and deny_id in results:
            return MockResponse.call("workflows", {"action": "delete", "workflowId": deny_id})
        if "interop-run-restart-" in user:
            turn = user.count("interop-run-restart-")
            return MockResponse(text=f"INTEROP-RESTART-{turn}: still here.")
        return MockResponse.call("workflows", {"action": "list"})

    return script


def make_workflow(peer: Any, name: str) -> str:
    body = {"name": name, "nodes": [{"id": str(uuid.uuid4()), "name": "Manual", "type": "n8n-nodes-base.manualTrigger",
                                     "typeVersion": 1, "position": [0, 0], "parameters": {}}],
            "connections": {}, "settings": {}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", json=body, headers={"X-N8N-API-KEY": peer.api_key},
                          timeout=30)
    response.raise_for_status()
    return str(response.json()["id"])


@pytest.fixture
def interop_workflows(n8n: Any, responder: Any) -> dict[str, str]:
    stamp = uuid.uuid4().hex[:6]
    names = {"approve_name": f"Interop Old Workflow {stamp}", "deny_name": f"Interop Keep Workflow {stamp}"}
    ids = {"approve_id": make_workflow(n8n, names["approve_name"]), "deny_id": make_workflow(n8n, names["deny_name"])}
    responder(workflows_script(ids["approve_id"], names["approve_name"], ids["deny_id"]))
    interop.FAILURES.clear()
    return {**names, **ids}


def test_run_url_chat_approve_and_history(n8n: Any, interop_workflows: dict[str, str], tmp_path: Path) -> None:
    thread = str(uuid.uuid4())
    env = {**os.environ, "N8N_PASSWORD": n8n.password, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "instance_ai_tui", "run", "--url", n8n.url, "--email", n8n.email,
                           "--json", "--approve", "all", "--timeout", "150", "--thread", thread,
                           f"interop-run-approve-{thread[:8]}: list my workflows, then archive "
                           f"{interop_workflows['approve_name']}"],
                          env=env, capture_output=True, text=True, timeout=200, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text(done.stdout)
    status = asyncio.run(interop.check(n8n.url, n8n.email, n8n.password, thread, jsonl,
                                       interop_workflows["approve_id"]))
    assert status == 0 and not interop.FAILURES, interop.FAILURES  # (the run ended within its own --timeout 150: exit 0)


def test_client_deny_suspended_409_and_run_sync(n8n: Any, interop_workflows: dict[str, str]) -> None:
    marker = f"interop-run-deny-{uuid.uuid4().hex[:8]}"
    # the interop deny check names the workflow "Interop Keep Workflow": same prefix, our stamp
    status = asyncio.run(interop.deny(n8n.url, n8n.email, n8n.password, marker, interop_workflows["deny_id"]))
    assert status == 0 and not interop.FAILURES, interop.FAILURES


def test_n8n_restarted_in_the_middle_of_a_conversation(n8n: Any, interop_workflows: dict[str, str]) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as config:
            client = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=Path(config), interactive=False)
            await client.open()
            thread = str(uuid.uuid4())
            try:
                async with interop.LiveStream(client, thread) as live:
                    await client.send(thread, "interop-run-restart-: hello")
                    await live.wait_for("run-finish", timeout=60)
                    down = await asyncio.to_thread(n8n.restart)
                    assert down < 120
                    await client.send(thread, "interop-run-restart-: are you back?")

                    async def second_finish() -> None:
                        while len(live.events("run-finish")) < 2:
                            live._changed.clear()
                            await asyncio.wait_for(live._changed.wait(), 90)

                    await second_finish()
                    answers = live.answer()
                    assert any("INTEROP-RESTART-1" in a for a in answers)
                    assert any("INTEROP-RESTART-2" in a for a in answers), answers
                history = await client.messages(thread)
                texts = [m.content for m in history.messages if m.role == "assistant"]
                assert len(texts) == 2 and "INTEROP-RESTART-2" in texts[1], texts
            finally:
                await client.close()

    asyncio.run(scenario())
