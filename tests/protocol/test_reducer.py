"""RunReducer: the n8n dialect rules of reference section 6.1, change tracking, robustness."""

from __future__ import annotations

import json
from typing import Any

from instance_ai_tui.protocol.events import EventParseError, parse_event
from instance_ai_tui.protocol.reducer import RunReducer, build_agent_tree_wire
from instance_ai_tui.protocol.tree import AgentNode
from tests.support.fold import apply, apply_all_wire, apply_wire

from .conftest import ev

RUN = "run_a"
ROOT = f"orchestrator-{RUN}"


def n8n(kind: str, payload: dict[str, Any] | None = None, agent: str = ROOT, run: str = RUN, **env: Any) -> dict[str, Any]:
    return ev(kind, agent, payload, run=run, **env)


def fold(events: list[dict[str, Any]]) -> RunReducer:
    """Fold wire dicts with ``apply_wire``; when every one parses, also fold the models
    with ``apply`` and check that both paths build the same tree."""
    reducer = RunReducer()
    for event in events:
        apply_wire(reducer, event)
    try:
        models = [parse_event(event) for event in events]
    except EventParseError:
        return reducer
    typed = RunReducer().apply_all(models)
    assert typed.tree_dict() == reducer.tree_dict()
    return reducer


def test_run_start_replaces_the_initial_root() -> None:
    reducer = fold([n8n("run-start", {"messageId": "m", "messageGroupId": "mg_1"}, userId="u1", ts=1_700_000_000_000)])
    tree = reducer.tree()
    assert tree.agent_id == ROOT and tree.role == "orchestrator" and tree.status == "active"
    assert reducer.root_id == ROOT


def test_deltas_append_and_split_by_response_id() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("reasoning-delta", {"text": "think "}, responseId="s1"),
            n8n("reasoning-delta", {"text": "more"}, responseId="s1"),
            n8n("text-delta", {"text": "Hel"}, responseId="s1"),
            n8n("text-delta", {"text": "lo"}, responseId="s1"),
            n8n("text-delta", {"text": " again"}, responseId="s2"),
        ]
    )
    tree = reducer.tree()
    assert tree.text_content == "Hello again"
    assert tree.reasoning == "think more"
    assert [(e.type, e.content, e.response_id) for e in tree.timeline] == [
        ("reasoning", "think more", "s1"),
        ("text", "Hello", "s1"),
        ("text", " again", "s2"),
    ]


def test_text_block_after_streamed_deltas_does_not_duplicate() -> None:
    live = [
        n8n("run-start", {"messageId": "m"}),
        n8n("text-delta", {"text": "Hello "}, responseId="s1"),
        n8n("text-delta", {"text": "wor"}, responseId="s1"),
    ]
    # the client reconnects mid-segment: the replay brings the coalesced block
    reducer = fold([*live, n8n("text-block", {"text": "Hello world"}, responseId="s1")])
    tree = reducer.tree()
    assert tree.text_content == "Hello world"
    assert [(e.type, e.content) for e in tree.timeline] == [("text", "Hello world")]


def test_text_block_suffix_match_replaces_too() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "world"}, responseId="s1"),
            n8n("text-block", {"text": "Hello world"}, responseId="s1"),
        ]
    )
    assert reducer.tree().text_content == "Hello world"


def test_text_block_with_other_text_or_no_response_id_appends() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "abc"}, responseId="s1"),
            n8n("text-block", {"text": "xyz"}, responseId="s1"),
            n8n("text-block", {"text": "!"}),
            n8n("text-block", {"text": "?"}),
        ]
    )
    tree = reducer.tree()
    assert tree.text_content == "abcxyz!?"
    assert [e.content for e in tree.timeline] == ["abcxyz", "!?"]


def test_reasoning_block_replaces_streamed_reasoning() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("reasoning-delta", {"text": "Let me"}, responseId="s1"),
            n8n("reasoning-block", {"text": "Let me check."}, responseId="s1"),
            n8n("text-delta", {"text": "ok"}, responseId="s1"),
        ]
    )
    tree = reducer.tree()
    assert tree.reasoning == "Let me check."
    assert [e.type for e in tree.timeline] == ["reasoning", "text"]


