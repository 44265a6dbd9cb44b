"""Stop stops everything on screen (issue 39 item 2): Esc, Ctrl+C and ``/cancel`` stop the open thread's
run whatever its origin — a run restored after a restart and waiting for an approval, the same run once
it resumed — and the status line tells the run's real state meanwhile.

The app runs the embedded demo on a real SQLite file; "a restart" is a second app (and a second
assistant) on the same file, as a person quitting and starting again gets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.waiting import until

from .scripts import SIZE

BUILD = "every morning send the weather forecast to Slack"  # the demo asks to activate the workflow


def app_on(db: Path, demo_delay: float = 0.002) -> tuple[InstanceAiApp, EmbeddedClient]:
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
    client = EmbeddedClient(settings, demo_delay=demo_delay)
    return InstanceAiApp(client, settings, watch_themes=False, persist_theme=False), client


def status(app: InstanceAiApp) -> str:
    return str(app.status_line.render())


def last_turn(app: InstanceAiApp) -> Any:
    return app.view.assistant_turns()[-1]


async def left_waiting(db: Path) -> str:
    """A first app sends the build request and quits while its approval waits; the thread's id."""
    app, _client = app_on(db)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready(timeout=30)
        app.prompt.load_text(BUILD)
        app.prompt.focus()
        await pilot.press("enter")
        await until(lambda: bool(app.thread.pending), pilot, timeout=30, what="the approval card")
        thread_id = app.thread_id
    assert thread_id is not None
    return thread_id


async def stop(app: InstanceAiApp, pilot: Any, how: str) -> None:
    app.prompt.focus()
    if how == "escape":
        await pilot.press("escape")
    elif how == "ctrl+c":
        await pilot.press("ctrl+c")
    else:
        app.prompt.load_text("/cancel")
        await pilot.press("enter")


@pytest.mark.parametrize("how", ["escape", "ctrl+c", "/cancel"])
async def test_a_run_restored_after_a_restart_waiting_for_an_approval_is_stopped(tmp_path: Path, how: str) -> None:
    db = tmp_path / "db.sqlite3"
    thread_id = await left_waiting(db)
    app, client = app_on(db)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready(timeout=30)
        assert app.thread_id == thread_id
        await until(lambda: bool(app.thread.pending) and "awaiting approval" in status(app), pilot, timeout=20,
                    what="the restored card and its state")
        await stop(app, pilot, how)
        await until(lambda: not app.thread.pending and last_turn(app).reducer.status == "cancelled", pilot, timeout=20,
                    what="the restored run stopped")
        await app.wait_until_rendered()
        assert "Cancelled (user)" in str(last_turn(app).footer.visual)
        await until(lambda: "idle" in status(app), pilot, what="the status line idle")
        server = await client.status(thread_id)
        assert not server.has_active_run and not server.is_suspended  # stopped where it runs, not only on screen


async def test_a_restored_run_that_resumed_shows_running_and_is_stopped(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    thread_id = await left_waiting(db)
    app, client = app_on(db, demo_delay=0.2)  # the answer after the approval streams slowly
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready(timeout=30)
        await until(lambda: bool(app.thread.pending), pilot, timeout=20, what="the restored card")
        await pilot.press("ctrl+g")
        await until(lambda: app.cards.where_keys_go() == "card", pilot, what="the keys on the card")
        from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS

        await pilot.pause(GRACE_SECONDS)
        await pilot.press("y")  # approve: the run resumes in this process, from its checkpoint
        await until(lambda: not app.thread.pending and "running" in status(app), pilot, timeout=20,
                    what="the resumed run shown running")
        await stop(app, pilot, "escape")
        await until(lambda: last_turn(app).reducer.status == "cancelled", pilot, timeout=20,
                    what="the resumed run stopped")
        await until(lambda: "idle" in status(app), pilot, what="the status line idle")
        server = await client.status(thread_id)
        assert not server.has_active_run and not server.is_suspended


async def test_another_clients_run_on_the_open_thread_is_stopped(tmp_path: Path) -> None:
    """A run another client started on the thread that is open here (a second client of the same
    assistant) is stopped by Esc here, as one started here is (by hand, against 'serve' with
    'instance-ai run --thread': 1 of 1)."""
    app, client = app_on(tmp_path / "db.sqlite3", demo_delay=0.2)  # the other client's answer streams slowly
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready(timeout=30)
        await app.thread.outbox.send("hello")
        await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                    and len(app.conversation.messages) == 2, pilot, timeout=30, what="the first answer")
        thread_id = app.thread_id
        assert thread_id is not None
        other = EmbeddedClient(client.service)  # another client of the same assistant
        await other.send(thread_id, "tell me about workflows")
        await until(lambda: len(app.conversation.messages) == 4 and "running" in status(app), pilot, timeout=20,
                    what="the other client's run shown running")
        await stop(app, pilot, "escape")
        await until(lambda: last_turn(app).reducer.status == "cancelled", pilot, timeout=20,
                    what="the other client's run stopped")
        await app.wait_until_rendered()
        assert "Cancelled (user)" in str(last_turn(app).footer.visual)
        await until(lambda: "idle" in status(app), pilot, what="the status line idle")
        server = await client.status(thread_id)
        assert not server.has_active_run and not server.is_suspended
