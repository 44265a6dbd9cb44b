"""The ways people configure and use MCP servers that broke (issue 40's defects), each with the
real part: a venv's python, a slow and a failing server, an HTTP server asking for sign-in, a
server echoing its secrets, a 100 MB answer."""

from __future__ import annotations

import asyncio
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
        mcp = ai.mcp
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


async def _started(settings: McpServerSettings) -> tuple[McpServers, Any]:
    servers = McpServers({"web": settings})
    servers.start()
    await servers.wait_starting(60)
    return servers, servers.status().servers[0]


async def test_http_401_says_the_status_and_that_the_server_wants_sign_in() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from tests.support.asgi import serve_asgi

    async def refuse(request: Any) -> PlainTextResponse:
        return PlainTextResponse("sign in first", status_code=401,
                                 headers={"WWW-Authenticate": 'Bearer resource_metadata="x"'})

    app = Starlette(routes=[Route("/mcp", refuse, methods=["GET", "POST", "DELETE"])])
    async with serve_asgi(app) as url:
        servers, status = await _started(McpServerSettings(url=f"{url}/mcp"))
        await servers.aclose()
    assert status.state == "failed"
    assert "HTTP 401 Unauthorized: it wants you to sign in" in (status.error or ""), status.error


async def test_a_legacy_sse_server_is_found_and_used_and_a_wrong_url_says_so() -> None:
    from tests.support.asgi import serve_asgi
    from tests.support.mcp_servers import sse_app

    async with serve_asgi(sse_app("old")) as url:
        servers, status = await _started(McpServerSettings(url=f"{url}/sse"))
        try:
            assert status.state == "ready", status.error
            assert status.transport == "sse"
            result = await servers.connections["web"].call("lookup", {"key": "k"})
            assert result.content[0].text == "old: the value of k is 42"
        finally:
            await servers.aclose()
        wrong, status = await _started(McpServerSettings(url=f"{url}/nothing-here"))
        await wrong.aclose()
    assert status.state == "failed" and "HTTP 404" in (status.error or "") and "check the URL" in (status.error or "")


async def test_a_url_with_user_and_password_never_replaces_the_configured_authorization() -> None:
    from tests.support.asgi import serve_asgi
    from tests.support.mcp_servers import http_app, recording

    seen: list[dict[str, str]] = []
    async with serve_asgi(recording(http_app("web"), seen), lifespan="on") as url:
        host = url.removeprefix("http://")
        servers, status = await _started(McpServerSettings(url=f"http://me:pw@{host}/mcp",
                                                           headers={"Authorization": "Bearer configured"}))
        await servers.aclose()
        basic, status2 = await _started(McpServerSettings(url=f"http://me:pw@{host}/mcp"))
        await basic.aclose()
    assert status.state == "ready" and status2.state == "ready"
    told = [h.get("authorization") for h in seen]
    assert "Bearer configured" in told and "Basic bWU6cHc=" in told  # base64("me:pw"): only without a header
    assert told.index("Basic bWU6cHc=") > max(i for i, t in enumerate(told) if t == "Bearer configured")
    assert "me:pw" not in status.target


async def test_a_tool_that_needs_mcp_tasks_is_not_offered_and_echoed_secrets_are_scrubbed(make_ai: Any) -> None:
    from instance_ai_tui.assistant.service import AssistantOptions
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    from .conftest import collect, of_type

    async with MockOpenAIServer(answers_in_order(MockResponse.call("mcp__s__echo_env", {"name": "API_KEY"}),
                                                 MockResponse(text="Done."))) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
            "mcp": {"servers": {"s": stdio_config("tools", env={"API_KEY": "k3y-0f-the-server"})}}})
        ai = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
        mcp = ai.mcp
        assert mcp is not None
        await until(lambda: mcp.connections["s"].state != "starting", timeout=60)
        status = mcp.status().servers[0]
        await ai.send("t", "what is the key")
        events = await collect(ai, "t", timeout=60)
        stored = json.dumps([e.data() for e in await ai.store.read_events("t")])
    offered = {t["function"]["name"] for r in model.requests if r.body.get("tools") for t in r.body["tools"]}
    assert "mcp__s__lookup" in offered and "mcp__s__needs_task" not in offered
    assert "needs_task (it runs only as an MCP task" in (status.note or "")
    result = of_type(events, "tool-result")[0]["payload"]["result"]
    assert result["value"] == "***" and result["said"] == "API_KEY is ***"
    assert "k3y-0f-the-server" not in stored and "k3y-0f-the-server" not in json.dumps(
        [r.body for r in model.requests])


