"""Started while n8n is down (issue 42.1), against the fake n8n: the client waits for it (probing
``/healthz``), the app queues what is typed meanwhile and sends it once n8n answers; the same
against the real n8n in ``tests/live_n8n/test_n8n_lifecycle_live.py``."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.base import ConnectionState, ServerUnreachable
from instance_ai_tui.client.n8n import PROBE_INTERVAL, N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.fake_n8n import FakeN8n
from tests.support.n8n_boot import BootWindow
from tests.support.net import free_port
from tests.support.waiting import until


def client_for(port: int, fake: FakeN8n, tmp_path: Path, **kwargs: Any) -> N8nClient:
    return N8nClient(f"http://127.0.0.1:{port}", fake.email, fake.password, config_dir=tmp_path / "config",
                     interactive=False, **kwargs)


async def test_open_waits_for_an_n8n_that_starts_later_and_its_module_booting(tmp_path: Path) -> None:
    fake = FakeN8n(ping_interval=0.5)
    port = free_port()
    client = client_for(port, fake, tmp_path, wait_while_down=True)
    states: list[tuple[ConnectionState, str]] = []
    client.add_state_listener(lambda state, detail: states.append((state, detail)))
    opening = asyncio.create_task(client.open())
    try:
        await asyncio.sleep(2.5 * PROBE_INTERVAL)
        assert not opening.done()  # nothing listens: it waits, it does not fail
        assert states[-1][0] == ConnectionState.RECONNECTING and "not answering" in states[-1][1]
        # n8n starts: its HTTP server answers (healthz) while Instance AI still boots (HTML 404s)
        window = BootWindow(html_answers=0, not_found_until=asyncio.get_running_loop().time() + 10**9)
        fake.boot_gate = window
        await fake.start(port)
        await until(lambda: window.not_found_served > 0, what="a request while the module boots")
        assert not opening.done()
        fake.boot_gate = None  # the module is ready
        await asyncio.wait_for(opening, 3 * PROBE_INTERVAL + 2)
        assert client.state == ConnectionState.CONNECTED and client.project_id == fake.project_id
        assert any("starting" in detail for state, detail in states if state == ConnectionState.RECONNECTING)
        probes = [r for r in fake.requests if r.path == "/healthz"]
        assert probes  # it asked n8n's health route, not the chat routes, while n8n was down
        # the attempt the banner says only goes up, across n8n answering and its module booting
        # (by hand: 'attempt 46' while down, then 'attempt 3' once n8n's port answered)
        numbers = [int(m.group(1)) for _s, detail in states if (m := re.search(r"attempt (\d+)", detail))]
        assert numbers == sorted(numbers) and len(numbers) >= 3, numbers
    finally:
        opening.cancel()
        await client.close()
        await fake.stop()


async def test_without_waiting_an_n8n_that_is_down_is_an_error_at_once(tmp_path: Path) -> None:
    client = client_for(free_port(), FakeN8n(), tmp_path)  # run, threads, export: they do not wait
    try:
        with pytest.raises(ServerUnreachable, match="cannot reach n8n"):
            await asyncio.wait_for(client.open(), 10)
        assert client.state == ConnectionState.OFFLINE
    finally:
        await client.close()


async def test_the_app_started_while_n8n_is_down_queues_a_message_and_sends_it_when_n8n_answers(
    tmp_path: Path,
) -> None:
    fake = FakeN8n(ping_interval=0.5)
    port = free_port()
    client = client_for(port, fake, tmp_path, wait_while_down=True)
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: client.state == ConnectionState.RECONNECTING, pilot, what="waiting for n8n")
            await until(lambda: "queued" in str(app.connection.banner.message), pilot, what="the banner")
            app.prompt.focus()
            app.prompt.load_text("hello while n8n is down")
            await pilot.press("enter")
            await until(lambda: len(app.thread.outbox.queue.items) == 1, pilot, what="queued, not refused")
            assert app.prompt.text == ""
            await asyncio.sleep(1.5 * PROBE_INTERVAL)
            await fake.start(port)
            await app.wait_until_ready()
            await until(lambda: app.conversation is not None and any(
                "2 workflows" in m.content for m in app.conversation.messages if m.role == "assistant"),
                pilot, 30, "the queued message answered")
            assert [m.content for m in app.conversation.messages if m.role == "user"] == ["hello while n8n is down"]
            assert not app.thread.outbox.queue.items and app.connection.banner.message == ""
    finally:
        await fake.stop()


async def test_a_login_answered_by_the_booting_editor_page_is_waited_through(tmp_path: Path) -> None:
    """Seen by hand against n8n 2.41.1 started after the app: while it boots, n8n answers POST /rest/login
    with its editor's HTML page (200, no cookie); that is n8n still starting, not a login that 'set no
    cookie' (which opened the login dialog)."""
    from tests.support.n8n_boot import BOOT_HTML, _send

    fake = FakeN8n(ping_interval=0.5)
    booting = {"on": True, "served": 0}

    async def gate(scope: dict[str, Any], receive: Any, send: Any) -> bool:
        if booting["on"] and scope.get("path", "").startswith("/rest/"):
            booting["served"] += 1
            await _send(send, 200, BOOT_HTML)
            return True
        return False

    fake.boot_gate = gate
    await fake.start()
    client = client_for(fake.port, fake, tmp_path, wait_while_down=True)
    opening = asyncio.create_task(client.open())
    try:
        await until(lambda: booting["served"] >= 2, what="two logins answered by the editor page")
        assert not opening.done() and client.state == ConnectionState.RECONNECTING
        booting["on"] = False
        await asyncio.wait_for(opening, 3 * PROBE_INTERVAL + 5)
        assert client.state == ConnectionState.CONNECTED and fake.logins == 1
    finally:
        opening.cancel()
        await client.close()
        await fake.stop()
