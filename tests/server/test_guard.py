"""Issue 15 items 2, 7 and 11 (server side): cross-site writes, DNS rebinding, 500s, bad Last-Event-ID.

A real uvicorn on 127.0.0.1 serving the real service (demo model, SQLite file); raw HTTP where the
attack needs headers a normal client would not send.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app

from .live import serve_app

API = "/instance-ai"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[str]:
    settings = Settings(db_path=tmp_path / "guard.sqlite3", model=ModelSettings(name="demo"))
    app = create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)
    async with serve_app(app) as url:
        yield url


async def threads(http: httpx.AsyncClient) -> list[str]:
    return [t["id"] for t in (await http.get(f"{API}/threads")).json()["threads"]]


async def test_cross_site_text_plain_post_starts_nothing(server: str) -> None:
    """A page on evil.example can POST text/plain without a preflight; it used to start a run."""
    async with httpx.AsyncClient(base_url=server) as http:
        attack = await http.post(
            f"{API}/chat/victim", content=b'{"message": "delete every workflow"}',
            headers={"content-type": "text/plain;charset=UTF-8", "origin": "https://evil.example",
                     "sec-fetch-site": "cross-site"},
        )
        assert attack.status_code == 403, attack.text
        # each signal alone is enough
        text_plain = await http.post(f"{API}/chat/victim", content=b'{"message": "hi"}',
                                     headers={"content-type": "text/plain"})
        assert text_plain.status_code == 415 and "application/json" in text_plain.json()["message"]
        form = await http.post(f"{API}/threads", content=b"title=x",
                               headers={"content-type": "application/x-www-form-urlencoded"})
        assert form.status_code == 415
        evil_origin = await http.post(f"{API}/chat/victim", json={"message": "hi"},
                                      headers={"origin": "https://evil.example"})
        assert evil_origin.status_code == 403 and "evil.example" in evil_origin.json()["message"]
        null_origin = await http.post(f"{API}/chat/victim", json={"message": "hi"}, headers={"origin": "null"})
        assert null_origin.status_code == 403
        fetch_site = await http.post(f"{API}/chat/victim/cancel", headers={"sec-fetch-site": "same-site"})
        assert fetch_site.status_code == 403
        delete = await http.delete(f"{API}/threads/victim", headers={"origin": "http://attacker.localhost.evil"})
        assert delete.status_code == 403
        assert await threads(http) == []  # nothing was created or started
        # the same request from the app's own origin (or from a non-browser client) works
        port = server.rsplit(":", 1)[1]
        own = await http.post(f"{API}/chat/victim", json={"message": "hi"},
                              headers={"origin": f"http://127.0.0.1:{port}", "sec-fetch-site": "same-origin"})
        assert own.status_code == 200, own.text
        assert await threads(http) == ["victim"]


async def test_dns_rebinding_host_is_refused(server: str) -> None:
    """A rebinding page reaches 127.0.0.1 under its own name: it must read nothing and answer nothing."""
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.post(f"{API}/threads", json={"threadId": "t-1", "title": "Secret plans"})).status_code == 201
        for host in ("rebind.evil.example", "rebind.evil.example:5680", "10.0.0.7", "[::2]:1"):
            read = await http.get(f"{API}/threads", headers={"host": host})
            assert read.status_code == 421, (host, read.text)
            assert "Secret plans" not in read.text
            answer = await http.post(f"{API}/confirm/cr-1", json={"approved": True}, headers={"host": host})
            assert answer.status_code == 421
        for host in ("localhost", "LOCALHOST:5680", "127.0.0.1:9", "app.localhost", "[::1]:5680"):
            assert (await http.get(f"{API}/threads", headers={"host": host})).status_code == 200, host


async def test_token_server_accepts_any_host_but_still_refuses_cross_site(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "tok.sqlite3", model=ModelSettings(name="demo"))
    app = create_app(build_service(settings), token="s3cret")
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url) as http:
        auth = {"authorization": "Bearer s3cret"}
        assert (await http.get(f"{API}/threads", headers={**auth, "host": "box.example:8080"})).status_code == 200
        cross = await http.post(f"{API}/threads", json={}, headers={**auth, "origin": "https://evil.example"})
        assert cross.status_code == 403


async def raw_exchange(url: str, requests: list[bytes], timeout: float = 5.0) -> list[bytes]:
    """Send each request on ONE connection and read its whole response (Content-Length framed)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    answers: list[bytes] = []
    try:
        for request in requests:
            writer.write(request)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await asyncio.wait_for(reader.readexactly(length), timeout)
            answers.append(head + body)
    finally:
        writer.close()
    return answers


