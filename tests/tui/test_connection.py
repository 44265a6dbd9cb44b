"""Issue 13 in the app: a connection that comes back by itself, and no message ever lost.

The real app (Pilot), the real ``N8nClient``, and the fake n8n on 127.0.0.1 replaying a real
n8n's restart (``testing.n8n_boot``: HTML 200, HTML 404s for a configurable time, then the
stream), so no test waits the real 6.5 s.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import Static

from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.connection import INTERRUPTED_REASON
from instance_ai_tui.tui.widgets.queued import QueuedRow
from tests.support.fake_n8n import FakeN8n, Pause, Say, default_script
from tests.support.n8n_boot import restart
from tests.support.waiting import until, until_async

SIZE = (120, 40)


@pytest.fixture
async def fake() -> AsyncIterator[FakeN8n]:
    server = FakeN8n(ping_interval=0.5)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def n8n_answers(fake: FakeN8n) -> bool:
    """Whether the fake n8n answers as itself (past its boot window's HTML pages)."""
    async with httpx.AsyncClient() as http:
        try:
            response = await http.get(f"{fake.base_url}/rest/settings", timeout=5)
        except httpx.TransportError:
            return False
    return response.status_code == 200 and response.headers.get("content-type", "").startswith("application/json")


async def run_over(client: N8nClient, thread_id: str) -> bool:
    return not (await client.status(thread_id)).has_active_run


def n8n_client(fake: FakeN8n, tmp_path: Path, **kwargs: Any) -> N8nClient:
    options: dict[str, Any] = {"config_dir": tmp_path / "config", "interactive": False, "initial_backoff": 0.05,
                               "max_backoff": 0.3, "keepalive_timeout": 5.0}
    options.update(kwargs)
    return N8nClient(fake.base_url, fake.email, fake.password, **options)


def make_app(client: Any, **kwargs: Any) -> InstanceAiApp:
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, **kwargs)
    app.connection.settle_delay = 0.2
    return app


def screen_text(app: InstanceAiApp) -> str:
    parts: list[str] = []
    for widget in app.screen.query(Static):
        if widget.display and widget.is_attached:
            parts.append(str(widget.render()))
    return "\n".join(parts)


async def send(app: InstanceAiApp, pilot: Any, text: str) -> None:
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


def answers(app: InstanceAiApp) -> list[str]:
    assert app.conversation is not None
    return [m.content for m in app.conversation.messages if m.role == "assistant"]


def users(app: InstanceAiApp) -> list[str]:
    assert app.conversation is not None
    return [m.content for m in app.conversation.messages if m.role == "user"]


async def test_n8n_restart_mid_conversation_reconnects_settles_the_cut_run_and_answers_after(
    fake: FakeN8n, tmp_path: Path
) -> None:
    def script(message: str) -> list[Any]:
        if "long" in message:
            return [Say("Starting the long job.", "resp-1"), Pause(60)]
        return default_script(message)

    fake.script = script
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "hello before")
        await until(lambda: any("2 workflows" in a for a in answers(app)) and not app.conversation.is_streaming,
                    pilot, what="first answer")
        await send(app, pilot, "a long job")
        await until(lambda: any("long job" in a for a in answers(app)), pilot, what="long job started")
        seen_states: list[str] = []
        app.client.add_state_listener(lambda s, d: seen_states.append(f"{s.value} {d}"))
        window = await restart(fake, html_answers=1, not_found_seconds=0.6, not_found_answers=1)
        await until(lambda: "Reconnecting to" in screen_text(app), pilot, what="banner")
        assert app.status_info.connection == "reconnecting"
        await until(lambda: app.client.state == ConnectionState.CONNECTED and window.not_found_served > 0,
                    pilot, what="reconnected")
        assert any("next try in" in s for s in seen_states)
        # the cut run ends as interrupted (n8n kept no run-finish for it)
        await until(lambda: not app.conversation.is_streaming, pilot, what="settled")
        cut = app.conversation.messages[-1]
        assert cut.reducer is not None and cut.reducer.status == "error"
        await until(lambda: INTERRUPTED_REASON in screen_text(app), pilot, what="interrupted shown")
        assert "Reconnecting to" not in screen_text(app)
        # a message after the restart is answered in the same app
        await send(app, pilot, "hello after the restart")
        await until(lambda: len([a for a in answers(app) if "2 workflows" in a]) == 2
                    and not app.conversation.is_streaming, pilot, what="answer after restart")
        assert users(app) == ["hello before", "a long job", "hello after the restart"]
        assert app.status_info.connection == "connected"


