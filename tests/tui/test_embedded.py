"""The app on the real product path: ``EmbeddedClient`` + the offline demo model + SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ApprovalCard
from instance_ai_tui.tui.widgets.questions_card import QuestionsCard
from instance_ai_tui.tui.widgets.turns import SubAgentSection, TextBlock, UserMessage
from tests.support.waiting import until

from .scripts import SIZE, make_app

BUILD = "every morning send the weather forecast to Slack"


def settings_for(tmp_path: Path) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})


async def type_and_send(pilot: Any, app: Any, text: str) -> None:
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


def focused_card(app: Any, kind: type) -> Any:
    node = app.focused
    while node is not None and not isinstance(node, kind):
        node = node.parent
    return node


async def reach(app: Any, pilot: Any, kind: type) -> Any:
    """A card waits for the person to go to it (issue 32): Ctrl+G, as a person does."""
    await until(lambda: bool(app.thread.pending), pilot)
    await pilot.press("ctrl+g")
    await until(lambda: focused_card(app, kind) is not None, pilot)
    return focused_card(app, kind)


def answer_text(app: Any) -> str:
    turn = app.view.assistant_turns()[-1]
    return "".join(w.source for w in turn.root.entries.values() if isinstance(w, TextBlock))


async def test_build_request_with_plan_subagent_approval_and_answer(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        assert app.status_info.demo and app.status_info.connection == "embedded"
        await type_and_send(pilot, app, BUILD)
        await reach(app, pilot, ApprovalCard)
        turn = app.view.assistant_turns()[-1]
        names = {card.tc.tool_name for card in turn.cards.values()}
        assert {"plan", "delegate", "activate-workflow"} <= names
        assert any(isinstance(w, SubAgentSection) for w in turn.root.entries.values())
        assert app.tasks_panel.display and app.tasks_panel.tasks is not None
        assert app.status_info.run_state == "awaiting approval"
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("y")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        assert "Done!" in answer_text(app)
        assert turn.cards[next(k for k, c in turn.cards.items() if c.tc.tool_name == "activate-workflow")].state == "done"
        assert app.status_info.run_state == "idle"
        assert app.thread_list.thread(app.thread_id) is not None


async def test_deny_and_always_allow(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, BUILD)
        await reach(app, pilot, ApprovalCard)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("n")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        turn = app.view.assistant_turns()[-1]
        activate = next(c for c in turn.cards.values() if c.tc.tool_name == "activate-workflow")
        assert activate.state == "denied"  # display_state: a denial is not a failure
        # a second request in the same thread: always allow
        await type_and_send(pilot, app, "every evening send the RSS news to Slack")
        await reach(app, pilot, ApprovalCard)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("a", "enter")  # always allow takes two keys
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        turn = app.view.assistant_turns()[-1]
        activate = next(c for c in turn.cards.values() if c.tc.tool_name == "activate-workflow")
        assert activate.state == "done" and activate.tc.confirmation_status == "approved"


async def test_questions_wizard_answers_reach_the_agent(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "build me a workflow")
        card = await reach(app, pilot, QuestionsCard)
        await pilot.pause(GRACE_SECONDS)
        first, second = card.questions[0], card.questions[1]
        await pilot.press("2")
        await pilot.press("1")
        assert card.on_review
        await pilot.press("enter")
        await until(lambda: bool(app.thread.pending) or not app.conversation.is_streaming, pilot)
        turn = app.view.assistant_turns()[-1]
        ask = next(c for c in turn.cards.values() if c.tc.tool_name == "ask-user")
        assert ask.state == "done"
        assert (first.options or [])[1] in str(ask.tc.result) and (second.options or [])[0] in str(ask.tc.result)


async def test_cancel_with_escape(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.05), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, BUILD)
        await until(lambda: app.conversation.is_streaming and bool(app.view.assistant_turns()), pilot)
        app.prompt.focus()
        await pilot.press("escape")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        turn = app.view.assistant_turns()[-1]
        assert turn.reducer.status == "cancelled"
        assert "Cancelled" in str(turn.footer.visual)


async def test_restore_after_restart_and_switch_threads(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "list workflows")
        await until(lambda: app.thread_id is not None and not app.conversation.is_streaming and app.view.assistant_turns(), pilot)
        await app.wait_until_rendered()
        first_thread, first_answer = app.thread_id, answer_text(app)
        await pilot.press("ctrl+n")
        await until(lambda: app.thread_id is None, pilot)
        await type_and_send(pilot, app, "hello there")
        await until(lambda: app.thread_id not in (None, first_thread) and not app.conversation.is_streaming
                    and app.view.assistant_turns(), pilot)
        await app.wait_until_rendered()
        second_thread = app.thread_id
    assert first_answer

    # a new app on the same database: the newest thread is restored, the other one a click away
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        assert app.thread_id == second_thread
        assert [w.text for w in app.view.turns.values() if isinstance(w, UserMessage)] == ["hello there"]
        app.thread_list.post_message(app.thread_list.Selected(app.thread_list, first_thread, "local"))
        await until(lambda: app.thread_id == first_thread, pilot)
        await app.wait_until_rendered()
        assert [w.text for w in app.view.turns.values() if isinstance(w, UserMessage)] == ["list workflows"]
        assert len(app.view.assistant_turns()) == 1
        assert answer_text(app) == first_answer