def _cli_env(tmp_path: Path, model: Any, config: str) -> dict[str, str]:
    from tests.assistant.test_mcp_modes import cli_env, write_config

    write_config(tmp_path, config)
    return cli_env(tmp_path, model)


async def _run(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", "run", *args, env=env, cwd=str(tmp_path),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_run_says_which_server_failed_and_which_still_starts(tmp_path: Path) -> None:
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    broken = f'[mcp.servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SCRIPT}", "fail"]\n'
    slow = f'[mcp.servers.slow]\ncommand = "{sys.executable}"\nargs = ["-c", "{NEVER_ANSWERS}"]\nstartup_timeout = 600\n'
    async with MockOpenAIServer(answers_in_order(MockResponse(text="Hello."), MockResponse(text="Hello."))) as model:
        code, out, err = await _run(tmp_path, _cli_env(tmp_path, model, broken), "hi", "--model", "gpt-test",
                                    "--db", str(tmp_path / "run.sqlite3"), "--mcp-wait", "60")
        assert code == 0 and "Hello." in out, err
        told = [line for line in err.splitlines() if "MCP server 'broken' failed" in line]
        assert len(told) == 1 and "it did not start" in told[0]
        assert "MCP_TEST_TOKEN is not set; cannot log in" in told[0]  # the end of its stderr, on the same line
        code, out, err = await _run(tmp_path, _cli_env(tmp_path, model, slow), "hi", "--model", "gpt-test",
                                    "--db", str(tmp_path / "run.sqlite3"), "--mcp-wait", "0.5")
    assert code == 0 and "Hello." in out, err
    assert any("MCP server 'slow' is still starting after 0.5 s" in line and "join a later step" in line
               for line in err.splitlines()), err


async def test_mcp_with_url_is_refused(tmp_path: Path) -> None:
    env = {**_cli_env(tmp_path, type("M", (), {"base_url": "http://127.0.0.1:9/v1"})(), "")}
    code, _, err = await _run(tmp_path, env, "hi", "--url", "http://127.0.0.1:9", "--mcp", "x=some-server")
    assert code != 0 and "--mcp gives MCP servers to the embedded agent" in err and "--url" in err


async def test_serve_logs_no_url_credential_or_secret_of_an_http_server(tmp_path: Path) -> None:
    """``serve --log-level info``: httpx's and the SDK's lines name the server's URL; its token
    (query), its user part and its header values never reach the log."""
    from tests.server.live import ServeProcess
    from tests.support.asgi import serve_asgi
    from tests.support.mcp_servers import http_app

    async with serve_asgi(http_app("web"), lifespan="on") as url:
        host = url.removeprefix("http://")
        config = (f'[mcp.servers.web]\nurl = "http://me:pa55word@{host}/mcp?token=t0ken-in-query"\n'
                  'headers = { "X-Api-Key" = "hdr-s3cret" }\n')
        env = _cli_env(tmp_path, type("M", (), {"base_url": "http://127.0.0.1:9/v1"})(), config)
        server = ServeProcess(tmp_path / "served.sqlite3", extra=["--log-level", "debug"], env=env)
        await server.start()
        try:
            import httpx

            async with httpx.AsyncClient() as http:
                for _ in range(1200):
                    body = (await http.get(f"{server.url}/instance-ai/mcp")).json()
                    if body["servers"][0]["state"] != "starting":
                        break
                    await asyncio.sleep(0.05)
            assert body["servers"][0]["state"] == "ready", body
        finally:
            await asyncio.to_thread(server.terminate)
    log = server.log_path.read_text()
    assert f"POST http://{host}/mcp?token=***" in log  # the line is there (debug and info), scrubbed
    for secret in ("t0ken-in-query", "pa55word", "hdr-s3cret"):
        assert secret not in log


async def test_oauth_sign_in_against_a_local_authorization_server(tmp_path: Path) -> None:
    """A server answering 401 with a Bearer challenge: the SDK's OAuth client discovers the
    authorization server, registers, opens the 'browser' at the authorization URL with PKCE; the
    redirect comes back to the loopback listener on 127.0.0.1; the tokens are kept 0600 and used
    at the next start without a new sign-in; an expired access token is refreshed; signing out
    forgets them."""
    import os
    import stat

    import httpx

    from tests.support.asgi import AsgiServer
    from tests.support.net import free_port
    from tests.support.oauth_server import MemoryProvider, oauth_app

    opened: list[str] = []

    def browser(url: str) -> bool:  # the person: opens the URL and says yes (the provider approves)
        opened.append(url)
        assert url.startswith(base + "/authorize?") and "code_challenge_method=S256" in url
        with httpx.Client(follow_redirects=True, timeout=30) as http:
            answer = http.get(url)
        assert answer.status_code == 200 and "Signed in" in answer.text
        return True

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    auth_server = MemoryProvider(told_expiry=20)  # within the 30 s margin: at the next start they are refreshed
    server = AsgiServer(oauth_app(base, auth_server), port=port, lifespan="on")
    await server.start()
    try:
        async def start() -> tuple[McpServers, Any]:
            servers = McpServers({"hosted": McpServerSettings(url=f"{base}/mcp")})
            servers.hooks.data_folder = tmp_path / "data"
            servers.hooks.open_url = browser
            servers.start()
            await servers.wait_starting(120)
            return servers, servers.connections["hosted"]

        servers, conn = await start()
        try:
            assert conn.state == "ready", conn.failure()
            assert (await conn.call("whoami", {})).content[0].text == "signed in as ada"
            assert servers.status().servers[0].signed_in
        finally:
            await servers.aclose()
        assert auth_server.events == ["register", "authorize", "code"]
        token_file = tmp_path / "data" / "mcp-oauth" / "hosted.json"
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(token_file.parent).st_mode) == 0o700
        assert len(opened) == 1
        refreshed = auth_server.events.count("refresh")
        servers, conn = await start()  # the kept tokens: no new sign-in
        try:
            assert conn.state == "ready" and len(opened) == 1 and auth_server.events.count("authorize") == 1
            assert auth_server.events.count("refresh") > refreshed  # the kept access token had expired: refreshed
            assert conn.sign_out() and not token_file.exists()
        finally:
            await servers.aclose()
        servers, conn = await start()  # signed out: asked again
        state = conn.state
        await servers.aclose()
        assert state == "ready" and len(opened) == 2 and auth_server.events.count("authorize") == 2
    finally:
        await server.stop()


