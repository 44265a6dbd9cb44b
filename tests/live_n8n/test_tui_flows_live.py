"""Live: the TUI against a real n8n 2.41.1 where a person meets the edges (issue 27).

* paging past 100 messages: a thread of 130 messages (seeded through n8n's own
  ``POST /rest/instance-ai/eval/restore-thread``) opens on its newest page (n8n's ``?limit=100``);
  Home at the first message reads the older page;
* an interrupted run after a reload: the app quits while n8n's answer is still streaming; a new
  app opening the thread shows the run going on and then its whole answer;
* two-factor login: MFA is enabled for the owner through n8n's REST (``/rest/mfa/qr``,
  ``/rest/mfa/enable``) with a TOTP code computed here (RFC 6238); the code typed in the first
  dialog logs in at once, and without it the dialog asks for it when n8n does. MFA is disabled again afterwards (the peer is shared).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import struct
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import Input

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.tui.screens.login import LoginScreen
from tests.support.openai_server import MockResponse
from tests.support.waiting import until

from .conftest import login_headers, user_text
from .driving import SIZE, app_on_new_thread, make_app, peer_client, send, texts, thread_open

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True)
def _no_n8n_login_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No n8n login from the environment (the root conftest isolates the config)."""
    monkeypatch.delenv("N8N_PASSWORD", raising=False)
    monkeypatch.delenv("N8N_EMAIL", raising=False)


# --------------------------------------------------------------------------- paging


def seed_thread(peer: Any, count: int) -> str:
    headers = login_headers(peer)
    project = httpx.get(f"{peer.url}/rest/projects/personal", headers=headers, timeout=30).json()["data"]["id"]
    thread = str(uuid.uuid4())
    httpx.post(f"{peer.url}/rest/instance-ai/threads", headers=headers, timeout=30,
               json={"threadId": thread, "projectId": project, "source": "assistant_page"}).raise_for_status()
    start = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    messages = [{"id": str(uuid.uuid4()), "createdAt": (start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                 "role": "user" if i % 2 == 0 else "assistant",
                 "content": [{"type": "text", "text": f"paged message {i:03d}"}]} for i in range(count)]
    response = httpx.post(f"{peer.url}/rest/instance-ai/eval/restore-thread", headers=headers, timeout=60,
                          json={"threadId": thread, "messages": messages})
    response.raise_for_status()
    assert response.json()["data"]["restored"] == count
    return thread


async def test_a_thread_of_130_messages_is_read_past_n8ns_first_page_and_home_reaches_the_first(
    n8n: Any, tmp_path: Path
) -> None:
    """n8n serves 100 messages a page (page 0 the newest): the client reads page 1 too, and the view,
    which mounts the newest messages first, reaches message 000 with Home."""
    thread = await asyncio.to_thread(seed_thread, n8n, 130)
    app = make_app(peer_client(n8n, tmp_path / "cfg"), thread_id=thread)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.thread_id == thread and len(texts(app)) >= 100, pilot, 60, "the thread")
        assert texts(app) == [f"paged message {i:03d}" for i in range(130)]  # past page 0, each once, in order
        first = app.conversation.messages[0].id
        assert first not in app.view.turns  # the view opened on the newest messages
        app.view.focus()
        for _ in range(60):  # Home at the first mounted message mounts the older ones
            if first in app.view.turns:
                break
            mounted = len(app.view.turns)
            await pilot.press("home")
            await until(lambda: len(app.view.turns) > mounted or first in app.view.turns, pilot, 30,  # noqa: B023
                        "Home mounted older messages")
        assert first in app.view.turns


# --------------------------------------------------------------------------- an interrupted run after reload


