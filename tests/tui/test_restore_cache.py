"""The last thread's newest screenful, kept beside the database at quit and drawn by the next
first frame (``tui.screen_cache``, ``cli.tui.save_screen``); the start-up's held collector
(``tui.startup.release_collector``)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
from pathlib import Path

from textual.widgets import Static

from instance_ai_tui.cli.tui import early_db_path, save_screen
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.tui import screen_cache
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup, release_collector
from instance_ai_tui.tui.widgets.compacted_row import CompactedRow
from tests.support.waiting import until

from .scripts import SIZE

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123"


def demo_settings(db: Path) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": db})


async def a_used_thread(db: Path, *, compact: bool = False) -> str:
    """Run the app once on ``db``: one message (with a secret in it) answered by the demo model
    (``compact``: then ``/compact``), then quit; ``save_screen`` keeps its screen as ``cli.tui`` does.
    Returns the thread's id."""
    settings = demo_settings(db)
    app = InstanceAiApp(EmbeddedClient(settings, demo_delay=0.001), settings, watch_themes=False,
                        persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send(f"list my workflows, my key is {SECRET}")
        await until(lambda: app.conversation is not None and len(app.conversation.messages) == 2
                    and not app.conversation.is_streaming, pilot, timeout=20, what="the demo answer")
        if compact:
            app.prompt.focus()
            app.prompt.load_text("/compact")
            await pilot.press("enter")
            await until(lambda: app.conversation is not None and len(app.conversation.messages) == 4
                        and not app.conversation.is_streaming and bool(app.query(CompactedRow)), pilot,
                        what="the compaction's row")
        await app.wait_until_rendered()
        thread_id = app.thread_id
    assert thread_id is not None
    save_screen(app, db)
    return thread_id


async def test_the_screen_kept_at_quit_is_read_back_redacted_and_private(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    thread_id = await a_used_thread(db)
    path = screen_cache.cache_path(db)
    assert path.parent == db.parent and os.stat(path).st_mode & 0o777 == 0o600
    assert SECRET not in path.read_text(encoding="utf-8")
    cached = screen_cache.load(db)
    assert cached is not None and cached.thread_id == thread_id
    assert [entry.role for entry in cached.entries] == ["user", "assistant"]
    assert "[redacted]" in cached.entries[0].text and "list my workflows" in cached.entries[0].text
    assert cached.entries[1].text.strip()  # the demo answer's text
    assert screen_cache.load(db, thread_id) is not None
    conversation = Conversation(thread_id)
    conversation.title = f"deploy with {SECRET}"
    assert screen_cache.title_of(conversation) == "deploy with [redacted]"
    assert screen_cache.load(db, "another-thread") is None  # --thread names another one


async def test_a_database_written_since_the_quit_makes_the_screen_invalid(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db)
    assert screen_cache.load(db) is not None
    async with SqliteStore(db) as store:  # another process (a server, `instance-ai run`) wrote to it
        await store.create_thread("written-later", title="later")
    assert screen_cache.load(db) is None


async def test_a_cache_of_another_database_or_version_is_not_shown(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db)
    data = json.loads(screen_cache.cache_path(db).read_text(encoding="utf-8"))
    other = tmp_path / "other.sqlite3"
    other.write_bytes(db.read_bytes())
    os.utime(other, ns=(db.stat().st_atime_ns, db.stat().st_mtime_ns))
    screen_cache.cache_path(other).write_text(json.dumps(data), encoding="utf-8")  # copied beside another file
    assert screen_cache.load(other) is None
    screen_cache.cache_path(db).write_text(json.dumps({**data, "version": 0}), encoding="utf-8")
    assert screen_cache.load(db) is None
    screen_cache.cache_path(db).write_text("{not json", encoding="utf-8")
    assert screen_cache.load(db) is None


def gated_app(db: Path) -> tuple[InstanceAiApp, asyncio.Event]:
    gate = asyncio.Event()

    async def load() -> Started:
        await gate.wait()
        settings = demo_settings(db)
        return Started(EmbeddedClient(settings, demo_delay=0.001), settings)

    app = InstanceAiApp(startup=Startup(FirstFramePrefs(), load), watch_themes=False, persist_theme=False)
    return app, gate


def shown_text(app: InstanceAiApp) -> str:
    return "\n".join(str(widget.render()) for turns in app.query(screen_cache.CachedTurns)
                     for widget in turns.query(Static))


async def test_the_first_frame_shows_the_kept_screen_until_the_thread_replaces_it(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    thread_id = await a_used_thread(db)
    cached = screen_cache.load(db)
    assert cached is not None
    app, gate = gated_app(db)
    app.show_cached(cached)
    async with app.run_test(size=SIZE) as pilot:
        # the first frame: no settings, no client, no store yet, and the thread's newest turns on screen
        await until(lambda: app.stats.first_frame_at is not None, pilot, what="the first frame")
        assert app.client.mode == "starting"
        assert "list my workflows" in shown_text(app) and cached.entries[1].text[:20] in shown_text(app)
        assert not app.view.placeholder.display  # no "Loading…" under it
        gate.set()
        await app.wait_until_ready()
        await app.wait_until_rendered()
        assert app.thread_id == thread_id
        # the real view replaces it once its turns have mounted (not before: no empty frame between)
        await until(lambda: not app.query(screen_cache.CachedTurns), pilot, what="the kept screen replaced")
        assert list(app.view.turns) and all(turn.display for turn in app.view.turns.values())


def listed(app: InstanceAiApp) -> list[str]:
    from textual.widgets import OptionList

    options = app.thread_list.query_one(OptionList)
    return [str(options.get_option_at_index(index).prompt) for index in range(options.option_count)]


async def test_the_thread_list_beside_the_kept_screen_does_not_say_no_threads(tmp_path: Path) -> None:
    """Seen in tmux (issue 45): `instance-ai --continue` drew the kept thread at once, and beside it the
    thread list said "No threads yet" until the threads were read."""
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db)
    cached = screen_cache.load(db)
    assert cached is not None
    app, gate = gated_app(db)
    app.show_cached(cached)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(lambda: app.stats.first_frame_at is not None, pilot, what="the first frame")
        assert app.client.mode == "starting" and app.thread_list.display
        assert not any("No threads yet" in row for row in listed(app)), listed(app)
        assert any("Reading the threads…" in row for row in listed(app)), listed(app)
        gate.set()
        await app.wait_until_ready()
        await until(lambda: cached.thread_id in app.thread_list.visible_thread_ids(), pilot, what="the thread listed")
        assert not any("Reading the threads" in row for row in listed(app)), listed(app)


def column_of(app: InstanceAiApp, text: str) -> int | None:
    """The screen column where ``text`` is drawn (its first row), None when it is not on screen."""
    rows = ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]
    return next((row.index(text) for row in rows if text in row), None)


async def test_the_kept_answer_is_drawn_where_the_real_view_draws_it(tmp_path: Path) -> None:
    """Seen in tmux (issue 45): the kept screen's answer rows were two columns left of the real view's, so the
    whole answer moved right when the real view replaced it."""
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db)
    cached = screen_cache.load(db)
    assert cached is not None
    line = next(text for text in cached.entries[1].text.splitlines() if text.strip())[:14]
    app, gate = gated_app(db)
    app.show_cached(cached)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: column_of(app, line) is not None, pilot, what=f"{line!r} in the first frame")
        assert app.client.mode == "starting"
        kept = column_of(app, line)
        gate.set()
        await app.wait_until_ready()
        await until(lambda: not app.query(screen_cache.CachedTurns) and column_of(app, line) is not None, pilot,
                    what="the real view")
        assert column_of(app, line) == kept, (line, kept, column_of(app, line))


