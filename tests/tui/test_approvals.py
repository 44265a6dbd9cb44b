"""Approvals a person can trust (issues 12 and 32): no accidental answers, never missed, truthful states.

The keyboard model (``tui.cards``, ``docs/keyboard.md``): a new card never takes the keyboard by
itself — not from a field, the thread list, a dialog, nor from an empty, idle prompt; it is
reached deliberately (Ctrl+G, Tab, a click), says that it has the keys, and ignores keys for the
grace period after it is drawn. Cards appear here at a chosen moment: the test pushes the
``confirmation-request`` into the thread's live stream (``RecordedClient.publish``), as a
server does while the user is busy with something else.
"""

from __future__ import annotations

from typing import Any

from textual.command import CommandPalette
from textual.widgets import Input, OptionList

from instance_ai_tui.protocol.api import ApprovalConfirm
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ApprovalCard
from instance_ai_tui.tui.widgets.questions_card import QuestionsCard
from instance_ai_tui.tui.widgets.thread_list import RenameThreadScreen
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import SIZE, approval_run, ev, make_app


def running_log(run: str = "r1") -> list[dict[str, Any]]:
    """A run in progress: the agent called write-file and is about to ask."""
    return [
        ev("run-start", run=run, messageId=f"m-{run}"),
        ev("tool-call", run=run, toolCallId=f"w-{run}", toolName="write-file", args={"path": "notes.txt"}),
    ]


def ask(run: str = "r1", request: str = "cr-1") -> dict[str, Any]:
    return ev("confirmation-request", run=run, requestId=request, toolCallId=f"w-{run}", toolName="write-file",
              args={"path": "notes.txt"}, severity="warning", message="Write notes.txt?")


def client_with(log: list[dict[str, Any]]) -> RecordedClient:
    # "older" then "work" (the newest, opened at start)
    return RecordedClient({"older": [], "work": log}, titles={"older": "Older thread", "work": "Work"},
                          model_name="scripted-test")


def confirms(client: RecordedClient) -> list[Any]:
    return [args for name, args in client.calls if name == "confirm"]


def card_of(app: Any) -> Any:
    node = app.focused
    while node is not None and not isinstance(node, (ApprovalCard, QuestionsCard)):
        node = node.parent
    return node


async def type_slowly(pilot: Any, text: str, *, at: int, publish: Any, pause: float = 0.08) -> None:
    """Type ``text`` one key at a time; the card is pushed before key number ``at``."""
    for index, char in enumerate(text):
        if index == at:
            publish()
        await pilot.press("space" if char == " " else char)
        await pilot.pause(pause)


async def opened(app: Any, pilot: Any) -> None:
    await app.wait_until_ready()
    await app.wait_until_rendered()
    await until(lambda: app.conversation is not None and app.conversation.is_streaming, pilot)


def noting(app: Any) -> list[str]:
    """Every notification ``app`` posts from now on (a toast lasts 6 s: typing a long query key by key
    on a busy machine takes longer, and the live collection has reaped it by the time the test looks)."""
    seen: list[str] = []
    notify = app.notify

    def noted(message: str, **kwargs: Any) -> None:
        seen.append(message)
        notify(message, **kwargs)

    app.notify = noted
    return seen


async def test_card_appears_while_typing_a_search_query_one_key_at_a_time() -> None:
    client = client_with(running_log())
    app = make_app(client)
    notes = noting(app)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        app.actions.show_threads()
        await pilot.pause()
        search = app.focused
        assert isinstance(search, Input) and search.id == "thread-search"
        query = "weather slack daily yes always no"
        await type_slowly(pilot, query, at=12, publish=lambda: client.publish("work", ask()))
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        assert search.value == query and app.focused is search
        await pilot.pause(1.5)  # the user stops typing: the search field keeps the focus
        assert app.focused is search and confirms(client) == []
        assert any("Ctrl+G" in note for note in notes)
        await pilot.press("ctrl+g")  # deliberately
        await until(lambda: card_of(app) is not None, pilot)
        await pilot.press("y")  # reached on purpose: the answer counts at once
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-1", ApprovalConfirm(approved=True))]
        assert search.value == query  # the search kept every key typed into it


