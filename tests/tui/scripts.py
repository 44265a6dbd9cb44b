"""Recorded event scripts for the TUI tests, and an app factory.

The scripted runs are played by ``RecordedClient`` (a test double of the ``Client``
interface that replays recorded protocol events); everything else is the real app.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.recorded import RecordedClient

SIZE = (120, 40)


def ev(kind: str, agent: str = "a1", run: str = "r1", **payload: Any) -> dict[str, Any]:
    return {"type": kind, "runId": run, "agentId": agent, "payload": payload}


def text_deltas(text: str, agent: str = "a1", size: int = 7) -> list[dict[str, Any]]:
    return [ev("text-delta", agent, text=text[i : i + size]) for i in range(0, len(text), size)]


ANSWER = "You have **3** workflows:\n\n- Weather to Slack\n- Daily digest\n- Backup\n"


def simple_run() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("reasoning-delta", text="Let me list the workflows first."),
        ev("tool-call", toolCallId="tc1", toolName="list-workflows", args={"limit": 10}),
        ev("tool-result", toolCallId="tc1", result={"workflows": [{"id": "1", "name": "Weather to Slack"}]}),
        *text_deltas(ANSWER),
        ev("run-finish", status="completed"),
    ]


def approval_run(severity: str = "destructive") -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="tc9", toolName="delete-workflow", args={"workflowId": "wf-9"}),
        ev(
            "confirmation-request",
            requestId="cr-1",
            toolCallId="tc9",
            toolName="delete-workflow",
            args={"workflowId": "wf-9"},
            severity=severity,
            message="Archive workflow 'Old digest'?",
        ),
        ev("tool-result", toolCallId="tc9", result={"archived": True}),
        *text_deltas("Archived it."),
        ev("run-finish", status="completed"),
    ]


def subagent_run() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="p1", toolName="plan", args={"goal": "Weather to Slack"}),
        ev("tool-result", toolCallId="p1", result={"goal": "Weather to Slack"}),
        ev("tasks-update", tasks=[
            {"id": "t1", "description": "Build the workflow", "status": "in_progress"},
            {"id": "t2", "description": "Test it", "status": "pending"},
        ]),
        ev("tool-call", toolCallId="tc2", toolName="delegate", args={"role": "workflow builder"}),
        ev("agent-spawned", "a2", parentId="a1", role="workflow builder", tools=["create-workflow"]),
        ev("tool-call", "a2", toolCallId="tc3", toolName="create-workflow", args={"name": "Weather"}),
        ev("tool-result", "a2", toolCallId="tc3", result={"id": "wf-123"}),
        ev("agent-completed", "a2", role="workflow builder", result="Created wf-123 with 3 nodes"),
        ev("tool-result", toolCallId="tc2", result="Created wf-123"),
        ev("tasks-update", tasks=[
            {"id": "t1", "description": "Build the workflow", "status": "completed"},
            {"id": "t2", "description": "Test it", "status": "completed"},
        ]),
        *text_deltas("Done! Your workflow runs daily at 8am."),
        ev("run-finish", status="completed"),
    ]


def questions_run() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="q1", toolName="ask-user", args={}),
        ev(
            "confirmation-request",
            requestId="cr-q",
            toolCallId="q1",
            toolName="ask-user",
            severity="info",
            message="A few questions first",
            inputType="questions",
            questions=[
                {"id": "when", "question": "When should it run?", "type": "single", "options": ["8am", "noon"]},
                {"id": "where", "question": "Where to post?", "type": "multi", "options": ["#general", "#ops", "#dev"]},
                {"id": "name", "question": "Name of the workflow?", "type": "text"},
            ],
        ),
        ev("tool-result", toolCallId="q1", result={"answered": True}),
        ev("run-finish", status="completed"),
    ]


def plan_run() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="pl1", toolName="create-tasks", args={}),
        ev(
            "confirmation-request",
            requestId="cr-p",
            toolCallId="pl1",
            toolName="create-tasks",
            severity="info",
            message="Review the plan",
            inputType="plan-review",
            tasks=[
                {"id": "t1", "description": "Build the workflow", "status": "pending"},
                {"id": "t2", "description": "Activate it", "status": "pending"},
            ],
        ),
        ev("tool-result", toolCallId="pl1", result={"approved": True}),
        ev("run-finish", status="completed"),
    ]


def endless_run() -> list[dict[str, Any]]:
    """A run that keeps streaming (for cancel)."""
    return [ev("run-start", messageId="m1"), *text_deltas("word " * 400, size=5)]


def make_app(
    client: Any,
    settings: Settings | None = None,
    **kwargs: Any,
) -> InstanceAiApp:
    kwargs.setdefault("watch_themes", False)
    kwargs.setdefault("persist_theme", False)
    return InstanceAiApp(client, settings or Settings(), **kwargs)


def recorded(runs: Iterable[list[dict[str, Any]]] = (), **kwargs: Any) -> RecordedClient:
    kwargs.setdefault("model_name", "scripted-test")
    return RecordedClient(runs=runs, **kwargs)
