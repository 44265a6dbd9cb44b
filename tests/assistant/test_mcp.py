"""MCP servers as tools (issue 28), end to end: real MCP servers written with the SDK
(``tests/support/mcp_servers.py``, stdio and Streamable HTTP), a scripted OpenAI-wire model
(``tests/support/openai_server.py``), the real ``InstanceAI`` on a SQLite file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.config import Settings
from tests.support.asgi import serve_asgi
from tests.support.mcp_servers import http_app, stdio_config
from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order
from tests.support.waiting import until

from .conftest import answer, collect, finish_status, of_type, types

Script = list[MockResponse]


scripted = answers_in_order  # the agent's requests answered in order


def settings_for(server: MockOpenAIServer, servers: dict[str, dict[str, Any]]) -> Settings:
    return Settings.model_validate({
        "model": {"name": "gpt-test", "base_url": server.base_url, "api_key": "sk-test"},
        "mcp": {"servers": servers},
    })


async def make(make_ai: Any, server: MockOpenAIServer, servers: dict[str, dict[str, Any]],
               **options: Any) -> InstanceAI:
    ai: InstanceAI = await make_ai("gpt-test", settings=settings_for(server, servers),
                                   options=AssistantOptions(generate_titles=False, **options))
    # a message sent while a server starts goes without its tools (they join a later step): these
    # scripts call them at once, as a person does who sends once /mcp shows the server ready
    mcp = ai.mcp
    assert mcp is not None
    await until(lambda: not mcp.starting(), timeout=60, what="the MCP servers started (or failed)")
    return ai


def export_text(events: list[dict[str, Any]]) -> str:
    """The thread's Markdown export, folded from ``events`` the way every reader folds them."""
    from instance_ai_tui.protocol.conversation import Conversation
    from instance_ai_tui.protocol.events import parse_event
    from instance_ai_tui.protocol.ingest import StreamItem
    from instance_ai_tui.protocol.transcript import to_markdown

    conversation = Conversation("t")
    conversation.fold([StreamItem(data["id"], parse_event({k: v for k, v in data.items() if k != "id"}))
                       for data in events])
    return to_markdown(conversation)


def agent_requests(server: MockOpenAIServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.body.get("tools")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def test_read_only_tool_runs_and_its_result_reaches_the_model_and_the_card(make_ai: Any, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__facts__lookup", {"key": "answer"}),
        MockResponse(text="The answer is 42."),
    )) as model:
        ai = await make(make_ai, model, {"facts": stdio_config("tools", env={"MCP_TEST_LOG": str(log)})})
        await ai.send("t", "look the answer up")
        events = await collect(ai, "t", timeout=30)
    assert "confirmation-request" not in types(events)  # readOnlyHint: it runs without asking
    result = of_type(events, "tool-result")[0]["payload"]
    assert result["result"] == "tools: the value of answer is 42"
    requests = agent_requests(model)
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["tools"]}
    lookup = offered["mcp__facts__lookup"]
    assert lookup["parameters"]["properties"]["key"]["type"] == "string"  # the server's JSON schema
    assert lookup["parameters"]["required"] == ["key"]
    assert lookup["description"].startswith("[MCP server facts] Look a key up")
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "the value of answer is 42" in tool_message["content"]
    assert finish_status(events[-1]) == {"status": "completed"}
    assert log.read_text().splitlines() == ["lookup answer"]