async def test_card_never_takes_focus_from_a_prompt_with_text() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        app.prompt.focus()
        await type_slowly(pilot, "yes and always and no", at=5, publish=lambda: client.publish("work", ask()))
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert app.focused is app.prompt and app.prompt.text == "yes and always and no"
        assert confirms(client) == [] and "keys: prompt" in app.status_line.plain
        # Tab reaches it deliberately
        await pilot.press("tab")
        assert card_of(app) is not None and confirms(client) == []
        assert app.prompt.text == "yes and always and no"
        app.prompt.focus()
        # so does a click
        turn = app.view.assistant_turns()[-1]
        card = turn.cards["w-r1"].card
        assert card is not None
        # the click lands where the person sees the card: wait until its corner is on screen and is the card's
        # (on a busy machine the layout after the focus change could still be moving: CI at load 15)
        await until(lambda: _under(app, card.region.x + 1, card.region.y + 1) is card, pilot)
        await pilot.click(offset=(card.region.x + 1, card.region.y + 1))
        await until(lambda: card_of(app) is card, pilot)


def _under(app: Any, x: int, y: int) -> Any:
    """The card (or None) whose part is drawn at screen cell (x, y)."""
    try:
        widget, _ = app.screen.get_widget_at(x, y)
    except Exception:  # noqa: BLE001 -- no widget there (off screen)
        return None
    while widget is not None and not isinstance(widget, ApprovalCard):
        widget = widget.parent
    return widget


async def test_card_never_takes_focus_even_from_an_empty_idle_prompt() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        app.prompt.focus()
        client.publish("work", ask())
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(2.0)  # long past the old "1 s idle" rule: still the prompt's
        assert app.focused is app.prompt and "keys: prompt" in app.status_line.plain
        card = app.view.assistant_turns()[-1].cards["w-r1"].card
        assert card is not None and "Ctrl+G" in str(card.focus_line.render())
        for char in "and also add a filter":  # the sentence of issue 32, 0.68 s after the card
            await pilot.press("space" if char == " " else char)
        assert app.prompt.text == "and also add a filter" and confirms(client) == []
        await pilot.press("ctrl+g")  # deliberately: the card has the keys and says so
        await until(lambda: card_of(app) is card, pilot)
        await until(lambda: "▶ keys: this card" in str(card.focus_line.render()), pilot)
        await until(lambda: "keys: card" in app.status_line.plain, pilot)
        await pilot.press("n")
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-1", ApprovalConfirm(approved=False))]
        await until(lambda: app.focused is app.prompt, pilot)  # answered: back to the prompt
        assert app.prompt.text == "and also add a filter"


async def test_a_card_drawn_just_now_ignores_keys_for_the_grace_period() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        client.publish("work", ask())
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: card_of(app) is not None, pilot)
        card = card_of(app)
        if card.in_grace:
            await pilot.press("y")
            assert confirms(client) == []
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("y")
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-1", ApprovalConfirm(approved=True))]


async def test_card_never_takes_focus_from_the_thread_list() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        app.thread_list.focus_list()
        await pilot.pause()
        keys = ["down", "up", "down", "y", "a", "n", "down", "up"]
        for index, key in enumerate(keys):
            if index == 2:
                client.publish("work", ask())
            await pilot.press(key)
            await pilot.pause(0.1)  # the scenario: a person's pace between keys
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert isinstance(app.focused, OptionList) and confirms(client) == []


async def test_card_never_takes_focus_from_the_rename_dialog() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        app.thread_list.focus_list()
        await pilot.pause()
        await pilot.press("f2")
        await until(lambda: isinstance(app.screen, RenameThreadScreen), pilot)
        field = app.screen.query_one(Input)
        field.value = ""
        await type_slowly(pilot, "yay notes", at=3, publish=lambda: client.publish("work", ask()))
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert isinstance(app.screen, RenameThreadScreen) and app.focused is field
        assert field.value == "yay notes" and confirms(client) == []
        assert "keys: dialog" in app.status_line.plain