async def test_ten_thousand_tools_are_found_with_search_tools(make_ai: Any) -> None:
    """A server with 10,000 tools: the model is offered search-tools (and the few tools its search
    found), never every schema; the instructions do not list the names; a found tool is called."""
    from instance_ai_tui.assistant.mcp.search import SEARCH_TOOL
    from instance_ai_tui.assistant.service import AssistantOptions
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    from .conftest import collect, of_type

    async with MockOpenAIServer(answers_in_order(
        MockResponse.calls((SEARCH_TOOL, {"query": "open a github issue"}),
                           ("delegate", {"role": "clerk", "instructions": "adjust it", "tools": ["mcp__many__widget_1"]})),
        MockResponse.call("mcp__many__create_github_issue", {"title": "found it"}),
        MockResponse(text="Opened."),
    )) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "k"},
            "mcp": {"servers": {"many": stdio_config("tools", env={"MCP_TEST_FILLERS": "10000"})}}})
        ai = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
        mcp = ai.mcp
        assert mcp is not None
        await until(lambda: mcp.connections["many"].state != "starting", timeout=120)
        assert len(mcp.connections["many"].tools) > 10_000
        await ai.send("s", "open an issue")
        events = await collect(ai, "s", timeout=120)
        compact_run = await ai.compact("s")  # /compact counts the request's tools: not 10,000 schemas
        compacted = [e for e in await collect(ai, "s", after=events[-1]["id"], timeout=120)
                     if e["type"] == "context-compacted"]
    requests = [r.body for r in model.requests if r.body.get("tools")]
    first = {t["function"]["name"] for t in requests[0]["tools"]}
    assert SEARCH_TOOL in first and len(first) < 30 and not any(n.startswith("mcp__many__widget_") for n in first)
    assert "widget_00001" not in requests[0]["messages"][0]["content"]
    second = {t["function"]["name"] for t in requests[1]["tools"]}
    assert "mcp__many__create_github_issue" in second and len(second) < 40
    found = of_type(events, "tool-result")[0]["payload"]["result"]
    assert found["tools"][0]["name"] == "mcp__many__create_github_issue"
    # a sub-agent asked with a wrong name is told what there is in a few words, not 10,000 names
    call = next(e["payload"]["toolCallId"] for e in of_type(events, "tool-call") if e["payload"]["toolName"] == "delegate")
    told = next(e["payload"]["error"] for e in of_type(events, "tool-error") if e["payload"]["toolCallId"] == call)
    assert "unknown tool(s) for a sub-agent: mcp__many__widget_1" in told
    assert f"MCP tools (find them with {SEARCH_TOOL})" in told and len(told) < 2_000
    assert of_type(events, "tool-result")[-1]["payload"]["result"] == "issue opened: found it"
    assert compact_run and len(compacted) == 1
    assert compacted[0]["payload"]["tokensBefore"] < compacted[0]["payload"]["contextWindow"]


