"""MCP tools in the app (issue 28): the real app on ``EmbeddedClient``, real MCP servers written
with the SDK (``tests/support/mcp_servers.py``) and a scripted OpenAI-wire model.

A write tool's card asks, ``y`` approves and its result shows on the card; Esc cancels a slow
call whose progress shows while it runs; ``/mcp`` lists the servers with a failed one's stderr
and restarts it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.screens.mcp import McpScreen
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ApprovalCard
from tests.support.mcp_servers import stdio_config
from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order
from tests.support.waiting import until

from .scripts import SIZE, make_app


def card_of(app: Any) -> Any:
    node = app.focused
    while node is not None and not isinstance(node, ApprovalCard):
        node = node.parent
    return node


script = answers_in_order  # the agent's requests answered in order


def settings_for(tmp_path: Path, model: MockOpenAIServer, servers: dict[str, Any]) -> Settings:
    return Settings.model_validate({
        "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
        "db_path": tmp_path / "db.sqlite3",
        "mcp": {"servers": servers},
    })


async def servers_started(app: Any, pilot: Any) -> None:
    """Until no server is starting: a message sent before goes without its tools (they join a
    later step); a person sends once ``/mcp`` shows them ready, as these scripts do."""
    mcp = app.client.service.mcp
    await until(lambda: not mcp.starting(), pilot, timeout=60, what="the MCP servers started (or failed)")


def tool_cards(app: Any) -> dict[str, Any]:
    turn = app.view.assistant_turns()[-1]
    return {card.tc.tool_name: card for card in turn.cards.values()}


async def test_write_tool_card_approve_and_result_then_mcp_view_with_stderr_and_restart(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with MockOpenAIServer(script(
        MockResponse.call("mcp__notes__write_note", {"text": "buy milk"}),
        MockResponse(text="Your note is saved."),
    )) as model:
        settings = settings_for(tmp_path, model, {
            "notes": stdio_config("tools", env={"MCP_TEST_LOG": str(log)}),
            "broken": stdio_config("fail"),
        })
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            await servers_started(app, pilot)
            app.prompt.load_text("save a note: buy milk")
            await pilot.press("enter")
            await until(lambda: bool(app.thread.pending), pilot)
            await pilot.press("ctrl+g")
            await until(lambda: card_of(app) is not None, pilot)
            waiting = tool_cards(app)["mcp__notes__write_note"]
            assert waiting.tc.confirmation is not None
            assert waiting.tc.confirmation.message.startswith("Run `write_note` of the MCP server `notes`")
            await pilot.pause(GRACE_SECONDS)
            await pilot.press("y")
            await until(lambda: not app.conversation.is_streaming, pilot)
            await app.wait_until_rendered()
            cards = tool_cards(app)
            note = cards["mcp__notes__write_note"]
            assert note.shown_state is not None and note.shown_state.kind == "done"
            assert "note saved: buy milk" in str(note.header.visual)
            assert log.read_text().splitlines() == ["write_note buy milk"]

            app.prompt.load_text("/mcp")
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, McpScreen) and bool(app.screen.servers), pilot)
            screen = app.screen
            assert isinstance(screen, McpScreen)
            await until(lambda: {s.name: s.state for s in screen.servers} == {"notes": "ready", "broken": "failed"},
                        pilot)
            await pilot.press("down")  # the broken server
            await until(lambda: "broken — failed" in str(screen.detail.visual), pilot)
            detail = str(screen.detail.visual)
            assert "did not start" in detail
            assert "MCP_TEST_TOKEN is not set; cannot log in" in detail  # its stderr
            await pilot.press("r")
            await until(lambda: next(s for s in screen.servers if s.name == "broken").starts == 2
                        and next(s for s in screen.servers if s.name == "broken").state == "failed", pilot)
            await pilot.press("up")
            await until(lambda: "mcp__notes__write_note (asks first)" in str(screen.detail.visual), pilot)
            assert "mcp__notes__lookup (read-only, runs)" in str(screen.detail.visual)
            await pilot.press("escape")
            await until(lambda: not isinstance(app.screen, McpScreen), pilot)


async def test_slow_tool_progress_shows_and_esc_cancels_the_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with MockOpenAIServer(script(MockResponse.call("mcp__counter__slow", {"steps": 50}))) as model:
        settings = settings_for(tmp_path, model, {"counter": stdio_config("tools", env={"MCP_TEST_LOG": str(log)})})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            await servers_started(app, pilot)
            app.prompt.load_text("count to fifty slowly")
            await pilot.press("enter")
            await until(lambda: "of 50" in str(app.status_info.message or ""), pilot)
            assert "mcp__counter__slow" in str(app.status_info.message)

            def card_progress() -> str:
                cards = tool_cards(app) if app.view.assistant_turns() else {}
                card = cards.get("mcp__counter__slow")
                return str(card.header.visual) if card is not None and card.state == "running" else ""

            await until(lambda: "of 50" in card_progress(), pilot)  # on the card, while it runs
            assert "% step " in card_progress()
            steps = log.read_text().count("slow step")
            await pilot.press("escape")
            await until(lambda: not app.conversation.is_streaming, pilot)
            await app.wait_until_rendered()
            slow = tool_cards(app)["mcp__counter__slow"]
            assert slow.shown_state is not None and slow.shown_state.label == "not run (cancelled)"  # not "Skipped"
            await asyncio.sleep(1.0)  # the scenario: a window in which the stopped tool must not go on
            assert log.read_text().count("slow step") <= steps + 2 and "slow done" not in log.read_text()
