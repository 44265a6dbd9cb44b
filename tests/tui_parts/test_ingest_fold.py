"""The TUI's ingest folds parsed events (what clients yield) through the conversation's
fast path; it must fold exactly as the generic paths (wire dicts, JSON text) do."""

from __future__ import annotations

import json
from typing import Any

from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.protocol.reducer import RunReducer
from tests.support.fold import apply, apply_wire


def ev(kind: str, run: str, agent: str, payload: dict[str, Any], rid: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "runId": run, "agentId": agent, "payload": payload}
    if rid is not None:
        event["responseId"] = rid
    return event


def stream() -> list[dict[str, Any]]:
    out = [
        ev("run-start", "r1", "a1", {"messageId": "m1", "messageGroupId": "g1", "userMessage": "build it"}),
        ev("reasoning-delta", "r1", "a1", {"text": "think "}, "x1"),
        ev("reasoning-delta", "r1", "a1", {"text": "more"}, "x1"),
        ev("status", "r1", "a1", {"message": "Planning"}),
        *[ev("text-delta", "r1", "a1", {"text": f"word{i} "}, "t1") for i in range(20)],
        ev("tool-call", "r1", "a1", {"toolCallId": "d1", "toolName": "delegate", "args": {"role": "builder"}}),
        ev("agent-spawned", "r1", "a2", {"parentId": "a1", "role": "builder", "tools": []}),
        ev("status", "r1", "a2", {"message": "looking"}),
        *[ev("text-delta", "r1", "a2", {"text": f"sub{i} "}, f"c{i // 5}") for i in range(15)],
        ev("text-delta", "r1", "nobody", {"text": "lost"}),  # unknown agent: a diagnostic
        ev("text-delta", "r9", "a1", {"text": "no run-start"}),  # a placeholder message
        ev("agent-completed", "r1", "a2", {"role": "builder", "result": "done"}),
        ev("tool-result", "r1", "a1", {"toolCallId": "d1", "result": {"ok": True}}),
        ev("status", "r1", "a1", {"message": ""}),
        *[ev("text-delta", "r1", "a1", {"text": f"end{i} "}, "t2") for i in range(10)],
        ev("run-finish", "r1", "a1", {"status": "completed"}),
        ev("run-start", "r2", "a1", {"messageId": "m2", "messageGroupId": "g1"}),  # a follow-up run, same group
        ev("text-delta", "r2", "a1", {"text": "again"}, "t3"),
        ev("run-finish", "r2", "a1", {"status": "completed"}),
    ]
    return out


def fold(items: list[Any]) -> Conversation:
    conversation = Conversation("t")
    for index, item in enumerate(items, 1):
        if isinstance(item, (dict, str, bytes)):
            apply_wire(conversation, index, item)
        else:
            apply(conversation, index, item)
    return conversation


def snapshot(conversation: Conversation) -> str:
    wire = [{k: v for k, v in m.to_wire().items() if k != "createdAt"} for m in conversation.messages]
    return json.dumps([wire, list(conversation.diagnostics), conversation.cursor, conversation.is_streaming], sort_keys=True)


def test_parsed_events_fold_like_wire_dicts_and_json_text() -> None:
    events = stream()
    parsed = fold([parse_event(e) for e in events])
    assert snapshot(parsed) == snapshot(fold(events)) == snapshot(fold([json.dumps(e) for e in events]))
    root = parsed.messages[1].reducer
    assert root is not None
    assert root.text().startswith("word0 ") and root.text().endswith("again")
    assert "for unknown agent" in " ".join(root.diagnostics)
    assert [m.id for m in parsed.messages if m.role == "assistant"] == ["r1", "r9"]


def test_the_reducer_folds_parsed_deltas_like_raw_ones() -> None:
    events = [e for e in stream() if e["runId"] == "r1"]
    fast, slow = RunReducer("a1"), RunReducer("a1")
    for event in events:
        apply(fast, parse_event(event))
        apply_wire(slow, json.dumps(event))
    assert fast.tree_dict() == slow.tree_dict()
    assert list(fast.diagnostics) == list(slow.diagnostics)
    assert fast.drain_changes() == slow.drain_changes()


def test_has_changes_until_drained() -> None:
    conversation = Conversation("t")
    assert not conversation.has_changes
    events = stream()
    apply(conversation, 1, parse_event(events[0]))
    assert conversation.has_changes
    conversation.drain_changes()
    assert not conversation.has_changes
    apply(conversation, 2, parse_event(events[4]))  # a text delta of a known message
    assert conversation.has_changes
    conversation.drain_changes()
    apply(conversation, 2, parse_event(events[5]))  # a duplicate id is dropped
    assert not conversation.has_changes