def test_full_replay_of_blocks_alone_equals_the_live_tree() -> None:
    """A replayed history has blocks instead of deltas; both folds show the same text."""
    live = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "one "}, responseId="s1"),
            n8n("text-delta", {"text": "two"}, responseId="s1"),
            n8n("tool-call", {"toolCallId": "t1", "toolName": "workflows", "args": {"action": "list"}}, responseId="s1"),
            n8n("tool-result", {"toolCallId": "t1", "result": {"ok": True}}),
            n8n("text-delta", {"text": "three"}, responseId="s2"),
            n8n("run-finish", {"status": "completed"}),
        ]
    )
    replayed = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-block", {"text": "one two"}, responseId="s1"),
            n8n("tool-call", {"toolCallId": "t1", "toolName": "workflows", "args": {"action": "list"}}, responseId="s1"),
            n8n("tool-result", {"toolCallId": "t1", "result": {"ok": True}}),
            n8n("text-block", {"text": "three"}, responseId="s2"),
            n8n("run-finish", {"status": "completed"}),
        ]
    )
    assert live.tree() == replayed.tree()


def test_tool_input_start_then_call_fills_args_once() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("tool-input-start", {"toolCallId": "t1", "toolName": "create-tasks"}, ts=1_700_000_000_000),
            n8n("tool-call", {"toolCallId": "t1", "toolName": "create-tasks", "args": {"tasks": []}}),
        ]
    )
    tree = reducer.tree()
    (call,) = tree.tool_calls
    assert call.args == {"tasks": []} and call.is_loading
    assert call.render_hint == "planner"
    assert call.started_at == "2023-11-14T22:13:20.000Z"
    assert [e.type for e in tree.timeline] == ["tool-call"]


def test_tool_results_are_found_across_agents() -> None:
    child = "agent-builder:x"
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "builder", "tools": ["a"], "kind": "agent-builder"}, agent=child),
            n8n("tool-call", {"toolCallId": "tc", "toolName": "nodes", "args": {}}, agent=child),
            # the result is attributed to another agent id, yet finds the child's call
            n8n("tool-result", {"toolCallId": "tc", "result": "ok"}, ts=1_700_000_001_000),
            n8n("tool-error", {"toolCallId": "nope", "error": "x"}),
        ]
    )
    tree = reducer.tree()
    (sub,) = tree.children
    assert sub.tool_calls[0].result == "ok" and not sub.tool_calls[0].is_loading
    assert sub.tool_calls[0].completed_at == "2023-11-14T22:13:21.000Z"
    assert sub.kind == "agent-builder" and sub.tools == ["a"]
    assert any("nope" in d for d in reducer.diagnostics)


def test_agent_spawned_nests_and_inherits_response_id() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "x"}, responseId="s9"),
            n8n("agent-spawned", {"parentId": ROOT, "role": "builder", "tools": []}, agent="c1"),
            n8n("agent-spawned", {"parentId": "c1", "role": "helper", "tools": []}, agent="c2"),
            n8n("text-delta", {"text": "deep"}, agent="c2"),
            n8n("agent-spawned", {"parentId": "ghost", "role": "lost", "tools": []}, agent="c3"),
        ]
    )
    tree = reducer.tree()
    assert tree.timeline[-1].type == "child" and tree.timeline[-1].response_id == "s9"
    assert tree.children[0].children[0].text_content == "deep"
    assert len(tree.children) == 1
    assert any("ghost" in d for d in reducer.diagnostics)


def test_agent_spawned_again_only_refreshes_metadata() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n(
                "agent-spawned",
                {"parentId": ROOT, "role": "b", "tools": [], "targetResource": {"type": "agent", "id": "x", "name": "Old"}},
                agent="c1",
            ),
            n8n(
                "agent-spawned",
                {"parentId": ROOT, "role": "b", "tools": [], "title": "T", "targetResource": {"type": "agent", "id": "x"}},
                agent="c1",
            ),
        ]
    )
    tree = reducer.tree()
    assert len(tree.children) == 1 and len(tree.timeline) == 1
    assert tree.children[0].title == "T"
    assert tree.children[0].target_resource.name == "Old"


