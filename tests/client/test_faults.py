"""Fault tests of RemoteClient: server killed and restarted, a proxy cutting the stream, bad frames."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server.live import ServeProcess, serve_app

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import AuthError, ClientError, ConnectionState, ServerUnreachable, StreamItem
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.protocol.api import ApprovalConfirm
from instance_ai_tui.protocol.events import UnknownEvent
from instance_ai_tui.protocol.tree import AgentNode
from instance_ai_tui.server.app import create_app
from tests.support.coalesced import assert_increasing, assert_same_run

from .conftest import demo_settings, read_run
from .raw_servers import HEALTH, CuttingProxy, RawRequest, RawServer, sse_head

FAST = {"initial_backoff": 0.05, "max_backoff": 0.3}


def shape(node: AgentNode) -> dict[str, Any]:
    """A tree without ids and timestamps, to compare two runs of the same script."""
    return {
        "role": node.role,
        "status": node.status,
        "text": node.text_content,
        "reasoning": node.reasoning,
        "tools": [
            (c.tool_name, c.args, c.result, c.error, c.is_loading, c.confirmation_status) for c in node.tool_calls
        ],
        "timeline": [entry.type for entry in node.timeline],
        "tasks": node.tasks.to_wire() if node.tasks is not None else None,
        "children": [shape(child) for child in node.children],
    }


async def approved_run(client: RemoteClient, thread: str, on_request: Any = None) -> tuple[str, list[StreamItem]]:
    run_id = await client.send(thread, "write a note: buy milk")

    async def on_item(item: StreamItem) -> None:
        if item.event is not None and item.event.type == "confirmation-request":
            if on_request is not None:
                await on_request()
            await client.confirm(item.event.payload.request_id, ApprovalConfirm(approved=True))

    return run_id, await read_run(client, thread, run_id, on_item=on_item, timeout=60)


async def test_server_killed_and_restarted_mid_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = ServeProcess(tmp_path / "fault.sqlite3", extra=["--workspace", str(workspace)])
    await server.start()
    try:
        async with RemoteClient(server.url, **FAST) as client:
            states: list[ConnectionState] = []
            client.add_state_listener(lambda state, detail: states.append(state))

            async def crash_and_restart() -> None:
                server.kill()
                await asyncio.sleep(0.3)  # the scenario: the server stays down a while before it is back
                await server.start()

            run_id, items = await approved_run(client, "crashed", crash_and_restart)
            assert ConnectionState.RECONNECTING in states and states[-1] == ConnectionState.CONNECTED
            # every id once, in order; if the run finished (and was coalesced) before the reconnect, the
            # resumed stream skips the merged deltas' ids and their block completes the text
            assert_increasing([item.id for item in items])
            (workspace / "notes" / "instance-ai-note.md").unlink()  # the reference run starts from the same files
            _, _reference = await approved_run(client, "reference")
            crashed_tree = (await client.messages("crashed")).messages[-1].agent_tree
            reference_tree = (await client.messages("reference")).messages[-1].agent_tree
        assert crashed_tree is not None and reference_tree is not None
        assert shape(crashed_tree) == shape(reference_tree)
        assert items[-1].event.payload.status == "completed" and items[-1].event.run_id == run_id
    finally:
        server.kill()


async def test_proxy_cutting_the_stream_20_times_loses_and_repeats_nothing(tmp_path: Path) -> None:
    settings = demo_settings(tmp_path)
    app = create_app(build_service(settings, demo_delay=0.002), ping_interval=1.0)
    async with serve_app(app) as url:
        port = int(url.rsplit(":", 1)[1])
        async with CuttingProxy(port, cuts=20, min_bytes=150, max_bytes=2500, seed=20) as proxy:
            async with RemoteClient(f"http://127.0.0.1:{proxy.port}", initial_backoff=0.01, max_backoff=0.05) as client:
                run_id = await client.send("cut", "every morning send the weather to Slack")

                async def on_item(item: StreamItem) -> None:
                    if item.event is not None and item.event.type == "confirmation-request":
                        await client.confirm(item.event.payload.request_id, ApprovalConfirm(approved=True))

                items = await read_run(client, "cut", run_id, on_item=on_item, timeout=60)
            assert proxy.cuts_done == 20
        async with RemoteClient(url) as direct:
            replay = await read_run(direct, "cut", run_id)
    assert_increasing([item.id for item in items])
    assert_same_run([(i.id, i.event.to_wire()) for i in items if i.event is not None],
                    [(i.id, i.event.to_wire()) for i in replay if i.event is not None])


async def test_malformed_frames_and_unknown_types_are_skipped_with_a_diagnostic() -> None:
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        if request.path.endswith("/health"):
            yield HEALTH
            return
        yield sse_head()
        if request.headers.get("last-event-id") is None:
            yield b'id: 1\ndata: {"type":"run-start","runId":"r","agentId":"a","payload":{"messageId":"m"}}\n\n'
            yield b"id: 2\ndata: {not json\n\n"
            yield b"id: 3\ndata: [1, 2]\n\n"
            yield b'id: 4\ndata: {"runId":"r"}\n\n'
            yield b'id: 5\ndata: {"type":"tool-call","runId":"r","payload":"oops"}\n\n'
            yield b'id: 6\ndata: {"type":"brand-new","runId":"r","agentId":"a","payload":{"x":1}}\n\n'
            yield b'event: surprise\ndata: {"type":"text-delta"}\n\n'
            yield b"retry: nonsense\nid: abc\n: comment\n\n"
            yield b'id: 7\ndata: {"type":"text-delta","runId":"r","agentId":"a","payload":{"text":"hi"}}\n\n'
            yield b"id: 8\ndata: {\"type\":\"run-fin"  # cut in the middle of a frame
        else:
            yield b'id: 8\ndata: {"type":"run-finish","runId":"r","agentId":"a","payload":{"status":"completed"}}\n\n'
            await asyncio.sleep(5)  # the scenario: the server holds the stream open

    async with RawServer(handler) as server:
        async with RemoteClient(server.url, **FAST) as client:
            items = await read_run(client, "t", "r", after=None, timeout=10)
    assert [item.id for item in items] == [1, 6, 7, 8]
    assert isinstance(items[1].event, UnknownEvent) and items[1].event.payload == {"x": 1}
    assert items[2].event.payload.text == "hi" and items[3].event.type == "run-finish"
    diagnostics = "\n".join(client.diagnostics)
    assert len(client.diagnostics) == 6, diagnostics
    for needle in ("id 2", "id 3", "id 4", "id 5", "brand-new", "surprise"):
        assert needle in diagnostics
    assert server.requests[-1].headers["last-event-id"] == "7"


async def test_remote_errors_are_clear(tmp_path: Path) -> None:
    async def not_ours(request: RawRequest) -> AsyncIterator[bytes]:
        yield b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: 9\r\nconnection: close\r\n\r\nNot Found"

    async with RawServer(not_ours) as server:
        url = server.url
        with pytest.raises(ClientError, match="is not an Instance AI server"):
            async with RemoteClient(url):
                pass
    closed = RemoteClient(url)  # the port is closed now
    with pytest.raises(ServerUnreachable, match=f"cannot reach the server at {url}.*is it running"):
        await closed.open()
    assert closed.state == ConnectionState.OFFLINE
    with pytest.raises(ClientError, match="http:// or https://"):
        RemoteClient("localhost:5680")

    settings = demo_settings(tmp_path)
    app = create_app(build_service(settings), token="t0ken")
    async with serve_app(app) as url:
        with pytest.raises(AuthError, match="requires a token") as info:
            async with RemoteClient(url):
                pass
        assert info.value.status == 401
        remote = RemoteClient(url, "wrong")
        states: list[tuple[ConnectionState, str]] = []
        remote.add_state_listener(lambda state, detail: states.append((state, detail)))
        with pytest.raises(AuthError, match="unauthorized: check --token") as info:
            await remote.open()  # a wrong token is caught when connecting, never "connected"
        assert remote.state == ConnectionState.OFFLINE and remote.state_detail == "unauthorized: check --token"
        assert ConnectionState.CONNECTED not in [s for s, _ in states]
        assert info.value.status == 401 and "wrong" not in str(info.value) and "wrong" not in repr(remote)
        await remote.close()
        async with RemoteClient(url, "t0ken") as good:
            assert await good.list_threads() == []
            await good.create_thread("x")
            assert [t.id for t in await good.list_threads()] == ["x"]
            with pytest.raises(ClientError) as bad:
                await good.send("x", "   ")
            assert bad.value.status == 400 and "empty" in str(bad.value)
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{url}/instance-ai/threads")).status_code == 401
