"""A sent message is never lost (issue 39 item 1): the outbox is the truth.

The database is locked by a second process mid-session (a real ``sqlite3`` process holding
``BEGIN EXCLUSIVE`` on the app's file): the message is kept in the outbox with the reason — the
database is locked by another program, its PID, it will be sent when it is free —, no bubble shows
for it meanwhile, and once the other program lets go it is sent, stored and answered.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.waiting import until

from .scripts import SIZE

HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


@contextmanager
def held(db: Path) -> Iterator[subprocess.Popen[str]]:
    """Another program holds the database's write lock until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        if holder.stdin is not None and not holder.stdin.closed:
            holder.stdin.write("\n")
            holder.stdin.close()
        holder.wait(timeout=10)


def users(app: InstanceAiApp) -> list[str]:
    return [m.content for m in (app.conversation.messages if app.conversation else []) if m.role == "user"]


def rows(app: InstanceAiApp) -> str:
    return " ".join(str(w.render()) for w in app.query(".queued-text"))


def notes(app: InstanceAiApp) -> str:
    return " ".join(str(n.message) for n in app._notifications)


async def test_a_message_sent_while_another_program_locks_the_database_is_kept_and_sent_once_free(
        tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
    client = EmbeddedClient(settings, demo_delay=0.002)
    app = InstanceAiApp(client, settings, watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready(timeout=30)
        await app.thread.outbox.send("first question")
        await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                    and len(app.conversation.messages) == 2, pilot, timeout=30, what="the first answer")
        thread_id = app.thread_id
        assert thread_id is not None
        with held(db) as holder:
            app.prompt.load_text("second question")
            app.prompt.focus()
            await pilot.press("enter")
            # the store waits for the lock (its busy timeout), then says who holds it
            await until(lambda: "database is locked" in rows(app), pilot, timeout=30, what="the held row")
            shown = rows(app)
            assert f"locked by another program (PID {holder.pid})" in shown, shown
            assert "it will be sent when it is free: second question" in shown, shown
            await until(lambda: f"PID {holder.pid}" in notes(app) and "will be sent when it is free" in notes(app),
                        pilot, what="the notification")
            # kept, not lost: in the outbox, no bubble for it, nothing swallowed silently
            assert [item.text for item in app.thread.outbox.queue.items] == ["second question"]
            assert users(app) == ["first question"]
            assert app.prompt.text == ""
            stored = await client.messages(thread_id)
            assert [m.content for m in stored.messages if m.role == "user"] == ["first question"]
        # the other program let go: the next try sends it
        await until(lambda: users(app) == ["first question", "second question"], pilot, timeout=40,
                    what="the message sent once the database is free")
        await until(lambda: not app.conversation.is_streaming and len(app.conversation.messages) == 4, pilot,
                    timeout=30, what="its answer")
        assert not app.thread.outbox.queue.items and not rows(app)
        stored = await client.messages(thread_id)
        assert [m.content for m in stored.messages if m.role == "user"] == ["first question", "second question"]


async def test_an_answer_held_by_a_lock_mid_run_says_so_and_is_kept(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Another program takes the lock while the answer streams (found by hand): the run's progress
    waits for the storage. The status line says that — "waiting for the storage N s: the database is
    locked by another program (PID N)" — not "waiting for the model" (before: the model was blamed);
    once the lock goes, the whole answer is there and stored."""
    from instance_ai_tui.assistant.service import InstanceAI
    from instance_ai_tui.bus.memory import InProcessBus
    from instance_ai_tui.store.sqlite import SqliteStore
    from instance_ai_tui.tui import run_clock
    from tests.support.openai_server import MockOpenAIServer, MockResponse

    monkeypatch.setattr(run_clock, "WAIT_AFTER", 0.5)  # (5 s in the app)
    answer = " ".join(f"word{index}" for index in range(60))
    db = tmp_path / "db.sqlite3"
    async with MockOpenAIServer([MockResponse(text=answer, chunk_delay=0.03)]) as server:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": server.base_url, "api_key": "sk-test"}, "db_path": db})
        store = SqliteStore(db, busy_timeout=0.2)  # (the app's waits 5 s for a lock before it says so)
        service = InstanceAI(store, InProcessBus(store), model="gpt-test", settings=settings)
        await service.start()
        try:
            client = EmbeddedClient(service)
            app = InstanceAiApp(client, settings, watch_themes=False, persist_theme=False)
            async with app.run_test(size=SIZE) as pilot:
                await app.wait_until_ready(timeout=30)
                await app.thread.outbox.send("hi")
                await until(lambda: app.conversation is not None and "word3 " in app.conversation.messages[-1].content,
                            pilot, timeout=30, what="the answer streaming")
                with held(db) as holder:
                    await until(lambda: "waiting for the storage" in app.status_line.plain, pilot, timeout=30,
                                what="the status line saying what the run waits for")
                    said = app.status_line.plain
                    assert f"the database is locked by another program (PID {holder.pid})" in said, said
                    assert "waiting for the model" not in said
                await until(lambda: not app.conversation.is_streaming, pilot, timeout=40, what="the answer's end")
                assert app.conversation.messages[-1].content.strip() == answer
                assert "waiting for the storage" not in app.status_line.plain
                stored = await client.messages(app.thread_id or "")
                assert [m.role for m in stored.messages] == ["user", "assistant"]
        finally:
            await service.shutdown()
