"""Issue 45: what a daily user meets — the wizard, plan review, layout, the demo, the block
cursor, titles, the MCP words and the small ones — each checked in the real app (Pilot) or on
the real widget."""

from __future__ import annotations

import html
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from tests.support.waiting import until

from .scripts import make_app


def settings_at(tmp_path: Path, **extra: Any) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3", **extra})


# --------------------------------------------------------------------------- item 7: MCP words


def test_a_tool_summary_is_cut_at_a_word() -> None:
    """Tool descriptions were cut mid-word at 100 characters ("…the current weath")."""
    from instance_ai_tui.tui.screens.mcp import SUMMARY_CHARS, summary_of

    text = ("Fetches the current weather and a five day forecast for any city of the world, in metric or "
            "imperial units, with alerts")
    summary = summary_of(text)
    assert len(summary) <= SUMMARY_CHARS and summary.endswith("…")
    assert text.startswith(summary[:-1]) and text[len(summary) - 1] == " "  # a whole word ends it
    assert summary_of("Short one.\nSecond line") == "Short one."
    assert summary_of("x" * 300).endswith("…") and len(summary_of("x" * 300)) == SUMMARY_CHARS


async def _open_mcp(app: Any, pilot: Any) -> None:
    """`/mcp` typed and sent in the ready app: the MCP view is on top."""
    from instance_ai_tui.tui.screens.mcp import McpScreen

    await app.wait_until_ready()
    app.prompt.load_text("/mcp")
    await pilot.press("enter")
    await until(lambda: isinstance(app.screen, McpScreen), pilot)


async def test_the_mcp_views_footer_keeps_its_keys_whole_and_offers_none_without_a_server(tmp_path: Path) -> None:
    """Seen in tmux at 80x24: /mcp's footer (Textual's) was cut in a word with no "…" ("o Sign out (f"), its
    last keys gone, Esc's "Close" among them; and with no server configured it still offered restart, approve,
    sign out and log level, which do nothing then. The dialog's footer is the fitted one (whole keys, the
    least useful left out first); without a server it offers Close only, and so does the line above it."""
    from instance_ai_tui.tui.screens.mcp import McpScreen
    from instance_ai_tui.tui.widgets.key_footer import KeyFooter
    from tests.support.mcp_servers import stdio_config

    on_a_server = {"restart", "approve", "sign_out", "log_level"}
    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_mcp(app, pilot)
        screen = app.screen
        assert isinstance(screen, McpScreen)
        await until(lambda: "No MCP server" in str(screen.message.render()), pilot)
        footer = screen.query_one(KeyFooter)
        await until(lambda: bool(footer._shown) and "Close" in screen_rows(app)[-1], pilot, what="the footer drawn")
        assert not {key.action for key in footer._shown or []} & on_a_server, footer._shown
        assert "restart" not in str(screen.query_one(".mcp-hint").render())

    settings = settings_at(tmp_path / "b", mcp={"servers": {"broken": stdio_config("fail")}})
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_mcp(app, pilot)
        screen = app.screen
        assert isinstance(screen, McpScreen)
        await until(lambda: bool(screen.servers), pilot, timeout=30, what="the server listed")
        footer = screen.query_one(KeyFooter)
        await until(lambda: bool({key.action for key in footer._shown or []} & on_a_server), pilot,
                    what="the server's keys in the footer")
        await app.wait_until_rendered()
        bottom = screen_rows(app)[-1]
        for key in footer._shown or []:
            assert f"{key.display} {key.words}" in bottom, (key, bottom)  # each whole
        assert "esc" in bottom and "Close" in bottom, bottom


