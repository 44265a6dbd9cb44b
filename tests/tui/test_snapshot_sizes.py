"""Snapshots of one conversation with the checklist and a waiting approval card at 80x24, 120x40
and 220x60: small terminals give the conversation the width, large ones use it."""

from __future__ import annotations

from typing import Any

import pytest

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


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (220, 60)], ids=["80x24", "120x40", "220x60"])
def test_build_with_checklist_and_approval(snap_compare: Any, size: tuple[int, int]) -> None:
    app = _app(_client(build_with_approval(), "Weather to Slack"))
    assert snap_compare(app, terminal_size=size, run_before=_settle)