async def test_card_never_takes_focus_from_the_command_palette() -> None:
    client = client_with(running_log())
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), pilot)
        await type_slowly(pilot, "yan", at=1, publish=lambda: client.publish("work", ask()))
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert isinstance(app.screen, CommandPalette) and confirms(client) == []


async def test_card_never_takes_focus_from_a_wizard_text_field() -> None:
    questions = ev("confirmation-request", run="r1", requestId="cr-q", toolCallId="q-r1", toolName="ask-user",
                   severity="info", message="A question first", inputType="questions",
                   questions=[{"id": "name", "question": "Name of the workflow?", "type": "text"}])
    log = [
        ev("run-start", run="r1", messageId="m-r1"),
        ev("tool-call", run="r1", toolCallId="q-r1", toolName="ask-user", args={}),
        questions,
        ev("tool-call", run="r1", toolCallId="w-r1", toolName="write-file", args={"path": "notes.txt"}),
    ]
    client = client_with(log)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        await until(lambda: app.view.assistant_turns()[-1].cards["q-r1"].card is not None, pilot)
        wizard = app.view.assistant_turns()[-1].cards["q-r1"].card
        assert isinstance(wizard, QuestionsCard)
        field = wizard.query_one("#other", Input)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert app.focused is app.prompt  # the wizard does not take the keys by itself either
        await pilot.press("ctrl+g")  # reached on purpose: its text field has the keys
        await until(lambda: app.focused is field, pilot)
        await until(lambda: not wizard.in_grace, pilot)
        await type_slowly(pilot, "yearly news", at=2, publish=lambda: client.publish("work", ask()))
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.pause(1.5)  # the scenario: the person stops; nothing takes the keys meanwhile
        assert app.focused is field and field.value == "yearly news" and confirms(client) == []


# --------------------------------------------------------------------------- never missed


def two_threads(**kwargs: Any) -> RecordedClient:
    return RecordedClient({"older": [], "work": []}, runs=[approval_run()],
                          titles={"older": "Old digest", "work": "Work"}, model_name="scripted-test", **kwargs)


async def test_a_card_waiting_in_another_thread_is_marked_counted_signalled_and_reached_with_ctrl_g() -> None:
    client = two_threads()
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        assert app.thread_id == "work"
        await client.send("older", "archive the old digest")  # a run in a thread that is not open
        await until(lambda: app.pending_watch.elsewhere.get("older") == 1, pilot)
        await until(lambda: "◷ waiting · Old digest" in app.thread_list.row_text("older"), pilot)  # a glyph and a word
        assert app.thread_list.pending_marks == {"older": 1}  # a glyph and a word
        assert "1 answer waiting: 1 in “Old digest” (Ctrl+G)" in app.status_line.plain
        assert app.terminal.signals == ["title:(1) answer waiting — Instance AI in “Old digest”", "bell"]
        assert app.focused is app.prompt  # nothing was focused by itself
        await pilot.press("ctrl+g")
        await until(lambda: app.thread_id == "older" and card_of(app) is not None, pilot)
        assert app.terminal.signals.count("bell") == 1  # the same card does not ring twice
        await pilot.pause(GRACE_SECONDS)  # it was drawn just now, in the thread Ctrl+G opened
        await pilot.press("y")
        await until(lambda: confirms(client), pilot)
        await until(lambda: "title-restored" in app.terminal.signals, pilot)
        assert app.status_info.waiting == "" and app.thread_list.pending_marks == {}