def test_agent_completed_settles_status_and_loading_calls() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "b", "tools": []}, agent="c1"),
            n8n("tool-call", {"toolCallId": "t", "toolName": "x", "args": {}}, agent="c1"),
            n8n("agent-completed", {"role": "b", "result": "", "error": "boom"}, agent="c1"),
            n8n("agent-spawned", {"parentId": ROOT, "role": "b", "tools": []}, agent="c2"),
            n8n("agent-completed", {"role": "b", "result": "stopped", "status": "cancelled"}, agent="c2"),
        ]
    )
    c1, c2 = reducer.tree().children
    assert c1.status == "error" and c1.error == "boom" and not c1.tool_calls[0].is_loading
    assert c2.status == "cancelled" and c2.result == "stopped"


def test_confirmation_attaches_by_tool_call_id() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("tool-call", {"toolCallId": "t", "toolName": "workflows", "args": {"action": "delete"}}),
            n8n(
                "confirmation-request",
                {
                    "requestId": "req1",
                    "toolCallId": "t",
                    "toolName": "workflows",
                    "args": {"action": "delete"},
                    "severity": "warning",
                    "message": "Archive?",
                    "approvalDetails": {"action": "archive-workflow", "name": "W", "id": "1"},
                    "inputThreadId": "th",
                },
            ),
            n8n("confirmation-request", {"requestId": "req2", "toolCallId": "missing", "severity": "info", "message": "?"}),
        ]
    )
    (call,) = reducer.tree().tool_calls
    assert call.is_loading
    conf = call.confirmation
    assert conf is not None and conf.request_id == "req1" and conf.message == "Archive?"
    assert conf.approval_details == {"action": "archive-workflow", "name": "W", "id": "1"}
    wire = call.to_wire()["confirmation"]
    assert "toolCallId" not in wire and "args" not in wire and wire["inputThreadId"] == "th"
    assert any("req2" in d for d in reducer.diagnostics)
    assert [c.confirmation.request_id for _, c in reducer.confirmation_calls()] == ["req1"]


def test_nested_tasks_setup_items_and_status() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "b", "tools": []}, agent="c1"),
            n8n(
                "tasks-update",
                {
                    "tasks": {"tasks": [{"id": "1", "description": "a", "status": "done"},
                                        {"id": "2", "description": "b", "status": "failed"}]},
                    "planItems": [{"id": "1", "title": "A", "kind": "build-workflow", "spec": "s", "deps": []}],
                },
            ),
            n8n("setup-items", {"workflowId": "wf1",
                                "items": [{"id": "i", "kind": "parameters", "nodeName": "n", "parameterNames": []}]},
                agent="c1", ts=0),
            n8n("status", {"message": "Searching..."}),
        ]
    )
    tree = reducer.tree()
    assert [t.status.value for t in tree.tasks.tasks] == ["done", "failed"]
    assert tree.to_wire()["tasks"] == {
        "tasks": [{"id": "1", "description": "a", "status": "done"}, {"id": "2", "description": "b", "status": "failed"}]
    }
    assert tree.plan_items[0].title == "A"
    assert tree.setup_items_by_workflow_id == {"wf1": [{"id": "i", "kind": "parameters", "nodeName": "n", "parameterNames": []}]}
    assert tree.latest_setup_announcement == {"workflowId": "wf1", "agentId": "c1", "timestamp": "1970-01-01T00:00:00.000Z"}
    assert tree.status_message == "Searching..."
    apply_wire(reducer, n8n("status", {"message": ""}))
    assert reducer.tree().status_message is None