async def test_mcp_view_and_help_name_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/mcp` said "Add one to the config file" and `--help` never said where that file is."""
    from instance_ai_tui.cli import build_parser
    config = tmp_path / "conf" / "my config.toml"
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(config))
    assert f"\n  {config}\n" in build_parser(()).format_help()  # on a line of its own, whole

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_mcp(app, pilot)
        screen = app.screen
        await until(lambda: "No MCP server" in str(screen.message.render()), pilot)
        assert str(config) in str(screen.message.render())



async def test_the_mcp_view_has_its_own_footer(tmp_path: Path) -> None:
    """While `/mcp` was open the bottom row still showed the main screen's "⏎ Send the message"."""
    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_mcp(app, pilot)
        await until(lambda: "No MCP server" in str(app.screen.message.render()), pilot)
        await app.wait_until_rendered()
        shown = html.unescape(re.sub(r"<[^>]+>", "", app.export_screenshot())).replace("\xa0", " ")
        assert "Send the message" not in shown
        assert "esc Close" in shown  # the view's own keys (no server: only Close; the test below)
        assert "Sign out" not in shown


def _modal_dialogs() -> set[type]:
    """Every ModalScreen class of the app (each module of tui/ imported)."""
    import importlib
    import pkgutil

    from textual.screen import ModalScreen

    import instance_ai_tui.tui as tui

    for module in pkgutil.walk_packages(tui.__path__, "instance_ai_tui.tui."):
        importlib.import_module(module.name)
    found: set[type] = set()
    todo: list[type] = [ModalScreen]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("instance_ai_tui."):
                found.add(sub)
    return found


def _dialog(name: str, client: Any) -> Any:
    """One of the app's dialogs, as the app opens it."""
    from datetime import UTC, datetime

    from instance_ai_tui.protocol.api import ModelInfo, ModelList, ThreadInfo
    from instance_ai_tui.protocol.mcp import McpPromptArgument, McpPromptInfo
    from instance_ai_tui.tui.screens import (
        help,
        login,
        mcp,
        mcp_prompt,
        model_picker,
        permissions,
        resume_picker,
        rewind,
        setup,
    )
    from instance_ai_tui.tui.widgets import thread_list

    now = datetime.now(UTC)
    return {
        "HelpScreen": lambda: help.HelpScreen("# Help\n\nsome words"),
        "ModelPicker": lambda: model_picker.ModelPicker(
            ModelList(models=[ModelInfo(name="demo"), ModelInfo(name="other")], current="demo", default="demo")),
        "PermissionsScreen": lambda: permissions.PermissionsScreen(client, "thread-1", "A thread"),
        "ResumePicker": lambda: resume_picker.ResumePicker(
            [ThreadInfo(id="t1", title="Weather to Slack", created_at=now, updated_at=now)]),
        "RewindPicker": lambda: rewind.RewindPicker([rewind.UserTurn("m1", "r1", "hello there")]),
        "RenameThreadScreen": lambda: thread_list.RenameThreadScreen("A thread"),
        "ConfirmDeleteScreen": lambda: thread_list.ConfirmDeleteScreen("A thread"),
        "LoginScreen": lambda: login.LoginScreen(client, "n8n asked for a login", "me@example.com"),
        "SetupScreen": lambda: setup.SetupScreen("gpt-4o-mini"),
        "McpScreen": lambda: mcp.McpScreen(client),
        "McpPromptForm": lambda: mcp_prompt.McpPromptForm(
            "/mcp__everything__greet", McpPromptInfo(name="greet", arguments=[
                McpPromptArgument(name="name", required=True)]), {}),
    }[name]()


#: each dialog and the keys its footer names (ids of tui/keymap's table)
DIALOG_KEYS = {
    "HelpScreen": ["help.close"],
    "ModelPicker": ["model-picker-choose", "model-picker-cancel"],
    "PermissionsScreen": ["permissions-close"],
    "ResumePicker": ["resume-open", "resume-new"],
    "RewindPicker": ["rewind-choose", "rewind-cancel"],
    "RenameThreadScreen": ["rename-save", "rename-cancel"],
    "ConfirmDeleteScreen": ["delete-confirm", "delete-cancel"],
    "LoginScreen": ["login-cancel"],
    "SetupScreen": ["setup-browse", "setup-quit"],
    "McpScreen": ["mcp-close"],
    "McpPromptForm": ["mcp-prompt-close"],
}


def test_every_dialog_of_the_app_is_in_the_footer_test() -> None:
    # (ListPicker: the base of ModelPicker and RewindPicker, never opened itself)
    assert {cls.__name__ for cls in _modal_dialogs()} - {"ListPicker"} == set(DIALOG_KEYS)


@pytest.mark.parametrize("name", sorted(DIALOG_KEYS))
async def test_a_dialog_shows_its_own_keys_in_the_footer(tmp_path: Path, name: str) -> None:
    """Modal dialogs (help, model picker, permissions, resume, rewind…) showed the main screen's footer
    ("⏎ Send the message", Ctrl+N…) behind them: keys that do nothing there. Each now has a footer
    of its own keys, from the key table, in the user's keys (a remap shows)."""
    from textual.widgets import Footer

    from instance_ai_tui.tui import keymap

    settings = settings_at(tmp_path)
    client = EmbeddedClient(settings)
    app = make_app(client, settings)
    async with app.run_test(size=(160, 30)) as pilot:
        await app.wait_until_ready()
        app.push_screen(_dialog(name, client))
        await until(lambda: type(app.screen).__name__ == name, pilot)
        words = [keymap.spec(binding_id).description for binding_id in DIALOG_KEYS[name]]
        # the footer fills itself in once the dialog's bindings are known (a refresh later)
        await until(lambda: all(word in (screen_rows(app) or [""])[-1] for word in words), pilot,
                    what=f"{words} on the bottom row")
        bottom = screen_rows(app)[-1]
        assert "Send the message" not in bottom, bottom
        assert app.screen.query(Footer), "the dialog has no footer of its own"
        shown = {b.binding.id for b in app.screen.active_bindings.values() if b.binding.show}
        assert set(DIALOG_KEYS[name]) <= shown, (shown, bottom)
        if name == "PermissionsScreen":  # nothing granted: nothing to revoke is offered
            await until(lambda: "Nothing is always allowed" in str(app.screen.message.render())
                        or "Cannot list" in str(app.screen.message.render()), pilot)
            await until(lambda: "Close" in (screen_rows(app) or [""])[-1]
                        and keymap.spec("permissions-revoke").description not in screen_rows(app)[-1], pilot)


@pytest.mark.parametrize("opened_by", ["ctrl+p", "/theme"])
async def test_the_command_palette_shows_no_keys_of_the_main_screen(tmp_path: Path, opened_by: str) -> None:
    """Textual's command palette (Ctrl+P, and the theme picker of /theme and F9) has no footer of its
    own: the main screen's "⏎ Send the message" showed under it. The main footer is hidden while a
    screen is on top of it."""
    from textual.command import CommandPalette

    from .test_interactions import send

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(160, 30)) as pilot:
        await app.wait_until_ready()
        await until(lambda: "Send the message" in (screen_rows(app) or [""])[-1], pilot)
        if opened_by.startswith("/"):
            await send(pilot, app, opened_by)
        else:
            await pilot.press(opened_by)
        await until(lambda: isinstance(app.screen, CommandPalette), pilot)
        await pilot.pause()
        await app.wait_until_rendered()
        assert "Send the message" not in screen_rows(app)[-1]
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, CommandPalette), pilot)
        await until(lambda: "Send the message" in (screen_rows(app) or [""])[-1], pilot)  # back with the main screen


# --------------------------------------------------------------------------- item 1: the wizard


async def _wizard(pilot: Any, app: Any) -> Any:
    from instance_ai_tui.tui.widgets.questions_card import QuestionsCard

    from .test_interactions import pending_card, send

    await app.wait_until_ready()
    await send(pilot, app, "build it")
    card: QuestionsCard = await pending_card(app, pilot, QuestionsCard)
    await until(lambda: not card.in_grace, pilot)  # past the card's key grace
    return card


def card_footer(app: Any, card: Any) -> list[tuple[str, str]]:
    """What the footer shows of the card's own keys: (binding id, words), one per action as the
    Footer groups them."""
    shown = [(active.binding.id or "", active.binding.description) for active in app.screen.active_bindings.values()
             if active.binding.show and active.node is card]
    return list(dict.fromkeys(shown))


def keys_line(card: Any) -> str:
    return str(card.query_one("#keys").render())


def assert_footer_is_the_card_line(app: Any, card: Any) -> None:
    """Every key the footer names for the card is on the card's own line, in the same words."""
    from instance_ai_tui.tui.widgets.confirmations import card_keys

    line, hints = keys_line(card), card.page_hints()[1]
    footer = card_footer(app, card)
    assert footer, "the footer names the card's keys"
    for binding_id, words in footer:
        assert binding_id in [h.id for h in hints], (binding_id, line)
        assert words.lower() in line.lower(), (words, line)
    assert line == card._keys_line() and card_keys(card).hint_line(hints) in line


async def test_the_wizard_never_records_or_moves_on_by_itself() -> None:
    """Item 1: Enter on an empty text field recorded "(no answer)"; → on a multi-select with
    nothing ticked moved on silently; the footers said other keys than the card."""
    from .scripts import questions_run, recorded

    app = make_app(recorded([questions_run()]))
    async with app.run_test(size=(120, 40)) as pilot:
        card = await _wizard(pilot, app)
        assert_footer_is_the_card_line(app, card)
        await pilot.press("1")  # "8am": the multi-select next
        await until(lambda: card.page == 1, pilot)
        assert_footer_is_the_card_line(app, card)
        assert ("wizard-next", "Continue") in card_footer(app, card)
        await pilot.press("right")  # nothing ticked: asked, not passed
        assert card.page == 1 and "where" not in card.skipped
        assert "Tick at least one" in str(card.query_one("#question").render())
        await pilot.press("2", "right")
        await until(lambda: card.page == 2, pilot)
        assert card.selected["where"] == ["#ops"]
        await until(lambda: app.focused is card.query_one("#other"), pilot)
        assert "Esc leave the field" in keys_line(card)
        assert ("wizard-leave-field", "Leave the field") in card_footer(app, card)
        await pilot.press("enter")  # an empty field: asked, nothing recorded
        assert card.page == 2 and "name" not in card.custom
        assert "Type an answer" in str(card.query_one("#question").render())
        await pilot.press(*"Daily digest", "enter")
        await until(lambda: card.on_review, pilot)
        review = str(card.query_one("#question").render())
        assert "(no answer)" not in review and "“Daily digest”" in review
        assert_footer_is_the_card_line(app, card)
        assert [i for i, _w in card_footer(app, card)] == ["wizard-submit", "wizard-back", "wizard-decline"]


async def test_letters_typed_on_the_review_page_are_kept_and_go_to_the_prompt() -> None:
    """Item 1: letters typed on the review page vanished; now the card shows them and Esc takes
    them to the prompt (nothing answers the card)."""
    from .scripts import questions_run, recorded
    from .test_interactions import confirm_calls

    client = recorded([questions_run()])
    app = make_app(client)
    async with app.run_test(size=(120, 40)) as pilot:
        card = await _wizard(pilot, app)
        await pilot.press("1", "1", "right")
        await until(lambda: card.page == 2, pilot)
        await pilot.press(*"Digest", "enter")
        await until(lambda: card.on_review, pilot)
        await until(lambda: app.focused is card, pilot)
        await pilot.press(*"also at noon")
        assert "“also at noon”" in str(card.query_one("#question").render())
        assert not card.answered and confirm_calls(client) == []
        await pilot.press("escape")
        await until(lambda: app.focused is app.prompt, pilot)
        assert app.prompt.text == "also at noon" and not card.answered


async def test_other_by_its_number_opens_a_field_that_shows_what_is_typed() -> None:
    """Item 1, seen in tmux: the number of "Other…" focused the text field while the page drawn in
    the same step hid it (the field counted as open only once focused, a refresh later): the
    letters typed next went into a hidden field and Enter there said "Choose an option"."""
    from textual.widgets import Input

    from .scripts import questions_run, recorded

    app = make_app(recorded([questions_run()]))
    async with app.run_test(size=(120, 40)) as pilot:
        card = await _wizard(pilot, app)
        other = card.query_one("#other", Input)
        await pilot.press("3")  # "Other…" after 8am and noon
        await until(lambda: app.focused is other, pilot)
        await pilot.pause()
        assert other.display and "type your answer" in keys_line(card)
        await pilot.press("enter")  # empty: asked for words, the keys stay in the field
        assert "Type an answer" in str(card.query_one("#question").render())
        assert app.focused is other and other.display and card.page == 0
        await pilot.press(*"at 7", "enter")
        await until(lambda: card.page == 1, pilot)
        assert card.custom["when"] == "at 7" and card.selected["when"] == []



async def test_the_other_fields_placeholder_is_whole_in_a_narrow_card() -> None:
    """Seen in tmux at 160x48, the card beside the workflow panel: the field of "Other…" read "Type your
    answer · Enter continue · Esc" (Textual's Input cuts a placeholder, without "…"). At 60 columns the
    card is as narrow; the field's words fit it whole."""
    from rich.cells import cell_len
    from textual.widgets import Input

    from .scripts import questions_run, recorded

    app = make_app(recorded([questions_run()]))
    async with app.run_test(size=(60, 30)) as pilot:
        card = await _wizard(pilot, app)
        other = card.query_one("#other", Input)
        await pilot.press("3")  # "Other…"
        await until(lambda: app.focused is other and other.content_size.width > 0, pilot)
        assert cell_len(other.placeholder) <= other.content_size.width, (other.placeholder, other.content_size)
        assert "Esc leave the field" in other.placeholder


async def test_the_wizards_key_line_breaks_between_hints_only() -> None:
    """Seen in tmux at 80x24: the wizard's key line wrapped as "1–4 choose · ↑/↓ move · Enter choose · s skip"
    / "· ← back" (Textual wraps at any space): a row began with "·", and at other widths a hint was cut in two.
    Each row now holds whole hints; every hint is still there, in order."""
    from textual.geometry import Region

    from instance_ai_tui.tui.widgets.hint_line import HintLine

    from .scripts import questions_run, recorded

    app = make_app(recorded([questions_run()]))
    async with app.run_test(size=(64, 30)) as pilot:
        card = await _wizard(pilot, app)
        await pilot.press("1")  # page 2 of 3: "← back" joins the line
        await until(lambda: card.page == 1, pilot)
        line = card.query_one("#keys", HintLine)
        await app.wait_until_rendered()
        await until(lambda: line.size.height > 1, pilot, what="the key line on two rows at this width")
        rows = ["".join(s.text for s in strip).strip()
                for strip in line.render_lines(Region(0, 0, line.size.width, line.size.height))]
        hints = line.hints
        assert [hint for hint in hints if hint.endswith("back")], hints
        assert not any(row.startswith("·") or row.endswith("·") for row in rows), rows
        # whole hints on each row, all of them, in order
        assert [hint for row in rows for hint in row.split(" · ")] == hints, (rows, hints)


async def test_a_yes_no_question_offers_no_other_and_the_field_says_what_esc_does() -> None:
    """Seen today: a yes/no question offered "3. Other…"; the text field said "Esc to cancel" while
    the card's line said "Esc leave the field" (Esc keeps the words and gives the page's keys back)."""
    from textual.widgets import Input

    from .scripts import ev, recorded

    run = [ev("run-start", messageId="m1"), ev("tool-call", toolCallId="q1", toolName="ask-user", args={}),
           ev("confirmation-request", requestId="cr-q", toolCallId="q1", toolName="ask-user", severity="info",
              message="One question", inputType="questions",
              questions=[{"id": "ok", "question": "Activate it now?", "type": "single", "options": ["Yes", "No"]}]),
           ev("tool-result", toolCallId="q1", result={"answered": True}), ev("run-finish", status="completed")]
    app = make_app(recorded([run]))
    async with app.run_test(size=(120, 40)) as pilot:
        card = await _wizard(pilot, app)
        other = card.query_one("#other", Input)
        assert "cancel" not in other.placeholder and "Esc leave the field" in other.placeholder
        assert "Other" not in str(card.query_one("#question").render())
        assert keys_line(card).startswith("1–2 choose")
        await pilot.press("3")  # no such row: nothing opens
        await pilot.pause()
        assert not other.display and app.focused is not other and card.page == 0



@pytest.mark.parametrize(("end", "said"), [("completed", "The agent changed a workflow"), ("cancelled", None)],
                         ids=["finished", "cancelled"])
async def test_the_narrow_screens_workflow_note_follows_the_run(end: str, said: str | None) -> None:
    """Seen today: "The agent is changing a workflow…" (the note of a screen too narrow for the
    panel) came for a call already finished, in the present tense after the run had ended, and
    right after a cancel for a call that never answered."""
    from .scripts import ev, recorded

    call = [ev("run-start", messageId="m1"),
            ev("tool-call", toolCallId="w1", toolName="update-workflow", args={"workflowId": "wf-7", "name": "X"})]
    if end == "completed":
        call.append(ev("tool-result", toolCallId="w1", result={"id": "wf-7", "name": "X"}))
    app = make_app(recorded([[*call, ev("run-finish", status=end)]]))
    told: list[str] = []
    notify = app.notify

    def record(message: str, **kwargs: Any) -> None:  # every note, whatever its timeout (no timing here)
        told.append(message)
        notify(message, **kwargs)

    app.notify = record  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("change it")
        await until(lambda: app.conversation is not None and app.conversation.messages
                    and not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()  # the frame that hands the finished call to the follower has run
        await until(lambda: all(w.is_finished for w in app.workers if w.group == "workflow-follower"), pilot)
        await pilot.pause()
        notes = [n for n in told if "workflow" in n]
        assert not any("is changing" in n for n in notes), notes
        assert (said is None and notes == []) or (said is not None and any(said in n for n in notes)), notes


async def test_the_always_allow_step_has_the_footer_of_its_card() -> None:
    """Item 1: after `a` the card said "Enter grants it" and the footer "⏎ Expand" (the tool
    card's key: the card's own Enter binding was lost to a subclass's)."""
    from instance_ai_tui.tui.widgets.confirmations import ApprovalCard

    from .scripts import approval_run, recorded
    from .test_interactions import pending_card, send

    app = make_app(recorded([approval_run("warning")]))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        card = await pending_card(app, pilot, ApprovalCard)
        await until(lambda: not card.in_grace, pilot)
        await pilot.press("a")
        await until(lambda: card.armed is not None, pilot)
        enter = app.screen.active_bindings["enter"]
        assert enter.node is card and enter.binding.id == "confirm-always"
        line = str(card.always_line.render())
        assert f"Enter {enter.binding.description.lower()}" in line
        escape = app.screen.active_bindings["escape"]
        assert escape.binding.id == "cancel-always" and escape.binding.description.lower() in line


# --------------------------------------------------------------------------- item 2: plan review


async def test_a_plan_sent_back_reads_as_sent_back_and_leaves_the_task_panel(tmp_path: Path) -> None:
    """Item 2: "Request changes" showed `✓ plan 6.2 s → {"approved": false, "feedback": "…"}` (a tick
    and raw JSON) and the task panel kept the sent-back plan as `0/2 done`. The real runtime's plan
    tool with review, a scripted OpenAI-wire model."""
    from instance_ai_tui.tui.widgets.confirmations import PlanReviewCard
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    from .test_interactions import pending_card, send

    plan = {"action": "create", "goal": "Weather to Slack", "review": True, "tasks": [
        {"id": "t1", "description": "Find the nodes"}, {"id": "t2", "description": "Build the workflow"}]}
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("plan", plan),
        MockResponse(text="I will revise the plan."),
    )) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
            "db_path": tmp_path / "db.sqlite3"})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(140, 40)) as pilot:
            await app.wait_until_ready()
            await send(pilot, app, "plan a weather workflow")
            card = await pending_card(app, pilot, PlanReviewCard)
            await until(lambda: app.tasks_panel.display, pilot)
            await until(lambda: not card.in_grace, pilot)
            await pilot.press("r")
            await until(lambda: app.focused is card.query_one("#feedback"), pilot)
            await pilot.press(*"use Discord instead", "enter")
            await until(lambda: not app.conversation.is_streaming, pilot, timeout=30)
            await app.wait_until_rendered()
            tool = next(c for c in app.view.assistant_turns()[-1].cards.values() if c.tc.tool_name == "plan")
            header = str(tool.header.render())
            assert "✓" not in header and "{" not in header, header
            assert "changes requested" in header and "“use Discord instead”" in header
            assert not app.tasks_panel.display or "0/2 done" not in str(app.tasks_panel.title_line.render())


# --------------------------------------------------------------------------- item 3: layout


def _covered(app: Any, widget: Any) -> list[str]:
    """The cells of ``widget`` on screen where another widget (not it or one of its own) is on top."""
    region = app.screen.find_widget(widget).visible_region
    others = []
    for y in range(region.y, region.bottom):
        for x in range(region.x, region.right, 3):
            top, _ = app.screen.get_widget_at(x, y)
            node = top
            while node is not None and node is not widget:
                node = node.parent
            if node is None:
                others.append(f"{type(top).__name__} at {x},{y}")
    return others


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_notices_cover_no_card_prompt_or_canvas_and_nothing_is_cut(tmp_path: Path, size: tuple[int, int]) -> None:
    """Item 3: at 80x24 two notifications covered ~11 rows x 40 columns of the conversation (a card's
    text included), at 160x48 the canvas's first row of boxes; with the workflow panel open at 160
    columns the status line and the DEMO banner were cut. The demo builds a workflow and waits for
    "activate?": its card, the prompt and (wide) the canvas show whole while two notices are live."""
    from instance_ai_tui.tui.screens.workflow import panel_of
    from instance_ai_tui.tui.widgets.confirmations import ApprovalCard
    from instance_ai_tui.tui.widgets.notice_line import NoticeLine

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    async with app.run_test(size=size, notifications=True) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("every morning send the weather forecast to Slack")
        await until(lambda: bool(app.thread.pending), pilot, timeout=60)
        if size[0] >= 150:
            await until(lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).workflow_id is not None, pilot)
        app.notify("The agent is changing a workflow: /workflow (or w on its tool card) shows it drawn.", timeout=30)
        app.notify("Could not copy: no clipboard tool; the text is in /tmp/instance-ai-copy.txt", severity="warning",
                   timeout=30)
        notices = app.screen.query_one(NoticeLine)
        await until(lambda: notices.display and notices.region.height > 0, pilot, what="the notice line drawn")
        await until(lambda: bool(app.query(ApprovalCard)), pilot, what="the card drawn")
        card = app.query(ApprovalCard).first()
        card.scroll_visible(animate=False)
        await app.wait_until_rendered()
        await pilot.pause()
        drawn = str(notices.render())
        assert "changing a workflow" in drawn and "Could not copy" in drawn  # both, newest first
        assert drawn.index("Could not copy") < drawn.index("changing a workflow")
        assert _covered(app, card) == [] and _covered(app, app.prompt) == []
        panel = panel_of(app.main_screen)
        if size[0] >= 150:
            assert panel is not None and _covered(app, panel.canvas) == []
            status = app.status_line
            assert str(status.render()).count("\n") >= 1 and "…" not in str(status.render()).split("\n")[0]
            banner = app.screen.query_one("#demo-banner")
            text = banner.query_one(".demo-text")
            words = " ".join(" ".join(strip.text for strip in text.render_lines(text.region.reset_offset)).split())
            assert text.region.height >= 2 and "nothing real is changed." in words


async def test_a_long_notice_shows_its_end(tmp_path: Path) -> None:
    """/copy in tmux beside the canvas: "Not copied to your clipboard: tmux has set-clipboard external…
    The last answer is" — the notice line stopped at 3 rows, and the path that says where the answer
    went was cut off. The line grows to what the notice needs (up to MAX_ROWS, which a notice of the
    app fits in at 60 columns)."""
    from instance_ai_tui.tui.widgets.notice_line import NoticeLine

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(62, 24), notifications=True) as pilot:
        await app.wait_until_ready()
        app.notify("Not copied to your clipboard: tmux has set-clipboard external, so it drops a program's copy "
                   "(`tmux set -g set-clipboard on` lets it through). The last answer is saved in "
                   "/root/.local/share/instance-ai-tui/copied/last-answer.md.", severity="warning", timeout=30)
        notices = app.screen.query_one(NoticeLine)
        await until(lambda: notices.display and notices.region.height > 0, pilot, what="the notice line drawn")
        await app.wait_until_rendered()
        shown = " ".join(" ".join(screen_rows(app)).split())
        assert "last-answer.md" in shown, shown


async def test_the_background_tasks_strip_goes_with_the_run() -> None:
    """Item 3: the "Background tasks" strip stayed under the conversation after the run had
    ended (a finished task for its ten seconds); now what finished leaves with the run's end,
    and a task that runs on stays."""
    import time

    from instance_ai_tui.protocol.events import parse_event
    from instance_ai_tui.protocol.ingest import StreamItem

    from .scripts import ev
    from .test_polish import _ActivityHarness

    app = _ActivityHarness()
    async with app.run_test(size=(120, 40)) as pilot:
        activity = app.activity
        now = time.time() * 1000
        activity._merge_task({"taskId": "t1", "role": "workflow builder", "agentId": "a2", "status": "running",
                              "startedAt": now})
        activity._merge_task({"taskId": "t2", "role": "researcher", "agentId": "a3", "status": "running",
                              "startedAt": now})
        activity.observe(StreamItem(1, parse_event(ev("agent-completed", "a2", result="done"))))
        activity.redraw()
        await pilot.pause()
        assert activity.display and "workflow builder" in str(activity.task_list.render())
        activity.observe(StreamItem(2, parse_event(ev("run-finish", status="completed"))))
        activity.redraw()
        await pilot.pause()
        assert list(activity.tasks) == ["t2"]  # the finished one left; the one running on stays
        activity.observe(StreamItem(3, parse_event(ev("agent-completed", "a3", result="done"))))
        activity.observe(StreamItem(4, parse_event(ev("run-finish", status="completed"))))
        activity.redraw()
        await pilot.pause()
        assert not activity.display


# --------------------------------------------------------------------------- item 5: the block cursor


def screen_rows(app: Any) -> list[str]:
    """The composed screen, one string per row (what the terminal shows)."""
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


async def test_alt_up_on_assistant_text_shows_a_mark() -> None:
    """Item 5: Alt+↑ on an assistant text block showed no mark (tool rows get the ║); the text's
    chunks were drawn over the block's outline."""
    from instance_ai_tui.tui.widgets.turns import TextBlock

    from .scripts import recorded, simple_run
    from .test_interactions import send

    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=(100, 30)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        await pilot.press("alt+up")
        block = app.focused
        assert isinstance(block, TextBlock)
        await pilot.pause()
        region = app.screen.find_widget(block).visible_region
        rows = screen_rows(app)
        marks = [rows[y][region.x] for y in range(region.y, region.bottom)]
        assert marks and set(marks) == {"║"}, marks


# --------------------------------------------------------------------------- item 8: small


async def test_a_one_line_edit_says_it_changes_one_line(tmp_path: Path) -> None:
    """Item 8: the edit-file card said "overwrites 5 lines: +1 −1" for a one-line edit. The real
    edit-file tool's preview on a file of five lines, drawn on its approval card."""
    from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
    from instance_ai_tui.tui.widgets.card_factory import build_card
    from instance_ai_tui.tui.widgets.diff_view import ChangePreviewView

    from .test_polish import App

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("one\ntwo\nthree\nfour\nfive\n")
    from instance_ai_tui.assistant.tools.files import file_tools
    from instance_ai_tui.assistant.workspace import Workspace

    tools = {t.name: t for t in file_tools(Workspace(workspace))}
    edit = tools["edit-file"]
    args = edit.validate_args({"path": "notes.md", "oldText": "three", "newText": "THREE"})
    preview = await edit.approval_preview(args, None)  # type: ignore[misc,arg-type]
    assert preview is not None and preview["summary"] == "changes 1 of 5 lines: +1 −1"
    conf = Confirmation.model_validate({"requestId": "r1", "severity": "warning", "message": "Edit notes.md?",
                                        "inputType": "approval", "preview": preview})
    card = build_card(ToolCallState(tool_call_id="c1", tool_name="edit-file"), conf)

    class Harness(App[None]):
        def compose(self) -> Any:
            yield card

    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        view = card.query_one(ChangePreviewView)
        drawn = "\n".join(str(w.render()) for w in view.query("Static"))
        assert "changes 1 of 5 lines: +1 −1" in drawn and "overwrites" not in drawn
        assert "-three" in drawn and "+THREE" in drawn


# --------------------------------------------------------------------------- item 7: an MCP write's diff

#: the protocol's reference file server, from npm (``npm install --prefix ~/.cache/instance-ai-tui/npm-mcp
#: @modelcontextprotocol/server-filesystem``); ``INSTANCE_AI_MCP_FILESYSTEM`` may name its dist/index.js
_FS_SERVER = Path.home() / ".cache/instance-ai-tui/npm-mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"


async def test_an_mcp_write_file_card_shows_what_it_writes(tmp_path: Path) -> None:
    """Item 7: the built-in write-file's card has a diff; the reference MCP file server's
    write_file card had none. A call whose arguments name a path and content shows them."""
    import os
    import shutil

    from instance_ai_tui.tui.widgets.confirmations import ApprovalCard
    from instance_ai_tui.tui.widgets.diff_view import ChangePreviewView
    from tests.support.openai_server import MockOpenAIServer, MockResponse, answers_in_order

    from .test_interactions import pending_card, send

    server = Path(os.environ.get("INSTANCE_AI_MCP_FILESYSTEM", _FS_SERVER))
    if not server.is_file() or shutil.which("node") is None:
        pytest.skip("needs node and `npm install --prefix ~/.cache/instance-ai-tui/npm-mcp "
                    "@modelcontextprotocol/server-filesystem`")
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "todo.md"
    content = "# Todo\n\n- buy milk\n- call Dana 🚀\n"
    async with MockOpenAIServer(answers_in_order(
        MockResponse.call("mcp__files__write_file", {"path": str(target), "content": content}),
        MockResponse(text="Written."),
    )) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
            "db_path": tmp_path / "db.sqlite3",
            "mcp": {"servers": {"files": {"command": shutil.which("node"), "args": [str(server), str(shared)]}}}})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.wait_until_ready(timeout=90)
            for _ in range(180):  # node starts the server: seconds on a busy machine; a run offers ready tools
                if [s.state for s in (await app.client.mcp_status()).servers] == ["ready"]:
                    break
                await pilot.pause(0.5)
            await send(pilot, app, "write my todo list")
            card = await pending_card(app, pilot, ApprovalCard)
            view = card.query_one(ChangePreviewView)
            drawn = "\n".join(str(w.render()) for w in view.query("Static"))
            assert f"writes 4 lines to {target}" in drawn
            assert "+- call Dana 🚀" in drawn and "+# Todo" in drawn
            await until(lambda: not card.in_grace, pilot)
            await pilot.press("y")
            await until(lambda: not app.conversation.is_streaming, pilot, timeout=30)
            assert target.read_text() == content