async def test_interrupted_run_is_visible_after_reload(fake: FakeN8n, tmp_path: Path) -> None:
    # text reaches n8n's log when its segment closes (a new responseId): "Half of the answer" does
    fake.script = lambda message: [Say("Half of the answer", "resp-1"), Say(" and more", "resp-2"), Pause(60)]
    client = n8n_client(fake, tmp_path)
    tid = str(uuid.uuid4())
    await client.create_thread(tid)
    await client.send(tid, "something long")
    await until(lambda: any("Half of the answer" in json.dumps(event) for _, event in fake._threads[tid].log),
                what="the first segment in n8n's log")
    await client.close()
    await restart(fake, html_answers=0, not_found_seconds=0.1)
    await until_async(lambda: n8n_answers(fake), what="n8n up again after its boot window")
    app = make_app(n8n_client(fake, tmp_path), thread_id=tid)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: INTERRUPTED_REASON in screen_text(app), pilot, what="interrupted after reload")
        assert users(app) == ["something long"] and "Half of the answer" in answers(app)[0]
        # the status line follows on the projection's next frame (on a loaded machine a moment later)
        await until(lambda: app.status_info.run_state == "error", pilot, what="the status line says error")


async def test_a_message_sent_while_the_agent_works_is_queued_then_sent(fake: FakeN8n, tmp_path: Path) -> None:
    def script(message: str) -> list[Any]:
        if "first" in message:
            return [Say("Working on the first.", "resp-1"), Pause(6), Say("First done.", "resp-2")]
        return [Say(f"Answer to: {message}", "resp-1")]

    fake.script = script
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "first task")
        await until(lambda: app.conversation is not None and app.conversation.is_streaming, pilot)
        await send(app, pilot, "second task")
        await until(lambda: "queued: second task" in screen_text(app), pilot, what="queued shown")
        assert users(app) == ["first task"] and app.prompt.text == ""
        # edit it: back into the prompt, out of the queue; then queue it again
        row = app.query_one(QueuedRow)
        row.focus()
        await pilot.press("e")
        await until(lambda: app.prompt.text == "second task", pilot)
        assert not app.thread.outbox.queue.items
        await pilot.press("end", "space", *"please", "enter")
        await until(lambda: "queued: second task please" in screen_text(app), pilot, what="queued again")
        assert app.conversation.is_streaming  # still the first run
        await until(lambda: any("Answer to: second task please" in a for a in answers(app)), pilot,
                    what="queued message answered")
        assert users(app) == ["first task", "second task please"]
        assert "First done." in answers(app)[0]
        assert not app.queued_bar.display


async def test_a_queued_message_can_be_removed(fake: FakeN8n, tmp_path: Path) -> None:
    fake.script = lambda message: [Say("Working.", "resp-1"), Pause(5), Say("Done.", "resp-2")]
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "first")
        await until(lambda: app.conversation is not None and app.conversation.is_streaming, pilot)
        await send(app, pilot, "never mind")
        await until(lambda: bool(app.query(QueuedRow)), pilot)
        app.query_one(QueuedRow).focus()
        await pilot.press("x")
        await until(lambda: not app.queued_bar.display, pilot)
        await until(lambda: not app.conversation.is_streaming, pilot)
        await pilot.pause(0.5)  # the scenario: a window in which the removed message must not be sent
        assert users(app) == ["first"] and len(fake._threads[app.thread_id].groups) == 1


