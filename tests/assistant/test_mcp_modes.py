"""MCP servers in every mode (issue 28): headless ``instance-ai run --mcp`` and ``instance-ai serve
--mcp`` (server-side servers; a client by URL sees their calls as any other, and ``/mcp``), as
subprocesses, with a real MCP server and the scripted OpenAI-wire model; plus the config and
the flag's parsing."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from instance_ai_tui.assistant.mcp.manager import McpServers
from instance_ai_tui.cli.connection import mcp_overrides
from instance_ai_tui.client.base import NotFoundError
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import Settings
from tests.server.live import REPO, ServeProcess
from tests.support.mcp_servers import SCRIPT
from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order
from tests.support.waiting import until

script = answers_in_order  # the agent's requests answered in order


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def cli_env(tmp_path: Path, model: MockOpenAIServer) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test",
           "INSTANCE_AI_CONFIG": str(config_file(tmp_path))}
    for name in ("INSTANCE_AI_TOKEN", "INSTANCE_AI_MODEL", "INSTANCE_AI_DB"):
        env.pop(name, None)
    return env


def config_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "instance-ai" / "config.toml"


def write_config(tmp_path: Path, text: str) -> None:
    config_file(tmp_path).parent.mkdir(parents=True, exist_ok=True)
    config_file(tmp_path).write_text(text, encoding="utf-8")


async def test_headless_run_with_a_one_off_server_then_no_process_left(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    # the flag's server gets no environment: the PID file comes from the config's table of the same name
    write_config(tmp_path, f'[mcp.servers.notes]\nenv = {{ MCP_TEST_PID_FILE = "{pid_file}" }}\n')
    async with MockOpenAIServer(script(MockResponse.call("mcp__notes__write_note", {"text": "headless"}),
                                       MockResponse(text="Saved."))) as model:
        command = shlex.join([sys.executable, str(SCRIPT), "tools"])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "save a note", "--model", "gpt-test",
            "--db", str(tmp_path / "run.sqlite3"), "--json", "--approve", "all", "--mcp", f"notes={command}", "--mcp-wait", "60",
            env=cli_env(tmp_path, model), cwd=str(tmp_path), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()[-3000:]
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert any(e["type"] == "confirmation-request" and e["payload"]["toolName"] == "mcp__notes__write_note"
               for e in events)
    assert [e["payload"]["result"] for e in events if e["type"] == "tool-result"] == ["note saved: headless"]
    started = [int(p) for p in pid_file.read_text().split()]
    assert started and not [pid for pid in started if alive(pid)]


async def test_serve_runs_its_own_servers_and_a_client_by_url_sees_them(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    write_config(tmp_path, f'[mcp.servers.facts]\ncommand = "{sys.executable}"\nargs = ["{SCRIPT}", "tools"]\n'
                           f'env = {{ MCP_TEST_PID_FILE = "{pid_file}", MCP_TEST_LABEL = "served" }}\n'
                           f'[mcp.servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SCRIPT}", "fail"]\n')
    async with MockOpenAIServer(script(MockResponse.call("mcp__facts__lookup", {"key": "k"}),
                                       MockResponse(text="It is 42."))) as model:
        server = ServeProcess(tmp_path / "served.sqlite3", extra=["--model", "gpt-test"], env=cli_env(tmp_path, model))
        await server.start()
        try:
            client = RemoteClient(server.url)
            async with client:
                for _ in range(1200):  # a message sent while it starts goes without its tools: wait as a person would
                    if "starting" not in {s.state for s in (await client.mcp_status()).servers}:
                        break
                    await asyncio.sleep(0.05)
                await client.create_thread("remote")
                await client.send("remote", "look k up")
                events: list[Any] = []

                async def read() -> None:
                    async for item in client.events("remote"):
                        events.append(item.event)
                        if item.event.type == "run-finish":
                            return

                await asyncio.wait_for(read(), 40)
                results = [e.payload.result for e in events if e.type == "tool-result"]
                assert results == ["served: the value of k is 42"]
                status = {s.name: s for s in (await client.mcp_status()).servers}
                assert status["facts"].state == "ready" and status["broken"].state == "failed"
                assert "MCP_TEST_TOKEN is not set" in status["broken"].stderr
                restarted = {s.name: s for s in (await client.restart_mcp_server("broken")).servers}
                assert restarted["broken"].starts == 2
                with pytest.raises(NotFoundError):
                    await client.restart_mcp_server("nobody")
            started = [int(p) for p in pid_file.read_text().split()]
            assert started and all(alive(pid) for pid in started)
        finally:
            code = await asyncio.to_thread(server.terminate)
        # uvicorn shuts down gracefully, then ends by the signal it caught
        assert code in (0, -signal.SIGTERM) and "Application shutdown complete" in server.log_path.read_text()
        assert not [pid for pid in started if alive(pid)]


def test_flag_and_config_parsing() -> None:
    assert mcp_overrides(["files=npx -y '@scope/server' /tmp"]) == {
        "servers": {"files": {"command": "npx", "args": ["-y", "@scope/server", "/tmp"]}}}
    assert mcp_overrides(None) == {}
    for bad in ("no-equals", "=cmd", "name=", "x=unclosed 'quote"):
        with pytest.raises(ValueError):
            mcp_overrides([bad])
    ok = Settings.model_validate({"mcp": {"servers": {"web": {"url": "https://me:pw@example.com/mcp?key=k3y",
                                                               "headers": {"Authorization": "Bearer t0p"}}}}})
    assert "t0p" not in repr(ok) and "t0p" not in ok.model_dump_json()
    shown = McpServers(ok.mcp.servers).status().to_json()  # what /mcp shows
    assert "example.com/mcp" in shown and not {"t0p", "k3y", "pw"} & set(re.findall(r"\w+", shown))
    for servers in ({"a b": {"command": "x"}}, {"a__b": {"command": "x"}}, {"x": {}},
                    {"x": {"command": "c", "url": "http://h"}}, {"x": {"url": "ftp://h"}},
                    {"x": {"command": "c", "env": {"BAD-NAME": "1"}}}, {"x": {"url": "http://h", "args": ["a"]}},
                    {"x": {"command": "c", "approval": "sometimes"}}):
        with pytest.raises(ValidationError):
            Settings.model_validate({"mcp": {"servers": servers}})


def test_which_tools_ask_first() -> None:
    from mcp_types import Tool, ToolAnnotations

    from instance_ai_tui.assistant.mcp.connection import ServerConnection
    from instance_ai_tui.assistant.mcp.tools import McpTool, asks_first, tool_name
    from instance_ai_tui.config import McpServerSettings

    reader = Tool(name="read", input_schema={"type": "object"}, annotations=ToolAnnotations(read_only_hint=True))
    writer = Tool(name="write", input_schema={"type": "object"})
    wiper = Tool(name="wipe", input_schema={"type": "object"}, annotations=ToolAnnotations(destructive_hint=True))

    def conn(**settings: Any) -> ServerConnection:
        return ServerConnection("s", McpServerSettings(command="x", **settings))

    assert [asks_first(conn(), t) for t in (reader, writer, wiper)] == [False, True, True]
    assert [asks_first(conn(approval="always"), t) for t in (reader, writer)] == [True, True]
    assert [asks_first(conn(approval="never"), t) for t in (reader, writer)] == [False, False]
    assert [asks_first(conn(allow=["write"], ask=["read"]), t) for t in (reader, writer)] == [True, False]
    assert McpTool(conn(), wiper).metadata["severity"] == "destructive"
    assert McpTool(conn(), writer).metadata["severity"] == "warning"
    assert "severity" not in McpTool(conn(), reader).metadata
    # names: safe for every model API, unique, at most 64 characters
    assert tool_name("s", "read") == "mcp__s__read"
    odd = tool_name("s", "files.read/all")
    assert odd.startswith("mcp__s__files_read_all_") and odd != tool_name("s", "files_read_all")
    long = tool_name("server", "x" * 100)
    assert len(long) == 64 and long != tool_name("server", "x" * 99)


async def test_an_http_server_refusing_the_token_fails_without_showing_it() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from instance_ai_tui.config import McpServerSettings
    from tests.support.asgi import serve_asgi

    async def refuse(request: Any) -> PlainTextResponse:
        return PlainTextResponse("no", status_code=401)

    app = Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])
    async with serve_asgi(app) as url:
        servers = McpServers({"web": McpServerSettings(url=f"{url}/mcp?key=k3y-secret",
                                                       headers={"Authorization": "Bearer t0p-secret"})})
        servers.start()
        await servers.wait_starting(60)
        status = servers.status().servers[0]
        await servers.aclose()
    assert status.state == "failed" and status.error and "did not start" in status.error
    assert "secret" not in status.to_json()
    conn = servers.connections["web"]
    leaked = conn.scrub(f"Client error '401' for url '{url}/mcp?key=k3y-secret' (sent Bearer t0p-secret)")
    assert "secret" not in leaked and f"for url '{url}/mcp' (sent ***)" in leaked


async def test_restart_during_a_call_fails_the_call_and_keeps_the_new_server() -> None:
    from instance_ai_tui.assistant.mcp.connection import McpCallError
    from instance_ai_tui.config import McpServerSettings
    from tests.support.mcp_servers import stdio_config

    servers = McpServers({"s": McpServerSettings(**stdio_config("tools"))})
    servers.start()
    await servers.wait_starting(60)
    conn = servers.connections["s"]
    try:
        call = asyncio.ensure_future(conn.call("slow", {"steps": 30}))
        await asyncio.sleep(0.8)  # the scenario: the restart comes while the slow call runs
        await servers.restart("s")
        with pytest.raises(McpCallError):
            await asyncio.wait_for(call, 10)
        await until(lambda: conn.state == "ready" and conn.starts == 2, what="the server started again")
        result = await conn.call("lookup", {"key": "k"})
        assert result.content[0].text == "tools: the value of k is 42"
    finally:
        await servers.aclose()
    with pytest.raises(McpCallError, match="not available"):
        await conn.call("lookup", {"key": "k"})  # closed with the service: not started again
    assert conn.starts == 2


async def test_headless_run_prints_progress_under_its_call(tmp_path: Path) -> None:
    write_config(tmp_path, f'[mcp.servers.count]\ncommand = "{sys.executable}"\nargs = ["{SCRIPT}", "tools"]\n')
    async with MockOpenAIServer(script(MockResponse.call("mcp__count__slow", {"steps": 4}),
                                       MockResponse(text="Counted."))) as model:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "count to four", "--model", "gpt-test",
            "--db", str(tmp_path / "run.sqlite3"), "--mcp-wait", "60", env=cli_env(tmp_path, model), cwd=str(tmp_path),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    notes = err.decode()
    assert proc.returncode == 0, notes[-3000:]
    assert notes.count("⚙ mcp__count__slow") == 1
    assert "  ↳ mcp__count__slow: " in notes and "of 4" in notes
    assert "Counted." in out.decode()