async def test_a_run_streaming_when_the_app_quit_is_shown_going_on_after_a_reload(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    mark = "live-reload-" + uuid.uuid4().hex[:6]
    words = " ".join(f"w{i}" for i in range(60))

    def respond(body: dict[str, Any]) -> MockResponse:
        if mark not in user_text(body):
            return MockResponse(text="Reload thread")
        return MockResponse(text=f"{mark}-START {words} {mark}-END", chunk_delay=0.15)

    responder(respond)
    _client, thread, app = await app_on_new_thread(n8n, tmp_path / "cfg")
    async with app.run_test(size=SIZE) as pilot:
        await thread_open(app, pilot, thread)
        await send(app, pilot, f"{mark}: tell me a long story")
        await until(lambda: any(f"{mark}-START" in t for t in texts(app)), pilot, 60, "the answer streaming")
        assert app.conversation.is_streaming
    # the app is gone mid-answer; n8n goes on. A new app (a reload) opens the thread.
    app2 = make_app(peer_client(n8n, tmp_path / "cfg"), thread_id=thread)
    async with app2.run_test(size=SIZE) as pilot:
        await thread_open(app2, pilot, thread)
        await until(lambda: any(f"{mark}-START" in t for t in texts(app2)), pilot, 30, "the partial answer")
        partial = next(t for t in texts(app2) if f"{mark}-START" in t)
        if f"{mark}-END" not in partial:
            assert app2.conversation.is_streaming  # shown as going on, not as finished
        await until(lambda: any(f"{mark}-END" in t for t in texts(app2)), pilot, 60, "the whole answer")
        await until(lambda: not app2.conversation.is_streaming, pilot, 30, "the run's end")
        answer = next(t for t in texts(app2) if f"{mark}-END" in t)
        assert answer.count(f"{mark}-START") == 1 and words in answer  # once, whole, in order


# --------------------------------------------------------------------------- MFA


def totp(secret: str, at: float | None = None) -> str:
    """RFC 6238 (SHA-1, 6 digits, 30 s), as authenticator apps and n8n compute it."""
    key = base64.b32decode(secret.upper() + "=" * (-len(secret) % 8))
    counter = int((at if at is not None else time.time()) // 30)
    digest = hmac.new(key, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    code = (struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000
    return f"{code:06d}"


def test_totp_matches_rfc_6238() -> None:
    # RFC 6238 appendix B, SHA-1 seed "12345678901234567890", last 6 digits
    secret = base64.b32encode(b"12345678901234567890").decode()
    assert [totp(secret, t) for t in (59, 1111111109, 1234567890)] == ["287082", "081804", "005924"]


def enable_mfa(peer: Any) -> str:
    """MFA on for the owner through n8n's REST; its TOTP secret."""
    headers = login_headers(peer)
    secret = str(httpx.get(f"{peer.url}/rest/mfa/qr", headers=headers, timeout=30).json()["data"]["secret"])
    enabled = httpx.post(f"{peer.url}/rest/mfa/enable", headers=headers, timeout=30, json={"mfaCode": totp(secret)})
    assert enabled.status_code == 200, enabled.text
    return secret


def login_without_code(peer: Any) -> tuple[int, Any]:
    plain = httpx.post(f"{peer.url}/rest/login", json={"emailOrLdapLoginId": peer.email, "password": peer.password},
                       headers={"browser-id": str(uuid.uuid4())}, timeout=30)
    return plain.status_code, plain.json().get("code")


def disable_mfa(peer: Any, secret: str) -> None:
    browser_id = str(uuid.uuid4())
    fresh = httpx.post(f"{peer.url}/rest/login", timeout=30, headers={"browser-id": browser_id},
                       json={"emailOrLdapLoginId": peer.email, "password": peer.password, "mfaCode": totp(secret)})
    auth = {"Cookie": f"n8n-auth={fresh.cookies['n8n-auth']}", "browser-id": browser_id}
    disabled = httpx.post(f"{peer.url}/rest/mfa/disable", headers=auth, timeout=30, json={"mfaCode": totp(secret)})
    assert disabled.status_code == 200, disabled.text


async def log_in_through_the_dialog(peer: Any, secret: str, config_dir: Path, code_at_once: bool) -> None:
    client = N8nClient(peer.url, peer.email, None, config_dir=config_dir, interactive=False)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen) and bool(app.screen.query("#login-mfa")),
                    pilot, 60, "the login dialog")
        screen = app.screen
        assert isinstance(screen, LoginScreen)
        mfa = screen.query_one("#login-mfa", Input)
        await until(lambda: mfa.display and mfa.region.height > 0, pilot, 30, "the code field laid out")
        screen.query_one("#login-email", Input).value = peer.email
        password = screen.query_one("#login-password", Input)
        password.focus()
        password.value = peer.password
        if code_at_once:
            mfa.value = totp(secret)
            await pilot.press("enter")
        else:
            await pilot.press("enter")
            # (``focus()`` lands on the next message loop turn, after ``mfa_required`` is set)
            await until(lambda: screen.mfa_required and mfa.has_focus, pilot, 30, "n8n asking for the code, in its field")
            assert screen.attempts == 1
            await pilot.press(*totp(secret), "enter")
        await until(lambda: not isinstance(app.screen, LoginScreen), pilot, 30, "logged in")
        await app.wait_until_ready()
        await until(lambda: client.project_id is not None, pilot, 30, "the client open")
        assert screen.attempts == (1 if code_at_once else 2)


async def test_login_with_a_two_factor_code_typed_in_the_dialog(n8n: Any, tmp_path: Path) -> None:
    """Two ways a person with MFA meets the dialog, against n8n's own ``/rest/login``: the code typed
    with the password in the first dialog (its field is there from the start: one login), and
    Enter without it (n8n's 998: the dialog says so and waits in the code field, the code logs in)."""
    secret = await asyncio.to_thread(enable_mfa, n8n)
    try:
        assert await asyncio.to_thread(login_without_code, n8n) == (401, 998)  # n8n's "MFA Error"
        await log_in_through_the_dialog(n8n, secret, tmp_path / "cfg-at-once", code_at_once=True)
        await log_in_through_the_dialog(n8n, secret, tmp_path / "cfg-asked", code_at_once=False)
    finally:
        await asyncio.to_thread(disable_mfa, n8n, secret)


# --------------------------------------------------------------------------- more than 100 threads


def make_threads(peer: Any, count: int) -> list[str]:
    headers = login_headers(peer)
    project = httpx.get(f"{peer.url}/rest/projects/personal", headers=headers, timeout=30).json()["data"]["id"]
    made = []
    with httpx.Client(timeout=30, headers=headers) as http:
        for _ in range(count):
            thread = str(uuid.uuid4())
            http.post(f"{peer.url}/rest/instance-ai/threads",
                      json={"threadId": thread, "projectId": project, "source": "assistant_page"}).raise_for_status()
            made.append(thread)
    return made


async def test_more_than_100_threads_are_all_in_the_thread_list(n8n: Any, tmp_path: Path) -> None:
    """n8n lists 100 threads a page (``hasMore``): the thread list holds every one of them."""
    made = await asyncio.to_thread(make_threads, n8n, 105)
    app = make_app(peer_client(n8n, tmp_path / "cfg"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: len(app.thread_list.local_threads()) >= 105, pilot, 60, "the thread list")
        listed = {t.id for t in app.thread_list.local_threads()}
        assert set(made) <= listed