async def test_the_workspace_folder_is_in_the_status_line(tmp_path: Path) -> None:
    """Item 8: `--workspace` shared a folder with the agent and the status line never said which."""
    folder = tmp_path / "my notes"
    folder.mkdir()
    settings = settings_at(tmp_path, workspace_root=folder)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: f"⌂ {folder}" in app.status_line.plain, pilot, what="the folder named")
    settings = settings_at(tmp_path / "other")
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(160, 40)):
        await app.wait_until_ready()
        assert "⌂" not in app.status_line.plain  # no folder shared: none named


async def test_find_counts_matches_not_messages() -> None:
    """Item 8: Find counted blocks, not matches (`workflow` → `2/2` with ~7 hits on the screen)."""
    from instance_ai_tui.tui.widgets.find_bar import FindBar

    from .scripts import ev, recorded, text_deltas

    run = [ev("run-start", messageId="m1", userMessage="is my workflow fine?"),
           *text_deltas("One workflow runs. The Workflow list has a second workflow, and a third workflow."),
           ev("run-finish", status="completed")]
    app = make_app(recorded(logs={"t1": run}, titles={"t1": "Workflows"}))
    async with app.run_test(size=(120, 30)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.thread_id == "t1" and len(app.conversation.messages) == 2, pilot)
        await pilot.press("ctrl+f")
        bar = app.query_one(FindBar)
        await pilot.press(*"workflow")
        count = bar.query_one(".find-count")
        await until(lambda: str(count.render()) == "5/5", pilot, what="five matches, the newest first")
        await pilot.press("enter")  # wraps to the first: the question
        assert str(count.render()) == "1/5" and bar.matches[0].message_id != bar.matches[-1].message_id
        await pilot.press("enter")
        assert str(count.render()) == "2/5" and "One workflow runs" in bar.matches[1].snippet


