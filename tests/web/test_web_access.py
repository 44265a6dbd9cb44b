"""Who gets the app from ``instance-ai web``: loopback by default, a token for anything else,
no app process for a wrong token, no page for another site or a rebinding Host, no secret in
the page. A real ``instance-ai web`` process, real HTTP and WebSocket requests (aiohttp)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import httpx
import pytest

from instance_ai_tui.cli import build_parser
from instance_ai_tui.cli.web import app_arguments
from instance_ai_tui.web.access import (
    COOKIE_NAME,
    AccessError,
    check_settings,
    cookie_matches,
    host_allowed,
    is_loopback,
    same_origin,
    session_value,
)

from .conftest import WebProcess

TOKEN = "correct-horse-battery"


def children(pid: int) -> list[int]:
    """The direct child processes of ``pid`` (an app process is one: textual-serve's shell)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    if not path.exists():
        pytest.skip("this kernel does not list child processes in /proc")
    return [int(p) for p in path.read_text().split()]


# ---------------------------------------------------------------------------------------- rules
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2", "app.localhost"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    check_settings(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.10", "10.1.2.3", "example.invalid"])
def test_other_addresses_need_a_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(AccessError, match="--token"):
        check_settings(host, None)
    check_settings(host, TOKEN)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(AccessError, match="at least 8"):
        check_settings("0.0.0.0", "1234")


def test_the_cookie_proves_the_token_without_holding_it() -> None:
    value = session_value(TOKEN)
    assert TOKEN not in value and cookie_matches(value, TOKEN)
    assert not cookie_matches(session_value("another-token"), TOKEN) and not cookie_matches(None, TOKEN)


def test_origin_and_host_checks() -> None:
    assert same_origin("http://127.0.0.1:5690", "127.0.0.1:5690")
    assert not same_origin("http://127.0.0.1:5691", "127.0.0.1:5690")
    assert not same_origin("https://evil.example", "127.0.0.1:5690")
    assert not same_origin("null", "127.0.0.1:5690")
    assert host_allowed("localhost:5690", "127.0.0.1") and host_allowed("[::1]:5690", "127.0.0.1")
    assert not host_allowed("rebind.evil.example:5690", "127.0.0.1")


def test_the_app_flags_reach_the_app_process_unchanged(tmp_path: Path) -> None:
    argv = ["web", "--port", "5999", "--token", TOKEN, "--model", "gpt-x", "--workspace", "ws", "--db", "a.db",
            "--new", "--theme", "nord", "--gateway-allow", "docs/*", "--gateway-allow", "*.md", "--url", "http://x"]
    args = build_parser(("web",)).parse_args(argv)
    passed = app_arguments(args)
    assert TOKEN not in passed and "--port" not in passed and "--token" not in passed
    again = build_parser(()).parse_args(passed)
    for dest in ("model", "theme", "gateway_allow", "url", "tui_start"):
        assert getattr(again, dest) == getattr(args, dest), dest
    assert again.workspace == (Path.cwd() / "ws") and again.db.is_absolute()


# ------------------------------------------------------------------------------- the real process
def test_a_non_loopback_bind_without_a_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "instance_ai_tui", "web", "--host", "0.0.0.0", "--port", "5999"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "INSTANCE_AI_WEB_TOKEN": ""})
    assert done.returncode == 2
    assert "--host 0.0.0.0 serves the app to the network" in done.stderr and "--token" in done.stderr


def test_a_non_loopback_bind_with_a_token_from_the_environment_serves_the_sign_in_page(start_web) -> None:
    web: WebProcess = start_web("--host", "0.0.0.0", "--model", "demo", env={"INSTANCE_AI_WEB_TOKEN": TOKEN})
    page = httpx.get(web.url + "/", timeout=10)
    assert page.status_code == 401 and 'name="token"' in page.text and "textual-terminal" not in page.text
    assert TOKEN not in page.text