async def test_the_kept_compaction_marker_is_drawn_where_the_real_view_draws_it(tmp_path: Path) -> None:
    """Seen in tmux (160x48, ``instance-ai --continue``): the kept screen drew "⟲ context compacted …" one column
    right of the real view's row (it was a line of the answer's text, whose rows sit one column further in), so
    the marker moved left when the real view replaced it."""
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db, compact=True)
    cached = screen_cache.load(db)
    assert cached is not None
    marker = "⟲ context compacted"
    app, gate = gated_app(db)
    app.show_cached(cached)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: column_of(app, marker) is not None, pilot, what="the marker in the first frame")
        assert app.client.mode == "starting"
        kept = column_of(app, marker)
        gate.set()
        await app.wait_until_ready()
        await until(lambda: not app.query(screen_cache.CachedTurns) and column_of(app, marker) is not None, pilot,
                    what="the real view's marker")
        assert column_of(app, marker) == kept, (kept, column_of(app, marker))


async def test_a_kept_screen_of_another_thread_goes_at_once(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    await a_used_thread(db)
    cached = screen_cache.load(db)
    assert cached is not None
    async with SqliteStore(db) as store:  # a newer thread: the start opens that one
        await store.create_thread("newer", title="newer")
    app, gate = gated_app(db)
    app.show_cached(cached)  # (as if shown: the fingerprint no longer matches, load would say None)
    opened: list[str | None] = []
    real_open = app.threads.open_first

    async def open_first(thread_id: str | None) -> None:
        opened.append(thread_id)
        shown = any(widget.display for widget in app.query(screen_cache.CachedTurns))
        opened.append("cached shown" if shown else "cached gone")
        await real_open(thread_id)

    app.threads.open_first = open_first  # type: ignore[method-assign]  # (start-up opens the first thread here)
    async with app.run_test(size=SIZE):
        gate.set()
        await app.wait_until_ready()
    assert opened == ["newer", "cached gone"]


def test_the_database_is_known_before_the_settings_only_for_an_embedded_latest_start(tmp_path: Path,
                                                                                     monkeypatch: object) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(config))
    monkeypatch.delenv("INSTANCE_AI_DB", raising=False)

    def args(**values: object) -> argparse.Namespace:
        return argparse.Namespace(**{"tui_start": None, "url": None, "db": None, "tui_thread": None, **values})

    assert early_db_path(args(db=tmp_path / "a.sqlite3")) == tmp_path / "a.sqlite3"
    assert early_db_path(args(db=tmp_path / "a.sqlite3", tui_start="new")) is None
    assert early_db_path(args(db=tmp_path / "a.sqlite3", tui_start="pick")) is None
    assert early_db_path(args(url="http://127.0.0.1:1")) is None
    monkeypatch.setenv("INSTANCE_AI_DB", str(tmp_path / "env.sqlite3"))
    assert early_db_path(args()) == tmp_path / "env.sqlite3"
    monkeypatch.delenv("INSTANCE_AI_DB")
    config.write_text(f'db_path = "{tmp_path / "file.sqlite3"}"\n', encoding="utf-8")
    assert early_db_path(args()) == tmp_path / "file.sqlite3"
    config.write_text('[remote]\nurl = "http://127.0.0.1:1"\n', encoding="utf-8")
    assert early_db_path(args()) is None