async def test_quitting_says_how_to_resume_the_thread(tmp_path: Path) -> None:
    """Item 8: quitting printed nothing; now the thread's id and `instance-ai --thread ID`."""
    import argparse
    import shlex

    from instance_ai_tui.cli.tui import resume_hint

    db = tmp_path / "my db.sqlite3"
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
    app = make_app(EmbeddedClient(settings), settings)
    args = argparse.Namespace(url=None, email=None, dialect=None, db=db)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.wait_until_ready()
        assert resume_hint(app, args) is None  # nothing sent: no thread to resume
        await app.thread.outbox.send("hello")
        await until(lambda: bool(app.thread_id) and not app.conversation.is_streaming, pilot)
        thread_id = app.thread_id
        await pilot.press("ctrl+q")
    hint = resume_hint(app, args)
    assert hint == (f"Thread {thread_id} — resume it with: "
                    f"instance-ai --db {shlex.quote(str(db))} --thread {thread_id}")


# --------------------------------------------------------------------------- item 6: titles


async def test_answers_waiting_in_twin_titled_threads_are_told_apart() -> None:
    """Item 6: one database held six "Data workflow"; the status line read `1 in “Data workflow”, 1 in
    “Data workflow”`. Threads sharing a title are numbered by creation, in the list and the status."""
    from tests.support.recorded import RecordedClient

    from .scripts import approval_run

    client = RecordedClient({"a": [], "b": [], "work": []}, runs=[approval_run(), approval_run()],
                            titles={"a": "Data workflow", "b": "Data workflow", "work": "Work"},
                            model_name="scripted-test")
    app = make_app(client)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await client.send("a", "archive it")
        await client.send("b", "archive that")
        await until(lambda: app.pending_watch.elsewhere == {"a": 1, "b": 1}, pilot)
        first, second = sorted(("a", "b"), key=lambda t: app.thread_list.thread(t).created_at)  # type: ignore[union-attr]
        await until(lambda: "2 answers waiting" in app.status_line.plain, pilot)
        status = " ".join(app.status_line.plain.split())
        assert "1 in “Data workflow (1)”" in status and "1 in “Data workflow (2)”" in status
        assert "Data workflow (1)" in app.thread_list.row_text(first, width=100)
        assert "Data workflow (2)" in app.thread_list.row_text(second, width=100)
        assert "(" not in app.thread_list.label("work")
        # seen in tmux: the list's 27 columns cut both rows to "◷ waiting · Data w… now"
        narrow = [" ".join(app.thread_list.row_text(t, width=27).split()) for t in (first, second)]
        assert narrow[0].endswith("(1) now") and narrow[1].endswith("(2) now"), narrow


