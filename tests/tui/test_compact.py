"""/compact in the app (issue 47): the thread's context becomes notes, a one-line row says so where it
happened, the messages stay on screen, and the status line's context share falls. Embedded, against a
local OpenAI-wire server that enforces a 32 k window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from instance_ai_tui.tui.widgets.compacted_row import CompactedRow
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import make_app
from .test_embedded import type_and_send


def _answer(body: dict[str, Any]) -> MockResponse:
    first = str(body["messages"][0].get("content") or "")
    if first.startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n- to paste logs")
    if "titles" in first:
        return MockResponse(text='{"title": "Logs"}')
    return MockResponse(text="Got it.")


async def test_compact_shows_a_row_keeps_the_messages_and_lowers_the_context_share(tmp_path: Path) -> None:
    async with MockOpenAIServer(_answer, context_window=32_000) as server:
        settings = Settings.model_validate({
            "model": {"name": "local-model", "base_url": server.base_url, "api_key": "sk-test",
                      "context_windows": {"local-model": 32_000}},
            "db_path": tmp_path / "db.sqlite3",
        })
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(140, 40)) as pilot:
            await app.wait_until_ready()
            for index in range(3):
                await type_and_send(pilot, app, f"log {index}: " + "a long log line " * 400)
                await until(lambda i=index: len(app.view.assistant_turns()) == i + 1
                            and not app.conversation.is_streaming, pilot, timeout=60)
            await until(lambda: app.status_info.context_tokens > 0 and app.status_info.context_window == 32_000,
                        pilot)
            before = app.status_info.context_tokens
            await type_and_send(pilot, app, "/compact the log numbers")
            await until(lambda: bool(app.query(CompactedRow)) and not app.conversation.is_streaming, pilot,
                        timeout=60)
            row = app.query_one(CompactedRow)
            text = str(row.render())
            assert text.startswith("⟲ context compacted: 6 older messages became notes (") and "of 32 k)" in text
            await until(lambda: app.status_info.context_tokens < before / 3, pilot)
            assert "context" in app.status_line.render().plain
            # the compacted messages are still on screen
            assert len(app.view.assistant_turns()) == 4
            assert sum(1 for r in server.requests if str(r.body["messages"][0]["content"]).startswith(
                OBSERVER_INSTRUCTIONS[:40])) == 1
