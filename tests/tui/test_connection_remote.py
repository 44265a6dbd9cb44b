"""Issue 13 against our own server: a wrong token, and ``instance-ai serve`` killed and restarted.

The server is a real ``instance-ai serve`` subprocess (SIGKILL, like a crash) on a fixed port,
with its SQLite file; the app is the real app with a ``RemoteClient`` (Pilot).
"""

from __future__ import annotations

from pathlib import Path

from server.live import ServeProcess, serve_app

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from instance_ai_tui.tui.connection import UNAUTHORIZED
from instance_ai_tui.tui.widgets.status_line import render_status
from tests.support.waiting import until

from .test_connection import SIZE, answers, make_app, screen_text, send, users


async def test_a_wrong_token_shows_unauthorized_never_connected_and_keeps_the_message(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    server = create_app(build_service(settings), token="right-token")
    async with serve_app(server) as url:
        client = RemoteClient(url, "wrong-token")
        states: list[ConnectionState] = []
        client.add_state_listener(lambda state, detail: states.append(state))
        app = make_app(client)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            line = str(render_status(app.status_info))
            assert UNAUTHORIZED in line and "connected" not in line.replace("unauthorized", "")
            assert ConnectionState.CONNECTED not in states
            await until(lambda: UNAUTHORIZED in screen_text(app), pilot, what="banner")
            await send(app, pilot, "are you there?")
            await until(lambda: any("Not sent" in str(n.message) for n in app._notifications), pilot)
            assert app.prompt.text == "are you there?"  # refused visibly, nothing lost


async def test_our_server_killed_and_restarted_the_app_reconnects_and_answers(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "served.sqlite3")
    await serve.start()
    try:
        client = RemoteClient(serve.url, initial_backoff=0.05, max_backoff=0.5)
        seen: list[str] = []
        client.add_state_listener(lambda state, detail: seen.append(f"{state.value} {detail}"))
        app = make_app(client)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            await send(app, pilot, "hello")
            await until(lambda: len(answers(app)) == 1 and not app.conversation.is_streaming
                        and answers(app)[0].strip() != "", pilot, timeout=30, what="first answer")
            serve.kill()
            await until(lambda: app.client.state == ConnectionState.RECONNECTING, pilot, what="reconnecting")
            await until(lambda: "Reconnecting to" in screen_text(app), pilot, what="banner")
            # a message typed while the server is down is queued, not lost
            await send(app, pilot, "are you back?")
            await until(lambda: "queued: are you back?" in screen_text(app), pilot, what="queued while down")
            await serve.start()
            await until(lambda: app.client.state == ConnectionState.CONNECTED, pilot, timeout=20, what="reconnected")
            await until(lambda: len(answers(app)) == 2 and not app.conversation.is_streaming
                        and answers(app)[1].strip() != "", pilot, timeout=30, what="answer after restart")
            assert users(app) == ["hello", "are you back?"]
            assert "Reconnecting to" not in screen_text(app)
            assert any("next try in" in s for s in seen)
            assert not any(s.startswith("offline") for s in seen)
    finally:
        serve.kill()