def test_demo_titles_say_what_was_asked() -> None:
    """Item 6: every vague build request in the demo was titled "Data workflow"."""
    from instance_ai_tui.assistant.demo import _title_for

    asked = ["build me a workflow please", "make a workflow for the sales team", "automate my mornings"]
    titles = [_title_for(f"User message:\n{text}") for text in asked]
    assert len(set(titles)) == 3 and "Data workflow" not in titles
    assert _title_for("User message:\nevery morning send the weather to Slack") == "Weather to Slack"


async def test_a_markdown_table_has_a_rule_under_its_header_only() -> None:
    """Item 8: a table got a rule between every row (15 rows → 31 lines); as GitHub draws it, one rule
    under the header. The answer streamed into the real app."""
    from .scripts import ev, recorded, text_deltas
    from .test_interactions import send

    table = "| # | node |\n|---|---|\n" + "".join(f"| {n} | node {n} |\n" for n in range(15))
    run = [ev("run-start", messageId="m1"), *text_deltas("Nodes:\n\n" + table + "\nDone.\n", size=40),
           ev("run-finish", status="completed")]
    app = make_app(recorded([run]))
    async with app.run_test(size=(100, 60)) as pilot:  # the whole table on the screen, ruled either way
        await app.wait_until_ready()
        await send(pilot, app, "list the nodes")
        await until(lambda: len(app.view.assistant_turns()) == 1 and not app.conversation.is_streaming, pilot)

        def drawn() -> list[str]:
            return [row.strip(" ▕▏▎▍▌") for row in screen_rows(app)]

        # (the run's end is in the model before a frame draws it: on a busy machine the table was not on
        # screen yet, and next() found no "┌")
        await until(lambda: any(row.startswith("└") for row in drawn()) and any("Done." in row for row in drawn()),
                    pilot, what="the whole table and the text after it drawn")
        rows = drawn()
        top = next(i for i, row in enumerate(rows) if row.startswith("┌"))
        bottom = next(i for i, row in enumerate(rows) if row.startswith("└"))
        assert bottom - top + 1 == 1 + 1 + 1 + 15 + 1  # top, header, its rule, 15 rows, bottom
        assert [i for i in range(top, bottom) if rows[i].startswith("├")] == [top + 2]