async def test_the_open_threads_card_is_counted_and_the_bell_can_be_turned_off() -> None:
    from instance_ai_tui.config import Settings

    client = two_threads()
    settings = Settings.model_validate({"ui": {"bell": False}})
    app = make_app(client, settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("archive it")
        await pilot.press("enter")
        await until(lambda: "1 answer waiting: 1 here (Ctrl+G)" in app.status_line.plain, pilot)
        assert "cr-1" in app.thread.pending
        assert app.thread_list.pending_marks == {"work": 1}
        assert app.terminal.signals == ["title:(1) answer waiting — Instance AI"]  # no bell


# --------------------------------------------------------------------------- labels follow the key map


async def test_card_labels_hints_and_help_follow_a_remapped_key_map() -> None:
    from instance_ai_tui.config import Settings
    from instance_ai_tui.tui.screens.help import HelpScreen

    client = client_with(running_log())
    settings = Settings.model_validate({"ui": {"keys": {"approve": "ctrl+y", "deny": "ctrl+u", "always-allow": "ctrl+a"}}})
    app = make_app(client, settings)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        client.publish("work", ask())
        await until(lambda: "cr-1" in app.thread.pending, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: card_of(app) is not None, pilot)
        card = card_of(app)
        labels = [str(button.label) for button in card.query("Button")]
        assert labels == ["Ctrl+Y Approve", "Ctrl+U Deny", "Ctrl+A Always allow…"]
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        help_text = " ".join(app.screen.markdown.split())
        assert "**Ctrl+Y** approve · **Ctrl+U** deny · **Ctrl+A** then **Enter** always allow" in help_text
        assert "**y**" not in help_text
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, HelpScreen) and not card.in_grace, pilot)
        await pilot.press("y")  # the default key does nothing any more
        await pilot.pause(0.1)  # the scenario: a window in which no answer may be sent
        assert confirms(client) == []
        await pilot.press("ctrl+y")
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-1", ApprovalConfirm(approved=True))]


async def test_plan_review_says_reject_plan_on_the_card_the_footer_and_in_help() -> None:
    from instance_ai_tui.tui.screens.help import help_markdown
    from instance_ai_tui.tui.widgets.confirmations import PlanReviewCard

    plan = ev("confirmation-request", run="r1", requestId="cr-p", toolCallId="p-r1", toolName="create-tasks",
              severity="info", message="Review the plan", inputType="plan-review",
              tasks=[{"id": "t1", "description": "Build it", "status": "pending"}])
    log = [ev("run-start", run="r1", messageId="m-r1"),
           ev("tool-call", run="r1", toolCallId="p-r1", toolName="create-tasks", args={}), plan]
    client = client_with(log)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await opened(app, pilot)
        await until(lambda: "cr-p" in app.thread.pending, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: isinstance(app.focused, PlanReviewCard), pilot)
        card = app.focused
        assert [str(b.label) for b in card.query("Button")] == ["y Approve", "r Request changes", "n Reject plan"]
        footer = {b.binding.id: b.binding.description for b in app.screen.active_bindings.values()}
        assert footer["deny"] == "Reject plan"
        text = " ".join(help_markdown(app.keys, card).split())
        assert "**n** or **x** reject the plan" in text and "Deny" not in text
        assert "| n | Reject plan |" in text


# --------------------------------------------------------------------------- /permissions


def bottom_row(app: Any) -> str:
    return "".join(segment.text for segment in app.screen._compositor.render_strips()[-1])


