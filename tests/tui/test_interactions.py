"""Pilot tests of every interaction, driven through the real app and a recorded client."""

from __future__ import annotations

import time
from typing import Any

import pytest

from instance_ai_tui.protocol.api import (
    ApprovalConfirm,
    PlanDenyConfirm,
    QuestionsConfirm,
    ThreadMessages,
)
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.tui.screens.help import HelpScreen
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ApprovalCard, PlanReviewCard
from instance_ai_tui.tui.widgets.questions_card import QuestionsCard
from instance_ai_tui.tui.widgets.turns import AssistantTurn, ReasoningBlock, TextBlock, UserMessage
from tests.support.fold import apply
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import (
    ANSWER,
    SIZE,
    approval_run,
    endless_run,
    ev,
    make_app,
    plan_run,
    questions_run,
    recorded,
    simple_run,
    subagent_run,
    text_deltas,
)


async def send(pilot: Any, app: Any, text: str) -> None:
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


def turns(app: Any) -> list[AssistantTurn]:
    return app.view.assistant_turns()


def root_text(app: Any) -> str:
    turn = turns(app)[-1]
    blocks = [w for w in turn.root.entries.values() if isinstance(w, TextBlock)]
    return "".join(b.source for b in blocks)


def confirm_calls(client: RecordedClient) -> list[tuple[str, Any]]:
    return [args for name, args in client.calls if name == "confirm"]


async def pending_card(app: Any, pilot: Any, kind: type) -> Any:
    """Go to the waiting card as a person does (Ctrl+G: a card never takes the keys by itself)."""
    await until(lambda: bool(app.thread.pending), pilot)
    await pilot.press("ctrl+g")
    await until(lambda: isinstance(app.focused, kind) or (app.focused is not None and isinstance(app.focused.parent, kind)), pilot)
    card = app.focused if isinstance(app.focused, kind) else app.focused.parent
    return card


# --------------------------------------------------------------------------- send and stream


async def test_send_streams_the_agent_activity_tree() -> None:
    client = recorded([simple_run()], delay=0.1)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        # the user's message shows at once, then the answer streams in: the text block is seen
        # growing (drawn piece by piece), not only once finished
        await until(lambda: any(isinstance(w, UserMessage) for w in app.view.turns.values()), pilot)
        seen: set[int] = set()
        started = False
        for _ in range(1500):  # at most ~15 s
            started = started or (app.conversation is not None and app.conversation.is_streaming)
            # a turn mounted but not composed yet has no root section (its compose comes a loop
            # cycle later; under load a sample lands between): nothing of it is drawn yet
            blocks = [w for t in turns(app) if t.root is not None for w in t.root.entries.values()
                      if isinstance(w, TextBlock)]
            if blocks:
                seen.add(len(blocks[-1].target))
            if started and not app.conversation.is_streaming:
                break
            await pilot.pause(0.01)  # the scenario: sampling the screen while the answer streams
        await app.wait_until_rendered()
        assert len([n for n in seen if 0 < n < len(ANSWER)]) >= 2, f"the answer was not streamed: {sorted(seen)}"
        assert ("send", (app.thread_id, "list my workflows")) in client.calls
        assert root_text(app) == ANSWER
        turn = turns(app)[-1]
        card = turn.cards["tc1"]
        assert card.state == "done"
        assert "1 workflows" in card.header.visual.plain if hasattr(card.header.visual, "plain") else True
        reasoning = [w for w in turn.root.entries.values() if isinstance(w, ReasoningBlock)]
        assert reasoning and not reasoning[0].expanded  # collapsed once the answer started
        assert app.status_info.run_state == "idle"
        assert app.prompt.text == ""


async def test_second_message_while_running_is_not_sent() -> None:
    client = recorded([endless_run()], delay=0.01)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "go")
        await until(lambda: app.conversation.is_streaming, pilot)
        await send(pilot, app, "and another thing")
        await until(lambda: bool(app.thread.outbox.queue.items), pilot)  # decided: queued, not sent
        assert [c for c in client.calls if c[0] == "send"] == [("send", (app.thread_id, "go"))]
        # queued, shown above the prompt, sent when the run ends (issue 13; tests/tui/test_connection.py)
        assert [q.text for q in app.thread.outbox.queue.items] == ["and another thing"]


# --------------------------------------------------------------------------- approvals


