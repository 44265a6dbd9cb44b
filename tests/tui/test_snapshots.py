"""Snapshots (pytest-textual-snapshot) of the main screens at 120x40.

Recorded runs make every screen deterministic: completed runs (no spinner), a card that
waits (static glyph), fixed thread titles. Update with ``pytest --snapshot-update``.
"""

from __future__ import annotations

from typing import Any

from instance_ai_tui.config import Settings
from instance_ai_tui.tui.screens.help import HelpScreen
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS
from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown
from instance_ai_tui.tui.widgets.questions_card import QuestionsCard
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import SIZE, approval_run, ev, make_app, questions_run, simple_run, subagent_run


def _log(run: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [{**e, "runId": run_id} for e in run]


def _app(client: RecordedClient, settings: Settings | None = None) -> Any:
    app = make_app(client, settings)
    app.prompt.cursor_blink = False  # before it ever blinks: the cursor is drawn the same every time
    return app


def _client(current: list[dict[str, Any]], title: str) -> RecordedClient:
    return RecordedClient(
        {
            "older-1": _log(simple_run(), "r-a"),
            "older-2": _log(simple_run(), "r-b"),
            "current": _log(current, "r-c"),
        },
        titles={"older-1": "List my workflows", "older-2": "Daily digest", "current": title},
    )


async def _settle(pilot: Any) -> None:
    app = pilot.app
    await app.wait_until_ready()
    await app.wait_until_rendered()
    for widget in app.query("Input"):
        widget.cursor_blink = False
    await pilot.pause()  # the inputs redrawn without a blinking cursor (pending messages processed)


async def _settle_with_the_follower(pilot: Any) -> None:
    """``_settle``, and the workflow follower has looked at the recorded run (it follows the frame, so
    its toast — the run made a workflow; at 120 columns the panel stays closed — comes with a frame)."""
    from instance_ai_tui.tui.screens.workflow import workflow_calls

    await _settle(pilot)
    app = pilot.app

    def followed() -> bool:
        followers = [f.__self__ for f in app.projection.sink.followers]
        return bool(followers) and all(call.id in followers[0]._finished
                                       for call in workflow_calls(app.conversation))

    await until(followed, pilot, what="the workflow follower saw the run")
    await until(lambda: all(w.is_finished for w in app.workers if w.group == "workflow-follower"), pilot,
                what="its work done")
    await pilot.pause()


def test_conversation_with_subagent_and_tasks(snap_compare: Any) -> None:
    app = _app(_client(subagent_run(), "Weather to Slack"))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle_with_the_follower)


def test_approval_card(snap_compare: Any) -> None:
    run = approval_run()[:3]  # stop at the confirmation request: the card waits
    app = _app(_client(run, "Archive the old digest"))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)


def test_questions_wizard_second_question(snap_compare: Any) -> None:
    run = questions_run()[:3]
    app = _app(_client(run, "Build a weather workflow"))

    async def before(pilot: Any) -> None:
        await _settle(pilot)
        card = pilot.app.query_one(QuestionsCard)
        card.shown_at -= GRACE_SECONDS
        card.focus()
        await pilot.press("2")
        await pilot.press("1", "3")
        await pilot.pause()  # the picks drawn (pending messages processed)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_light_theme_and_help(snap_compare: Any) -> None:
    app = _app(_client(simple_run(), "List my workflows"), Settings.model_validate({"ui": {"theme": "textual-light"}}))

    async def before(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("f1")
        await until(lambda: isinstance(pilot.app.screen, HelpScreen)
                    and pilot.app.screen.query_one(FlatMarkdown).settled, pilot, what="the help drawn")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_failed_tool_and_cancelled_run(snap_compare: Any) -> None:
    run = [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="t1", toolName="get-execution", args={"id": "exec-456"}),
        ev("tool-error", toolCallId="t1", error="Execution exec-456 not found"),
        ev("text-delta", text="The execution is gone; retrying with the latest one."),
        ev("run-finish", status="cancelled", reason="user_cancelled"),
    ]
    app = _app(_client(run, "Debug an execution"))
    assert snap_compare(app, terminal_size=SIZE, run_before=_settle)