async def test_the_help_tables_have_a_rule_under_their_header_only(tmp_path: Path) -> None:
    """`/help`'s key table had a rule between every row (Textual's Markdown grid): ~140 keys took ~290
    lines. Drawn as the conversation draws tables now: one rule, under the header."""
    from instance_ai_tui.tui.screens.help import HelpScreen

    from .test_interactions import send

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        await pilot.pause()
        await app.wait_until_rendered()
        rows = [row.strip(" █▕▏▎▍▌") for row in screen_rows(app)]
        tops = [i for i, row in enumerate(rows) if row.startswith("┌")]
        rules = [i for i, row in enumerate(rows) if row.startswith("├")]
        assert tops and "Ctrl+Q" in "\n".join(rows)
        assert rules == [top + 2 for top in tops if top + 2 < len(rows)], "\n".join(rows)


async def test_the_help_tables_action_column_is_not_squeezed_by_where(tmp_path: Path) -> None:
    """Seen in tmux at 160x48: /help's Action column was 25 cells (its words on 2-4 lines) beside a Where
    column of 35, kept that wide by one place's name ("Questions wizard: the review page"). The places'
    names are short now; the Action column is the wider."""
    from instance_ai_tui.tui.screens.help import HelpScreen

    from .test_interactions import send

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        await until(lambda: any(row.strip(" █▕▏▎▍▌").startswith("┌") for row in screen_rows(app)), pilot,
                    what="the key table drawn")
        top = next(row.strip(" █▕▏▎▍▌") for row in screen_rows(app) if row.strip(" █▕▏▎▍▌").startswith("┌"))
        widths = [len(cell) for cell in top.strip("┌┐").split("┬")]
        assert len(widths) == 4 and widths[1] > widths[2], (widths, top)