async def test_a_title_by_event_is_not_replaced_by_an_older_list_answer(fake: FakeN8n, tmp_path: Path) -> None:
    """n8n sends thread-title-updated ~180 ms after run-finish; the list asked at run-finish lands later.

    Ordered by events, not by sleeps: the title event goes out once the list request has read
    the threads without it, and that stale answer is sent 0.5 s after the title event."""
    published: dict[str, str] = {}
    served: list[list[str]] = []
    publish = fake._publish
    held: list[Any] = []  # title events waiting for the stale list request
    stale_read = False

    def late_titles(thread: Any, run: Any, event: dict[str, Any]) -> None:
        if event.get("type") != "thread-title-updated":
            publish(thread, run, event)
            return

        def later() -> None:
            published[thread.id] = event["payload"]["title"]
            publish(thread, run, event)

        if stale_read:
            asyncio.get_running_loop().call_soon(later)
        else:
            held.append(later)

    fake._publish = late_titles  # type: ignore[method-assign]

    async def slow_list(scope: dict[str, Any], receive: Any, send_: Any) -> bool:
        nonlocal stale_read
        if scope["path"] != "/rest/instance-ai/threads" or scope["method"] != "GET":
            return False
        # what n8n has when the request arrives: the title is not generated yet
        threads = [{**t.info(), "title": published.get(t.id, "")} for t in fake._threads.values() if t.created]
        if threads and not stale_read:
            stale_read = True
            while held:
                held.pop(0)()  # now the title event goes out ...
        await asyncio.sleep(0.5)  # ... and this answer lands after it
        body = json.dumps({"data": {"threads": threads, "total": len(threads), "page": 0, "hasMore": False}}).encode()
        await send_({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send_({"type": "http.response.body", "body": body})
        served.append([t["title"] for t in threads])
        return True

    fake.boot_gate = slow_list
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "weather to slack")
        await until(lambda: app.conversation is not None and app.conversation.title == "weather to slack", pilot)
        await until(lambda: [""] in served, pilot, what="a stale list answer served")
        await pilot.pause(0.3)  # the scenario: a window for the app to apply the stale answer (it must not)
        info = app.thread_list.thread(app.thread_id)
        assert info is not None and info.title == "weather to slack"
        assert app.status_info.thread_title == "weather to slack"


async def test_a_message_from_another_client_shows_when_its_run_starts(fake: FakeN8n, tmp_path: Path) -> None:
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "hello from here")
        await until(lambda: len(answers(app)) == 1 and not app.conversation.is_streaming, pilot)
        other = n8n_client(fake, tmp_path / "other")
        try:
            await other.send(app.thread_id, "hello from the browser")
        finally:
            await other.close()
        await until(lambda: len(answers(app)) == 2 and not app.conversation.is_streaming, pilot)
        await until(lambda: users(app) == ["hello from here", "hello from the browser"], pilot,
                    what="foreign user message shown")
        kinds = [m.role for m in app.conversation.messages]
        assert kinds == ["user", "assistant", "user", "assistant"]
        # on screen once a frame has projected it (the model has it first; under load that
        # frame can come a little later)
        await until(lambda: "hello from the browser" in screen_text(app), pilot, what="foreign message on screen")


# --------------------------------------------------------------------------- login dialog


def wrong_login_client(fake: FakeN8n, tmp_path: Path, password: str | None = "not-the-password") -> N8nClient:
    return N8nClient(fake.base_url, fake.email, password, config_dir=tmp_path / "config", interactive=False,
                     initial_backoff=0.05, max_backoff=0.3)


async def type_into(pilot: Any, app: InstanceAiApp, selector: str, text: str) -> None:
    from textual.widgets import Input

    field = app.screen.query_one(selector, Input)
    field.focus()
    field.value = ""
    await pilot.press(*text)


async def test_a_failed_login_opens_the_dialog_and_a_right_password_connects(fake: FakeN8n, tmp_path: Path) -> None:
    from instance_ai_tui.tui.screens.login import LoginScreen

    app = make_app(wrong_login_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen), pilot, what="login dialog")
        # (the dialog is the screen before its widgets are composed: under load the text comes a frame later)
        await until(lambda: "Wrong username or password" in screen_text(app), pilot, what="n8n's refusal shown")
        await type_into(pilot, app, "#login-password", "still wrong")
        await pilot.press("enter")
        await until(lambda: app.screen.attempts == 1 and "Logging in" not in screen_text(app), pilot)
        assert isinstance(app.screen, LoginScreen) and "refused the login" in screen_text(app)
        await type_into(pilot, app, "#login-password", fake.password)
        await pilot.press("enter")
        await app.wait_until_ready()
        assert not isinstance(app.screen, LoginScreen)
        assert app.client.state == ConnectionState.CONNECTED and not app.thread.outbox.blocked
        await send(app, pilot, "hello after login")
        await until(lambda: any("2 workflows" in a for a in answers(app)), pilot, what="answer")


