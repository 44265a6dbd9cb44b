"""Conversation: message groups, follow-up runs, run-sync, history, cursor, confirmations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from instance_ai_tui.protocol.api import InstanceAiMessage, ThreadMessages
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.reducer import build_agent_tree_wire
from instance_ai_tui.protocol.tree import RunSyncPayload
from tests.support.fold import apply, apply_wire

from .conftest import ev


def orch(run: str) -> str:
    return f"orchestrator-{run}"


def n8n(kind: str, run: str, payload: dict[str, Any] | None = None, agent: str | None = None, **env: Any) -> dict[str, Any]:
    return ev(kind, agent or orch(run), payload, run=run, **env)


def test_run_start_creates_an_assistant_message_and_streams() -> None:
    conv = Conversation("th")
    assert apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m", "messageGroupId": "mg1"}, ts=1_700_000_000_000))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "Hi "}))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "there"}))
    apply_wire(conv, None, n8n("reasoning-delta", "r1", {"text": "hmm"}))
    (msg,) = conv.messages
    assert msg.role == "assistant" and msg.id == "r1" and msg.message_group_id == "mg1"
    assert msg.content == "Hi there" and msg.reasoning == "hmm"
    assert msg.is_streaming and conv.is_streaming and conv.active_run_id == "r1"
    assert msg.created_at == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    apply_wire(conv, 2, n8n("run-finish", "r1", {"status": "completed"}))
    assert not msg.is_streaming and not conv.is_streaming and conv.active_run_id is None
    wire = msg.to_message()
    assert isinstance(wire, InstanceAiMessage) and wire.agent_tree.text_content == "Hi there"


def test_cursor_drops_duplicates_and_out_of_order_ids() -> None:
    conv = Conversation()
    assert apply_wire(conv, 5, n8n("run-start", "r1", {"messageId": "m"}))
    assert apply_wire(conv, 6, n8n("tool-call", "r1", {"toolCallId": "t", "toolName": "x", "args": {}}))
    assert not apply_wire(conv, 6, n8n("tool-call", "r1", {"toolCallId": "t2", "toolName": "x", "args": {}}))
    assert not apply_wire(conv, 3, n8n("tool-call", "r1", {"toolCallId": "t3", "toolName": "x", "args": {}}))
    assert conv.cursor == 6
    assert [c.tool_call_id for c in conv.messages[0].tree().tool_calls] == ["t"]


def test_follow_up_runs_of_a_group_merge_into_one_message() -> None:
    conv = Conversation()
    apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m", "messageGroupId": "mg"}))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "Plan. "}))
    apply_wire(conv, 2, n8n("run-finish", "r1", {"status": "completed"}))
    apply_wire(conv, 3, n8n("run-start", "r2", {"messageId": "m2", "messageGroupId": "mg"}))
    apply_wire(conv, None, n8n("text-delta", "r2", {"text": "Built."}))
    (msg,) = conv.messages
    assert msg.content == "Plan. Built."
    assert msg.run_id == "r2" and msg.run_ids == ["r1", "r2"] and msg.is_streaming
    assert conv.message_for_run("r1") is msg and conv.active_run_id == "r2"
    apply_wire(conv, 4, n8n("run-finish", "r2", {"status": "completed"}))
    assert not conv.is_streaming


def test_user_message_from_run_start_and_local_echo() -> None:
    conv = Conversation()
    local = conv.add_user_message("Build me a workflow")
    assert local.local and conv.messages == [local]
    apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m", "userMessage": "Build me a workflow"}))
    assert [m.role for m in conv.messages] == ["user", "assistant"]
    assert not local.local
    apply_wire(conv, 2, n8n("run-finish", "r1", {"status": "completed"}))
    apply_wire(conv, 3, n8n("run-start", "r2", {"messageId": "m2", "userMessage": {"id": "u2", "content": "And test it"}}))
    assert [(m.role, m.id) for m in conv.messages] == [("user", local.id), ("assistant", "r1"), ("user", "u2"), ("assistant", "r2")]
    assert conv.messages[2].content == "And test it"


def test_missed_run_start_creates_a_placeholder() -> None:
    conv = Conversation()
    apply_wire(conv, None, n8n("agent-spawned", "r9", {"parentId": orch("r9"), "role": "builder", "tools": []}, agent="c1"))
    apply_wire(conv, None, n8n("text-delta", "r9", {"text": "sub"}, agent="c1"))
    (msg,) = conv.messages
    assert msg.id == "r9" and msg.is_streaming
    tree = msg.tree()
    assert tree.agent_id == orch("r9") and tree.children[0].text_content == "sub"
    apply_wire(conv, None, n8n("run-finish", "r9", {"status": "completed"}))
    assert not msg.is_streaming


def test_title_tasks_and_events_without_tree_make_no_message() -> None:
    conv = Conversation()
    apply_wire(conv, 10, ev("thread-title-updated", "orchestrator", {"title": "Weather to Slack"}, run=""))
    apply_wire(conv, None, ev("preferences-applied", "x", {"preferences": [], "renderedLength": 0, "injectedThisTurn": True}, run="r"))
    apply_wire(conv, None, ev("brand-new-type", "x", {}, run="r"))
    assert conv.messages == [] and conv.title == "Weather to Slack"
    apply_wire(conv, 11, n8n("run-start", "r1", {"messageId": "m"}))
    apply_wire(conv, 12, n8n("tasks-update", "r1", {"tasks": {"tasks": [{"id": "1", "description": "a", "status": "in_progress"}]}}))
    assert conv.latest_tasks is not None and conv.latest_tasks.tasks[0].description == "a"


def confirmation_events(run: str) -> list[dict[str, Any]]:
    return [
        n8n("run-start", run, {"messageId": "m"}),
        n8n("tool-call", run, {"toolCallId": "t1", "toolName": "workflows", "args": {}}),
        n8n(
            "confirmation-request",
            run,
            {"requestId": "req1", "toolCallId": "t1", "toolName": "workflows", "args": {}, "severity": "warning", "message": "Archive?"},
        ),
        n8n("tool-call", run, {"toolCallId": "t2", "toolName": "create-tasks", "args": {}}),
        n8n(
            "confirmation-request",
            run,
            {"requestId": "req2", "toolCallId": "t2", "toolName": "create-tasks", "args": {}, "severity": "info",
             "message": "Plan", "inputType": "plan-review"},
        ),
    ]


def test_pending_confirmations_and_local_resolution() -> None:
    conv = Conversation()
    for index, event in enumerate(confirmation_events("r1"), start=1):
        apply_wire(conv, index, event)
    pending = conv.pending_confirmations()
    assert [(p.request_id, p.tool_call.tool_call_id, p.input_type == "plan-review") for p in pending] == [
        ("req1", "t1", False),
        ("req2", "t2", True),
    ]
    assert pending[0].agent_id == orch("r1") and pending[0].message_id == "r1"
    assert conv.mark_confirmation_resolved("req1", approved=True)
    assert [p.request_id for p in conv.pending_confirmations()] == ["req2"]
    assert conv.messages[0].tree().tool_calls[0].confirmation_status == "approved"
    apply_wire(conv, None, n8n("tool-result", "r1", {"toolCallId": "t2", "result": "approved"}))
    assert conv.pending_confirmations() == []
    assert not conv.mark_confirmation_resolved("unknown")


def test_run_sync_replaces_the_group_tree_and_live_events_continue() -> None:
    conv = Conversation()
    apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m", "messageGroupId": "mg"}))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "stale"}))
    snapshot = build_agent_tree_wire(
        [
            n8n("run-start", "r1", {"messageId": "m"}),
            n8n("text-block", "r1", {"text": "Fresh "}, responseId="s1"),
            n8n("tool-call", "r1", {"toolCallId": "t", "toolName": "x", "args": {}}),
        ]
    )
    apply(conv, None, RunSyncPayload(run_id="r2", message_group_id="mg", run_ids=["r1", "r2"], agent_tree=snapshot, status="suspended"))
    (msg,) = conv.messages
    assert msg.content == "Fresh " and msg.run_id == "r2" and msg.is_streaming
    assert conv.active_run_id == "r2"
    # the second run's orchestrator id is an alias of the adopted root
    apply_wire(conv, None, n8n("text-delta", "r2", {"text": "and more"}, responseId="s2"))
    apply_wire(conv, None, n8n("tool-result", "r2", {"toolCallId": "t", "result": 1}))
    assert msg.content == "Fresh and more"
    assert msg.tree().tool_calls[0].result == 1


def test_run_sync_for_an_unknown_group_creates_a_message_and_background_does_not_stream() -> None:
    conv = Conversation()
    tree = build_agent_tree_wire([n8n("run-start", "rb", {"messageId": "m"}), n8n("text-delta", "rb", {"text": "bg"})])
    conv.apply_run_sync({"runId": "rb", "messageGroupId": "mgb", "runIds": ["rb"], "agentTree": tree.to_wire(), "status": "background"})
    (msg,) = conv.messages
    assert msg.id == "mgb" and msg.content == "bg" and not msg.is_streaming and conv.active_run_id is None


def test_load_history_then_live_events_without_duplicates() -> None:
    tree = build_agent_tree_wire(
        [
            n8n("run-start", "r1", {"messageId": "m"}),
            n8n("text-block", "r1", {"text": "Earlier answer"}),
            n8n("run-finish", "r1", {"status": "completed"}),
        ]
    )
    now = datetime(2024, 1, 1, tzinfo=UTC)
    history = ThreadMessages(
        thread_id="th",
        messages=[
            InstanceAiMessage(id="u1", role="user", created_at=now, content="Question"),
            InstanceAiMessage(id="a1", run_id="r1", message_group_id="mg1", run_ids=["r1"], role="assistant",
                              created_at=now, content="Earlier answer", agent_tree=tree),
            InstanceAiMessage(id="a0", role="assistant", created_at=now, content="flat old answer"),
        ],
        next_event_id=8,
    )
    conv = Conversation("th")
    conv.add_user_message("will be replaced")
    conv.load_history(history)
    assert [m.id for m in conv.messages] == ["u1", "a1", "a0"]
    assert conv.cursor == 7
    assert conv.messages[1].content == "Earlier answer" and conv.messages[2].content == "flat old answer"
    assert not apply_wire(conv, 7, n8n("run-finish", "r1", {"status": "completed"}))
    # a follow-up run of the stored group merges into the stored message
    assert apply_wire(conv, 8, n8n("run-start", "r2", {"messageId": "m2", "messageGroupId": "mg1"}))
    apply_wire(conv, None, n8n("text-delta", "r2", {"text": " + more"}))
    assert conv.messages[1].content == "Earlier answer + more"
    assert len(conv.messages) == 3


def test_drain_changes_reports_added_messages_and_per_message_changes() -> None:
    conv = Conversation()
    apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m"}))
    changes = conv.drain_changes()
    assert changes.added == ["r1"] and changes.streaming and changes.messages == {}
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "a"}))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "b"}))
    changes = conv.drain_changes()
    assert changes.added == [] and list(changes.messages) == ["r1"]
    assert changes.messages["r1"].timeline_appends == {orch("r1"): 0}
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "c"}))
    (seg,) = conv.drain_changes().messages["r1"].segments
    assert seg.text == "c"
    assert conv.drain_changes().empty
    apply_wire(conv, 2, ev("thread-title-updated", "orchestrator", {"title": "T"}, run=""))
    assert conv.drain_changes().title


def test_apply_never_raises_on_junk() -> None:
    conv = Conversation()
    junks = [None, 1, "x", b"\xff", {"type": 3}, {"type": "run-sync", "payload": {"agentTree": 5}},
             {"type": "tool-call", "payload": 1}]
    for junk in junks:
        assert apply_wire(conv, None, junk) is False  # type: ignore[arg-type]
        assert apply(conv, None, junk) is False  # type: ignore[arg-type]
    assert len(conv.diagnostics) == 14 and conv.messages == []
    assert "JSON goes through protocol.ingest.decode" in conv.diagnostics[-1]


def test_transcript_exports_redact_secrets() -> None:
    from instance_ai_tui.protocol.transcript import to_json, to_markdown

    conv = Conversation("th")
    conv.add_user_message("use key sk-abcdefghijklmnopqrstuvwx please")
    apply_wire(conv, 1, n8n("run-start", "r1", {"messageId": "m"}))
    secret_args = {"apiKey": "hunter2-secret", "name": "Slack"}
    apply_wire(conv, 2, n8n("tool-call", "r1", {"toolCallId": "t", "toolName": "credentials", "args": secret_args}))
    apply_wire(conv, 3, n8n("tool-result", "r1", {"toolCallId": "t", "result": {"id": "c1", "token": "xoxb-123"}}))
    apply_wire(conv, None, n8n("text-delta", "r1", {"text": "Created credential **Slack**."}))
    apply_wire(conv, 4, ev("thread-title-updated", "orchestrator", {"title": "Creds"}, run=""))
    markdown = to_markdown(conv)
    exported = to_json(conv)
    for text in (markdown, exported):
        assert "hunter2-secret" not in text and "xoxb-123" not in text and "sk-abcdefghijklmnop" not in text
        assert "[redacted]" in text and "Slack" in text
    assert markdown.startswith("# Creds\n")
    assert "## 👤 User" in markdown and "**🔧 credentials** (done)" in markdown
    assert "Created credential **Slack**." in markdown
