"""Issue 33: the small defects a daily user meets, each checked in the real app (Pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server.live import serve_app
from textual.app import App
from textual.widgets import Label

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from instance_ai_tui.tui.screens.rewind import RewindPicker, UserTurn
from tests.support.waiting import until

from .test_connection import SIZE, make_app, screen_text


async def test_a_demo_server_by_url_shows_the_demo_banner(tmp_path: Path) -> None:
    """Item 7: connected by --url to a server whose model is the offline demo, the banner says so
    (the remote client learns the model only when it opens, after the first frame)."""
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    async with serve_app(create_app(build_service(settings))) as url:
        app = make_app(RemoteClient(url))
        async with app.run_test(size=SIZE):
            await app.wait_until_ready()
            assert app.status_info.demo
            assert len(app.query("#demo-banner")) == 1
            assert "DEMO MODE" in screen_text(app)


def _cut_labels(screen: Any) -> list[tuple[str, str]]:
    """Labels of ``screen`` whose drawing leaves out some of their text (cut at the edge)."""
    cut = []
    for label in screen.query(Label):
        if not label.display or label.region.area == 0:
            continue
        text = str(label.render())
        drawn = "".join(strip.text for strip in label.render_lines(label.region.reset_offset))
        if drawn.replace(" ", "") != text.replace(" ", "").replace("\n", ""):
            cut.append((text, drawn))
    return cut


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.parametrize("count", [3, 30])
async def test_the_rewind_dialog_shows_its_whole_help_line(size: tuple[int, int], count: int) -> None:
    """Item 2: the help line is whole on screen, however many messages the list holds (at 80x24 a
    long list pushed its second line out of the dialog: "…leave the agent's memory (kept in the")."""
    turns = [UserTurn(f"m{n}", f"r{n}", f"message number {n}") for n in range(count)]
    app = App[None]()
    async with app.run_test(size=size) as pilot:
        await app.push_screen(RewindPicker(turns))
        await pilot.pause()
        assert _cut_labels(app.screen) == []
        hint = app.screen.query(".hint").first()
        geometry = app.screen.find_widget(hint)
        assert geometry.visible_region == hint.region and hint.region.height >= 2
        drawn = " ".join(strip.text.strip() for strip in hint.render_lines(hint.region.reset_offset))
        assert "(kept in the thread's history)" in drawn and "Esc: cancel" in drawn


class _ActivityHarness(App[None]):
    def __init__(self) -> None:
        super().__init__()
        from instance_ai_tui.tui.widgets.n8n_activity import N8nActivity

        from .scripts import recorded

        self.activity = N8nActivity(recorded())

    def compose(self) -> Any:
        yield self.activity


@pytest.mark.parametrize(("size", "rows_used"), [((80, 24), 1), ((160, 48), 3)])
async def test_finished_background_tasks_leave_the_strip(size: tuple[int, int], rows_used: int) -> None:
    """Item 4: the "Background tasks" strip stayed under the conversation after its tasks ended, in
    later turns too; at 80x24 it took 3 of about 9 conversation rows. Now a finished task stays a few
    seconds, the strip then hides; on a short screen the tasks take one line and no rule."""
    import time

    from instance_ai_tui.tui.widgets import n8n_activity

    app = _ActivityHarness()
    async with app.run_test(size=size) as pilot:
        activity = app.activity
        activity._merge_task({"taskId": "t1", "role": "workflow-builder", "agentId": "a1", "status": "running",
                              "startedAt": time.time() * 1000})
        activity._merge_task({"taskId": "t2", "role": "data-table-builder", "agentId": "a2", "status": "running",
                              "startedAt": time.time() * 1000})
        activity.redraw()
        await pilot.pause()
        assert activity.display and activity.outer_size.height == rows_used + (0 if size[1] < 30 else 1)
        for row in activity.tasks.values():  # both ended, longer ago than a finished task is shown
            row.status, row.ended_at = "completed", time.time() - n8n_activity.FINISHED_SHOWN_FOR - 1
        activity._tick()
        await pilot.pause()
        assert not activity.display


@pytest.mark.parametrize(("enter_sends", "placeholder", "welcome"), [
    (True, "(Enter sends, Ctrl+J new line", "Enter sends · Ctrl+J or \\ Enter new line"),
    (False, "(Ctrl+J sends, Enter new line", "Ctrl+J sends · Enter new line"),
])
async def test_the_prompt_and_the_welcome_name_the_keys_of_this_key_map(
        enter_sends: bool, placeholder: str, welcome: str) -> None:
    """Item 6: with ``ui.enter_sends = false`` the placeholder and the empty thread's hint still said
    "Enter sends" (Enter made a new line)."""
    from .scripts import make_app as make_recorded_app
    from .scripts import recorded

    settings = Settings()
    settings.ui.enter_sends = enter_sends
    app = make_recorded_app(recorded(), settings)
    async with app.run_test(size=(120, 40)):
        await app.wait_until_ready()
        assert placeholder in str(app.prompt.placeholder)
        assert welcome in screen_text(app)


async def test_a_delegation_says_its_summary_once_on_one_line(tmp_path: Path) -> None:
    """Item 8: the delegate row and the "◆ workflow builder" row repeated the same summary, and the
    sub-agent's summary wrapped on under the │ rail. The embedded demo builds a workflow."""
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
    from instance_ai_tui.tui.widgets.turns import SubAgentSection

    from .scripts import make_app as make_recorded_app

    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})
    app = make_recorded_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    async with app.run_test(size=(100, 40)) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("every morning send the weather forecast to Slack")
        await until(lambda: bool(app.thread.pending), pilot, timeout=60)  # the run waits for "activate?"
        await app.wait_until_rendered()
        delegate = next(c for c in app.query(ToolCallCard) if c.tc.tool_name == "delegate")
        section = next(iter(app.query(SubAgentSection)))
        await until(lambda: section.info.status != "active", pilot)
        await app.wait_until_rendered()
        sub_header = str(section.header.render())
        card_header = "".join(s.text for s in delegate.header.render_lines(delegate.header.region.reset_offset)[0])
        assert "Created workflow" in sub_header  # the summary, on the sub-agent's row
        assert "Created workflow" not in card_header and "◆ workflow builder" in card_header
        assert section.header.size.height == 1  # cut with "…", not wrapped under the rail