async def _grant_and_revoke(client: Any, tmp_path: Any) -> None:
    """Build with the demo model, answer "always allow", then revoke it in /permissions."""
    from instance_ai_tui.config import Settings
    from instance_ai_tui.tui.screens.permissions import PermissionsScreen

    app = make_app(client, Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "ui.sqlite3"}))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("every morning send the weather forecast to Slack")
        await pilot.press("enter")
        await until(lambda: bool(app.thread.pending), pilot, timeout=20)
        await pilot.press("ctrl+g")
        await until(lambda: card_of(app) is not None, pilot, timeout=20)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("a")  # step one: the card says what it grants and for how long
        card = card_of(app)
        await until(lambda: card.armed is not None, pilot)
        assert "runs without asking, for the rest of this thread" in str(card.always_line.render())
        assert not card.answered
        await pilot.press("enter")  # the second, different key grants it
        await until(lambda: not app.conversation.is_streaming, pilot, timeout=20)
        thread_id = app.thread_id
        assert (await client.permissions(thread_id)).always_allow == ["activate-workflow"]
        # the next build runs it without asking, and says so (tree, card, export)
        before = len(app.view.assistant_turns())
        app.prompt.load_text("every noon send the stock prices to Slack")
        await pilot.press("enter")
        await until(lambda: len(app.view.assistant_turns()) > before and not app.conversation.is_streaming, pilot,
                    timeout=20)
        await app.wait_until_rendered()
        turn = app.view.assistant_turns()[-1]
        activate = next(c for c in turn.cards.values() if c.tc.tool_name == "activate-workflow")
        assert activate.shown_state is not None and activate.shown_state.auto_approved
        assert activate.shown_state.kind == "done" and activate.tc.confirmation is None
        assert "auto-approved (always allow)" in str(activate.header.visual)
        from instance_ai_tui.protocol.transcript import to_markdown

        assert "**🔧 activate-workflow** (done, auto-approved (always allow))" in to_markdown(app.conversation)
        app.prompt.load_text("/permissions")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, PermissionsScreen) and app.screen.grants, pilot)
        assert app.screen.grants == ["activate-workflow"]
        await until(lambda: "Revoke the grant" in bottom_row(app), pilot)  # offered while there is one
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, PermissionsScreen) and not app.screen.grants, pilot)
        await until(lambda: "Close" in bottom_row(app) and "Revoke the grant" not in bottom_row(app),
                    pilot)  # and not once nothing is left
        assert (await client.permissions(thread_id)).always_allow == []
        await pilot.press("escape")
        # the next build asks again
        app.prompt.load_text("every evening send the RSS news to Slack")
        await pilot.press("enter")
        await until(lambda: bool(app.thread.pending), pilot, timeout=20)


async def test_permissions_lists_and_revokes_always_allow_embedded(tmp_path: Any) -> None:
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import Settings

    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})
    await _grant_and_revoke(EmbeddedClient(settings), tmp_path)


async def test_permissions_lists_and_revokes_always_allow_on_our_server(tmp_path: Any) -> None:
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.client.remote import RemoteClient
    from instance_ai_tui.config import ModelSettings, Settings
    from instance_ai_tui.server.app import create_app

    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    async with serve_app(create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)) as url:
        await _grant_and_revoke(RemoteClient(url), tmp_path)


# --------------------------------------------------------------------------- the checklist tells the truth


async def test_cancelled_run_marks_unfinished_tasks_stopped() -> None:
    from instance_ai_tui.protocol.events import TaskStatus

    run = [
        ev("run-start", messageId="m1"),
        ev("tasks-update", tasks=[{"id": "t1", "description": "Build the workflow", "status": "completed"},
                                  {"id": "t2", "description": "Test it", "status": "in_progress"},
                                  {"id": "t3", "description": "Activate it", "status": "pending"}]),
        *[ev("text-delta", text="working ") for _ in range(400)],
    ]
    client = RecordedClient({"work": []}, runs=[run], model_name="scripted-test", delay=0.01)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("build it")
        await pilot.press("enter")
        await until(lambda: app.tasks_panel.tasks is not None, pilot)
        assert "stopped" not in str(app.tasks_panel.title_line.visual)
        app.prompt.focus()
        await pilot.press("escape")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        tasks = app.tasks_panel.tasks
        assert tasks is not None
        assert [t.status for t in tasks.tasks] == [TaskStatus.DONE, TaskStatus.CANCELLED, TaskStatus.CANCELLED]
        assert "1/3 done · stopped: run cancelled" in str(app.tasks_panel.title_line.visual)


async def test_a_rejected_plan_is_not_shown_as_the_checklist() -> None:
    from instance_ai_tui.tui.widgets.confirmations import PlanReviewCard

    plan = [{"id": "t1", "description": "Build the workflow", "status": "pending"},
            {"id": "t2", "description": "Activate it", "status": "pending"}]
    run = [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="pl1", toolName="plan", args={"action": "create", "review": True}),
        ev("tasks-update", tasks=plan),
        ev("confirmation-request", requestId="cr-p", toolCallId="pl1", toolName="plan", severity="info",
           message="Review the plan", inputType="plan-review", tasks=plan),
        ev("tool-result", toolCallId="pl1", result={"approved": False, "rejected": True}),
        ev("text-delta", text="All right, no plan. What would you like instead?"),
        ev("run-finish", status="completed"),
    ]
    client = RecordedClient({"work": []}, runs=[run], model_name="scripted-test")
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("plan it")
        await pilot.press("enter")
        await until(lambda: "cr-p" in app.thread.pending, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: isinstance(card_of(app) or app.focused, PlanReviewCard), pilot)
        assert app.tasks_panel.tasks is not None  # the plan under review is shown
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("n")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        assert app.tasks_panel.tasks is None
        assert "plan rejected" in str(app.tasks_panel.title_line.visual)