async def test_a_100_mb_result_and_a_hanging_call_through_run(tmp_path: Path) -> None:
    """Issue 43.3 through ``run``: a 100 MB answer is cut at max_result_bytes while it is read (the
    rest is skipped as it arrives, the run goes on), and a call that never answers ends at its
    call_timeout with the words why, ``run`` saying meanwhile what it waits for."""
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    config = (f'[mcp.servers.s]\ncommand = "{sys.executable}"\nargs = ["{SCRIPT}", "tools"]\n'
              "call_timeout = 35\n")
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__s__big", {"size": 100_000_000}), MockResponse(text="Got a part of it."),
        MockResponse.call("mcp__s__hang", {}), MockResponse(text="It never answered."),
    )) as model:
        env = _cli_env(tmp_path, model, config)
        code, out, err = await _run(tmp_path, env, "get it all", "--model", "gpt-test", "--mcp-wait", "60",
                                    "--db", str(tmp_path / "run.sqlite3"))
        assert code == 0 and "Got a part of it." in out, err[-3000:]
        cut = [line for line in err.splitlines() if "mcp__s__big" in line and "✓" in line]
        assert cut, err[-3000:]
        told = model.requests[-1].body["messages"][-1]
        assert told["role"] == "tool" and "over its limit of 977 KB (max_result_bytes); the rest was not read" in (
            told["content"]) and len(told["content"]) < 60_000
        code, out, err = await _run(tmp_path, env, "call the hanging tool", "--model", "gpt-test", "--mcp-wait", "60",
                                    "--db", str(tmp_path / "run.sqlite3"))
    assert code == 0 and "It never answered." in out, err[-3000:]
    assert "instance-ai run: running mcp__s__hang 20 s" in err  # what it waits for, every 20 s (harden's clock)
    failed = [line for line in err.splitlines() if "mcp__s__hang" in line and "✗" in line]
    assert failed and "hang did not answer within 35 s (call_timeout); it was cancelled" in failed[0], err[-3000:]
    assert "no event of the run for" not in err


async def test_an_http_servers_json_answer_is_cut_while_it_is_read() -> None:
    from tests.support.asgi import serve_asgi
    from tests.support.mcp_servers import http_app

    async with serve_asgi(http_app("web", json_response=True), lifespan="on") as url:
        servers, status = await _started(McpServerSettings(url=f"{url}/mcp", max_result_bytes=100_000))
        try:
            assert status.state == "ready", status.error
            result = await servers.connections["web"].call("big", {"size": 5_000_000})
        finally:
            await servers.aclose()
    text = result.content[0].text
    assert text.startswith("xxxx") and len(text.encode()) <= 100_000
    assert "over its limit of 98 KB (max_result_bytes); the rest was not read" in text