def post(path: str, body: bytes, extra: bytes = b"") -> bytes:
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def get(path: str, extra: bytes = b"") -> bytes:
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + b"\r\n"


async def test_lone_surrogates_are_a_400_not_a_500(server: str) -> None:
    lone = b'{"message": "hi \\ud800 there"}'
    title = b'{"threadId": "t-s", "title": "bad \\udfff"}'
    answers = await raw_exchange(server, [post(f"{API}/chat/t-s", lone), post(f"{API}/threads", title),
                                          get(f"{API}/threads")])
    assert answers[0].startswith(b"HTTP/1.1 400"), answers[0]
    assert b"surrogate" in answers[0]
    assert answers[1].startswith(b"HTTP/1.1 400"), answers[1]
    assert answers[2].startswith(b"HTTP/1.1 200") and b"t-s" not in answers[2]
    # a proper pair (an emoji spelled as two escapes) is fine
    pair = await raw_exchange(server, [post(f"{API}/threads", b'{"threadId": "t-e", "title": "\\ud83d\\ude00"}')])
    assert pair[0].startswith(b"HTTP/1.1 201")
    assert "\U0001F600" in json.loads(pair[0].split(b"\r\n\r\n", 1)[1])["title"]


async def test_undecodable_token_query_is_a_401(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "t.sqlite3", model=ModelSettings(name="demo"))
    app = create_app(build_service(settings), token="s3cret")
    async with serve_app(app) as url:
        answers = await raw_exchange(url, [
            get(f"{API}/threads?token=%ff%fe"),
            get(f"{API}/threads?token=%C3%A9%F0%9F"),
            get(f"{API}/threads?token=s3cret"),
            get(f"{API}/threads?token=s3cre%74"),
        ])
    assert [a.split(b"\r\n", 1)[0] for a in answers] == [
        b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK"]


async def test_after_a_500_the_keep_alive_connection_still_serves(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "k.sqlite3", model=ModelSettings(name="demo"))
    service = build_service(settings)
    app = create_app(service)

    async def broken(search: str | None = None) -> list[object]:
        raise RuntimeError("injected fault")

    service.list_threads = broken  # type: ignore[method-assign]
    async with serve_app(app) as url:
        answers = await raw_exchange(url, [get(f"{API}/threads"), get(f"{API}/health"), get(f"{API}/threads")])
    assert answers[0].startswith(b"HTTP/1.1 500") and b"this is a bug" in answers[0]
    assert b"injected fault" not in answers[0]  # details stay in the log
    assert answers[1].startswith(b"HTTP/1.1 200") and b"instance-ai" in answers[1]
    assert answers[2].startswith(b"HTTP/1.1 500")


async def test_bad_last_event_id_header_is_a_400_not_a_full_replay(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=5) as http:
        assert (await http.post(f"{API}/threads", json={"threadId": "t-1"})).status_code == 201
        for bad in ("abc", "-1", "1e3", "9" * 30):
            async with http.stream("GET", f"{API}/events/t-1", headers={"last-event-id": bad}) as response:
                assert response.status_code == 400, bad
                assert "Last-Event-ID" in json.loads(await response.aread())["message"]