def test_error_event_appends_text_and_sets_error() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "Working"}),
            n8n("error", {"content": "Failed after 3 attempts", "statusCode": 500, "provider": "openai"}),
            n8n("error", {"content": "quota", "code": "quota_exhausted"}),
        ]
    )
    tree = reducer.tree()
    assert tree.text_content == "Working\n\n*Error: Failed after 3 attempts*"
    assert tree.status == "error" and tree.error == "quota"
    assert tree.error_details == {"code": "quota_exhausted"}


def test_run_finish_cancelled_maps_reason_and_stops_every_loading_call() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "b", "tools": []}, agent="c1"),
            n8n("tool-call", {"toolCallId": "t1", "toolName": "x", "args": {}}, agent="c1"),
            n8n("tool-call", {"toolCallId": "t2", "toolName": "y", "args": {}}),
            n8n("run-finish", {"status": "cancelled", "reason": "user_cancelled", "archivedWorkflowIds": ["w1"]}),
        ]
    )
    tree = reducer.tree()
    assert tree.status == "cancelled" and tree.cancellation_reason == "user" and reducer.status == "cancelled"
    assert not tree.tool_calls[0].is_loading and not tree.children[0].tool_calls[0].is_loading
    assert reducer.archived_workflow_ids == ["w1"]


def test_run_finish_interrupted_and_error() -> None:
    interrupted = fold([n8n("run-start", {"messageId": "m"}), n8n("run-finish", {"status": "interrupted", "reason": "crash_interrupted"})])
    assert interrupted.tree().status == "cancelled" and interrupted.tree().cancellation_reason == "interrupted"
    errored = fold([n8n("run-start", {"messageId": "m"}), n8n("run-finish", {"status": "error", "reason": "LLM down"})])
    assert errored.tree().status == "error" and errored.tree().error == "LLM down"


def test_completed_run_leaves_loading_calls_as_they_are() -> None:
    """n8n's rule (reference §6.1): only a cancelled or failed run stops loading calls; the
    display state (protocol.display_state), not the tree, says "not resolved"."""
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("tool-call", {"toolCallId": "root-call", "toolName": "x", "args": {}}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "b", "tools": []}, agent="bg"),
            n8n("tool-call", {"toolCallId": "bg-call", "toolName": "y", "args": {}}, agent="bg"),
            n8n("run-finish", {"status": "completed"}),
        ]
    )
    tree = reducer.tree()
    assert tree.tool_calls[0].is_loading
    assert tree.children[0].tool_calls[0].is_loading


def test_follow_up_run_merges_into_one_root_with_alias() -> None:
    run2 = "run_b"
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m", "messageGroupId": "mg"}),
            n8n("text-delta", {"text": "Plan ready. "}),
            n8n("tool-call", {"toolCallId": "t1", "toolName": "create-tasks", "args": {}}),
            n8n("tool-result", {"toolCallId": "t1", "result": "ok"}),
            n8n("run-finish", {"status": "completed"}),
            n8n("run-start", {"messageId": "m2", "messageGroupId": "mg"}, agent=f"orchestrator-{run2}", run=run2),
            n8n("text-delta", {"text": "Building."}, agent=f"orchestrator-{run2}", run=run2),
            n8n("tool-call", {"toolCallId": "t2", "toolName": "build-workflow", "args": {}}, agent=f"orchestrator-{run2}", run=run2),
        ]
    )
    tree = reducer.tree()
    assert tree.agent_id == ROOT and tree.status == "active"
    assert tree.text_content == "Plan ready. Building."
    assert [c.tool_call_id for c in tree.tool_calls] == ["t1", "t2"]
    assert reducer.aliases == [f"orchestrator-{run2}"]
    assert (reducer.agent_fields(f"orchestrator-{run2}") or {}).get("agentId") == ROOT


