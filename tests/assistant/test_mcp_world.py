"""MCP servers nobody here wrote, driven for real (issue 40's acceptance): the protocol's reference
``@modelcontextprotocol/server-everything`` from npm over stdio, Streamable HTTP and its legacy SSE
transport, and ``mcp-server-time`` from PyPI run by its own venv's python (a symlink) by path; the
real ``InstanceAI`` on a SQLite file, the scripted OpenAI-wire model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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
    mcp = ai.mcp
    assert mcp is not None
    await until(lambda: not mcp.starting(), timeout=90, what="the MCP servers started")
    for conn in mcp.connections.values():
        assert conn.state == "ready", conn.failure()
    return ai


def _image_parts(body: dict[str, Any]) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]


async def test_reference_server_over_stdio_echo_and_image_through_the_agent(make_ai: Any) -> None:
    """The reference server's echo and its image: the image reaches the model as an image part of a
    user message after the tool's result; a model that refuses it (HTTP 400) gets the same request
    without it at once, and the placeholder only from then on."""
    steps = [MockResponse.calls(("mcp__ev__echo", {"message": "hello from the suite"}), ("mcp__ev__get-tiny-image", {})),
             MockResponse(status=400, error="image input is not supported by this model"),
             MockResponse(text="Done."),
             MockResponse.call("mcp__ev__get-tiny-image", {}), MockResponse(text="Still no images.")]
    script = answers_in_order(*steps)

    def respond(body: dict[str, Any]) -> MockResponse:
        if steps and steps[0].status == 400 and not _image_parts(body):
            raise AssertionError("the image was not sent")
        return script(body)

    async with MockOpenAIServer(respond) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio()})
        await ai.send("t", "echo and show the image")
        events = await collect(ai, "t", timeout=60)
        await ai.send("t", "once more")
        more = await collect(ai, "t", after=events[-1]["id"], timeout=60)
    assert finish_status(events[-1]) == {"status": "completed"}
    assert finish_status(more[-1]) == {"status": "completed"}
    results = {e["payload"]["toolCallId"]: e["payload"]["result"] for e in of_type(events, "tool-result")}
    texts = [str(r) for r in results.values()]
    assert any("Echo: hello from the suite" in t for t in texts)
    assert any("[image image/png" in t for t in texts)  # a placeholder: the bytes are not stored
    assert "base64" not in str(events)
    bodies = [r.body for r in model.requests if "titles" not in str(r.body["messages"][0])]
    sent = [_image_parts(body) for body in bodies]
    assert len(sent) == 5
    assert len(sent[1]) == 1 and sent[1][0].startswith("data:image/png;base64,")  # refused with HTTP 400
    *_, echo, image, told = bodies[1]["messages"]  # a user message right after the tool results
    assert (echo["role"], image["role"], told["role"]) == ("tool", "tool", "user")
    assert sent[2:] == [[], [], []]  # the same request without it, then never again


async def test_reference_servers_long_operation_shows_progress_and_esc_stops_it(make_ai: Any) -> None:
    """The reference server's ``trigger-long-running-operation`` reports progress while it runs (the
    status says it, the call's card keeps it); Esc (``cancel``) ends the run at once, the call reads
    cancelled, and the same server process answers the next call."""
    from .test_mcp import export_text

    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__trigger-long-running-operation", {"duration": 120, "steps": 240}),
        MockResponse.call("mcp__ev__echo", {"message": "still here"}), MockResponse(text="Done."),
    )) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio()})
        await ai.send("p", "run the long operation")
        seen: list[str] = []

        async def watch() -> None:
            async for event in ai.events("p"):
                data = event.data()
                if data["type"] == "status" and "%" in data["payload"]["message"]:
                    seen.append(data["payload"]["message"])
                    return

        await asyncio.wait_for(watch(), 60)
        assert await ai.cancel("p")  # what Esc does
        events = await collect(ai, "p", timeout=30)
        await ai.send("p", "and echo")
        after = await collect(ai, "p", after=events[-1]["id"], timeout=60)
    assert seen[0].startswith("Running mcp__ev__trigger-long-running-operation… ") and seen[0].endswith("%")
    progress = [e["payload"]["progress"] for e in of_type(events, "tool-call") if "progress" in e["payload"]]
    assert progress and progress[-1].endswith("%")
    assert finish_status(events[-1])["status"] == "cancelled"
    assert "(not run (cancelled))" in export_text(events) and "Skipped" not in export_text(events)
    assert of_type(after, "tool-result")[0]["payload"]["result"] == "Echo: still here"
    assert ai.mcp is not None and ai.mcp.connections["ev"].starts == 1


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
        history = await ai.messages("r")  # a thread opened again lists its attachments too
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
    from instance_ai_tui.protocol.ingest import StreamItem

    conversation = Conversation("r")
    conversation.fold([StreamItem(data["id"], parse_event({k: v for k, v in data.items() if k != "id"}))
                       for data in second])
    bubble = next(m for m in conversation.messages if m.role == "user").content
    assert f"📎 @ev:{STATIC} (text/markdown, " in bubble
    restored = [m.content for m in history.messages if m.role == "user"]
    assert restored[0] == "what resources are there?" and restored[1] == bubble


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
            "workspace_root": str(workspace), "mcp": {"servers": {"ev": everything_stdio(),
                                                                 "own": everything_stdio(roots=False)}}})
        ai = await make_ai("gpt-test", settings=settings, options=AssistantOptions(generate_titles=False))
        mcp = ai.mcp
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
        status = next(s for s in mcp.status().servers if s.name == "ev")
    assert '<mcp-server-instructions server="ev">' in system and "Everything Server" in system
    own = {t.name for t in mcp.connections["own"].tools}  # roots = false: none offered, it keeps its own
    assert "echo" in own and "get-roots-list" not in own
    assert workspace.resolve().as_uri() in roots
    assert other.resolve().as_uri() in str(result.content) and workspace.resolve().as_uri() not in str(result.content)
    assert status.log and any(line.startswith(("debug", "info", "notice", "warning", "error")) for line in status.log)


async def _form(ai: InstanceAI, thread: str, after: int = 0) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    first = await collect(ai, thread, after=after, until=("confirmation-request",), timeout=60)
    return first, of_type(first, "confirmation-request")[-1]["payload"]


async def test_elicitation_answered_and_declined_through_the_card(make_ai: Any) -> None:
    """The reference server's ``trigger-elicitation-request`` asks its 13-field form: a question card
    under the call (each field a question, choices as options, defaults said); answered, the
    server gets the values; declined (x), it hears a decline; the run goes on both times."""
    from .conftest import answer

    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__trigger-elicitation-request", {}), MockResponse(text="Thanks."),
        MockResponse.call("mcp__ev__trigger-elicitation-request", {}), MockResponse(text="Fine."),
    )) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio(approval="never")})
        await ai.send("e", "fill in the form")
        first, form = await _form(ai, "e")
        assert form["inputType"] == "questions" and form["mcpElicitation"] == {"server": "ev"}
        assert form["toolCallId"] == of_type(first, "tool-call")[0]["payload"]["toolCallId"]
        questions = {q["id"]: q for q in form["questions"]}
        assert questions["check"]["options"] == ["yes", "no"]
        assert questions["titledSingleSelectEnum"]["options"] == ["Superman", "Green Lantern", "Wonder Woman"]
        assert questions["untitledMultipleSelectEnum"]["type"] == "multi"
        assert "required" in questions["name"]["question"] and "default: 42" in questions["integer"]["question"]
        await answer(ai, form["requestId"], {"kind": "questions", "answers": [
            {"questionId": "name", "customText": "Ada Lovelace"},
            {"questionId": "check", "selectedOptions": ["yes"]},
            {"questionId": "integer", "customText": "7"},
            {"questionId": "titledSingleSelectEnum", "selectedOptions": ["Wonder Woman"]},
        ] + [{"questionId": q, "skipped": True} for q in questions
             if q not in ("name", "check", "integer", "titledSingleSelectEnum")]})
        rest = await collect(ai, "e", after=first[-1]["id"], timeout=60)
        accepted = str(of_type(rest, "tool-result")[0]["payload"]["result"])
        await ai.send("e", "again")
        second, form2 = await _form(ai, "e", after=rest[-1]["id"])
        await answer(ai, form2["requestId"], {"kind": "approval", "approved": False})
        end = await collect(ai, "e", after=second[-1]["id"], timeout=60)
        declined = str(of_type(end, "tool-result")[0]["payload"]["result"])
    assert "User provided the requested information" in accepted and "Name: Ada Lovelace" in accepted
    assert '"integer": 7' in accepted and '"titledSingleSelectEnum": "hero-3"' in accepted
    assert '"check": true' in accepted and '"number": 3.14' in accepted  # a skipped field sends its default
    assert "User declined" in declined
    assert finish_status(end[-1]) == {"status": "completed"}


async def test_headless_run_declines_a_form_and_says_so(tmp_path: Any) -> None:
    import os
    import sys

    from tests.assistant.test_mcp_modes import cli_env, write_config

    ev = everything_stdio()
    write_config(tmp_path, f'[mcp.servers.ev]\ncommand = "{ev["command"]}"\nargs = {json_list(ev["args"])}\n'
                           'approval = "never"\n')
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__trigger-elicitation-request", {}), MockResponse(text="Understood."),
    )) as model:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "fill in the form", "--model", "gpt-test",
            "--db", str(tmp_path / "run.sqlite3"), "--mcp-wait", "90", "--approve", "all",
            env={**cli_env(tmp_path, model), "PATH": os.environ["PATH"]}, cwd=str(tmp_path),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await asyncio.wait_for(proc.communicate(), 120)
    notes = err.decode()
    assert proc.returncode == 0, notes[-3000:]
    assert "declined: instance-ai run cannot fill in an MCP server's form" in notes
    assert "✓ mcp__ev__trigger-elicitation-request → " in notes and "User declined" in notes  # it ran: the server heard no


def json_list(items: list[str]) -> str:
    import json

    return json.dumps(items)


async def test_prompts_as_message_text_embedded_and_through_serve(tmp_path: Any) -> None:
    """The reference server's prompts through the client API: listed with their arguments, got as
    the text of a message (with arguments; a missing required one said), embedded and by URL
    through ``instance-ai serve``; the log level set the same ways."""
    import os

    from instance_ai_tui.client.base import ClientError
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.client.remote import RemoteClient
    from tests.assistant.test_mcp_modes import cli_env
    from tests.server.live import ServeProcess

    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": str(tmp_path / "e.sqlite3"),
                                        "mcp": {"servers": {"ev": everything_stdio()}}})
    async with EmbeddedClient(settings) as client:
        status = await _ready(client)
        prompts = {p.name: p for p in status.servers[0].prompts}
        assert [a.name for a in prompts["args-prompt"].arguments] == ["city", "state"]
        assert prompts["args-prompt"].arguments[0].required
        simple = await client.mcp_prompt("ev", "simple-prompt", {})
        assert simple.text == "This is a simple prompt without arguments."
        filled = await client.mcp_prompt("ev", "args-prompt", {"city": "Lisbon", "state": "Lisboa"})
        assert "Lisbon" in filled.text and "Lisboa" in filled.text
        try:
            await client.mcp_prompt("ev", "args-prompt", {})
        except ClientError as exc:
            assert "needs city" in str(exc)
        else:
            raise AssertionError("a missing required argument was not refused")
        after = await client.set_mcp_log_level("ev", "error")
        assert after.servers[0].log_level == "error"
        await _refused_alike(client)
    write = tmp_path / "config" / "instance-ai" / "config.toml"
    write.parent.mkdir(parents=True, exist_ok=True)
    ev = everything_stdio()
    write.write_text(f'[mcp.servers.ev]\ncommand = "{ev["command"]}"\nargs = {json_list(ev["args"])}\n')
    async with MockOpenAIServer(answers_in_order()) as model:
        server = ServeProcess(tmp_path / "served.sqlite3", env={**cli_env(tmp_path, model), "PATH": os.environ["PATH"]})
        await server.start()
        try:
            async with RemoteClient(server.url) as remote:
                await _ready(remote)
                text = await remote.mcp_prompt("ev", "args-prompt", {"city": "Porto"})
                assert "Porto" in text.text
                level = await remote.set_mcp_log_level("ev", "warning")
                assert level.servers[0].log_level == "warning"
                await _refused_alike(remote)
        finally:
            await asyncio.to_thread(server.terminate)


async def _refused_alike(client: Any) -> None:
    """What the MCP server is not in a state to do, and a server that is not there, are refused with
    the same class embedded and by URL (409, 404)."""
    from instance_ai_tui.client.base import NotFoundError, RunActiveError

    with pytest.raises(RunActiveError, match="has no sign-in to forget"):
        await client.sign_out_mcp_server("ev")
    with pytest.raises(RunActiveError, match="not a project server waiting"):
        await client.approve_mcp_server("ev")
    with pytest.raises(NotFoundError, match="no MCP server named 'nobody'"):
        await client.set_mcp_log_level("nobody", "error")


async def _ready(client: Any) -> Any:
    for _ in range(1800):
        status = await client.mcp_status()
        if all(s.state != "starting" for s in status.servers):
            assert all(s.state == "ready" for s in status.servers), status
            return status
        await asyncio.sleep(0.05)
    raise AssertionError("the MCP servers did not start")


async def test_a_projects_mcp_json_starts_its_servers_only_once_approved(tmp_path: Any, monkeypatch: Any) -> None:
    """``.mcp.json`` in the workspace (Claude Code's format, ``${VAR}`` expanded): its server is
    listed, not started, its tools not offered, until approved; the approval holds at the next
    start, and a changed command asks again; a broken entry is said, never fatal."""
    import json

    from instance_ai_tui.client.embedded import EmbeddedClient

    workspace = tmp_path / "project"
    workspace.mkdir()
    ev = everything_stdio()
    monkeypatch.setenv("EV_SCRIPT", ev["args"][0])

    def write(extra_arg: list[str]) -> None:
        (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {
            "everything": {"command": ev["command"], "args": ["${EV_SCRIPT}", *extra_arg, "stdio"]},
            "broken": {"type": "websocket", "url": "ws://nowhere"}}}), encoding="utf-8")

    write([])
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": str(tmp_path / "p.sqlite3"),
                                        "workspace_root": str(workspace)})
    async with EmbeddedClient(settings) as client:
        status = {s.name: s for s in (await client.mcp_status()).servers}
        assert set(status) == {"everything"} and status["everything"].state == "unapproved"
        assert status["everything"].origin == str(workspace / ".mcp.json")
        assert not [t for t in client.service.mcp.tools() if t.name.startswith("mcp__everything__")]
        await client.approve_mcp_server("everything")
        ready = await _ready(client)
        assert ready.servers[0].state == "ready" and "mcp__everything__echo" in {t.name for t in ready.servers[0].tools}
    async with EmbeddedClient(settings) as client:  # approved once: it starts by itself
        assert (await _ready(client)).servers[0].state == "ready"
    write(["--changed"])  # another command line: asked again
    async with EmbeddedClient(settings) as client:
        assert (await client.mcp_status()).servers[0].state == "unapproved"


async def test_a_resource_the_reference_server_adds_is_listed_after_its_list_changed(make_ai: Any) -> None:
    """``list_changed`` from a server nobody here wrote: server-everything's ``gzip-file-as-resource``
    registers a new resource while it runs (``demo://resource/session/NAME``; its SDK's
    ``registerResource`` sends ``notifications/resources/list_changed``). The client lists again: the
    catalogue (what ``@`` completes) has it, and the agent's ``list_resources`` at the next step too,
    with the same server process."""
    import base64

    name = "suite-notes.txt.gz"
    uri = f"demo://resource/session/{name}"
    data = "data:text/plain;base64," + base64.b64encode(b"notes written by the suite\n").decode()
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__gzip-file-as-resource", {"name": name, "data": data}),
        MockResponse.calls(("mcp__ev__list_resources", {"query": "session"}), ("mcp__ev__read_resource", {"uri": uri})),
        MockResponse(text="Done."),
    )) as model:
        ai = await agent(make_ai, model, {"ev": everything_stdio(approval="never")})
        assert ai.mcp is not None
        conn = ai.mcp.connections["ev"]
        assert uri not in {r.uri for r in conn.catalog.resources}
        await ai.send("l", "compress my notes and list what the server has now")
        events = await collect(ai, "l", timeout=60)
    assert finish_status(events[-1]) == {"status": "completed"}
    made, listed, read_back = (e["payload"]["result"] for e in of_type(events, "tool-result"))
    assert uri in str(made)  # the server's resource link
    assert [r["uri"] for r in listed["resources"]] == [uri]
    assert read_back.startswith(f"[binary resource {uri}, application/gzip")
    assert uri in {r.uri for r in conn.catalog.resources} and conn.starts == 1
