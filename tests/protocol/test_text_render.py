"""The text drawing of a tree: confirmations, errors, status, nested agents, Rich output."""

from __future__ import annotations

from instance_ai_tui.protocol.reducer import build_agent_tree_wire
from instance_ai_tui.protocol.text_render import summarize_result
from tests.support.drawings import tree_text

from .conftest import ev

ROOT = "orchestrator-r1"


def test_pending_confirmation_status_error_and_multiline_text() -> None:
    tree = build_agent_tree_wire(
        [
            ev("run-start", ROOT, {"messageId": "m"}),
            ev("text-delta", ROOT, {"text": "Line one\nLine two"}),
            ev("tool-call", ROOT, {"toolCallId": "t", "toolName": "workflows", "args": {"action": "delete", "workflowId": "wf-1"}}),
            ev("confirmation-request", ROOT,
               {"requestId": "q", "toolCallId": "t", "severity": "warning", "message": "Archive workflow 'W'?"}),
            ev("agent-spawned", "c1", {"parentId": ROOT, "role": "builder", "tools": [], "title": "Weather flow"}),
            ev("tool-call", "c1", {"toolCallId": "t2", "toolName": "build-workflow", "args": {}}),
            ev("tool-error", "c1", {"toolCallId": "t2", "error": "Sandbox unavailable"}),
            ev("error", "c1", {"content": "Builder crashed"}),
            ev("status", ROOT, {"message": "Waiting for approval"}),
        ]
    )
    assert tree_text(tree) == "\n".join(
        [
            "🤖 Orchestrator",
            "├── 💬 Line one",
            "│   Line two",
            "├── 🔧 workflows delete wf-1 …",
            "│   └── ⚠ approval: Archive workflow 'W'? (pending)",
            "├── 🤖 Sub-Agent A (builder): Weather flow",
            "│   ├── 🔧 build-workflow → error: Sandbox unavailable",
            "│   ├── 💬 *Error: Builder crashed*",
            "│   └── ❌ Builder crashed",
            "└── ⏳ Waiting for approval",
        ]
    )


def test_summaries() -> None:
    assert summarize_result({"workflows": [{"id": "1", "name": "A"}, {"id": "2", "name": "B"}]}) == "[A, B]"
    assert summarize_result({"success": False, "denied": True, "reason": "User denied the action"}) == "denied: User denied the action"
    assert summarize_result("x" * 200, limit=10) == "x" * 9 + "…"
    assert summarize_result(None) == "done"
    assert summarize_result({"a": 1, "b": 2}) == '{"a":1,"b":2}'