async def test_the_help_table_leaves_out_the_ids_at_80_columns(tmp_path: Path) -> None:
    """Seen in tmux at 80x24: /help's Id column took 22 cells and Action 14 ("Command / palette"); without
    the ids, Where still took 22 and Action 25: "Scroll the conversation / up a page", "Copy the next code /
    block of the focused / block". Under 100 columns the keys are one Key | Action table per place, the
    place's name above it (the ids are in docs/keymap.md and the wide table): an action wraps only when it
    is longer than the dialog is wide."""
    from textual.geometry import Region

    from instance_ai_tui.tui.screens.help import HelpScreen
    from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown

    from .test_interactions import send

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen) and app.screen.query_one(FlatMarkdown).settled, pilot,
                    what="the help drawn")
        document = app.screen.query_one(FlatMarkdown)
        rows = ["".join(segment.text for segment in strip).strip()
                for strip in document.render_lines(Region(0, 0, document.size.width, document.size.height))]
    key_rows: list[str] = []  # the rows of the key tables (their header says "Key")
    header = ""
    for before, row in pairwise(["", *rows]):
        if before.startswith("┌"):
            header = row
        if row.startswith("│") and header.startswith("│ Key") and row != header:
            key_rows.append(row)
    key_tops = [top for top, head in pairwise(rows) if top.startswith("┌") and head.startswith("│ Key")]
    assert len(key_tops) > 5 and all(top.count("┬") == 1 for top in key_tops), key_tops  # Key | Action, a place each
    assert "Anywhere" in rows and "Message input" in rows and "Conversation" in rows
    # a row whose Key cell is empty continues the action above it: only Ctrl+C's is longer than the dialog
    wrapped = [row for row in key_rows if not row.strip("│").split("│")[0].strip()]
    assert len(wrapped) <= 2, "\n".join(wrapped)