async def test_a_plan_sent_back_to_n8n_leaves_the_task_panel_with_n8ns_verify_rows() -> None:
    """Seen by hand against n8n 2.41.1: after "Request changes" n8n's tasks-update carries the plan
    with a projected "Verify workflow" row (id ``t1:verify``) under each build task; the panel kept
    it as "Tasks 0/4 done" because the rows differed from the reviewed plan's."""
    from instance_ai_tui.tui.widgets.confirmations import PlanReviewCard

    plan = [{"id": "t1", "description": "Build the digest workflow", "status": "todo"},
            {"id": "t2", "description": "Test the digest workflow", "status": "todo"}]
    projected = [plan[0], {"id": "t1:verify", "description": "Verify workflow", "status": "todo"},
                 plan[1], {"id": "t2:verify", "description": "Verify workflow", "status": "todo"}]
    run = [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="ct1", toolName="create-tasks", args={"tasks": []}),
        ev("tasks-update", tasks={"tasks": plan}),
        ev("confirmation-request", requestId="cr-p", toolCallId="ct1", toolName="create-tasks", severity="info",
           message="Review the plan (2 tasks) before execution starts.", inputType="plan-review",
           tasks={"tasks": plan}),
        ev("tasks-update", tasks={"tasks": projected}),
        ev("tool-result", toolCallId="ct1", result={
            "result": "User requested changes: fewer steps. Revise the tasks and call create-tasks again.",
            "taskCount": 0}),
        ev("text-delta", text="Understood, I will change the plan."),
        ev("run-finish", status="completed"),
    ]
    client = RecordedClient({"work": []}, runs=[run], model_name="scripted-test")
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("plan a digest")
        await pilot.press("enter")
        await until(lambda: "cr-p" in app.thread.pending, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: isinstance(card_of(app) or app.focused, PlanReviewCard), pilot)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("r", *"fewer steps", "enter")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        assert app.tasks_panel.tasks is None, str(app.tasks_panel.title_line.visual)
        assert "plan sent back for changes" in str(app.tasks_panel.title_line.visual)


# --------------------------------------------------------------------------- truthful states, restored


class _RestoredClient(RecordedClient):
    """Serves one thread's history as n8n's GET .../messages does (agent trees); the app's
    restore path (load_history -> cards) is the real one."""

    def __init__(self, history: dict[str, Any]) -> None:
        super().__init__({"n8n": []}, titles={"n8n": "Restored"}, model_name="scripted-test")
        self.history = history

    async def messages(self, thread_id: str) -> Any:
        from instance_ai_tui.protocol.api import ThreadMessages

        return ThreadMessages.model_validate({"threadId": thread_id, **self.history})


async def test_a_restored_n8n_tree_shows_denied_and_expired_truthfully() -> None:
    tree = {
        "agentId": "agent-001", "role": "orchestrator", "status": "completed", "textContent": "",
        "toolCalls": [
            {"toolCallId": "t1", "toolName": "activate-workflow", "args": {"workflowId": "w1"}, "isLoading": False,
             "result": {"success": False, "denied": True, "reason": "User denied the action"},
             "confirmation": {"requestId": "cr-1", "severity": "warning", "message": "Activate?"}},
            {"toolCallId": "t2", "toolName": "archive-workflow", "args": {"workflowId": "w2"}, "isLoading": True,
             "confirmation": {"requestId": "cr-2", "severity": "destructive", "message": "Archive?", "expired": True}},
        ],
        "timeline": [{"type": "tool-call", "toolCallId": "t1"}, {"type": "tool-call", "toolCallId": "t2"}],
    }
    history = {"nextEventId": 1, "messages": [
        {"id": "u1", "role": "user", "createdAt": "2026-01-01T00:00:00Z", "content": "activate and archive"},
        {"id": "m1", "role": "assistant", "createdAt": "2026-01-01T00:00:01Z", "runId": "r1", "agentTree": tree},
    ]}
    app = make_app(_RestoredClient(history))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        cards = app.view.assistant_turns()[-1].cards
        await until(lambda: {"t1", "t2"} <= set(cards), pilot)
        denied, expired = cards["t1"], cards["t2"]
        await until(lambda: denied.shown_state is not None and expired.shown_state is not None, pilot)
        assert denied.state == "denied" and "✗" in str(denied.header.visual) and "denied" in str(denied.header.visual)
        assert "✓" not in str(denied.header.visual)
        assert expired.state == "expired" and "expired" in str(expired.header.visual)
        assert expired.card is None and not app.thread.pending  # nothing to answer, no spinner


