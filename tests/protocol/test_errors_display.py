"""n8n outcomes as n8n means them (issue 26, item 4): a tool call's state follows n8n's own result
(``@n8n/instance-ai`` 2.41: ``workflows.tool.js``, ``plan.tool.js``) and the editor's confirmation
words (approved / changes-requested / denied / deferred), live, after a restore, in export and in
headless ``run``."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.protocol.display_state import (
    PLAN_APPROVED,
    PLAN_CHANGES,
    PLAN_REJECTED,
    SKIPPED_LABEL,
    display_state,
)
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.protocol.transcript import to_markdown
from instance_ai_tui.protocol.tree import ToolCallState
from tests.support.fold import apply


def ev(kind: str, **payload: Any) -> dict[str, Any]:
    return {"type": kind, "runId": "r1", "agentId": "a1", "payload": payload}


START = ev("run-start", messageId="m1")


def fold(*events: dict[str, Any]) -> RunReducer:
    reducer = RunReducer("a1")
    for raw in events:
        apply(reducer, parse_event(raw))
    return reducer


def restored(reducer: RunReducer) -> RunReducer:
    """The same run as a reload sees it (the stored snapshot adopted)."""
    return RunReducer.from_tree(reducer.tree().to_wire())


def call_of(reducer: RunReducer, call_id: str = "t1") -> ToolCallState:
    call = reducer.tool_call(call_id)
    assert call is not None
    return call


def both(*events: dict[str, Any]) -> list[ToolCallState]:
    live = fold(*events)
    return [call_of(live), call_of(restored(live))]


SLACK_FAILED = {"success": True, "completedNodes": [], "failedNodes": [
    {"nodeName": "Slack", "error": "Credential test failed: invalid_auth"}]}


@pytest.mark.parametrize(("result", "label"), [
    (SLACK_FAILED, "failed: 1 node(s) failed (Slack): Credential test failed: invalid_auth"),
    ({"success": False, "error": "Workflow apply failed: workflow not found"},
     "failed: Workflow apply failed: workflow not found"),
    ({"success": False, "reason": "quota reached"}, "failed: quota reached"),
])
def test_failures_reported_as_results_are_failed_not_done(result: dict[str, Any], label: str) -> None:
    for call in both(START, ev("tool-call", toolCallId="t1", toolName="workflows", args={"action": "setup"}),
                     ev("tool-result", toolCallId="t1", result=result), ev("run-finish", status="completed")):
        state = display_state(call, run_active=False)
        assert (state.kind, state.label) == ("failed", label)


def test_partial_setup_is_partly_done() -> None:
    call = call_of(fold(START, ev("tool-call", toolCallId="t1", toolName="workflows"),
                        ev("tool-result", toolCallId="t1", result={"success": True, "partial": True,
                                                                    "completedNodes": [{"nodeName": "A"}]})))
    assert (display_state(call).kind, display_state(call).label) == ("done", "partly done")


def test_a_skipped_setup_is_skipped_not_denied_live_and_after_reload() -> None:
    ask = ev("confirmation-request", requestId="cr", toolCallId="t1", toolName="workflows", message="Set up Slack",
             setupRequests=[{"node": {"name": "Slack"}}])
    live = fold(START, ev("tool-call", toolCallId="t1", toolName="workflows"), ask)
    live.set_confirmation_status("t1", "deferred")  # the card's skip (n8n: resolveConfirmation(..., 'deferred'))
    state = display_state(call_of(live), run_active=False)
    assert (state.kind, state.label) == ("not-run", SKIPPED_LABEL)
    result = {"success": True, "completedNodes": [], "skippedByUser": [{"nodeName": "Slack"}]}
    done = fold(START, ev("tool-call", toolCallId="t1", toolName="workflows"), ask,
                ev("tool-result", toolCallId="t1", result=result), ev("run-finish", status="completed"))
    for call in (call_of(done), call_of(restored(done))):
        assert display_state(call, run_active=False).label == SKIPPED_LABEL


PLAN_ASK = ev("confirmation-request", requestId="cr", toolCallId="t1", toolName="create-tasks", message="Review",
              inputType="plan-review", tasks={"tasks": [{"id": "1", "description": "x", "status": "todo"}]})
PLAN_CALL = ev("tool-call", toolCallId="t1", toolName="create-tasks", args={"tasks": []})


@pytest.mark.parametrize(("result", "label"), [
    ("Plan approved. Started 1 task.", PLAN_APPROVED),  # n8n's words
    ("User requested changes: fewer steps. Revise the tasks ...", PLAN_CHANGES),
    ("User denied the plan. Do not revise ...", PLAN_REJECTED),
    ({"approved": True, "tasks": []}, PLAN_APPROVED),  # our plan tool
    ({"approved": False, "feedback": "fewer steps"}, PLAN_CHANGES),
    ({"approved": False, "rejected": True}, PLAN_REJECTED),
])
def test_plan_reviews_read_their_outcome_everywhere(result: Any, label: str) -> None:
    events = (START, PLAN_CALL, PLAN_ASK, ev("tool-result", toolCallId="t1", result=result),
              ev("run-finish", status="completed"))
    for call in both(*events):
        state = display_state(call, run_active=False)
        assert state.label == label and state.kind == ("denied" if label == PLAN_REJECTED else "done")
    assert f"({label})" in to_markdown_of(fold(*events))


def to_markdown_of(reducer: RunReducer) -> str:
    from instance_ai_tui.protocol.api import InstanceAiMessage

    message = InstanceAiMessage.model_validate({"id": "m1", "runId": "r1", "role": "assistant", "createdAt":
                                                "2026-01-01T00:00:00Z", "content": "", "agentTree": reducer.tree().to_wire()})
    return to_markdown([message])


def test_plan_review_answers_given_here_read_as_n8n_words() -> None:
    live = fold(START, PLAN_CALL, PLAN_ASK)
    live.set_confirmation_status("t1", "changes-requested")
    assert display_state(call_of(live)).label == PLAN_CHANGES
    live.set_confirmation_status("t1", "approved")
    assert display_state(call_of(live)).label == PLAN_APPROVED


def test_an_approved_plan_left_loading_by_a_completed_run_is_approved_not_unresolved_or_expired() -> None:
    """n8n hands a run off to the planned tasks only on approval: create-tasks stays loading."""
    done = fold(START, PLAN_CALL, PLAN_ASK, ev("run-finish", status="completed"))
    tree = done.tree().to_wire()
    tree["toolCalls"][0]["confirmation"]["expired"] = True  # as a reload after the TTL marks it
    for call in (call_of(done), call_of(RunReducer.from_tree(tree))):
        assert call.is_loading and display_state(call, run_active=False).label == PLAN_APPROVED


def test_one_word_for_a_denial_live_and_restored() -> None:
    denied = {"success": False, "denied": True, "reason": "User denied the action"}  # n8n's, and now ours
    for call in both(START, ev("tool-call", toolCallId="t1", toolName="delete-workflow"),
                     ev("tool-result", toolCallId="t1", result=denied), ev("run-finish", status="completed")):
        assert (display_state(call, run_active=False).kind, display_state(call, run_active=False).label) == (
            "denied", "denied")