async def test_the_login_dialog_asks_for_the_two_factor_code_when_n8n_does(fake: FakeN8n, tmp_path: Path) -> None:
    from instance_ai_tui.tui.screens.login import LoginScreen

    fake.mfa_code = "246810"
    app = make_app(wrong_login_client(fake, tmp_path, password=None))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen), pilot, what="login dialog")
        assert not app.screen.mfa_required
        # no password was given: the dialog asks for it, not for N8N_PASSWORD or a terminal
        await until(lambda: f"Enter the password of {fake.email}." in screen_text(app), pilot, what="the dialog's ask")
        assert "N8N_PASSWORD" not in screen_text(app)
        await type_into(pilot, app, "#login-password", fake.password)
        await pilot.press("enter")
        await until(lambda: app.screen.mfa_required, pilot, what="MFA field")
        assert app.screen.query_one("#login-mfa").has_focus
        assert "two-factor code" in screen_text(app)
        await type_into(pilot, app, "#login-mfa", "111111")
        await pilot.press("enter")
        await until(lambda: "Invalid mfa token" in screen_text(app), pilot, what="wrong code refused")
        await type_into(pilot, app, "#login-mfa", "246810")
        await pilot.press("enter")
        await app.wait_until_ready()
        assert app.client.state == ConnectionState.CONNECTED and fake.logins == 1


async def test_the_first_login_dialog_has_the_two_factor_field(fake: FakeN8n, tmp_path: Path) -> None:
    """An account with two-factor auth logs in from the first dialog: email, password and code
    typed at once (one login, no refusal first)."""
    from instance_ai_tui.tui.screens.login import LoginScreen

    fake.mfa_code = "246810"
    app = make_app(wrong_login_client(fake, tmp_path, password=None))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen) and bool(app.screen.query("#login-mfa")), pilot,
                    what="login dialog")
        mfa = app.screen.query_one("#login-mfa")
        # shown from the start, not after a refusal
        await until(lambda: mfa.display and mfa.region.height > 0, pilot, what="the code field laid out")
        await type_into(pilot, app, "#login-password", fake.password)
        await type_into(pilot, app, "#login-mfa", "246810")
        await pilot.press("enter")
        await app.wait_until_ready()
        assert app.client.state == ConnectionState.CONNECTED and fake.logins == 1


async def test_a_cancelled_login_leaves_a_banner_and_refuses_sends_visibly(fake: FakeN8n, tmp_path: Path) -> None:
    from instance_ai_tui.tui.screens.login import LoginScreen

    app = make_app(wrong_login_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen), pilot, what="login dialog")
        await pilot.press("escape")
        await app.wait_until_ready()
        await until(lambda: "not logged in to n8n" in screen_text(app), pilot, what="banner")
        await send(app, pilot, "is anyone there")
        await until(lambda: any("Not sent" in str(n.message) for n in app._notifications), pilot)
        assert app.prompt.text == "is anyone there"


# --------------------------------------------------------------------------- setup screen


async def test_embedded_with_a_model_but_no_key_shows_the_setup_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import ModelSettings
    from instance_ai_tui.tui.screens.setup import SetupScreen

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = Settings(db_path=tmp_path / "e.sqlite3", model=ModelSettings(name="gpt-4o-mini"))
    app = InstanceAiApp(EmbeddedClient(settings), settings, watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, SetupScreen), pilot, timeout=20, what="setup screen")
        # pushed is not yet drawn: on a loaded machine the first paint of the dialog comes a frame later
        await until(lambda: "OPENAI_API_KEY" in screen_text(app), pilot, timeout=20, what="setup text")
        text = screen_text(app)
        assert "OPENAI_API_KEY" in text and "OPENAI_BASE_URL" in text and "--model demo" in text
        await pilot.press("escape")  # browse without sending
        await app.wait_until_ready(timeout=20)
        await until(lambda: "no API key for the model gpt-4o-mini" in screen_text(app), pilot, what="banner")
        await send(app, pilot, "hello?")
        await until(lambda: any("Not sent" in str(n.message) for n in app._notifications), pilot)
        assert app.prompt.text == "hello?" and (app.conversation is None or not users(app))