async def test_write_tool_asks_first_approve_deny_and_always_allow(make_ai: Any, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__notes__write_note", {"text": "one"}),  # approved
        MockResponse(text="Saved."),
        MockResponse.call("mcp__notes__write_note", {"text": "two"}),  # denied
        MockResponse(text="Not saved."),
        MockResponse.call("mcp__notes__write_note", {"text": "three"}),  # always allow
        MockResponse(text="Saved."),
        MockResponse.call("mcp__notes__write_note", {"text": "four"}),  # runs without asking now
        MockResponse(text="Saved again."),
    )) as model:
        ai = await make(make_ai, model, {"notes": stdio_config("tools", env={"MCP_TEST_LOG": str(log)})})

        async def turn(text: str, body: dict[str, Any] | None) -> list[dict[str, Any]]:
            start = (await ai.store.last_event_id("n")) if await _has_thread(ai, "n") else 0
            await ai.send("n", text)
            if body is None:
                return await collect(ai, "n", after=start, timeout=30)
            first = await collect(ai, "n", after=start, until=("confirmation-request",), timeout=30)
            request = of_type(first, "confirmation-request")[0]["payload"]
            assert request["toolName"] == "mcp__notes__write_note" and request["severity"] == "warning"
            assert "write_note" in request["message"] and "notes" in request["message"]
            await answer(ai, request["requestId"], body)
            return first + await collect(ai, "n", after=first[-1]["id"], timeout=30)

        approved = await turn("save one", {"kind": "approval", "approved": True})
        assert of_type(approved, "tool-result")[0]["payload"]["result"] == "note saved: one"
        denied = await turn("save two", {"kind": "approval", "approved": False})
        outcome = next(e for e in denied if e["type"] in ("tool-result", "tool-error"))["payload"]
        # a denial: n8n's shape (a result with denied: true) or an error saying so
        assert (outcome.get("result") or {}).get("denied") is True or "denied" in outcome.get("error", "")
        always = await turn("save three", {"kind": "approval", "approved": True, "scope": "session"})
        assert of_type(always, "tool-result")[0]["payload"]["result"] == "note saved: three"
        again = await turn("save four", None)
        assert "confirmation-request" not in types(again)
        assert any(e["payload"].get("autoApproved") for e in of_type(again, "tool-call"))
        assert (await ai.permissions("n")).always_allow == ["mcp__notes__write_note"]
    assert log.read_text().splitlines() == ["write_note one", "write_note three", "write_note four"]


async def _has_thread(ai: InstanceAI, thread_id: str) -> bool:
    return any(t.id == thread_id for t in await ai.list_threads())


async def test_slow_tool_shows_progress_and_cancel_stops_the_call(make_ai: Any, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__counter__slow", {"steps": 40}),
        MockResponse.call("mcp__counter__lookup", {"key": "after"}),
        MockResponse(text="Still works."),
    )) as model:
        ai = await make(make_ai, model, {"counter": stdio_config("tools", env={"MCP_TEST_LOG": str(log)})})
        await ai.send("s", "count slowly")
        seen: list[str] = []

        async def watch() -> None:
            async for event in ai.events("s"):
                data = event.data()
                if data["type"] == "status" and "%" in data["payload"]["message"]:
                    seen.append(data["payload"]["message"])
                    if len(seen) >= 2:
                        return

        await asyncio.wait_for(watch(), 30)
        assert seen[0].startswith("Running mcp__counter__slow… ") and "of 40" in seen[0]
        assert await ai.cancel("s")  # what Esc does
        events = await collect(ai, "s", timeout=15)
        progress = [e["payload"] for e in of_type(events, "tool-call") if "progress" in e["payload"]]
        assert progress and progress[0]["args"] == {"steps": 40} and progress[0]["progress"].endswith("of 40")
        assert finish_status(events[-1])["status"] == "cancelled"
        # the call reads cancelled, live and exported, never "Skipped" (nor a failure)
        assert not [e for e in events if e["type"] == "tool-error"]
        exported = export_text(events)
        assert "**🔧 mcp__counter__slow** (not run (cancelled))" in exported and "Skipped" not in exported
        steps = log.read_text().count("slow step")
        await asyncio.sleep(1.0)  # the scenario: a window in which the stopped tool must not go on
        assert log.read_text().count("slow step") <= steps + 1  # the server was told to stop
        assert "slow done" not in log.read_text()
        # the server is still there for the next call
        start = events[-1]["id"]
        await ai.send("s", "and now look something up")
        after = await collect(ai, "s", after=start, timeout=30)
    assert of_type(after, "tool-result")[0]["payload"]["result"] == "tools: the value of after is 42"
    assert ai.mcp is not None and ai.mcp.connections["counter"].starts == 1