def test_from_tree_keeps_folding_live_events() -> None:
    first = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("text-delta", {"text": "Hel"}, responseId="s1"),
            n8n("tool-call", {"toolCallId": "t", "toolName": "x", "args": {}}, responseId="s1"),
            n8n("text-delta", {"text": "par"}, responseId="s1"),
        ]
    )
    snapshot = AgentNode.model_validate(json.loads(first.tree().to_json()))
    resumed = RunReducer.from_tree(snapshot)
    apply_wire(resumed, n8n("text-delta", {"text": "tial"}, responseId="s1"))
    apply_wire(resumed, n8n("text-block", {"text": "partial"}, responseId="s1"))
    apply_wire(resumed, n8n("tool-result", {"toolCallId": "t", "result": 1}))
    tree = resumed.tree()
    assert tree.text_content == "Helpartial"
    assert tree.tool_calls[0].result == 1


def test_from_tree_accepts_flat_history_trees_and_unknown_entries() -> None:
    snapshot = {
        "agentId": ROOT,
        "role": "orchestrator",
        "status": "completed",
        "textContent": "Older answer",
        "reasoning": "old thoughts",
        "toolCalls": [],
        "children": [],
        "timeline": [{"type": "instance-context", "runId": RUN, "injection": {"state": "absent"}}],
        "activity": "x",
    }
    reducer = RunReducer.from_tree(snapshot)
    tree = reducer.tree()
    assert tree.text_content == "Older answer" and tree.reasoning == "old thoughts"
    assert tree.timeline[0].type == "reasoning"  # legacy reasoning gets its timeline entry
    assert tree.timeline[1].type == "instance-context"
    apply_wire(reducer, n8n("run-start", {"messageId": "m"}, agent="orchestrator-run_z", run="run_z"))
    apply_wire(reducer, n8n("text-delta", {"text": " + new"}, agent="orchestrator-run_z", run="run_z"))
    assert reducer.tree().text_content == "Older answer + new"
    assert reducer.tree().to_wire()["activity"] == "x"


def test_apply_never_raises_and_records_diagnostics() -> None:
    reducer = RunReducer()
    junk: list[Any] = [
        None,
        42,
        "not json",
        b"{",
        [],
        {},
        {"type": 5},
        {"type": "tool-call", "payload": 5},
        {"type": "text-delta", "agentId": 7, "payload": {"text": "x"}},
        {"type": "text-delta", "agentId": "agent-001", "payload": {"text": 7}},
        {"type": "tool-input-start", "payload": {}},
        {"type": "confirmation-request", "payload": {"toolCallId": "x"}},
        {"type": "mystery-event", "payload": {"x": 1}},
        {"type": "text-delta", "agentId": "agent-001", "ts": "soon", "payload": {"text": "ok"}},
        object(),
    ]
    for item in junk:
        apply_wire(reducer, item)
    assert reducer.diagnostic_count >= 10
    wire_count = reducer.diagnostic_count
    for item in junk:
        apply(reducer, item)  # not event models: each one is a diagnostic, nothing raises
    assert reducer.diagnostic_count == wire_count + len(junk)
    assert "JSON goes through protocol.ingest.decode" in reducer.diagnostics[-1]
    assert reducer.tree().text_content == ""  # the ts "soon" event is invalid and dropped


def test_diagnostics_are_bounded() -> None:
    reducer = RunReducer()
    for index in range(1000):
        apply_wire(reducer, {"type": "text-delta", "agentId": f"ghost{index}", "payload": {"text": "x"}})
    assert len(reducer.diagnostics) == 100 and reducer.diagnostic_count == 1000


def test_models_dicts_and_json_text_fold_the_same() -> None:
    events = [
        n8n("run-start", {"messageId": "m"}),
        n8n("text-delta", {"text": "a"}, responseId="r"),
        n8n("status", {"message": "s"}),
        n8n("reasoning-delta", {"text": "b"}),
        n8n("tool-call", {"toolCallId": "t", "toolName": "x", "args": {"k": 1}}),
    ]
    as_dicts = fold(events).tree()
    as_models = RunReducer().apply_all(parse_event(e) for e in events).tree()
    as_text = apply_all_wire(RunReducer(), [json.dumps(e) for e in events]).tree()
    assert as_dicts == as_models == as_text