async def test_the_setup_screen_can_quit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import ModelSettings
    from instance_ai_tui.tui.screens.setup import SetupScreen

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = Settings(db_path=tmp_path / "e.sqlite3", model=ModelSettings(name="gpt-4o-mini"))
    app = InstanceAiApp(EmbeddedClient(settings), settings, watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, SetupScreen), pilot, timeout=20, what="setup screen")
        await pilot.press("enter")  # Quit has the focus
        await until(lambda: not app.is_running, pilot, what="quit")


# --------------------------------------------------------------------------- paging


async def test_a_thread_of_more_than_100_messages_opens_whole(fake: FakeN8n, tmp_path: Path) -> None:
    fake.script = lambda message: [Say(f"echo {message}", "resp-1")]
    seed = n8n_client(fake, tmp_path / "seed")
    tid = str(uuid.uuid4())
    try:
        for n in range(65):  # 130 messages
            await seed.send(tid, f"question {n}")
            await until_async(lambda: run_over(seed, tid), what=f"question {n} answered")
    finally:
        await seed.close()
    app = make_app(n8n_client(fake, tmp_path), thread_id=tid)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        assert len(app.conversation.messages) == 130
        assert users(app)[0] == "question 0" and users(app)[-1] == "question 64"
        await until(lambda: "earlier message" in screen_text(app), pilot, what="older messages line")
        app.view.focus()
        for _ in range(20):  # Home loads the previous batch, as in embedded mode
            if app.view.first_index == 0:
                break
            first = app.view.first_index
            await pilot.press("home")
            await until(lambda: app.view.first_index < first, pilot, what="Home loaded older messages")  # noqa: B023
        assert app.view.first_index == 0
        await until(lambda: "question 0\n" in screen_text(app) + "\n", pilot, what="the first question shown")


async def test_a_queued_message_that_meets_a_shutting_down_server_is_queued_again(
    fake: FakeN8n, tmp_path: Path
) -> None:
    """As seen against the real n8n: on SIGTERM it ends the run (run-finish cancelled), the queued
    message goes at once and meets a server that is going away; it must wait for the restart."""

    def script(message: str) -> list[Any]:
        if "long" in message:
            return [Say("Starting the long job.", "resp-1"), Pause(60)]
        return [Say(f"Answer to: {message}", "resp-1")]

    fake.script = script
    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "a long job")
        await until(lambda: any("long job" in a for a in answers(app)), pilot, what="long job started")
        await send(app, pilot, "after the restart")
        await until(lambda: "queued: after the restart" in screen_text(app), pilot, what="queued")
        await restart(fake, html_answers=1, not_found_seconds=0.5, down_seconds=0.5, crash=False)
        await until(lambda: any("Answer to: after the restart" in a for a in answers(app)), pilot, timeout=20,
                    what="answered after the restart")
        assert users(app) == ["a long job", "after the restart"]
        assert app.prompt.text == ""


