"""Pilot tests of small defects a new user met: a theme typo, export to a missing folder, screenshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.waiting import until

from .scripts import SIZE, make_app, recorded, simple_run
from .test_interactions import send, turns


async def test_theme_typo_changes_nothing_and_saves_nothing(tmp_path: Path) -> None:
    app = make_app(recorded())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        before = app.theme
        await send(pilot, app, "/theme nrod")
        await until(lambda: any("No theme named 'nrod'" in str(n.message) for n in app._notifications), pilot)
        note = next(n for n in app._notifications if "nrod" in str(n.message))
        assert "nord" in str(note.message)  # the closest name is suggested
        await pilot.pause(0.2)  # the scenario: a window in which the theme must not change
        assert app.theme == before
    config = tmp_path / "config" / "config.toml"
    assert not config.exists() or "nrod" not in config.read_text()


async def test_export_to_a_missing_folder_is_refused(tmp_path: Path) -> None:
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        target = tmp_path / "no-such-folder" / "out.md"
        await send(pilot, app, f"/export {target}")
        await until(lambda: any("does not exist" in str(n.message) for n in app._notifications), pilot)
        assert not target.parent.exists()


async def test_screenshot_without_a_downloads_folder_creates_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 item 10: a Downloads folder that does not exist is created, and the note says where."""
    downloads = tmp_path / "home" / "Downloads"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DOWNLOAD_DIR", str(downloads))
    monkeypatch.chdir(tmp_path)
    app = make_app(recorded())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.action_screenshot()
        await until(lambda: list(downloads.glob("*.svg")), pilot)
        await until(lambda: any("Saved screenshot" in str(n.message) for n in app._notifications), pilot)
    assert not list(tmp_path.glob("*.svg"))  # not the current directory


async def test_the_palettes_screenshot_command_saves_to_the_export_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's own "Screenshot" command (Ctrl+P) failed with "Failed to save screenshot" where
    ~/Downloads did not exist."""
    downloads = tmp_path / "home" / "Downloads"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DOWNLOAD_DIR", str(downloads))
    app = make_app(recorded())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "Screenshot")
        command.callback()
        await until(lambda: list(downloads.glob("*.svg")), pilot)
        assert not any("Failed" in str(n.message) for n in app._notifications)


async def test_ctrl_s_exports_to_the_export_folder_and_says_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33 item 3: Ctrl+S wrote thread_….md into the current directory (a git checkout)."""
    downloads = tmp_path / "home" / "Downloads"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DOWNLOAD_DIR", str(downloads))
    monkeypatch.chdir(tmp_path)
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        await pilot.press("ctrl+s")
        await until(lambda: list(downloads.glob("*.md")), pilot)
        exported = next(downloads.glob("*.md"))
        await until(lambda: any(str(exported) in str(n.message) for n in app._notifications), pilot)
    assert not list(tmp_path.glob("*.md"))


def test_the_help_of_export_says_where_the_file_goes() -> None:
    """/help said "/export [file] — default: `<thread>.md` in the current folder" while /export writes
    to the Downloads folder (never the current one, the test above): seen in tmux, issue 45."""
    from instance_ai_tui.tui import commands

    line = next(row for row in commands.help_markdown().splitlines() if row.startswith("| `/export"))
    assert "current folder" not in line.split("default:")[1].split(";")[0], line
    assert "Downloads folder" in line


async def test_cancel_with_nothing_running_says_so() -> None:
    """Typed /cancel with no run said nothing at all (seen in tmux, issue 45); /pending says
    "Nothing is waiting for your answer." in the same case."""
    app = make_app(recorded())
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/cancel")
        await until(lambda: any("Nothing is running" in str(n.message) for n in app._notifications), pilot)