@pytest.mark.parametrize("key", ["y", "enter"])
async def test_approve_after_the_grace_period(key: str) -> None:
    client = recorded([approval_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive the old digest")
        card = await pending_card(app, pilot, ApprovalCard)
        assert card.has_class("-destructive")
        card.shown_at = time.monotonic()  # as if it had just appeared (a loaded machine is slow to focus)
        await pilot.press(key)  # within the grace period: ignored
        await pilot.pause(0.05)  # the scenario: a window in which no answer may be sent
        assert confirm_calls(client) == []
        await until(lambda: not card.in_grace, pilot)
        await pilot.press(key)
        await until(lambda: confirm_calls(client), pilot)
        assert confirm_calls(client) == [("cr-1", ApprovalConfirm(approved=True))]
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        tool = turns(app)[-1].cards["tc9"]
        assert tool.state == "done" and tool.card is None
        assert app.thread.pending == set()
        assert app.focused is app.prompt


async def test_deny_turns_the_call_into_an_error() -> None:
    client = recorded([approval_run("warning")])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        card = await pending_card(app, pilot, ApprovalCard)
        assert card.has_class("-warning")
        await until(lambda: not card.in_grace, pilot)
        await pilot.press("n")
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        assert confirm_calls(client) == [("cr-1", ApprovalConfirm(approved=False))]
        assert turns(app)[-1].cards["tc9"].state == "denied"  # display_state: a denial, not a failure


async def test_always_allow_sends_session_scope() -> None:
    client = recorded([approval_run("warning")])  # a destructive card offers no always-allow (issue 42.4)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        card = await pending_card(app, pilot, ApprovalCard)
        await until(lambda: not card.in_grace, pilot)
        await pilot.press("a")  # step one says what it grants; it is not the grant
        await pilot.pause(0.2)  # the scenario: a window in which no answer may be sent
        assert confirm_calls(client) == []
        await pilot.press("enter")  # the second, different key grants it
        await until(lambda: confirm_calls(client), pilot)
        assert confirm_calls(client) == [("cr-1", ApprovalConfirm(approved=True, scope="session"))]


async def test_pending_card_reachable_when_scrolled_away_and_typing() -> None:
    client = recorded([approval_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        app.prompt.load_text("x")  # the card appears while the user is typing: no focus steal
        await app.thread.outbox.send("archive it")
        await until(lambda: bool(app.thread.pending), pilot)
        await pilot.pause(0.2)  # the scenario: a window in which the card must not take the focus
        assert app.focused is app.prompt
        app.view.scroll_home(animate=False)
        await pilot.press("ctrl+g")
        await until(lambda: isinstance(app.focused, ApprovalCard), pilot)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press("y")
        await until(lambda: confirm_calls(client), pilot)


# --------------------------------------------------------------------------- questions and plans


async def test_questions_wizard_one_question_at_a_time() -> None:
    client = recorded([questions_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "build a weather workflow")
        card: QuestionsCard = await pending_card(app, pilot, QuestionsCard)
        await pilot.pause(GRACE_SECONDS)
        assert card.page == 0
        await pilot.press("3")  # "Other…" on a single-choice question: free text
        await pilot.press(*"7am", "enter")
        assert card.page == 1 and card.custom["when"] == "7am"
        await pilot.press("left")  # back: the answer is kept, then choose an option instead
        assert card.page == 0
        await pilot.press("2")
        assert card.page == 1 and card.selected["when"] == ["noon"] and "when" not in card.custom
        await pilot.press("1", "3", "1", "2", "enter")  # multi-select toggles
        assert sorted(card.selected["where"]) == ["#dev", "#ops"]
        assert card.page == 2
        await pilot.press(*"Weather bot", "enter")
        assert card.on_review
        await pilot.press("enter")
        await until(lambda: confirm_calls(client), pilot)
        request_id, body = confirm_calls(client)[0]
        assert request_id == "cr-q" and isinstance(body, QuestionsConfirm)
        answers = {a.question_id: a for a in body.answers}
        assert answers["when"].selected_options == ["noon"]
        assert sorted(answers["where"].selected_options) == ["#dev", "#ops"]
        assert answers["name"].custom_text == "Weather bot"


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (("y",), ApprovalConfirm(approved=True)),
        (("n",), PlanDenyConfirm()),
        (("r", *"fewer steps", "enter"), ApprovalConfirm(approved=False, user_input="fewer steps")),
    ],
    ids=["approve", "reject", "request-changes"],
)
async def test_plan_review(keys: tuple[str, ...], expected: Any) -> None:
    client = recorded([plan_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "plan it")
        card = await pending_card(app, pilot, PlanReviewCard)
        assert "Build the workflow" in str(card.query(".plan-tasks").first().visual)
        await pilot.pause(GRACE_SECONDS)
        await pilot.press(*keys)
        await until(lambda: confirm_calls(client), pilot)
        assert confirm_calls(client) == [("cr-p", expected)]


# --------------------------------------------------------------------------- cancel


async def test_escape_cancels_the_active_run() -> None:
    client = recorded([endless_run()], delay=0.01)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "write a lot")
        await until(lambda: app.conversation.is_streaming, pilot)
        await pilot.press("escape")
        await until(lambda: ("cancel", app.thread_id) in client.calls, pilot)
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        turn = turns(app)[-1]
        assert turn.footer.display and "Cancelled" in str(turn.footer.visual)
        assert app.status_info.run_state == "idle"


# --------------------------------------------------------------------------- threads


def _log(run: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [{**e, "runId": run_id} for e in run]


async def test_switch_thread_shows_that_thread_only() -> None:
    client = RecordedClient(
        {"older": _log(subagent_run(), "r-old"), "newer": _log(simple_run(), "r-new")},
        titles={"older": "Weather workflow", "newer": "List workflows"},
    )
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        assert app.thread_id == "newer"  # newest first
        assert [t.message_id for t in turns(app)] == ["r-new"]
        app.thread_list.focus_list()
        assert app.thread_list.visible_thread_ids()[:2] == ["newer", "older"]
        app.thread_list.post_message(app.thread_list.Selected(app.thread_list, "older", "local"))
        await until(lambda: app.thread_id == "older", pilot)
        await app.wait_until_rendered()
        assert [t.message_id for t in turns(app)] == ["r-old"]
        turn = turns(app)[0]
        assert "a2" in turn.subagents and not turn.subagents["a2"].expanded  # completed: collapsed
        assert app.tasks_panel.display and "2/2 done" in str(app.tasks_panel.title_line.visual)
        app.thread_list.post_message(app.thread_list.Selected(app.thread_list, "newer", "local"))
        await until(lambda: app.thread_id == "newer", pilot)
        await app.wait_until_rendered()
        assert [t.message_id for t in turns(app)] == ["r-new"]  # no duplicates after switching back
        assert root_text(app) == ANSWER


class HistoryClient(RecordedClient):
    """Serves the first ``split`` events as history (folded), the rest from the stream."""

    def __init__(self, events: list[dict[str, Any]], split: int) -> None:
        super().__init__({"t": events}, titles={"t": "Restored"})
        self.split = split
        self.order: list[tuple[str, Any]] = []

    async def messages(self, thread_id: str) -> ThreadMessages:
        self.order.append(("messages", thread_id))
        folded = Conversation(thread_id)
        for n, raw in enumerate(self._threads[thread_id].log[: self.split], 1):
            apply(folded, n, raw)
        return ThreadMessages(thread_id=thread_id, messages=folded.to_messages(), next_event_id=self.split + 1)

    def events(self, thread_id: str, after: int | None = None) -> Any:
        self.order.append(("events", after))
        return super().events(thread_id, after)


async def test_restore_loads_history_then_streams_from_next_event_id() -> None:
    events = _log(subagent_run(), "r1")
    client = HistoryClient(events, split=7)
    app = make_app(client)
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        await app.wait_until_rendered()
        assert client.order == [("messages", "t"), ("events", 7)]
        turn = turns(app)[0]
        assert len(turns(app)) == 1
        assert root_text(app) == "Done! Your workflow runs daily at 8am."
        assert set(turn.cards) >= {"p1", "tc2"}
        assert app.stats.events == len(events) - 7


async def test_long_thread_mounts_the_tail_and_loads_older_on_demand() -> None:
    log: list[dict[str, Any]] = []
    for n in range(30):
        run = [ev("run-start", messageId=f"m{n}"), *text_deltas(f"Answer number {n}."), ev("run-finish", status="completed")]
        log += _log(run, f"r{n}")
    client = HistoryClient(log, split=len(log))
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        view = app.view
        assert len(view.turns) == view.TAIL and view.first_index == 30 - view.TAIL
        assert view.older.display
        view.focus()
        await pilot.press("home")
        await until(lambda: view.first_index == 30 - view.TAIL - view.BATCH, pilot)
        assert len(view.turns) == view.TAIL + view.BATCH
        assert [t.message_id for t in turns(app)][:2] == ["r8", "r9"]


async def test_a_replayed_stream_keeps_the_mounted_window_bounded() -> None:
    log: list[dict[str, Any]] = []
    for n in range(60):
        run = [ev("run-start", messageId=f"m{n}"), *text_deltas(f"Answer {n}."), ev("run-finish", status="completed")]
        log += _log(run, f"r{n}")
    app = make_app(RecordedClient({"t": log}))
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        await app.wait_until_rendered()
        view = app.view
        assert len(view.turns) <= view.MAX_MOUNTED
        assert turns(app)[-1].message_id == "r59" and view.first_index > 0


async def test_search_threads() -> None:
    client = RecordedClient(
        {"a": _log(simple_run(), "ra"), "b": _log(simple_run(), "rb"), "c": _log(simple_run(), "rc")},
        titles={"a": "Weather to Slack", "b": "Daily digest", "c": "Slack cleanup"},
    )
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "/threads")
        await until(lambda: app.focused is not None and app.focused.id == "thread-search", pilot)
        await pilot.press(*"slack")
        await until(lambda: sorted(app.thread_list.visible_thread_ids()) == ["a", "c"], pilot)




# --------------------------------------------------------------------------- text input, keys, tasks


def text_run() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="t1", toolName="ask-user", args={}),
        ev(
            "confirmation-request",
            requestId="cr-t",
            toolCallId="t1",
            toolName="ask-user",
            severity="info",
            message="What should the workflow be called?",
            inputType="text",
        ),
        ev("tool-result", toolCallId="t1", result={"name": "given"}),
        ev("run-finish", status="completed"),
    ]


async def test_text_card_sends_the_typed_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from instance_ai_tui.tui.widgets import confirmations
    from instance_ai_tui.tui.widgets.confirmations import TextCard

    # the cards' clock stands still until the test moves it: the grace period ends when the test
    # says, not when a loaded machine happens to get there
    now = [time.monotonic()]
    monkeypatch.setattr(confirmations, "time", SimpleNamespace(monotonic=lambda: now[0]))
    client = recorded([text_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "name it")
        card = await pending_card(app, pilot, TextCard)
        field = card.query_one("Input")
        assert field.disabled  # the field opens after the grace period: typing cannot land in it
        await pilot.press("x")
        assert field.value == ""
        now[0] += GRACE_SECONDS  # the grace period is over
        await until(lambda: not field.disabled and app.focused is field, pilot)
        await pilot.press(*"Morning weather", "enter")
        await until(lambda: confirm_calls(client), pilot)
        assert confirm_calls(client) == [("cr-t", ApprovalConfirm(approved=True, user_input="Morning weather"))]


async def test_remapped_keys_from_the_config() -> None:
    from instance_ai_tui.config import Settings

    keys = {"approve": "ctrl+y", "toggle-block": "t", "unfold-result": "u"}
    settings = Settings.model_validate({"ui": {"keys": keys, "enter_sends": False}})
    client = recorded([approval_run()])
    app = make_app(client, settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        app.prompt.load_text("archive it")
        app.prompt.move_cursor(app.prompt.document.end)
        await pilot.press("enter")  # enter_sends = false: Enter is a new line
        assert app.prompt.text == "archive it\n" and not [c for c in client.calls if c[0] == "send"]
        await pilot.press("backspace", "ctrl+j")  # ... and Ctrl+J sends
        await until(lambda: [c for c in client.calls if c[0] == "send"], pilot)
        card = await pending_card(app, pilot, ApprovalCard)
        await until(lambda: not card.in_grace, pilot)
        await pilot.press("y")  # no longer bound
        await pilot.pause(0.1)  # the scenario: a window in which no answer may be sent
        assert confirm_calls(client) == []
        await pilot.press("ctrl+y")
        await until(lambda: confirm_calls(client), pilot)
        # a widget's own key (registered in the key map) is remapped too, and F1 lists it
        await until(lambda: not app.conversation.is_streaming, pilot)
        await app.wait_until_rendered()
        card = turns(app)[-1].cards["tc9"]
        card.focus()
        expanded = card.expanded
        await pilot.press("space")  # the default key no longer toggles
        assert card.expanded == expanded
        await pilot.press("t")
        assert card.expanded != expanded
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        help_text = app.screen.markdown
        assert "| t | Expand | Block | `toggle-block` |" in help_text
        assert "| u | Unfold | Tool call | `unfold-result` |" in help_text
        assert "Send the message" not in help_text  # the input's keys are not the card's
        await pilot.press("escape")  # help.close
        await until(lambda: not isinstance(app.screen, HelpScreen), pilot)


async def test_tasks_panel_toggles_and_counts() -> None:
    app = make_app(RecordedClient({"t": _log(subagent_run(), "r1")}))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        panel = app.tasks_panel
        assert panel.display and "2/2 done" in str(panel.title_line.visual)
        body = str(panel.body.visual)
        assert "Build the workflow" in body and "✓" in body
        await pilot.press("ctrl+t")
        assert not panel.display
        await pilot.press("ctrl+t")
        assert panel.display