async def test_server_crashing_mid_call_is_a_tool_error_and_restarts_at_the_next_use(make_ai: Any) -> None:
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__shaky__crash", {"reason": "disk on fire"}),
        MockResponse.call("mcp__shaky__lookup", {"key": "again"}),
        MockResponse(text="Recovered."),
    )) as model:
        ai = await make(make_ai, model, {"shaky": stdio_config("tools")})
        await ai.send("c", "crash it")
        events = await collect(ai, "c", timeout=40)
    error = of_type(events, "tool-error")[0]["payload"]["error"]
    assert "MCP server 'shaky'" in error and "crashing on purpose: disk on fire" in error  # its stderr tail
    assert of_type(events, "tool-result")[0]["payload"]["result"] == "tools: the value of again is 42"
    assert finish_status(events[-1]) == {"status": "completed"}
    assert ai.mcp is not None
    conn = ai.mcp.connections["shaky"]
    assert conn.starts == 2 and conn.state == "ready"
    # the model read the failure as the tool's result
    messages = agent_requests(model)[1]["messages"]
    assert messages[-1]["role"] == "tool" and "disk on fire" in messages[-1]["content"]


async def test_server_that_fails_to_start_is_shown_with_its_stderr_and_the_run_goes_on(make_ai: Any) -> None:
    async with MockOpenAIServer(scripted(MockResponse(text="Hello."))) as model:
        ai = await make(make_ai, model, {"broken": stdio_config("fail"), "fine": stdio_config("tools")})
        await ai.send("f", "hi")
        events = await collect(ai, "f", timeout=30)
        assert finish_status(events[-1]) == {"status": "completed"}
        assert ai.mcp is not None
        status = {s.name: s for s in ai.mcp.status().servers}
    assert status["broken"].state == "failed" and status["broken"].tools == []
    assert "did not start" in (status["broken"].error or "")
    assert "MCP_TEST_TOKEN is not set" in status["broken"].stderr
    assert status["fine"].state == "ready" and "mcp__fine__lookup" in {t.name for t in status["fine"].tools}
    offered = {t["function"]["name"] for t in agent_requests(model)[0]["tools"]}
    assert "mcp__fine__lookup" in offered and not any(n.startswith("mcp__broken__") for n in offered)


async def test_two_servers_with_the_same_tool_name(make_ai: Any) -> None:
    async with MockOpenAIServer(scripted(
        MockResponse.calls(("mcp__left__lookup", {"key": "k"}), ("mcp__right__lookup", {"key": "k"})),
        MockResponse(text="Both answered."),
    )) as model:
        ai = await make(make_ai, model, {"left": stdio_config("tools", env={"MCP_TEST_LABEL": "LEFT"}),
                                         "right": stdio_config("tools", env={"MCP_TEST_LABEL": "RIGHT"})})
        await ai.send("d", "ask both")
        events = await collect(ai, "d", timeout=30)
    results = sorted(e["payload"]["result"] for e in of_type(events, "tool-result"))
    assert results == ["LEFT: the value of k is 42", "RIGHT: the value of k is 42"]
    offered = [t["function"]["name"] for t in agent_requests(model)[0]["tools"]]
    assert offered.count("mcp__left__lookup") == 1 and offered.count("mcp__right__lookup") == 1


