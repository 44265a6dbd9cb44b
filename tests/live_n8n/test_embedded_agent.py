"""The embedded agent does real work on a real n8n through its public API (``N8N_URL`` + ``N8N_API_KEY``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.support.openai_server import MockResponse

from .conftest import tool_names, tool_results, user_text

SCHEDULE = {"type": "n8n-nodes-base.scheduleTrigger", "name": "Every hour",
            "parameters": {"rule": {"interval": [{"field": "hours", "hoursInterval": 1}]}}}
HTTP = {"type": "n8n-nodes-base.httpRequest", "name": "Fetch weather",
        "parameters": {"url": "https://api.example.com/weather", "method": "GET"}}


def run_cli(peer: Any, model_url: str, tmp_path: Path, message: str, *extra: str,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "N8N_", "INSTANCE_AI_"))}
    env.update({"N8N_URL": peer.url, "N8N_API_KEY": peer.api_key, "OPENAI_BASE_URL": model_url,
                "OPENAI_API_KEY": "sk-local", "INSTANCE_AI_MODEL": "live-model",
                "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")})
    return subprocess.run([sys.executable, "-m", "instance_ai_tui", "run", "--db", str(tmp_path / "ai.sqlite3"),
                           "--approve", "all", "--timeout", str(int(timeout)), *extra, message],
                          env=env, capture_output=True, text=True, timeout=timeout + 30, check=False)


def api(peer: Any, method: str, path: str, **kw: Any) -> Any:
    response = httpx.request(method, f"{peer.url}/api/v1{path}", headers={"X-N8N-API-KEY": peer.api_key},
                             timeout=30, **kw)
    assert response.status_code == 200, response.text
    return response.json()


def check_in_catalogue(workflow: dict[str, Any], catalogue: list[dict[str, Any]]) -> None:
    versions: dict[str, set[float]] = {}
    for entry in catalogue:
        raw = entry["version"]
        versions.setdefault(entry["name"], set()).update(raw if isinstance(raw, list) else [raw])
    for node in workflow["nodes"]:
        assert node["type"] in versions, node
        assert node["typeVersion"] in versions[node["type"]], (node["type"], node["typeVersion"])


def test_run_builds_a_connected_workflow_n8n_accepts(n8n: Any, model: Any, responder: Any, tmp_path: Path,
                                                     node_catalogue: list[dict[str, Any]]) -> None:
    seen_tools: list[list[str]] = []

    def script(body: dict[str, Any]) -> MockResponse:
        seen_tools.append(tool_names(body))
        results = tool_results(body)
        if "live-build-1" not in user_text(body) or not tool_names(body):
            return MockResponse(text="Weather workflow")  # e.g. the thread title
        if not results:
            # nodes the way models write them: no ids, positions or typeVersions, no connections
            return MockResponse.call("create-workflow", {"name": "Live weather", "nodes": [SCHEDULE, HTTP]})
        created = json.loads(results[-1])
        return MockResponse(text=f"LIVE-DONE: created workflow {created.get('id')}.")

    responder(script)
    done = run_cli(n8n, model.base_url, tmp_path, "live-build-1: build a workflow that fetches the weather hourly")
    assert done.returncode == 0, done.stderr
    assert "LIVE-DONE: created workflow" in done.stdout
    workflow_id = re.search(r"created workflow (\w+)", done.stdout).group(1)  # type: ignore[union-attr]
    assert any("create-workflow" in tools for tools in seen_tools)
    workflow = api(n8n, "GET", f"/workflows/{workflow_id}")
    assert workflow["name"] == "Live weather" and workflow["active"] is False
    check_in_catalogue(workflow, node_catalogue)
    by_name = {n["name"]: n for n in workflow["nodes"]}
    assert by_name["Every hour"]["position"][0] < by_name["Fetch weather"]["position"][0]
    assert workflow["connections"] == {"Every hour": {"main": [[{"node": "Fetch weather", "type": "main", "index": 0}]]}}
    assert workflow["settings"].get("executionOrder") == "v1"


def test_unknown_node_type_is_a_clear_tool_error_and_nothing_is_sent(n8n: Any, model: Any, responder: Any,
                                                                     tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> MockResponse:
        results = tool_results(body)
        if not tool_names(body):
            return MockResponse(text="Typo")
        if not results:
            return MockResponse.call("create-workflow", {"name": "Live typo", "nodes": [
                SCHEDULE, {"type": "n8n-nodes-base.httpReqest", "name": "Fetch"}]})
        return MockResponse(text=f"LIVE-ERROR-SEEN: {results[-1]}")

    responder(script)
    before = {w["id"] for w in api(n8n, "GET", "/workflows")["data"]}
    done = run_cli(n8n, model.base_url, tmp_path, "live-typo: build it")
    assert done.returncode == 0, done.stderr
    assert "LIVE-ERROR-SEEN" in done.stdout and "n8n-nodes-base.httpRequest" in done.stdout
    assert {w["id"] for w in api(n8n, "GET", "/workflows")["data"]} == before


def test_a_run_that_cannot_finish_says_so_and_exits_1(n8n: Any, model: Any, responder: Any, tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> MockResponse:
        if not tool_names(body):
            return MockResponse(text="Stuck")
        # a model stuck on one mistake: the same refused call again and again
        return MockResponse.call("create-workflow", {"name": "Stuck", "nodes": [{"type": "n8n-nodes-base.slackk"}]})

    responder(script)
    done = run_cli(n8n, model.base_url, tmp_path, "live-stuck: build it")
    assert done.returncode == 1, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "stopped after 3 steps: the same tool call failed 3 times; the last error was unknown node type " \
           "'n8n-nodes-base.slackk'" in said, said
    assert "n8n-nodes-base.slack" in said