def test_unsafe_ids_are_ignored() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "x", "tools": []}, agent="__proto__"),
            n8n("tool-call", {"toolCallId": "constructor", "toolName": "x", "args": {}}),
            n8n("run-start", {"messageId": "m"}, agent="prototype"),
        ]
    )
    tree = reducer.tree()
    assert tree.children == [] and tree.tool_calls == [] and tree.agent_id == ROOT


# --------------------------------------------------------------------------- change tracking


def test_drain_changes_reports_appends_segments_calls_and_agents() -> None:
    reducer = RunReducer()
    apply_wire(reducer, n8n("run-start", {"messageId": "m"}))
    first = reducer.drain_changes()
    assert first.reset
    assert reducer.drain_changes().empty

    apply_wire(reducer, n8n("text-delta", {"text": "Hel"}, responseId="s1"))
    apply_wire(reducer, n8n("text-delta", {"text": "lo"}, responseId="s1"))
    changes = reducer.drain_changes()
    assert changes.timeline_appends == {ROOT: 0} and changes.segments == []
    assert reducer.segment_text(ROOT, 0) == "Hello"

    apply_wire(reducer, n8n("text-delta", {"text": " you"}, responseId="s1"))
    apply_wire(reducer, n8n("text-delta", {"text": "!"}, responseId="s1"))
    changes = reducer.drain_changes()
    assert changes.timeline_appends == {}
    assert [(s.agent_id, s.index, s.kind, s.text, s.replaced) for s in changes.segments] == [
        (ROOT, 0, "text", " you!", False)
    ]

    apply_wire(reducer, n8n("text-block", {"text": "Hello you!!"}, responseId="s1"))
    (seg,) = reducer.drain_changes().segments
    assert seg.replaced and seg.text == "Hello you!!"

    apply_wire(reducer, n8n("tool-call", {"toolCallId": "t", "toolName": "x", "args": {}}))
    changes = reducer.drain_changes()
    assert changes.timeline_appends == {ROOT: 1} and changes.tool_calls == ["t"] and changes.agents == [ROOT]
    assert reducer.timeline_entry(ROOT, 1) == {"type": "tool-call", "toolCallId": "t"}

    apply_wire(reducer, n8n("tool-result", {"toolCallId": "t", "result": 3}))
    changes = reducer.drain_changes()
    assert changes.tool_calls == ["t"] and changes.agents == [] and changes.timeline_appends == {}
    assert reducer.tool_call("t").result == 3

    apply_wire(reducer, n8n("run-finish", {"status": "completed"}))
    changes = reducer.drain_changes()
    assert changes.run_status and changes.agents == [ROOT]


def test_drain_after_from_tree_is_a_reset_then_incremental() -> None:
    reducer = RunReducer.from_tree(build_agent_tree_wire([n8n("run-start", {"messageId": "m"}), n8n("text-delta", {"text": "a"})]))
    assert reducer.drain_changes().reset
    apply_wire(reducer, n8n("text-delta", {"text": "b"}))
    (seg,) = reducer.drain_changes().segments
    assert seg.text == "b" and seg.index == 0


def test_cheap_accessors() -> None:
    reducer = fold(
        [
            n8n("run-start", {"messageId": "m"}),
            n8n("agent-spawned", {"parentId": ROOT, "role": "builder", "tools": ["x"], "title": "T"}, agent="c1"),
            n8n("agent-completed", {"role": "builder", "result": "done"}, agent="c1"),
            n8n("status", {"message": "thinking"}),
        ]
    )
    assert reducer.agent_fields("c1") == {
        "agentId": "c1", "role": "builder", "tools": ["x"], "title": "T", "status": "completed", "result": "done"
    }
    assert reducer.agent_fields(ROOT) == {"agentId": ROOT, "role": "orchestrator", "status": "active", "statusMessage": "thinking"}
    assert reducer.agent_fields("nope") is None
    assert [child.agent_id for child in reducer.tree().children] == ["c1"] and reducer.tree().children[0].children == []
    assert reducer.tool_call("nope") is None and reducer.timeline_entry(ROOT, 5) is None and reducer.segment_text(ROOT, 0) == ""