async def test_streamable_http_server_with_headers(make_ai: Any) -> None:
    seen: list[str] = []
    app = http_app("web")

    async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"authorization", b"").decode())
        await app(scope, receive, send)

    async with serve_asgi(recording, lifespan="on") as url, MockOpenAIServer(scripted(
        MockResponse.call("mcp__web__media", {}),
        MockResponse(text="A chart."),
    )) as model:
        ai = await make(make_ai, model, {"web": {"url": f"{url}/mcp", "headers": {"Authorization": "Bearer s3cret"}}})
        await ai.send("h", "show me the chart")
        events = await collect(ai, "h", timeout=30)
        await ai.shutdown()
    shown = of_type(events, "tool-result")[0]["payload"]["result"]
    assert "a chart" in shown and "[image image/png, 2.0 KB (image " in shown
    assert "[resource: report](file:///tmp/report.csv) (text/csv)" in shown
    assert "iVBOR" not in str(events)  # the image's bytes are never stored: held for the model only
    *_, told, images = agent_requests(model)[1]["messages"]
    assert told["role"] == "tool" and "[image image/png, 2.0 KB (image " in told["content"]
    assert "(file:///tmp/report.csv)" in told["content"]
    assert images["role"] == "user" and images["content"][-1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert seen and set(seen) == {"Bearer s3cret"}
    assert "s3cret" not in repr(ai.settings) and "s3cret" not in str(ai.mcp.status().model_dump())  # type: ignore[union-attr]


async def test_environment_holds_only_what_the_config_names_and_results_are_size_limited(
        make_ai: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("PASSED_ON", "yes")
    async with MockOpenAIServer(scripted(
        MockResponse.calls(("mcp__env__env_keys", {}), ("mcp__env__big", {"size": 3_000_000})),
        MockResponse(text="Done."),
    )) as model:
        ai = await make(make_ai, model, {"env": stdio_config("tools", env={"GIVEN": "1"}, pass_env=["PASSED_ON"])})
        await ai.send("e", "env")
        events = await collect(ai, "e", timeout=30)
    results = [e["payload"]["result"] for e in of_type(events, "tool-result")]
    keys = set(results[0].split(","))
    assert keys - {"LC_CTYPE"} == {"GIVEN", "PASSED_ON"}  # (python sets LC_CTYPE itself)
    big = next(r for r in results if r.startswith("xxx"))
    assert len(big.encode()) <= 1_000_000 and "over its limit of 977 KB (max_result_bytes); the rest was not read" in big


async def test_no_server_process_is_left_after_shutdown(make_ai: Any, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    async with MockOpenAIServer(scripted(MockResponse.call("mcp__one__whoami", {}), MockResponse(text="ok"))) as model:
        ai = await make(make_ai, model, {
            "one": stdio_config("tools", env={"MCP_TEST_PID_FILE": str(pid_file)}),
            "two": stdio_config("tools", env={"MCP_TEST_PID_FILE": str(pid_file)}),
            "off": stdio_config("tools", env={"MCP_TEST_PID_FILE": str(pid_file)}, enabled=False),
        })
        await ai.send("p", "who are you")
        events = await collect(ai, "p", timeout=30)
        started = pids(pid_file)
        assert len(started) == 2 and all(alive(pid) for pid in started)  # "off" is not started
        assert of_type(events, "tool-result")[0]["payload"]["result"]["pid"] in started
        await ai.shutdown()
    assert [pid for pid in started if alive(pid)] == []


async def test_start_up_is_not_slower(make_ai: Any, tmp_path: Path) -> None:
    """``start()`` returns before a slow server has even answered: the servers start in the background."""
    async with MockOpenAIServer(scripted(MockResponse(text="hi"))) as model:
        ai = await make_ai("gpt-test", settings=settings_for(model, {"one": stdio_config("tools")}),
                           options=AssistantOptions(generate_titles=False))
        assert ai.mcp is not None
        assert ai.mcp.connections["one"].state == "starting"  # start() did not wait for it


async def test_a_sub_agent_given_an_mcp_tool_uses_it(make_ai: Any) -> None:
    def respond(body: dict[str, Any]) -> MockResponse:
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        last = body["messages"][-1]["role"]
        if not tools:
            return MockResponse(text='{"title": "MCP"}')
        if "delegate" in tools:  # the orchestrator
            if last == "user":
                return MockResponse.call("delegate", {"role": "researcher", "instructions": "look k up",
                                                      "tools": ["mcp__facts__lookup"]})
            return MockResponse(text="The researcher found it.")
        assert tools == {"mcp__facts__lookup"}  # the sub-agent: only the tool it was given
        if last == "user":
            return MockResponse.call("mcp__facts__lookup", {"key": "k"})
        return MockResponse(text="k is 42.")

    async with MockOpenAIServer(respond) as model:
        ai = await make(make_ai, model, {"facts": stdio_config("tools")})
        await ai.send("sub", "research k")
        events = await collect(ai, "sub", timeout=30)
    assert finish_status(events[-1]) == {"status": "completed"}
    spawned = of_type(events, "agent-spawned")[0]
    assert spawned["payload"]["tools"] == ["mcp__facts__lookup"]
    inner = [e for e in of_type(events, "tool-result") if e["agentId"] == spawned["agentId"]]
    assert [e["payload"]["result"] for e in inner] == ["tools: the value of k is 42"]
    # the orchestrator's instructions name it among the tools a sub-agent may be given
    system = agent_requests(model)[0]["messages"][0]["content"]
    assert "mcp__facts__lookup" in system


async def test_a_server_that_dies_idle_is_failed_and_its_tools_fail_with_the_reason(make_ai: Any, tmp_path: Path) -> None:
    refuse = tmp_path / "refuse"
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__box__whoami", {}),
        MockResponse(text="Found it."),
        MockResponse.call("mcp__box__lookup", {"key": "k"}),
        MockResponse(text="The box is gone; I could not look k up."),
    )) as model:
        ai = await make(make_ai, model, {"box": stdio_config("tools", env={"MCP_TEST_REFUSE_IF": str(refuse)})})
        await ai.send("x", "who are you")
        first = await collect(ai, "x", timeout=30)
        pid = of_type(first, "tool-result")[0]["payload"]["result"]["pid"]
        assert ai.mcp is not None
        conn = ai.mcp.connections["box"]
        refuse.write_text("")  # it cannot come back
        os.kill(pid, 9)
        await until(lambda: conn.state == "failed", what="the killed server marked failed")
        status = ai.mcp.status().servers[0]
        assert status.state == "failed" and status.error == "the server exited"
        assert {"mcp__box__lookup", "mcp__box__write_note"} <= {t.name for t in status.tools}  # still offered
        await ai.send("x", "look k up")
        second = await collect(ai, "x", after=first[-1]["id"], timeout=30)
    error = of_type(second, "tool-error")[0]["payload"]["error"]
    assert "MCP server 'box' is not available: it did not start" in error
    assert f"refusing to start: {refuse} exists" in error  # the new start's stderr
    assert finish_status(second[-1]) == {"status": "completed"} and conn.starts == 2


async def test_tools_a_server_adds_while_running_are_offered_at_the_next_step(make_ai: Any) -> None:
    async with MockOpenAIServer(scripted(
        MockResponse.call("mcp__g__grow", {"name": "fresh_tool"}),
        MockResponse.call("mcp__g__fresh_tool", {}),
        MockResponse(text="The new tool works."),
    )) as model:
        ai = await make(make_ai, model, {"g": stdio_config("tools")})
        await ai.send("g", "grow a tool and use it")
        events = await collect(ai, "g", timeout=30)
    assert [e["payload"]["result"] for e in of_type(events, "tool-result")] == ["added fresh_tool", "fresh_tool works"]
    offered = [{t["function"]["name"] for t in body["tools"]} for body in agent_requests(model)]
    assert "mcp__g__fresh_tool" not in offered[0] and "mcp__g__fresh_tool" in offered[1]