async def test_a_gateway_file_card_says_its_sentence_once() -> None:
    """Item 11: n8n's resource-decision card repeated its sentence (n8n's message is the
    decision's description, and the details line printed the description again)."""
    from textual.widgets import Static

    from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
    from instance_ai_tui.tui.widgets.card_factory import build_card

    sentence = "Read file private/plan.txt outside the allowed paths"
    conf = Confirmation.model_validate({
        "requestId": "r1", "severity": "warning", "message": sentence, "inputType": "resource-decision",
        "resourceDecision": {"toolGroup": "filesystem", "resource": "private/plan.txt", "description": sentence,
                             "options": ["allowOnce", "denyOnce", "allowForSession"]}})
    card = build_card(ToolCallState(tool_call_id="c1"), conf)

    class Harness(App[None]):
        def compose(self) -> Any:
            yield card

    app = Harness()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        drawn = "\n".join(str(w.render()) for w in card.query(Static))
        assert drawn.count(sentence) == 1
        assert "filesystem: private/plan.txt" in drawn  # what and where, once


@pytest.mark.parametrize(("width", "one_row"), [(34, False), (100, True)])
async def test_an_approval_cards_keys_are_never_cut(width: int, one_row: bool) -> None:
    """Item 2: at 120 columns with both side panels the card's key row was cut ("a Always allo");
    now a row too wide for the card stacks its buttons, each whole."""
    from textual.containers import Vertical
    from textual.errors import NoWidget
    from textual.widgets import Button

    from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
    from instance_ai_tui.tui.widgets.card_factory import build_card

    conf = Confirmation.model_validate({"requestId": "r1", "severity": "warning", "message": "Activate workflow wf-1?",
                                        "inputType": "approval"})
    card = build_card(ToolCallState(tool_call_id="c1", tool_name="activate-workflow"), conf)

    class Harness(App[None]):
        CSS = f"#box {{ width: {width}; height: auto; }}"

        def compose(self) -> Any:
            with Vertical(id="box"):
                yield card

    app = Harness()
    async with app.run_test(size=(120, 30)) as pilot:

        def laid_out() -> bool:  # the card fits its buttons after a refresh (stacked when too wide): then drawn
            shown = list(card.query(".card-buttons Button").results(Button))
            try:
                return len(shown) == 3 and all(app.screen.find_widget(b).visible_region == b.region for b in shown)
            except NoWidget:  # not on the screen yet
                return False

        await until(laid_out, pilot, what="every button drawn whole")
        buttons = list(card.query(".card-buttons Button").results(Button))
        assert len(buttons) == 3  # approve, deny, always allow
        for button in buttons:
            assert app.screen.find_widget(button).visible_region == button.region, str(button.label)
        assert (len({b.region.y for b in buttons}) == 1) is one_row


async def test_the_wizard_asks_instead_of_skipping_and_arrows_choose() -> None:
    """Item 1: Enter with nothing chosen silently skipped a question; ↑/↓ did nothing; the footer
    said "⏎ Expand"; the status line said "awaiting approval" for a question."""
    from instance_ai_tui.tui.widgets.questions_card import QuestionsCard

    from .scripts import make_app as make_recorded_app
    from .scripts import questions_run, recorded
    from .test_interactions import pending_card, send

    app = make_recorded_app(recorded([questions_run()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "build it")
        card: QuestionsCard = await pending_card(app, pilot, QuestionsCard)
        await until(lambda: app.status_info.run_state == "awaiting your answer", pilot)
        await until(lambda: not card.in_grace, pilot)  # past the card's key grace
        await pilot.press("enter")  # nothing chosen: asked, not skipped
        assert card.page == 0 and "when" not in card.skipped
        assert "Choose an option" in str(card.query_one("#question").render())
        await pilot.press("down", "down", "enter")  # the highlight on "noon", Enter picks it
        await until(lambda: card.page == 1, pilot)
        assert card.selected["when"] == ["noon"]
        # the footer names what Enter does here (it said "⏎ Expand", the tool card's key)
        assert app.active_bindings["enter"].binding.description == "Toggle"  # a multi-select: Enter ticks