async def test_a_wrong_token_gets_no_app(start_web) -> None:
    web: WebProcess = start_web("--token", TOKEN, "--model", "demo")
    pid = web.process.pid
    async with httpx.AsyncClient(base_url=web.url, timeout=10, follow_redirects=False) as http:
        first = await http.get("/")
        assert first.status_code == 401 and "Access token" in first.text and "textual-terminal" not in first.text
        wrong = await http.get("/", params={"token": "not-the-token"})
        assert wrong.status_code == 401 and "That token is not right." in wrong.text
        assert COOKIE_NAME not in wrong.headers.get("set-cookie", "")
        posted = await http.post("/login", data={"token": "not-the-token"})
        assert posted.status_code == 401 and "That token is not right." in posted.text and not http.cookies
        assert (await http.get("/static/js/textual.js")).status_code == 401
        forged = await http.get("/", headers={"Cookie": f"{COOKIE_NAME}={session_value('not-the-token')}"})
        assert forged.status_code == 401
    ws_url = web.url.replace("http", "ws") + "/ws?width=80&height=24"
    async with aiohttp.ClientSession() as session:
        for cookies in ({}, {COOKIE_NAME: session_value("not-the-token")}):
            session.cookie_jar.clear()
            session.cookie_jar.update_cookies(cookies)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(ws_url)
            assert refused.value.status == 401
    await asyncio.sleep(0.5)  # the scenario: a window in which no app process may start
    assert children(pid) == [], "a wrong token started an app process"


async def test_the_right_token_once_in_the_url_moves_to_a_cookie_and_starts_an_app(start_web) -> None:
    web: WebProcess = start_web("--token", TOKEN, "--model", "demo", "--new",
                                env={"OPENAI_API_KEY": "sk-secret-never-in-the-page", "INSTANCE_AI_TOKEN": "srv-secret-x"})
    async with httpx.AsyncClient(base_url=web.url, timeout=10, follow_redirects=False) as http:
        signed = await http.get("/", params={"token": TOKEN, "fontsize": "14"})
        assert signed.status_code == 303 and signed.headers["location"] == "/?fontsize=14"  # out of the address bar
        cookie = signed.headers["set-cookie"]
        assert f"{COOKIE_NAME}={session_value(TOKEN)}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert TOKEN not in cookie
        page = await http.get("/")
        assert page.status_code == 200 and "textual-terminal" in page.text
        for secret in (TOKEN, "sk-secret-never-in-the-page", "srv-secret-x", sys.executable, "--model"):
            assert secret not in page.text
        by_form = await http.post("/login", data={"token": TOKEN})
        assert by_form.status_code == 303 and by_form.headers["location"] == "/"
    ws_url = web.url.replace("http", "ws") + "/ws?width=100&height=30"
    async with aiohttp.ClientSession(cookies={COOKIE_NAME: session_value(TOKEN)}) as session:
        async with session.ws_connect(ws_url) as ws:
            received = b""
            deadline = time.monotonic() + 30
            while b"Message Instance AI" not in received and time.monotonic() < deadline:
                message = await ws.receive(timeout=30)
                if message.type == aiohttp.WSMsgType.BINARY:
                    received += message.data
                elif message.type != aiohttp.WSMsgType.TEXT:
                    break
            assert b"Message Instance AI" in received, f"no prompt drawn; last {message.type}; log:\n{web.output()}"
            assert children(web.process.pid), "no app process for a signed-in browser"


async def test_another_site_cannot_open_the_app_and_a_rebinding_host_gets_nothing(start_web) -> None:
    web: WebProcess = start_web("--model", "demo")  # loopback, no token
    async with httpx.AsyncClient(base_url=web.url, timeout=10) as http:
        assert (await http.get("/")).status_code == 200
        assert (await http.get("/", headers={"Host": "rebind.evil.example:80"})).status_code == 403
        assert (await http.get("/", headers={"Origin": "https://evil.example"})).status_code == 403
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(web.url.replace("http", "ws") + "/ws", origin="https://evil.example")
        assert refused.value.status == 403
    assert children(web.process.pid) == []


def test_a_taken_port_is_a_clear_error(start_web, tmp_path: Path) -> None:
    web: WebProcess = start_web("--model", "demo")
    port = web.url.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "instance_ai_tui", "web", "--port", port, "--model", "demo"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
