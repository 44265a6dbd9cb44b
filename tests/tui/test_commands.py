"""Pilot tests: thread list actions, slash commands, palette, copy, help, export, mouse."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandList, CommandPalette

from instance_ai_tui.tui.screens.help import HelpScreen
from instance_ai_tui.tui.widgets.confirmations import ApprovalCard
from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
from instance_ai_tui.tui.widgets.turns import UserMessage
from tests.support.recorded import RecordedClient

from .scripts import SIZE, approval_run, ev, make_app, recorded, simple_run, text_deltas
from .test_interactions import _log, pending_card, send, turns, until

# --------------------------------------------------------------------------- themes, copy, help, export


async def test_theme_switch_by_slash_command() -> None:
    app = make_app(recorded())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/theme nord")
        await until(lambda: app.theme == "nord", pilot)
        await send(pilot, app, "/theme ansi-dark")
        await until(lambda: app.theme == "ansi-dark", pilot)


async def test_copy_tool_result_and_message() -> None:
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        await app.wait_until_rendered()
        card: ToolCallCard = turns(app)[-1].cards["tc1"]
        card.focus()
        await pilot.press("c")
        assert '"Weather to Slack"' in app.clipboard and '"workflows"' in app.clipboard
        message = next(w for w in app.view.turns.values() if isinstance(w, UserMessage))
        message.focus()
        await pilot.press("c")
        assert app.clipboard == "list my workflows"


async def test_f1_shows_keys_of_the_focused_widget() -> None:
    app = make_app(recorded([approval_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        assert "Send the message" in app.screen.markdown and "Approve" not in app.screen.markdown
        await pilot.press("escape")
        await send(pilot, app, "archive it")
        await pending_card(app, pilot, ApprovalCard)
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        assert "Always allow… (asks again)" in app.screen.markdown


async def test_export_writes_markdown(tmp_path: Path) -> None:
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        target = tmp_path / "out.md"
        await send(pilot, app, f"/export {target}")
        await until(target.exists, pilot)
        text = target.read_text()
        assert "list my workflows" in text and "Weather to Slack" in text


async def test_new_output_badge_and_end_key() -> None:
    long_answer = "".join(f"Line {n} of a long answer.\n\n" for n in range(120))
    client = recorded([[ev("run-start", messageId="m"), *text_deltas(long_answer, size=40),
                        ev("run-finish", status="completed")]], delay=0.02)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "talk")
        await until(lambda: app.view.max_scroll_y > 5, pilot)
        app.view.scroll_up(animate=False)
        app.view.scroll_home(animate=False)
        await until(lambda: app.badge.display, pilot)
        app.prompt.focus()
        await pilot.press("end")
        await until(lambda: not app.badge.display and app.view.following, pilot)


# --------------------------------------------------------------------------- thread list actions


def _three_threads() -> RecordedClient:
    return RecordedClient(
        {"a": _log(simple_run(), "ra"), "b": _log(simple_run(), "rb")},
        titles={"a": "Weather to Slack", "b": "Daily digest"},
    )


async def test_rename_and_delete_threads_from_the_list() -> None:
    client = _three_threads()
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        assert app.thread_id == "b"
        threads = app.thread_list
        threads.post_message(threads.RenameRequested(threads, "b", "Morning digest", "local"))
        await until(lambda: ("rename_thread", ("b", "Morning digest")) in client.calls, pilot)
        await until(lambda: app.status_info.thread_title == "Morning digest", pilot)
        assert threads.thread("b").title == "Morning digest"
        threads.post_message(threads.DeleteRequested(threads, "b", "local"))
        await until(lambda: ("delete_thread", "b") in client.calls, pilot)
        await until(lambda: app.thread_id is None, pilot)  # the open thread went: a new one
        assert threads.visible_thread_ids() == ["a"]


async def test_new_thread_by_slash_command_and_palette() -> None:
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: app.thread_id is not None and not app.conversation.is_streaming and turns(app), pilot)
        first = app.thread_id
        await send(pilot, app, "/new")
        await until(lambda: app.thread_id is None and not app.view.turns, pilot)
        app.thread_list.post_message(app.thread_list.Selected(app.thread_list, first, "local"))
        await until(lambda: app.thread_id == first, pilot)
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), pilot)
        await pilot.press(*"New thread")
        # the palette lists what it found (its search runs in a worker) before Enter picks the first
        await until(lambda: app.screen.query_one(CommandList).option_count > 0
                    and "New thread" in str(app.screen.query_one(CommandList).get_option_at_index(0).prompt), pilot)
        await pilot.press("enter")
        await until(lambda: app.thread_id is None, pilot)


async def test_unknown_slash_command_is_not_sent_and_quit_quits() -> None:
    client = recorded()
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/frobnicate")
        await until(lambda: any(n.message.startswith("Unknown command /frobnicate") for n in app._notifications), pilot)
        assert not [c for c in client.calls if c[0] == "send"]
        assert app.prompt.text == "/frobnicate"  # kept, to fix
        await send(pilot, app, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        assert "Slash commands" in app.screen.markdown
        await pilot.press("escape")
        await send(pilot, app, "/quit")
        await until(lambda: app.return_code is not None or not app.is_running, pilot)


async def test_mouse_click_expands_a_tool_card() -> None:
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        await app.wait_until_rendered()
        card: ToolCallCard = turns(app)[-1].cards["tc1"]
        assert not card.expanded and card.body is None
        await pilot.click(card.header)
        await until(lambda: card.expanded and card.body is not None, pilot)
        assert '"Weather to Slack"' in str(card.body.visual)
        await pilot.click(card.header)
        await until(lambda: not card.expanded and card.body is None, pilot)


async def test_reconnecting_state_shows_in_the_status_line() -> None:
    client = recorded()
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        from instance_ai_tui.client.base import ConnectionState

        client._set_state(ConnectionState.RECONNECTING, "3")
        await until(lambda: "reconnecting 3" in app.status_line.plain, pilot)
        client._set_state(ConnectionState.OFFLINE, "connection refused")
        await until(lambda: "offline: connection refused" in app.status_line.plain, pilot)