async def test_the_collector_held_at_start_runs_again_once_the_typed_message_went_out() -> None:
    ready = asyncio.Event()
    queue = ["hello"]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        task = asyncio.create_task(release_collector(ready, lambda: bool(queue)))
        await asyncio.sleep(0.1)  # the scenario: a window in which the collector stays off
        assert not gc.isenabled()  # the first thread is not open yet
        ready.set()
        await asyncio.sleep(0.15)  # the scenario: a window in which the collector stays off
        assert not gc.isenabled()  # the message typed at start waits to go out
        queue.clear()
        await asyncio.wait_for(task, 2)
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_the_restore_benchmark_removes_the_file_the_app_keeps(tmp_path: Path) -> None:
    """``benchmarks/restore_from_launch.py`` names the file itself (importing the module would
    grow its process with Textual, and a child's peak RSS counts the image it was forked from)."""
    import importlib.util
    import sys

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("restore_from_launch", root / "benchmarks" / "restore_from_launch.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root / "benchmarks"))
    db = tmp_path / "x.sqlite3"
    assert module.cache_path(db) == screen_cache.cache_path(db)


def test_the_kept_answer_reads_as_the_view_draws_it_not_as_markdown_source() -> None:
    """The cached screen is what the person saw, not Markdown's marks: no ``**``, no backticks;
    quotes, lists, tables and code keep their shape."""
    text = screen_cache.markdown_plain(
        "Done! I created **Weather to Slack** (`wf-104`).\n\n> connect your *Slack* credential\n\n"
        "1. one\n2. two\n\n- a\n- b\n\n| node | type |\n|---|---|\n| Slack | slack |\n\n```\nx = 1\n```\n")
    assert text.split("\n") == [
        "Done! I created Weather to Slack (wf-104).", "", "▌ connect your Slack credential", "",
        "1. one", "2. two", "", "• a", "• b", "", "node │ type", "Slack │ slack", "", "  x = 1"]


def test_the_kept_tool_lines_say_how_each_call_ended() -> None:
    """A tool line in the cached screen carries the state the tool card shows: ✓ for done, ✗ and
    n8n's words for a failure (never a bare name that reads as success)."""
    from instance_ai_tui.protocol.tree import AgentNode

    node = AgentNode.model_validate({
        "agentId": "a1", "role": "orchestrator",
        "toolCalls": [
            {"toolCallId": "t1", "toolName": "plan", "args": {}, "isLoading": False, "result": {"ok": True}},
            {"toolCallId": "t2", "toolName": "executions", "args": {}, "isLoading": False,
             "result": {"executionId": "9", "status": "error", "nodeErrors": [{"nodeName": "Boom", "message": "boom"}]}},
        ],
        "children": [{"agentId": "b1", "role": "workflow builder", "status": "completed"}],
        "timeline": [{"type": "reasoning", "content": "first a plan"},
                     {"type": "tool-call", "toolCallId": "t1"}, {"type": "child", "agentId": "b1"},
                     {"type": "tool-call", "toolCallId": "t2"}, {"type": "text", "content": "It **failed**."}],
    })
    assert screen_cache.answer_text(node).split("\n") == [
        "▸ ∴ Reasoning · 3 words", "▸ ✓ plan", "│ ▸ ◆ workflow builder  ✓ done",
        "▸ ✗ executions  failed: the execution failed at node Boom: boom", "", "It failed."]
