"""The seed document's examples and listings, taken from the document itself."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.protocol.api import ThreadStatus
from instance_ai_tui.protocol.display_state import display_state
from instance_ai_tui.protocol.events import EVENT_TYPES, UnknownEvent, parse_event
from instance_ai_tui.protocol.reducer import RunReducer, build_agent_tree_wire
from instance_ai_tui.protocol.sse import EventStreamDecoder
from tests.support.drawings import tree_text
from tests.support.fold import apply_wire

from .conftest import fenced_blocks, seed_json_examples, seed_text

EXAMPLES = seed_json_examples()
EVENT_EXAMPLES = [e for e in EXAMPLES if isinstance(e, dict) and "type" in e]
OTHER_EXAMPLES = [e for e in EXAMPLES if not (isinstance(e, dict) and "type" in e)]


def test_the_seed_has_the_examples_we_expect() -> None:
    # one example per event type of the seed's reference table plus the two extra
    # run-finish variants, and the status response
    assert len(EVENT_EXAMPLES) == 16
    assert {e["type"] for e in EVENT_EXAMPLES} <= EVENT_TYPES
    assert len(OTHER_EXAMPLES) == 1


@pytest.mark.parametrize("example", EVENT_EXAMPLES, ids=lambda e: e["type"])
def test_every_seed_event_example_parses_and_round_trips(example: dict[str, Any]) -> None:
    event = parse_event(example)
    assert not isinstance(event, UnknownEvent)
    assert event.type == example["type"]
    assert event.to_wire() == example
    again = parse_event(event.to_json())
    assert again == event


def test_the_seed_status_response_parses_and_round_trips() -> None:
    (example,) = OTHER_EXAMPLES
    status = ThreadStatus.model_validate(example)
    assert status.background_tasks[0].agent_id == "agent-002"
    assert status.to_wire() == example


def test_the_seed_sse_frame_example_decodes() -> None:
    (block,) = [b for b in fenced_blocks(seed_text(), "text") if b.startswith("id:")]
    decoder = EventStreamDecoder()
    items = decoder.feed(block + "\n")
    assert not decoder.diagnostics
    ((event_id, event),) = items
    assert event_id == 42
    assert event.type == "text-delta" and event.agent_id == "agent-001"


def test_seed_tasks_example_normalises_and_writes_back_flat() -> None:
    (example,) = [e for e in EVENT_EXAMPLES if e["type"] == "tasks-update"]
    event = parse_event(example)
    assert [t.status.value for t in event.payload.tasks.tasks] == ["done", "in_progress", "todo"]
    assert event.to_wire()["payload"]["tasks"][0]["status"] == "completed"


# --------------------------------------------------------------------------- listings


def test_simple_query_listing_gives_the_drawn_tree(simple_listing: list[dict[str, Any]]) -> None:
    reducer = RunReducer()
    for event in simple_listing:
        apply_wire(reducer, event)
    assert not reducer.diagnostics
    tree = reducer.tree()
    assert tree.agent_id == "a1" and tree.role == "orchestrator"
    assert tree.status == "completed" and reducer.status == "completed"
    assert tree.reasoning == "Let me look up..."
    assert tree.text_content == "You have 3 workflows:\n"
    (call,) = tree.tool_calls
    assert call.tool_name == "list-workflows" and not call.is_loading and call.result == []
    assert [e.type for e in tree.timeline] == ["reasoning", "tool-call", "text"]
    assert tree.timeline[1].tool_call_id == call.tool_call_id
    assert tree.children == []
    assert tree_text(tree) == "\n".join(
        [
            "🤖 Orchestrator",
            '├── 💭 "Let me look up..."',
            "├── 🔧 list-workflows → []",
            "└── 💬 You have 3 workflows:",
        ]
    )


def test_autonomous_loop_listing_gives_the_drawn_tree(autonomous_listing: list[dict[str, Any]]) -> None:
    tree = build_agent_tree_wire(autonomous_listing)
    assert tree.agent_id == "a1" and tree.status == "completed"
    assert [c.tool_name for c in tree.tool_calls] == [
        "plan",
        "delegate",
        "run-workflow",
        "get-execution",
        "delegate",
        "plan",
    ]
    # n8n's rule: a completed run leaves a call without result loading (the listing's last
    # ``plan`` has none); the display state calls it "not resolved"
    assert [c.is_loading for c in tree.tool_calls] == [False] * 5 + [True]
    assert display_state(tree.tool_calls[5], run_active=False).kind == "unresolved"
    by_name = {c.tool_call_id: c for c in tree.tool_calls}
    assert by_name["tc2"].result == "Created wf-123"
    assert by_name["tc5"].result == "Missing API key"
    assert tree.tool_calls[0].result == {"goal": "Weather to Slack"}
    assert tree.tool_calls[2].result == {"executionId": "exec-456"}
    assert tree.tool_calls[3].result == {"status": "error"}
    assert tree.tool_calls[5].args == {"action": "update"}

    builder, debugger = tree.children
    assert (builder.agent_id, builder.role, builder.status) == ("a2", "workflow builder", "completed")
    assert builder.result == "Created wf-123"
    (create,) = builder.tool_calls
    assert create.tool_name == "create-workflow" and create.result == {"id": "wf-123"} and not create.is_loading
    assert (debugger.agent_id, debugger.role, debugger.status) == ("a3", "execution debugger", "completed")
    assert debugger.result == "Missing API key header"
    assert debugger.reasoning == "The HTTP node returned 401..."
    (get_execution,) = debugger.tool_calls
    assert get_execution.tool_name == "get-execution" and not get_execution.is_loading  # settled by agent-completed
    assert [e.type for e in debugger.timeline] == ["tool-call", "reasoning"]

    assert tree.text_content == "Done! I created a workflow..."
    kinds = [(e.type, getattr(e, "agent_id", None)) for e in tree.timeline]
    assert kinds == [
        ("tool-call", None),
        ("tool-call", None),
        ("child", "a2"),
        ("tool-call", None),
        ("tool-call", None),
        ("tool-call", None),
        ("child", "a3"),
        ("tool-call", None),
        ("text", None),
    ]
    assert tree_text(tree) == "\n".join(
        [
            "🤖 Orchestrator",
            "├── 🔧 plan → Weather to Slack",
            "├── 🤖 Sub-Agent A (workflow builder)",
            "│   ├── 🔧 create-workflow → wf-123",
            '│   └── ✅ "Created wf-123"',
            "├── 🔧 run-workflow → exec-456",
            "├── 🔧 get-execution → error",
            "├── 🤖 Sub-Agent B (execution debugger)",
            "│   ├── 🔧 get-execution → (no result)",
            '│   ├── 💭 "The HTTP node returned 401..."',
            '│   └── ✅ "Missing API key header"',
            "├── 🔧 plan update → (no result)",
            "└── 💬 Done! I created a workflow...",
        ]
    )


def test_listing_without_tool_call_ids_gets_stable_synthetic_ids(autonomous_listing: list[dict[str, Any]]) -> None:
    first = build_agent_tree_wire(autonomous_listing)
    second = build_agent_tree_wire(autonomous_listing)
    ids = [c.tool_call_id for c in first.tool_calls]
    assert ids == [c.tool_call_id for c in second.tool_calls]
    assert len(set(ids)) == len(ids)
    assert ids[1] == "tc2" and ids[0] == "a1/call-1"
