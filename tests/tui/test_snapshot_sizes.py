"""Snapshots of one conversation with the checklist and a waiting approval card at 80x24, 120x40
and 220x60: small terminals give the conversation the width, large ones use it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.waiting import until

from .scripts import ev, text_deltas
from .test_snapshots import _app, _client, _settle


def build_with_approval() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="p1", toolName="plan", args={"goal": "Weather to Slack"}),
        ev("tool-result", toolCallId="p1", result={"goal": "Weather to Slack"}),
        ev("tasks-update", tasks=[
            {"id": "t1", "description": "Build the workflow", "status": "completed"},
            {"id": "t2", "description": "Activate it (needs your approval)", "status": "in_progress"},
        ]),
        ev("tool-call", toolCallId="tc3", toolName="create-workflow",
           args={"name": "Weather to Slack", "nodes": ["Schedule Trigger", "OpenWeatherMap", "Slack"]}),
        ev("tool-result", toolCallId="tc3", result={"id": "wf-104", "name": "Weather to Slack", "nodes": 3,
                                                   "note": "created inactive; activation needs your approval"}),
        *text_deltas("The workflow is built. Activating it makes it run every morning at 7:00."),
        ev("tool-call", toolCallId="tc4", toolName="activate-workflow", args={"workflowId": "wf-104"}),
        ev("confirmation-request", requestId="cr-4", toolCallId="tc4", toolName="activate-workflow",
           args={"workflowId": "wf-104"}, severity="warning",
           message="Activate workflow wf-104? It will start running on its trigger."),
    ]


async def _settle_with_the_follower(pilot: Any) -> None:
    """``_settle``, and the workflow follower has seen the finished create-workflow call: its note
    ("The agent is changing a workflow", where the panel does not open) is then in the notice line
    or not by rule, not by chance (the follower follows the frame)."""
    from instance_ai_tui.tui.screens.workflow import workflow_calls

    await _settle(pilot)
    app = pilot.app

    def followed() -> bool:
        followers = [f.__self__ for f in app.projection.sink.followers]
        return bool(followers) and all(call.id in followers[0]._finished
                                       for call in workflow_calls(app.conversation) if not call.loading)

    await until(followed, pilot, what="the workflow follower saw the finished calls")
    await until(lambda: all(w.is_finished for w in app.workers if w.group == "workflow-follower"), pilot,
                what="its work done")
    await app.wait_until_rendered()
    # its note took rows above the status line: the view, which follows, is back at its end
    view = app.view  # (a view shorter than its room sits at the bottom: max_scroll_y 0, scroll_y below 0)
    await until(lambda: not view.following or view.max_scroll_y <= 0 or view.scroll_y >= view.max_scroll_y, pilot,
                what="the view at its end")
    # a card's answer buttons are fitted to its width after it is laid out (``_fit_buttons``, after a
    # refresh): stacked when the row is too narrow, by rule, not by when the screenshot came
    from textual.widgets import Button

    def fitted() -> bool:
        for row in app.screen.query(".card-buttons"):
            buttons = list(row.query(Button))
            if not buttons or not row.size.width:
                continue
            needed = sum(button.outer_size.width + button.styles.margin.right for button in buttons)
            if row.has_class("-stacked") != (needed > row.size.width):
                return False
        return True

    await until(fitted, pilot, what="the card's buttons fitted to its width")
    await until(lambda: not view.following or view.max_scroll_y <= 0 or view.scroll_y >= view.max_scroll_y, pilot,
                what="the view at its end again")
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (220, 60)], ids=["80x24", "120x40", "220x60"])
def test_build_with_checklist_and_approval(snap_compare: Any, size: tuple[int, int]) -> None:
    app = _app(_client(build_with_approval(), "Weather to Slack"))
    assert snap_compare(app, terminal_size=size, run_before=_settle_with_the_follower)
