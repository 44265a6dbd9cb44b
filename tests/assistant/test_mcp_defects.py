"""The ways people configure and use MCP servers that broke (issue 40's defects), each with the
real part: a venv's python, a slow and a failing server, an HTTP server asking for sign-in, a
server echoing its secrets, a 100 MB answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.mcp.manager import McpServers
from instance_ai_tui.cli.connection import mcp_overrides
from instance_ai_tui.config import McpServerSettings, Settings
from tests.support.mcp_servers import SCRIPT, make_venv, stdio_config
from tests.support.waiting import until


async def _whoami(servers: McpServers, name: str) -> dict[str, Any]:
    conn = servers.connections[name]
    await until(lambda: conn.state != "starting", timeout=60, what=f"{name} started or failed")
    assert conn.state == "ready", conn.failure()
    result = await conn.call("whoami", {})
    data = result.structured_content
    if data is None or "prefix" not in data:  # an SDK that wraps structured output
        data = json.loads(result.content[0].text)
    return dict(data.get("result", data))


async def test_a_venvs_python_runs_as_written_by_path_and_by_a_relative_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``command = "/…/.venv/bin/python"`` and ``--mcp 'x=.venv/bin/python server.py'``: the venv's
    interpreter runs (the link), not the base one it points to (which has no ``mcp``)."""
    python = make_venv(tmp_path / "proj" / ".venv")
    venv = str(tmp_path / "proj" / ".venv")
    monkeypatch.chdir(tmp_path / "proj")
    flag = mcp_overrides([f"rel=.venv/bin/python {SCRIPT} tools"])["servers"]["rel"]
    assert flag["command"] == ".venv/bin/python"
    servers = McpServers({"abs": McpServerSettings(command=str(python), args=[str(SCRIPT), "tools"]),
                          "rel": McpServerSettings(**flag)})
    servers.start()
    try:
        for name in ("abs", "rel"):
            assert (await _whoami(servers, name))["prefix"] == venv
    finally:
        await servers.aclose()


async def test_quitting_gives_up_a_start_in_progress_at_once(tmp_path: Path) -> None:
    """A server that never answers ``initialize`` (``npx -y`` downloading for the first time):
    quitting stops it at once — it is terminated, not given the grace a server that answered gets
    (stdin closed, then seconds to exit) — and its process is gone when quitting returns."""
    pid_file, seen = tmp_path / "pid", tmp_path / "seen"
    code = ("import os,sys,time; open(sys.argv[1],'w').write(str(os.getpid())); sys.stdin.read(); "
            "open(sys.argv[2],'w').write('stdin closed'); time.sleep(60)")
    servers = McpServers({"slow": McpServerSettings(command=sys.executable, startup_timeout=600,
                                                    args=["-c", code, str(pid_file), str(seen)])})
    servers.start()
    await until(lambda: pid_file.exists() and pid_file.read_text(), what="the slow server runs")
    pid = int(pid_file.read_text())
    await servers.aclose()
    assert not _alive(pid)
    assert not seen.exists(), "quitting waited for a server that never started (its stdin was closed first)"
    assert servers.connections["slow"].state == "stopped"


def _alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not reaped yet by its parent) is gone for our purpose
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


NEVER_ANSWERS = "import sys,time; sys.stdin.read(); time.sleep(60)"  # a server stuck before initialize


async def test_a_slow_server_never_holds_a_turn(make_ai: Any) -> None:
    """A server still starting holds no message: the turn goes with the tools that are ready, and
    ``/mcp`` (the status) says the slow one's tools join a later step."""
    from instance_ai_tui.assistant.service import AssistantOptions
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    from .conftest import collect, finish_status

    async with MockOpenAIServer(answers_in_order(MockResponse(text="Hello."))) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
            "mcp": {"servers": {"slow": {"command": sys.executable, "args": ["-c", NEVER_ANSWERS],
                                         "startup_timeout": 600},
                                "fine": stdio_config("tools")}}})
        ai = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
        mcp = ai.services.mcp
        assert mcp is not None
        await until(lambda: mcp.connections["fine"].state == "ready", what="the fine server is ready")
        await ai.send("t", "hi")
        events = await collect(ai, "t", timeout=60)
        assert finish_status(events[-1]) == {"status": "completed"}
        slow = next(s for s in mcp.status().servers if s.name == "slow")
    assert slow.state == "starting" and "join at the next step" in (slow.note or "")  # it answered nothing all along
    first = next(r.body for r in model.requests if r.body.get("tools"))
    assert "mcp__fine__lookup" in {t["function"]["name"] for t in first["tools"]}
    system = first["messages"][0]["content"]
    assert "MCP servers still starting" in system and "slow" in system  # the model knows, and can say so
