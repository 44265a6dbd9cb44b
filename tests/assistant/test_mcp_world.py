"""MCP servers nobody here wrote, driven for real (issue 40's acceptance): the protocol's reference
``@modelcontextprotocol/server-everything`` from npm over stdio, Streamable HTTP and its legacy SSE
transport, and ``mcp-server-time`` from PyPI run by its own venv's python (a symlink) by path; the
real ``InstanceAI`` on a SQLite file, the scripted OpenAI-wire model."""

from __future__ import annotations

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
