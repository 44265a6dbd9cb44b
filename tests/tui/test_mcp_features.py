"""The MCP servers in the app, by keyboard, against the protocol's reference server-everything
(npm): Tab completes ``@server:uri`` and the attachment shows under the message and reaches the
model; a prompt with arguments runs as ``/mcp__…`` through its form; a server's form is a card
answered key by key; ``/mcp`` shows a project's server and ``a`` approves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.screens.mcp import McpScreen
from instance_ai_tui.tui.screens.mcp_prompt import McpPromptForm
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS
from instance_ai_tui.tui.widgets.elicitation_card import ElicitationCard
from tests.support.mcp_peers import everything_stdio
from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order
from tests.support.waiting import until

from .scripts import SIZE, make_app

FEATURES = "demo://resource/static/document/features.md"


def settings_for(tmp_path: Path, model: MockOpenAIServer, servers: dict[str, Any], **extra: Any) -> Settings:
    return Settings.model_validate({
        "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
        "db_path": tmp_path / "db.sqlite3", "mcp": {"servers": servers}, **extra})


async def ready(app: Any, pilot: Any) -> None:
    await app.wait_until_ready()
    mcp = app.client.service.mcp
    await until(lambda: not mcp.starting(), pilot, timeout=90, what="the MCP servers started")


def user_text(model: MockOpenAIServer) -> str:
    messages = [r.body for r in model.requests if r.body.get("tools")][-1]["messages"]
    content = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


async def test_tab_completes_a_resource_and_the_attachment_reaches_the_model(tmp_path: Path) -> None:
    async with MockOpenAIServer(answers_in_order(MockResponse(text="A summary."))) as model:
        settings = settings_for(tmp_path, model, {"ev": everything_stdio()})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            await pilot.press(*"summarise @e")
            await pilot.press("tab")
            await until(lambda: app.prompt.text == "summarise @ev:", pilot)
            await pilot.press(*"demo://resource/static/document/fea")
            await pilot.press("tab")
            await until(lambda: app.prompt.text == f"summarise @ev:{FEATURES}", pilot)
            await pilot.press("enter")
            await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                        and any(m.role == "assistant" for m in app.conversation.messages), pilot)
            from instance_ai_tui.tui.widgets.turns import UserMessage

            await until(lambda: any("📎" in w.text for w in app.query(UserMessage)), pilot)  # drawn, not only known
            bubble = next(iter(app.query(UserMessage))).text
    assert bubble.startswith(f"summarise @ev:{FEATURES}") and f"📎 @ev:{FEATURES} (text/markdown" in bubble
    assert f'<attachment source="@ev:{FEATURES}"' in user_text(model)


async def test_a_prompt_with_arguments_runs_through_its_form(tmp_path: Path) -> None:
    async with MockOpenAIServer(answers_in_order(MockResponse(text="Nice weather."))) as model:
        settings = settings_for(tmp_path, model, {"ev": everything_stdio()})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            await pilot.press(*"/mcp__ev__args")
            await pilot.press("tab")
            await until(lambda: app.prompt.text == "/mcp__ev__args-prompt", pilot)
            palette = {c.title: c.help for c in app.get_system_commands(app.screen)}  # listed in the palette
            assert "(/mcp__ev__args-prompt)" in palette["MCP ev: args-prompt"]
            assert "/mcp__ev__args-prompt city=…" in app.sender.mcp.help()  # and in /help
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, McpPromptForm), pilot)
            await pilot.press(*"Lisbon", "enter", *"Lisboa", "enter")
            await until(lambda: not isinstance(app.screen, McpPromptForm), pilot)
            await until(lambda: app.conversation is not None and any(
                m.role == "assistant" and m.content for m in app.conversation.messages), pilot)
    said = user_text(model)
    assert "Lisbon" in said and "Lisboa" in said  # the prompt's text was the message


async def test_a_servers_form_is_a_card_answered_by_keyboard(tmp_path: Path) -> None:
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__ev__trigger-elicitation-request", {}), MockResponse(text="Thanks."),
    )) as model:
        settings = settings_for(tmp_path, model, {"ev": everything_stdio()})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            await pilot.press(*"fill in the form", "enter")
            await until(lambda: bool(app.thread.pending), pilot, timeout=60)  # the call's approval first
            await pilot.press("ctrl+g")
            await pilot.pause(GRACE_SECONDS)
            await pilot.press("y")
            await until(lambda: any(isinstance(c, ElicitationCard) for c in app.query(ElicitationCard)), pilot,
                        timeout=60)  # then the server's form, a card of its own under the same call
            await pilot.press("ctrl+g")
            await until(lambda: isinstance(app.focused, ElicitationCard) or (
                app.focused is not None and any(isinstance(n, ElicitationCard) for n in app.focused.ancestors)), pilot)
            card = app.focused if isinstance(app.focused, ElicitationCard) else next(
                n for n in app.focused.ancestors if isinstance(n, ElicitationCard))
            await pilot.pause(GRACE_SECONDS)
            await pilot.press(*"Ada Lovelace", "enter")  # the first field: a name (required)
            for _ in range(len(card.questions) - 1):  # the others keep their defaults: skipped
                page = card.page
                if card._needs_text(page):
                    await pilot.press("escape")  # out of the text field: the card's keys (s skips)
                await pilot.press("s")
                await until(lambda page=page: card.page == page + 1, pilot)
            await until(lambda: card.on_review, pilot)
            from textual.widgets import Static

            review = "\n".join(str(w.render()) for w in card.query(Static))
            assert "42 (the default)" in review and "“Ada Lovelace”" in review  # a kept default says so
            await pilot.press("enter")
            await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                        and any(m.role == "assistant" and m.content for m in app.conversation.messages), pilot,
                        timeout=60)
    told = [r.body for r in model.requests if r.body.get("tools")][-1]["messages"][-1]
    assert told["role"] == "tool" and "Name: Ada Lovelace" in told["content"]


async def test_mcp_view_shows_a_projects_server_and_a_approves_it(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    ev = everything_stdio()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"ev": {"command": ev["command"],
                                                                           "args": ev["args"]}}}))
    async with MockOpenAIServer(answers_in_order()) as model:
        settings = settings_for(tmp_path, model, {}, workspace_root=str(workspace))
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            app.prompt.load_text("/mcp")
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, McpScreen) and bool(app.screen.servers), pilot)
            screen = app.screen
            assert isinstance(screen, McpScreen)
            assert screen.servers[0].state == "unapproved"
            detail = str(screen.detail.visual)
            # why it waits and how to start it, said once (the server's note said it a second time)
            assert "a approves it" in detail and detail.count("from the project's") == 1, detail
            await pilot.press("a")
            await until(lambda: screen.servers and screen.servers[0].state == "ready", pilot, timeout=90)
            assert "prompts (slash commands): /mcp__ev__simple-prompt" in str(screen.detail.visual)
