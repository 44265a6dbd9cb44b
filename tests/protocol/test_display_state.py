"""``protocol.display_state``: one truthful state per tool call, shared by every view."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from instance_ai_tui.protocol.api import InstanceAiMessage
from instance_ai_tui.protocol.display_state import display_state, waiting_label
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.protocol.transcript import to_markdown
from instance_ai_tui.protocol.tree import AgentNode, ToolCallState
from tests.support.fold import apply


def ev(kind: str, agent: str = "a1", run: str = "r1", **payload: Any) -> dict[str, Any]:
    return {"type": kind, "runId": run, "agentId": agent, "payload": payload}


def fold(*events: dict[str, Any]) -> RunReducer:
    reducer = RunReducer("a1")
    for raw in events:
        apply(reducer, parse_event(raw))
    return reducer


def ask(kind: str = "approval", **extra: Any) -> dict[str, Any]:
    return ev("confirmation-request", requestId="cr", toolCallId="t1", toolName="write-file", severity="warning",
              message="Write the file?", inputType=kind, **extra)


START = ev("run-start", messageId="m1")
CALL = ev("tool-call", toolCallId="t1", toolName="write-file", args={"path": "a.txt"})


def test_waiting_words_follow_the_input_type() -> None:
    assert waiting_label("approval") == "waiting for approval"
    assert waiting_label("questions") == waiting_label("text") == "waiting for your answer"
    assert waiting_label("plan-review") == "waiting for your plan review"
    call = fold(START, CALL, ask("questions", questions=[{"id": "q", "question": "?", "type": "text"}])).tool_call("t1")
    assert call is not None and display_state(call).kind == "waiting"
    assert display_state(call).label == "waiting for your answer"


def test_cancelled_while_the_card_waited_is_not_run_not_done() -> None:
    reducer = fold(START, CALL, ask(), ev("run-finish", status="cancelled", reason="user_cancelled"))
    call = reducer.tool_call("t1")
    assert call is not None and not call.is_loading and call.result is None  # n8n's tree: stopped
    state = display_state(call, run_active=False)
    assert state.kind == "not-run" and state.label == "not run (cancelled)"


def test_running_then_done_failed_interrupted() -> None:
    call = fold(START, CALL).tool_call("t1")
    assert call is not None and display_state(call).kind == "running"
    done = fold(START, CALL, ev("tool-result", toolCallId="t1", result={"ok": True})).tool_call("t1")
    assert done is not None and display_state(done, run_active=False).kind == "done"
    failed = fold(START, CALL, ev("tool-error", toolCallId="t1", error="disk full")).tool_call("t1")
    assert failed is not None and display_state(failed).kind == "failed"
    stopped = fold(START, CALL, ev("tool-interrupted", toolCallId="t1", error="restart")).tool_call("t1")
    assert stopped is not None and display_state(stopped).kind == "not-run"


def test_n8n_denial_is_a_result_and_shows_as_denied_live_and_restored() -> None:
    denied = {"success": False, "denied": True, "reason": "User denied the action"}
    live = fold(START, CALL, ask(), ev("tool-result", toolCallId="t1", result=denied),
                ev("run-finish", status="completed"))
    call = live.tool_call("t1")
    assert call is not None and display_state(call, run_active=False).kind == "denied"
    # restored: n8n's history tree as the browser gets it
    tree = AgentNode.model_validate(live.tree_dict())
    restored = RunReducer.from_tree(tree, status="completed").tool_call("t1")
    assert restored is not None and display_state(restored, run_active=False).kind == "denied"


def test_expired_confirmation_in_a_restored_n8n_tree_is_expired_not_a_spinner() -> None:
    tree = {
        "agentId": "agent-001", "role": "orchestrator", "status": "completed",
        "toolCalls": [{
            "toolCallId": "t1", "toolName": "activate-workflow", "args": {}, "isLoading": True,
            "confirmation": {"requestId": "cr", "severity": "warning", "message": "Activate?", "expired": True},
        }],
        "timeline": [{"type": "tool-call", "toolCallId": "t1"}],
    }
    call = RunReducer.from_tree(AgentNode.model_validate(tree), status="completed").tool_call("t1")
    assert call is not None and call.is_loading
    assert display_state(call, run_active=False).kind == "expired"
    assert display_state(call, run_active=True).kind == "expired"


def test_completed_run_leaves_a_loading_call_unresolved_not_running() -> None:
    call = ToolCallState(tool_call_id="t1", tool_name="create-tasks", is_loading=True)
    assert display_state(call, run_active=True).kind == "running"
    assert display_state(call, run_active=False).kind == "unresolved"


def test_auto_approved_mark() -> None:
    call = ToolCallState.model_validate({"toolCallId": "t", "toolName": "write-file", "isLoading": False,
                                         "result": {"ok": 1}, "autoApproved": True, "completedAt": "x"})
    state = display_state(call)
    assert state.kind == "done" and state.auto_approved


def _message(tree: dict[str, Any], streaming: bool = False) -> InstanceAiMessage:
    return InstanceAiMessage.model_validate({
        "id": "m1", "role": "assistant", "createdAt": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
        "content": "", "isStreaming": streaming, "agentTree": tree,
    })


def test_export_uses_the_same_states() -> None:
    denied = fold(START, CALL, ask(), ev("tool-result", toolCallId="t1", result={"success": False, "denied": True}),
                  ev("run-finish", status="completed"))
    text = to_markdown([_message(denied.tree_dict())])
    assert "**🔧 write-file** (denied)" in text and "Approval (approval, denied)" in text and "pending" not in text
    cancelled = fold(START, CALL, ask(), ev("run-finish", status="cancelled", reason="user_cancelled"))
    text = to_markdown([_message(cancelled.tree_dict())])
    assert "(not run (cancelled))" in text and "not answered" in text and "pending" not in text
    approved = fold(START, CALL, ask(), ev("tool-result", toolCallId="t1", result={"written": 3}),
                    ev("run-finish", status="completed"))
    text = to_markdown([_message(approved.tree_dict())])
    assert "(done)" in text and "Approval (approval, answered)" in text
    waiting = fold(START, CALL, ask("plan-review"))
    text = to_markdown([_message(waiting.tree_dict(), streaming=True)])
    assert "(waiting for your plan review)" in text and "plan-review, pending" in text