async def test_ansi_theme_keeps_warning_words_readable() -> None:
    """16 colours cannot blend: no word may be drawn in its own background's colour."""
    from textual.widgets import Static

    from instance_ai_tui.config import Settings
    from instance_ai_tui.tui.widgets.confirmations import ApprovalCard

    from .scripts import approval_run

    settings = Settings()
    settings.ui.theme = "instance-ansi"
    app = make_app(recorded([approval_run(severity="warning")], model_name="demo (offline)"), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        assert app.theme == "instance-ansi"
        label = app.query_one("#demo-banner .demo-label", Static)
        text = app.query_one("#demo-banner .demo-text", Static)
        banner = app.query_one("#demo-banner")
        assert "reverse" in str(label.styles.text_style)
        assert banner.styles.background.a == 0  # no solid yellow under yellow words
        assert text.styles.color != label.styles.background
        await send(pilot, app, "archive it")
        await until(lambda: bool(app.query(ApprovalCard)), pilot)
        card = app.query_one(ApprovalCard)
        assert card.styles.background.a == 0
        assert "WARNING" in card.title().plain


# --------------------------------------------------------------------------- Ctrl+C and new lines


async def test_ctrl_c_clears_the_prompt_then_stops_the_agent_then_quits() -> None:
    from .scripts import endless_run

    client = recorded([endless_run()], delay=0.01)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "write a lot")
        await until(lambda: app.conversation.is_streaming, pilot)
        app.prompt.load_text("half a thought")
        await pilot.press("ctrl+c")  # a non-empty prompt comes first, always (issue 32)
        await pilot.pause(0.1)  # the scenario: a window in which no cancel may be sent
        assert app.prompt.text == "" and app.conversation.is_streaming
        assert ("cancel", app.thread_id) not in client.calls
        await pilot.press("ctrl+c")  # an empty prompt: stop the agent
        await until(lambda: ("cancel", app.thread_id) in client.calls, pilot)
        await until(lambda: not app.conversation.is_streaming, pilot)
        assert app.is_running
        await pilot.press("ctrl+c")  # nothing to stop or clear: asks for a second press
        await pilot.pause(0.05)  # the scenario: a window in which the app must not quit
        assert app.is_running
        await pilot.press("ctrl+c")
        await until(lambda: not app.is_running, pilot)


async def test_backslash_enter_starts_a_new_line_in_any_terminal() -> None:
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        await pilot.press(*"first line\\")
        await pilot.press("enter")
        assert app.prompt.text == "first line\n"
        await pilot.press(*"second", "ctrl+j", *"third")
        assert app.prompt.text == "first line\nsecond\nthird"
        assert not [c for c in client.calls if c[0] == "send"]
        await pilot.press("enter")
        await until(lambda: [c for c in client.calls if c[0] == "send"], pilot)
        sent = next(c for c in client.calls if c[0] == "send")[1]
        assert sent[1] == "first line\nsecond\nthird"


# --------------------------------------------------------------------------- small terminals, dialogs


async def test_side_panels_hide_by_themselves_below_100_columns() -> None:
    from .scripts import subagent_run

    app = make_app(recorded([subagent_run()]))
    async with app.run_test(size=(160, 40)) as pilot:
        await app.wait_until_ready()
        assert app.thread_list.display
        await send(pilot, app, "build it")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        await app.wait_until_rendered()
        await until(lambda: app.tasks_panel.display, pilot)
        await pilot.resize_terminal(80, 24)
        await until(lambda: not app.thread_list.display and not app.tasks_panel.display, pilot)
        # the conversation keeps (nearly) the whole width (at the layout after the panels went)
        await until(lambda: app.view.size.width >= 76, pilot)
        await pilot.press("ctrl+t")  # still reachable by key
        await until(lambda: app.tasks_panel.display, pilot)
        await pilot.press("ctrl+t")  # hidden again by the user: stays hidden when the terminal widens
        await pilot.resize_terminal(160, 40)
        await until(lambda: app.thread_list.display, pilot)
        await pilot.pause(0.1)  # the scenario: a window in which the tasks panel must not come back
        assert not app.tasks_panel.display


async def test_a_notification_does_not_cover_the_prompt_at_80x24() -> None:
    """A toast at 80x24 covered the prompt's right half for its six seconds (what was typed past
    column 40 was hidden): notifications are drawn in the notice line, in the layout above the
    status line (issue 45: a toast at the top right covered the conversation and the canvas)."""
    from instance_ai_tui.tui.widgets.notice_line import NoticeLine

    app = make_app(recorded())
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await app.wait_until_ready()
        await pilot.press(*"a sentence typed while a note is shown")
        app.notify("The agent is changing a workflow: /workflow (or w on its tool card) shows it drawn.", timeout=30)
        notices = app.screen.query_one(NoticeLine)
        await until(lambda: notices.display and notices.region.height > 0, pilot, what="the notice drawn")
        assert not notices.region.overlaps(app.prompt.region), (notices.region, app.prompt.region)
        assert not notices.region.overlaps(app.status_line.region)
        assert not [w for w in app.screen.walk_children() if type(w).__name__ == "Toast" and w.visible]
        assert app.prompt.text == "a sentence typed while a note is shown"


async def test_delete_dialog_text_is_not_cut_at_80_columns() -> None:
    from textual.widgets import Label

    from instance_ai_tui.tui.widgets.thread_list import ConfirmDeleteScreen

    app = make_app(recorded())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        app.push_screen(ConfirmDeleteScreen("A rather long thread title about the weather in Slack"))
        await until(lambda: isinstance(app.screen, ConfirmDeleteScreen) and app.screen.query(Label)
                    and all(label.size.width for label in app.screen.query(Label)), pilot, what="the dialog laid out")
        for label in app.screen.query(Label):
            text = str(label.render())
            lines = label.render_lines(label.region.reset_offset)
            drawn = "".join(strip.text for strip in lines).replace(" ", "")
            assert drawn == text.replace(" ", "").replace("\n", ""), (drawn, text)