async def test_the_answer_needed_notice_goes_once_the_card_has_the_keys() -> None:
    """Item 3, seen in the screenshots: "ℹ The agent needs your answer — press Ctrl+G to go to it" stayed
    in the notice line after Ctrl+G and after the answer (its 6 s), over an idle status line. It goes
    once the card has the keys; the notice is given 600 s here so that only that can take it away."""
    from instance_ai_tui.tui.textual_internals import live_notifications
    from instance_ai_tui.tui.widgets.confirmations import ApprovalCard

    from .scripts import approval_run, recorded
    from .test_interactions import pending_card, send

    app = make_app(recorded([approval_run()]))
    real_notify = app.notify

    def notify(message: str, **kw: Any) -> None:
        if message.startswith("The agent needs your answer"):
            kw["timeout"] = 600
        real_notify(message, **kw)

    app.notify = notify  # type: ignore[method-assign]

    def needs_answer() -> bool:
        return any(str(n.message).startswith("The agent needs your answer") for n in live_notifications(app))

    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "delete it")
        await until(needs_answer, pilot)
        await pending_card(app, pilot, ApprovalCard)
        assert not needs_answer()
        await until(lambda: "needs your answer" not in str(app.main_screen.notices.render()) or
                    not app.main_screen.notices.display, pilot)