async def test_a_session_that_ends_mid_conversation_asks_to_log_in_again(fake: FakeN8n, tmp_path: Path) -> None:
    from instance_ai_tui.tui.screens.login import LoginScreen

    app = make_app(n8n_client(fake, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "hello")
        await until(lambda: len(answers(app)) == 1 and not app.conversation.is_streaming, pilot)
        old_password, fake.password = fake.password, "Changed-Passw0rd!"
        fake.invalidate_sessions()  # the cookie is refused and the old password no longer works
        await send(app, pilot, "still there?")
        await until(lambda: isinstance(app.screen, LoginScreen), pilot, what="login dialog")
        await type_into(pilot, app, "#login-password", "Changed-Passw0rd!")
        await pilot.press("enter")
        await until(lambda: not isinstance(app.screen, LoginScreen), pilot, what="logged in")
        assert app.prompt.text == "still there?" and users(app) == ["hello"]  # nothing lost, not sent twice
        app.prompt.focus()
        await pilot.press("enter")
        await until(lambda: len(answers(app)) == 2 and not app.conversation.is_streaming, pilot, what="answer")
        assert users(app) == ["hello", "still there?"] and old_password != fake.password


async def test_the_reconnect_banner_counts_down_to_the_next_try() -> None:
    from tests.support.recorded import RecordedClient

    client = RecordedClient(model_name="scripted-test")
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        client._set_state(ConnectionState.RECONNECTING, "(attempt 2, next try in 3s)")
        banner = app.connection.banner
        await until(lambda: "next try in 3s" in banner.message and banner.display, pilot)
        await until(lambda: "next try in 1s" in banner.message, pilot, timeout=5)  # 3s, 2s, 1s: one step a second
        assert "(attempt 2, next try in 1s)" in banner.message
        assert "next try in 1s" in app.status_info.connection_detail
        client._set_state(ConnectionState.RECONNECTING, "(attempt 2)")  # the attempt runs
        await pilot.pause(1.2)  # the scenario: past a countdown step, no "next try" comes back
        assert "next try" not in banner.message and "(attempt 2)" in banner.message
        client._set_state(ConnectionState.CONNECTED, "")
        await until(lambda: not banner.display, pilot)


def test_two_runs_of_another_client_in_a_row_each_get_their_own_message() -> None:
    """The first run's poll of n8n's history can come once both of another client's messages are stored:
    it takes its own (the one before its stored answer, else the oldest after everything shown), never the
    newest (CI against n8n 2.41.1 saw "third" above "answer to second" and "second" above "answer to third")."""
    from datetime import UTC, datetime

    from instance_ai_tui.protocol.api import InstanceAiMessage
    from instance_ai_tui.protocol.conversation import Conversation
    from instance_ai_tui.tui.connection import _unshown_user_message

    def item(ident: str, role: str, text: str, run_id: str | None = None) -> InstanceAiMessage:
        return InstanceAiMessage(id=ident, role=role, content=text, run_id=run_id,  # type: ignore[arg-type]
                                 created_at=datetime.now(UTC))

    from instance_ai_tui.protocol.conversation import ConversationMessage

    # the conversation as the app holds it: u1 and a1 (n8n's ids), then the two live answers of the other client
    conversation = Conversation()
    conversation.messages = [ConversationMessage("u1", "user", content="first"),
                             ConversationMessage("a1", "assistant"),
                             ConversationMessage("live-2", "assistant"), ConversationMessage("live-3", "assistant")]
    both_stored = [item("u1", "user", "first"), item("a1", "assistant", "answer to first", "r1"),
                   item("u2", "user", "second"), item("u3", "user", "third")]
    assert _unshown_user_message(conversation, both_stored, "r2").id == "u2"  # not the newest
    with_answer = [*both_stored[:3], item("a2", "assistant", "answer to second", "r2"), both_stored[3]]
    assert _unshown_user_message(conversation, with_answer, "r2").id == "u2"  # the one before its answer
    # seen against n8n 2.41.1: the third run's poll read the history before its message was stored, and the
    # second's message (followed by the second run's answer) is not the third run's
    assert _unshown_user_message(conversation, with_answer[:4], "r3") is None
    conversation.messages.insert(2, ConversationMessage("u2", "user", content="second"))
    assert _unshown_user_message(conversation, with_answer, "r3").id == "u3"


async def test_the_reconnect_banner_never_says_next_try_in_0s() -> None:
    """Seen by hand against n8n 2.41.1: 'next try in 0s' while the client's try was under way (n8n's
    /healthz probe runs after its 1 s wait; a jittered back-off can be under 0.05 s). Past the time it
    says 'retrying now', in the banner and the status line."""
    from tests.support.recorded import RecordedClient

    client = RecordedClient(model_name="scripted-test")
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        banner = app.connection.banner
        client._set_state(ConnectionState.RECONNECTING, "(attempt 4, next try in 0.0s)")  # a back-off this short
        await until(lambda: banner.display and "attempt 4" in banner.message, pilot)
        assert "(attempt 4, retrying now)" in banner.message and "0s" not in banner.message, banner.message
        assert "retrying now" in app.status_info.connection_detail
        client._set_state(ConnectionState.RECONNECTING, "(n8n is not answering yet; attempt 5, next try in 1s)")
        await until(lambda: "attempt 5" in banner.message, pilot)
        seen: list[str] = []

        def past_the_time() -> bool:  # the countdown's ticks while the try (the probe) has not reported yet
            seen.append(banner.message)
            return "retrying now" in banner.message

        await until(past_the_time, pilot, timeout=5)
        assert not [m for m in seen if "next try in 0" in m], seen
        assert "(n8n is not answering yet; attempt 5, retrying now)" in banner.message