async def test_a_card_in_a_thread_another_client_started_on_our_server_is_never_missed(tmp_path: Any) -> None:
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.client.remote import RemoteClient
    from instance_ai_tui.config import ModelSettings, Settings
    from instance_ai_tui.server.app import create_app

    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    async with serve_app(create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)) as url:
        other = RemoteClient(url)  # another terminal, same server
        await other.open()
        try:
            await other.create_thread("first", title="First")
            app = make_app(RemoteClient(url))
            async with app.run_test(size=SIZE) as pilot:
                await app.wait_until_ready()
                assert app.thread_id == "first"
                await other.create_thread("elsewhere", title="Elsewhere")
                await other.send("elsewhere", "every morning send the weather forecast to Slack")
                await until(lambda: app.pending_watch.elsewhere.get("elsewhere") == 1, pilot)
                await until(lambda: "◷ waiting · Elsewhere" in app.thread_list.row_text("elsewhere"), pilot)
                await until(lambda: "1 answer waiting: 1 in “Elsewhere”" in app.status_line.plain, pilot)
                assert app.terminal.signals[-2:] == ["title:(1) answer waiting — Instance AI in “Elsewhere”", "bell"]
                await pilot.press("ctrl+g")
                await until(lambda: app.thread_id == "elsewhere" and card_of(app) is not None, pilot, timeout=10)
                await pilot.pause(GRACE_SECONDS)
                await pilot.press("y")
                await until(lambda: "title-restored" in app.terminal.signals, pilot, timeout=20)
        finally:
            await other.close()


async def test_a_card_in_an_n8n_thread_that_is_not_open_is_never_missed(tmp_path: Any) -> None:
    from instance_ai_tui.client.n8n import N8nClient
    from tests.support.fake_n8n import FakeN8n

    fake = FakeN8n(ping_interval=0.5)
    await fake.start()

    def n8n(name: str) -> N8nClient:
        return N8nClient(fake.base_url, fake.email, fake.password, config_dir=tmp_path / name, interactive=False,
                         initial_backoff=0.05, max_backoff=0.3, keepalive_timeout=5.0)

    other = n8n("other")  # the browser, say
    try:
        await other.open()
        first = await other.create_thread(title="First")
        app = make_app(n8n("app"))
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            assert app.thread_id == first.id
            second = await other.create_thread(title="Old sync")
            await other.send(second.id, "archive the old sync workflow")
            await until(lambda: app.pending_watch.elsewhere.get(second.id) == 1, pilot)
            await until(lambda: "◷ waiting" in app.thread_list.row_text(second.id), pilot)
            await until(lambda: "1 answer waiting: 1 in" in app.status_line.plain, pilot)
            assert app.terminal.signals[-1] == "bell" and app.terminal.signals[-2].startswith("title:(1) answer waiting")
            await pilot.press("ctrl+g")
            await until(lambda: app.thread_id == second.id and card_of(app) is not None, pilot, timeout=10)
            await pilot.pause(GRACE_SECONDS)
            await pilot.press("y")
            await until(lambda: "title-restored" in app.terminal.signals, pilot, timeout=20)
    finally:
        await other.close()
        await fake.stop()