# --------------------------------------------------------------------------- long pastes


async def test_a_long_paste_folds_in_the_prompt_and_the_bubble_and_is_sent_whole() -> None:
    from textual import events

    from instance_ai_tui.tui.widgets.turns import UserMessage

    pasted = "\n".join(f"line {n}: " + "x" * 50 for n in range(330))
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        await pilot.press(*"review this: ")
        app.post_message(events.Paste(pasted))
        await until(lambda: "[pasted 330 lines #1]" in app.prompt.text, pilot)
        assert app.prompt.document.line_count == 1
        app.post_message(events.Paste("short"))  # short pastes go in as they are
        await until(lambda: app.prompt.text.endswith("short"), pilot)
        await pilot.press("enter")
        await until(lambda: [c for c in client.calls if c[0] == "send"], pilot)
        sent = next(c for c in client.calls if c[0] == "send")[1][1]
        assert sent == "review this: " + pasted + "short"
        await until(lambda: list(app.query(UserMessage)), pilot)
        bubble = app.query_one(UserMessage)
        assert bubble.folded and "330 lines" in str(bubble.render())
        assert len(str(bubble.render()).splitlines()) <= 8
        bubble.focus()
        await pilot.press("enter")
        assert not bubble.folded and "line 329" in str(bubble.render())
        await pilot.press("c")
        assert app.clipboard == sent


async def test_ctrl_o_unfolds_a_paste_in_the_prompt() -> None:
    from textual import events

    app = make_app(recorded())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        app.post_message(events.Paste("a\n" * 20))  # 20 lines, each ended by its line break
        await until(lambda: "[pasted 20 lines #1]" in app.prompt.text, pilot)
        await pilot.press("ctrl+o")
        assert app.prompt.text == "a\n" * 20


# --------------------------------------------------------------------------- errors said once


async def test_a_model_error_is_shown_once() -> None:
    from .scripts import ev

    message = "cannot reach the model server at http://127.0.0.1:9/v1: Connection error."
    run = [ev("run-start", messageId="m1"), ev("error", content=message),
           ev("run-finish", status="error", reason=message)]
    app = make_app(recorded([run]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "hello")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        # the footer follows the run's end in a frame of its own: waited for by what it says
        await until(lambda: "The run failed" in str(turns(app)[-1].footer.visual), pilot, what="the footer says so")
        assert message not in str(turns(app)[-1].footer.visual)
        def shown() -> int:
            screen = app.export_screenshot()
            return screen.count("Connection&#160;error") + screen.count("Connection error")

        await until(lambda: shown() >= 1, pilot, what="the error drawn")  # (a frame later under load)
        await pilot.pause()
        assert shown() == 1


async def test_a_failed_run_without_an_error_event_says_why_in_the_footer() -> None:
    from .scripts import ev

    run = [ev("run-start", messageId="m1"), ev("run-finish", status="error", reason="the model returned garbage")]
    app = make_app(recorded([run]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "hello")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        # the turn's footer follows the run's end in a frame of its own (a busy machine draws it later):
        # waited for by what it says, so a footer that never says why still fails here
        await until(lambda: "The run failed: the model returned garbage" in str(turns(app)[-1].footer.visual), pilot,
                    what="the footer says why the run failed")


# --------------------------------------------------------------------------- summaries use the width


async def test_tool_summaries_use_the_width_and_stay_one_line() -> None:
    from .scripts import ev

    long = ("Created workflow 'Weather to Slack' with id wf-104 and 3 nodes: Schedule Trigger, OpenWeatherMap, Slack; "
            "it is inactive until you approve its activation")
    run = [ev("run-start", messageId="m1"), ev("tool-call", toolCallId="tc1", toolName="build-workflow", args={"role": "builder"}),
           ev("tool-result", toolCallId="tc1", result=long), ev("run-finish", status="completed")]
    for size, whole in (((220, 40), True), ((80, 24), False)):
        app = make_app(recorded([run]))
        async with app.run_test(size=size) as pilot:
            await app.wait_until_ready()
            await send(pilot, app, "build")
            await until(lambda app=app: not app.conversation.is_streaming and turns(app)
                        and "tc1" in turns(app)[-1].cards and turns(app)[-1].cards["tc1"].header.size.height > 0,
                        pilot, what="the tool card laid out")  # (a frame later under load)
            await app.wait_until_rendered()
            header = turns(app)[-1].cards["tc1"].header
            assert header.size.height == 1
            drawn = "".join(segment.text for segment in header.render_lines(header.region.reset_offset)[0])
            assert ("activation" in drawn) is whole
            assert whole or drawn.rstrip().endswith("…")
