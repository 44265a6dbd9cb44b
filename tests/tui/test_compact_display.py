"""/compact's run shown as what it is, everywhere: not a message of the person's but a command and
the compaction marker its run leaves (issue 45). The live view draws the command's record muted
("/compact  · a command, not a message") and the marker "⟲ …" (``tests/tui/test_compact.py``);
the export (``instance-ai export``, ``/export``) and the screen kept for the next start said
"/compact" as a user message and left the marker out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Static

from instance_ai_tui.cli.export import export_thread
from instance_ai_tui.cli.tui import save_screen
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from instance_ai_tui.tui import screen_cache
from instance_ai_tui.tui.widgets.compacted_row import CompactedRow
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import make_app, recorded
from .test_embedded import type_and_send


def _answer(body: dict[str, Any]) -> MockResponse:
    first = str(body["messages"][0].get("content") or "")
    if first.startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n- a greeting")
    if "titles" in first:
        return MockResponse(text='{"title": "Hello"}')
    return MockResponse(text="Hi there.")


async def test_the_export_and_the_kept_screen_show_compact_as_a_command_and_its_marker(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    async with MockOpenAIServer(_answer, context_window=8_192) as server:
        settings = Settings.model_validate({
            "model": {"name": "local-model", "base_url": server.base_url, "api_key": "sk-test",
                      "context_windows": {"local-model": 8_192}},
            "db_path": db,
        })
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(120, 36)) as pilot:
            await app.wait_until_ready()
            await type_and_send(pilot, app, "hello, say hi")
            await until(lambda: len(app.view.assistant_turns()) == 1 and not app.conversation.is_streaming, pilot,
                        timeout=60)
            await type_and_send(pilot, app, "/compact the greeting")
            await until(lambda: bool(app.query(CompactedRow)) and not app.conversation.is_streaming, pilot,
                        timeout=60)
            marker = str(app.query_one(CompactedRow).render())  # the live view's words
            thread_id = app.thread_id
            assert thread_id is not None and marker.startswith("⟲ ")
        save_screen(app, db)
        markdown = await export_thread(settings, thread_id, "md")

    # the export: the person's message under "User", the command not, and the marker in its place
    users = [part for part in markdown.split("\n## ") if part.startswith("👤 User")]
    assert len(users) == 1 and "hello, say hi" in users[0], markdown
    assert "/compact the greeting  · a command, not a message" in markdown, markdown
    assert marker in markdown, markdown

    # the screen kept for the next start: the same
    cached = screen_cache.load(db)
    assert cached is not None
    assert [entry.role for entry in cached.entries] == ["user", "assistant", "command", "marker"], cached.entries
    assert cached.entries[2].text == "/compact the greeting"
    assert cached.entries[3].text == marker
    shown = make_app(recorded([]))  # (the kept screen drawn by the app's stylesheet; no database opened)
    async with shown.run_test(size=(120, 36)):
        turns = screen_cache.CachedTurns(cached)
        await shown.screen.mount(turns)
        lines = [(str(widget.render()), widget.classes) for widget in turns.query(Static)]
    assert ("/compact the greeting  · a command, not a message", frozenset({"cached-command"})) in lines, lines
    assert not any("/compact" in text and "cached-user" in classes for text, classes in lines), lines
