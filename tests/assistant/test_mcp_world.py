"""MCP servers nobody here wrote, driven for real (issue 40's acceptance): the protocol's reference
``@modelcontextprotocol/server-everything`` from npm over stdio, Streamable HTTP and its legacy SSE
transport, and ``mcp-server-time`` from PyPI run by its own venv's python (a symlink) by path; the
real ``InstanceAI`` on a SQLite file, the scripted OpenAI-wire model."""

from __future__ import annotations

import asyncio
from typing import Any

from instance_ai_tui.assistant.mcp.manager import McpServers
from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.config import McpServerSettings, Settings
from tests.support.mcp_peers import everything_http, everything_stdio, time_stdio
from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order
from tests.support.waiting import until

from .conftest import collect, finish_status, of_type


async def agent(make_ai: Any, model: MockOpenAIServer, servers: dict[str, Any]) -> InstanceAI:
    settings = Settings.model_validate({"model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "k"},
                                        "mcp": {"servers": servers}})
    ai: InstanceAI = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
    mcp = ai.services.mcp
    assert mcp is not None
    await until(lambda: not mcp.starting(), timeout=90, what="the MCP servers started")
    for conn in mcp.connections.values():
        assert conn.state == "ready", conn.failure()
    return ai


async def test_reference_server_over_stdio_echo_and_image_through_the_agent(make_ai: Any) -> None:
    async with MockOpenAIServer(answers_in_order(
        MockResponse.calls(("mcp__ev__echo", {"message": "hello from the suite"}), ("mcp__ev__get-tiny-image", {})),
        MockResponse(text="Done."),
    )) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio()})
        await ai.send("t", "echo and show the image")
        events = await collect(ai, "t", timeout=60)
    assert finish_status(events[-1]) == {"status": "completed"}
    results = {e["payload"]["toolCallId"]: e["payload"]["result"] for e in of_type(events, "tool-result")}
    texts = [str(r) for r in results.values()]
    assert any("Echo: hello from the suite" in t for t in texts)
    assert any("[image image/png" in t for t in texts)  # a placeholder: the bytes are not stored


async def test_reference_server_over_streamable_http_and_legacy_sse() -> None:
    for transport, kind in (("streamableHttp", "http"), ("sse", "sse")):
        async with everything_http(transport) as url:
            servers = McpServers({"ev": McpServerSettings(url=url)})
            servers.start()
            await servers.wait_starting(90)
            try:
                conn = servers.connections["ev"]
                assert conn.state == "ready", conn.failure()
                assert conn.transport == kind
                result = await conn.call("echo", {"message": f"over {transport}"})
                assert result.content[0].text == f"Echo: over {transport}"
            finally:
                await servers.aclose()


async def test_mcp_server_time_from_pypi_by_its_venvs_python() -> None:
    servers = McpServers({"time": McpServerSettings(**time_stdio())})
    servers.start()
    await servers.wait_starting(90)
    try:
        conn = servers.connections["time"]
        assert conn.state == "ready", conn.failure()
        assert {t.name for t in conn.tools} == {"get_current_time", "convert_time"}
        result = await conn.call("get_current_time", {"timezone": "Asia/Tokyo"})
        assert "Asia/Tokyo" in result.content[0].text
    finally:
        await servers.aclose()


STATIC = "demo://resource/static/document/features.md"


async def test_resources_read_by_the_agent_and_attached_with_at(make_ai: Any, tmp_path: Any) -> None:
    """The agent lists and reads the reference server's resources (a template filled in, a blob as a
    placeholder); ``@ev:URI`` in a message sends the resource's text with it and lists it under it."""
    from instance_ai_tui.protocol.conversation import Conversation
    from instance_ai_tui.protocol.events import parse_event

    async with MockOpenAIServer(answers_in_order(
        MockResponse.calls(("mcp__ev__list_resources", {}),
                           ("mcp__ev__read_resource", {"uri": "demo://resource/dynamic/text/7"}),
                           ("mcp__ev__read_resource", {"uri": "demo://resource/dynamic/blob/7"})),
        MockResponse(text="Read them."),
        MockResponse(text="Thanks for the file."),
    )) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio()})
        await ai.send("r", "what resources are there?")
        events = await collect(ai, "r", timeout=60)
        await ai.send("r", f"summarise @ev:{STATIC} please")
        second = await collect(ai, "r", after=events[-1]["id"], timeout=60)
    results = [e["payload"]["result"] for e in of_type(events, "tool-result")]
    listed = results[0]
    assert STATIC in {r["uri"] for r in listed["resources"]}
    assert "demo://resource/dynamic/text/{resourceId}" in {t["uriTemplate"] for t in listed["templates"]}
    assert "7" in results[1] and "[binary resource" not in results[1]
    assert results[2].startswith("[binary resource demo://resource/dynamic/blob/7") and "not shown" in results[2]
    told = model.requests[-1].body["messages"]
    user = next(m for m in reversed(told) if m["role"] == "user")["content"]
    user_text = user if isinstance(user, str) else " ".join(p.get("text", "") for p in user)
    assert user_text.startswith(f"summarise @ev:{STATIC} please")
    assert f'<attachment source="@ev:{STATIC}"' in user_text and "</attachment>" in user_text
    start = of_type(second, "run-start")[0]["payload"]
    assert start["userMessage"] == f"summarise @ev:{STATIC} please"  # as typed
    assert start["attachments"][0]["uri"] == STATIC and start["attachments"][0]["size"] > 0
    conversation = Conversation("r")
    for data in second:
        conversation.apply(data["id"], parse_event({k: v for k, v in data.items() if k != "id"}))
    bubble = next(m for m in conversation.messages if m.role == "user").content
    assert f"📎 @ev:{STATIC} (text/markdown, " in bubble


async def test_server_instructions_roots_and_log_notifications(make_ai: Any, tmp_path: Any) -> None:
    """The reference server's instructions reach the agent marked as its own; its roots are the
    workspace folder, and a change is told; its log lines are kept, at the level asked."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__get-roots-list", {}),
        MockResponse(text="Done."),
    )) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "k"},
            "workspace_root": str(workspace), "mcp": {"servers": {"ev": everything_stdio()}}})
        ai = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
        mcp = ai.services.mcp
        assert mcp is not None
        await until(lambda: not mcp.starting(), timeout=90)
        conn = mcp.connections["ev"]
        await ai.send("i", "which roots do you see?")
        events = await collect(ai, "i", timeout=60)
        system = model.requests[-1].body["messages"][0]["content"]
        roots = str(of_type(events, "tool-result")[0]["payload"]["result"])
        other = tmp_path / "elsewhere"
        other.mkdir()
        await mcp.set_roots([other])
        for _ in range(600):  # the server asks roots/list again on its own after the notification
            result = await conn.call("get-roots-list", {})
            if other.resolve().as_uri() in str(result.content):
                break
            await asyncio.sleep(0.05)
        await conn.set_log_level("debug")
        await conn.call("toggle-simulated-logging", {})
        await until(lambda: len(conn.log) >= 2, timeout=30, what="log notifications")
        status = mcp.status().servers[0]
    assert '<mcp-server-instructions server="ev">' in system and "Everything Server" in system
    assert workspace.resolve().as_uri() in roots
    assert other.resolve().as_uri() in str(result.content) and workspace.resolve().as_uri() not in str(result.content)
    assert status.log and any(line.startswith(("debug", "info", "notice", "warning", "error")) for line in status.log)
