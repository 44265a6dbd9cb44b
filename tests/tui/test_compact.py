"""/compact in the app (issue 47): the thread's context becomes notes, a one-line row says so where it
happened, the messages stay on screen, and the status line's context share falls. Embedded, against a
local OpenAI-wire server that enforces a 32 k window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets.compacted_row import CompactedRow
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import make_app
from .test_embedded import type_and_send


def _embedded_app(server: MockOpenAIServer, tmp_path: Path, window: int) -> InstanceAiApp:
    """The app embedded on the mock model server ``local-model`` with a ``window``-token context."""
    settings = Settings.model_validate({
        "model": {"name": "local-model", "base_url": server.base_url, "api_key": "sk-test",
                  "context_windows": {"local-model": window}},
        "db_path": tmp_path / "db.sqlite3",
    })
    return make_app(EmbeddedClient(settings), settings)


def _answer(body: dict[str, Any]) -> MockResponse:
    first = str(body["messages"][0].get("content") or "")
    if first.startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n- to paste logs")
    if "titles" in first:
        return MockResponse(text='{"title": "Logs"}')
    return MockResponse(text="Got it.")


async def test_compact_shows_a_row_keeps_the_messages_and_lowers_the_context_share(tmp_path: Path) -> None:
    async with MockOpenAIServer(_answer, context_window=32_000) as server:
        app = _embedded_app(server, tmp_path, 32_000)
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
            assert text.startswith("⟲ context compacted: 6 older messages became notes (") and "of 32k)" in text
            await until(lambda: app.status_info.context_tokens < before / 3, pilot)
            assert "context" in app.status_line.render().plain
            # the compacted messages are still on screen
            assert len(app.view.assistant_turns()) == 4
            assert sum(1 for r in server.requests if str(r.body["messages"][0]["content"]).startswith(
                OBSERVER_INSTRUCTIONS[:40])) == 1


def _long_notes(body: dict[str, Any]) -> MockResponse:
    first = str(body["messages"][0].get("content") or "")
    if first.startswith(OBSERVER_INSTRUCTIONS[:40]):  # a small model's notes, longer than what they replace
        return MockResponse(text="## The user wants\n" + "- to say hello and to be greeted back politely\n" * 40)
    if "titles" in first:
        return MockResponse(text='{"title": "Hello"}')
    return MockResponse(text="Hi.")


async def test_compact_that_gains_nothing_keeps_the_messages_and_says_so(tmp_path: Path) -> None:
    """Seen against llama.cpp: a /compact of a short thread went 68% → 69% (the notes were as big as the two
    messages they replaced). Now the messages are kept as they were, no notes are saved, and the row says
    there was nothing to gain; the context share does not rise."""
    async with MockOpenAIServer(_long_notes, context_window=8_192) as server:
        app = _embedded_app(server, tmp_path, 8_192)
        async with app.run_test(size=(140, 40)) as pilot:
            await app.wait_until_ready()
            await type_and_send(pilot, app, "hello wf_Inv42")
            await until(lambda: len(app.view.assistant_turns()) == 1 and not app.conversation.is_streaming, pilot,
                        timeout=60)
            await until(lambda: app.status_info.context_tokens > 0 and app.status_info.context_window == 8_192,
                        pilot)
            before = app.status_info.context_tokens
            await type_and_send(pilot, app, "/compact")
            await until(lambda: bool(app.query(CompactedRow)) and not app.conversation.is_streaming, pilot,
                        timeout=60)
            text = str(app.query_one(CompactedRow).render())
            assert text.startswith("⟲ nothing to gain: these 2 messages are already shorter than notes about them "
                                   "(context "), text
            assert text.endswith("% of 8.2k)") and "→" not in text, text
            # the same window in the same words as the status line's (before: "of 8 k" beside "/8.2k")
            assert "/8.2k (" in app.status_line.render().plain, app.status_line.render().plain
            await until(lambda: len(app.view.assistant_turns()) == 2, pilot)
            # the status line shows the same context as the row (the thread's answer counted, no notes added)
            now = app.status_info.context_tokens
            assert before <= now < before + 50 and f"(context {round(100 * now / 8_192)}% of 8.2k)" in text, (now, text)
            # the next question still carries the messages themselves, and no notes
            await type_and_send(pilot, app, "what did I say?")
            await until(lambda: len(app.view.assistant_turns()) == 3 and not app.conversation.is_streaming, pilot,
                        timeout=60)
            asked = [r.body for r in server.requests if r.body["messages"][-1].get("content") == "what did I say?"]
            assert asked and "hello wf_Inv42" in [m.get("content") for m in asked[-1]["messages"]]
            assert "<observations>" not in str(asked[-1]["messages"][0]["content"])


async def test_compact_is_no_message_to_edit(tmp_path: Path) -> None:
    """Issue 45 (seen in tmux): /compact showed as a message of the person's, and /edit after it put
    "/compact" back in the prompt as a message. Its record reads as a command, has no `e`, and /edit
    goes back to the message the person wrote."""
    from instance_ai_tui.tui.widgets.turns import UserMessage

    async with MockOpenAIServer(_long_notes, context_window=8_192) as server:
        app = _embedded_app(server, tmp_path, 8_192)
        async with app.run_test(size=(140, 40)) as pilot:
            await app.wait_until_ready()
            await type_and_send(pilot, app, "hello wf_Inv42")
            await until(lambda: len(app.view.assistant_turns()) == 1 and not app.conversation.is_streaming, pilot,
                        timeout=60)
            await type_and_send(pilot, app, "/compact")
            await until(lambda: bool(app.query(CompactedRow)) and not app.conversation.is_streaming, pilot,
                        timeout=60)
            command = next(m for m in app.query(UserMessage) if m.text == "/compact")
            assert command.has_class("-command") and "a command, not a message" in str(command.render())
            assert command.check_action("edit_message", ()) is False  # no `e` on it, none in the footer
            await type_and_send(pilot, app, "/edit")
            await until(lambda: app.prompt.text == "hello wf_Inv42", pilot, timeout=30)
