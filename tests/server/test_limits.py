"""Issue 15 item 6: slow-header clients, too many connections and log floods, against a real uvicorn."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn

from instance_ai_tui.server import runner
from instance_ai_tui.server.app import create_app
from instance_ai_tui.server.runner import make_server
from tests.support import serve_asgi

from .fake_service import FakeService

API = "/instance-ai"


@asynccontextmanager
async def serve(app: object, **limits: object) -> AsyncIterator[tuple[str, int]]:
    """Our server (``make_server`` with these ``limits``) on ``tests.support.serve_asgi``'s socket."""

    def ours(sock: socket.socket) -> uvicorn.Server:
        return make_server(app, "127.0.0.1", int(sock.getsockname()[1]), **limits)  # type: ignore[arg-type]

    async with serve_asgi(app, server=ours) as url:
        yield "127.0.0.1", int(url.rsplit(":", 1)[1])


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        data = await asyncio.wait_for(reader.read(), seconds)
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 4")


async def test_slow_header_connections_are_closed() -> None:
    """uvicorn has no header timeout: a client sending one byte a minute kept its descriptor for ever."""
    async with serve(create_app(FakeService()), header_timeout=0.5) as (host, port):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /instance-ai/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        await writer.drain()
        assert await closed_within(reader, 4.0)  # the 0.5 s header timeout, not uvicorn's own 5 s keep-alive
        writer.close()
        # a connection that never sends anything is closed too; a prompt client is served
        idle_reader, idle_writer = await asyncio.open_connection(host, port)
        assert await closed_within(idle_reader, 3.0)
        idle_writer.close()
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as http:
            assert (await http.get(f"{API}/health")).status_code == 200
            await asyncio.sleep(0.8)  # longer than the header timeout, shorter than keep-alive: still usable
            assert (await http.get(f"{API}/health")).status_code == 200


async def test_connections_over_the_cap_are_refused_and_the_server_survives() -> None:
    async with serve(create_app(FakeService()), header_timeout=5, max_connections=20) as (host, port):
        held = [await asyncio.open_connection(host, port) for _ in range(40)]
        await asyncio.sleep(0.2)  # the scenario: the server had a moment to see them all
        closed = sum([await closed_within(r, 0.2) for r, _ in held])
        assert closed >= 20  # everything over the cap was closed at once
        for _, w in held:
            w.close()
        await asyncio.sleep(0.2)  # the scenario: a moment after the clients went away
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as http:
            assert (await http.get(f"{API}/health")).status_code == 200


async def test_a_flood_of_failures_does_not_flood_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """Many requests that each hit a bug: a handful of tracebacks, not one per request."""
    fake = FakeService()

    async def broken(search: str | None = None) -> list[object]:
        raise RuntimeError("injected fault")

    fake.list_threads = broken  # type: ignore[method-assign]
    caplog.set_level(logging.INFO)
    runner._FILTER._seen.clear()  # other tests' errors in this process share the window
    async with serve(create_app(fake)) as (host, port):
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as http:
            for _ in range(60):
                assert (await http.get(f"{API}/threads")).status_code == 500
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    with_traceback = [r for r in errors if r.exc_info]
    assert 1 <= len(errors) <= 10, len(errors)
    assert 1 <= len(with_traceback) <= 5
    assert any("suppressed" in r.getMessage() for r in errors)
