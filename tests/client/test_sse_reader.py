"""``client.sse.reconnecting_sse`` against tiny raw servers: resume, dedup, backoff, keep-alive, errors."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import httpx
import pytest

from instance_ai_tui.aio import aclose
from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.sse import SseFrame, SseGaveUp, SseStatusError, backoff_delay, reconnecting_sse

from .raw_servers import RawRequest, RawServer, json_response, sse_head

FAST = {"initial_backoff": 0.01, "max_backoff": 0.05}


async def take(stream: AsyncIterator[SseFrame], count: int, timeout: float = 5.0) -> list[SseFrame]:
    """The first ``count`` frames; the stream is closed afterwards (left open, its response was
    closed by the garbage collector after the test's loop had ended: an unraisable exception)."""
    out: list[SseFrame] = []

    async def run() -> None:
        async for frame in stream:
            out.append(frame)
            if len(out) == count:
                return

    try:
        await asyncio.wait_for(run(), timeout)
    finally:
        await aclose(stream)
    return out


async def test_resume_with_last_event_id_and_drop_repeats() -> None:
    """Each connection serves 3 frames then drops; the server ignores the cursor, so it repeats ids."""

    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        start = int(request.headers.get("last-event-id", "0"))
        yield sse_head()
        # replays one id too many each time, plus an id-less delta and a split frame
        for i in range(max(1, start), start + 3):
            yield f"id: {i}\ndata: {{\"n\": {i}}}\n\n".encode()
        yield b": ping\n\ndata: delta-without-id\n\nid: 999"  # unterminated frame at the cut: discarded

    states: list[tuple[ConnectionState, str]] = []
    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        stream = reconnecting_sse(http, server.url + "/e", last_event_id=None, set_state=lambda s, d: states.append((s, d)), **FAST)
        frames = await take(stream, 12)
        await stream.aclose()
    ids = [f.id for f in frames if f.id is not None]
    assert ids == list(range(1, len(ids) + 1))  # no gap, no repeat
    assert [f.data for f in frames if f.id is None][:2] == ["delta-without-id", "delta-without-id"]
    assert all(f.event == "" for f in frames)
    sent = [r.headers.get("last-event-id") for r in server.requests]
    assert sent[0] is None and sent[1] == "2" and sent[2] == "4"
    assert states[0] == (ConnectionState.CONNECTING, "")
    assert (ConnectionState.CONNECTED, "") in states and (ConnectionState.RECONNECTING, "(attempt 1)") in states


async def test_initial_cursor_event_names_and_multiline_data() -> None:
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        yield sse_head()
        yield b"retry: 10\r\nid: 8\r\ndata: a\r\ndata: b\r\n\r\nevent: run-sync\ndata: {}\n\n"
        await asyncio.sleep(10)

    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        stream = reconnecting_sse(http, server.url, last_event_id=7, **FAST)
        frames = await take(stream, 2)
        await stream.aclose()
    assert server.requests[0].headers["last-event-id"] == "7"
    assert server.requests[0].headers["accept"] == "text/event-stream"
    assert frames[0] == SseFrame(data="a\nb", event="", id=8, raw_id="8")
    assert frames[1].event == "run-sync" and frames[1].id is None


async def test_keepalive_timeout_reconnects() -> None:
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        yield sse_head()
        if len(server.requests) == 1:
            yield b"id: 1\ndata: first\n\n"
            await asyncio.sleep(30)  # silent: no bytes, no ping
        yield b"id: 2\ndata: second\n\n"
        await asyncio.sleep(30)

    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        stream = reconnecting_sse(http, server.url, keepalive_timeout=0.3, **FAST)
        loop = asyncio.get_running_loop()
        started = loop.time()
        frames = await take(stream, 2)
        await stream.aclose()
    assert [f.data for f in frames] == ["first", "second"]
    assert 0.3 <= loop.time() - started < 3
    assert server.requests[1].headers["last-event-id"] == "1"


async def test_fatal_statuses_raise_and_retryable_ones_retry() -> None:
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        if request.path == "/missing":
            yield json_response(404, {"code": 404, "message": "thread not found"})
        elif request.path == "/html":
            yield sse_head(200, "text/html")
            yield b"<html></html>"
        elif len([r for r in server.requests if r.path == "/flaky"]) < 3:
            yield json_response(503, {"message": "restarting"})
        else:
            yield sse_head()
            yield b"id: 1\ndata: ok\n\n"
            await asyncio.sleep(10)

    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        states: list[ConnectionState] = []
        with pytest.raises(SseStatusError) as info:
            await take(reconnecting_sse(http, server.url + "/missing", set_state=lambda s, d: states.append(s), **FAST), 1)
        assert info.value.status == 404 and "thread not found" in info.value.body
        assert states[-1] == ConnectionState.OFFLINE
        with pytest.raises(SseStatusError, match="event stream"):
            await take(reconnecting_sse(http, server.url + "/html", **FAST), 1)
        frames = await take(reconnecting_sse(http, server.url + "/flaky", **FAST), 1)
        assert frames[0].data == "ok"


async def test_gives_up_after_max_attempts() -> None:
    async with RawServer(lambda r: _nothing()) as server:
        url = server.url
    states: list[tuple[ConnectionState, str]] = []
    async with httpx.AsyncClient() as http:  # the port is closed now: connection refused
        with pytest.raises(SseGaveUp, match="3 attempts"):
            await take(reconnecting_sse(http, url, max_attempts=3, set_state=lambda s, d: states.append((s, d)), **FAST), 1)
    waits = [d for s, d in states if s == ConnectionState.RECONNECTING and "next try" in d]
    assert [d.split(",")[0] for d in waits] == ["(attempt 1", "(attempt 2", "(attempt 3"]
    assert all(d.endswith("s)") for d in waits)
    assert states[-1][0] == ConnectionState.OFFLINE


async def test_a_stream_that_worked_rides_through_a_restart_html_and_404s() -> None:
    """n8n's boot window: the stream ends, the port refuses, HTML 200, HTML 404s, then the stream."""
    calls = 0

    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield sse_head()
            yield b"id: 1\ndata: before\n\n"
        elif calls == 2:
            yield sse_head(200, "text/html")
            yield b"<html>n8n</html>"
        elif calls <= 5:
            yield sse_head(404, "text/html")
            yield b"<pre>Cannot GET</pre>"
        else:
            assert request.headers.get("last-event-id") == "1"
            yield sse_head()
            yield b"id: 2\ndata: after\n\n"
            await asyncio.sleep(10)

    gone_checks = 0

    async def is_gone() -> bool:
        nonlocal gone_checks
        gone_checks += 1
        return False

    states: list[tuple[ConnectionState, str]] = []
    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        stream = reconnecting_sse(http, server.url + "/events/t", is_gone=is_gone,
                                  set_state=lambda s, d: states.append((s, d)), **FAST)
        frames = await take(stream, 2)
    assert [f.data for f in frames] == ["before", "after"]
    assert gone_checks == 3  # each 404 was checked, none proved the thread gone
    assert ConnectionState.OFFLINE not in [s for s, _ in states]
    assert states[-1] == (ConnectionState.CONNECTED, "")


async def test_a_404_that_proves_the_thread_gone_ends_the_stream() -> None:
    calls = 0

    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield sse_head()
            yield b"id: 1\ndata: before\n\n"
        else:
            yield json_response(404, {"code": 404, "message": "thread not found"})

    async def is_gone() -> bool:
        return True

    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        frames: list[SseFrame] = []
        with pytest.raises(SseStatusError) as info:
            async for frame in reconnecting_sse(http, server.url, is_gone=is_gone, **FAST):
                frames.append(frame)
    assert info.value.status == 404 and [f.data for f in frames] == ["before"]


async def test_401_stays_fatal_after_a_stream_worked() -> None:
    calls = 0

    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield sse_head()
            yield b"id: 1\ndata: before\n\n"
        else:
            yield json_response(401, {"message": "Unauthorized"})

    async with RawServer(handler) as server, httpx.AsyncClient() as http:
        with pytest.raises(SseStatusError) as info:
            async for _frame in reconnecting_sse(http, server.url, **FAST):
                pass
    assert info.value.status == 401


async def _nothing() -> AsyncIterator[bytes]:
    if False:
        yield b""


def test_backoff_grows_is_capped_and_jittered() -> None:
    rng = random.Random(1)
    delays = [backoff_delay(n, 0.5, 4.0, rng) for n in range(1, 8)]
    assert 0.25 <= delays[0] <= 0.5 and 0.5 <= delays[1] <= 1.0 and 1.0 <= delays[2] <= 2.0
    assert all(2.0 <= d <= 4.0 for d in delays[3:])
    assert len({round(d, 6) for d in delays[3:]}) > 1  # jitter
