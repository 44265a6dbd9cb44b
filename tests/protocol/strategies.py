"""Hypothesis strategies: random event streams, valid, malformed and unknown mixed.

Hypothesis draws the bytes of a stream (a draw costs ~0.2 ms here, and an event built
from nested strategies costs dozens of draws); ``decode_event`` turns each two bytes into
an event deterministically. Shrinking still works (fewer and smaller bytes), and the
failing stream is reported with ``note``.

Ids come from small pools so that events meet: results find their calls, blocks meet
open segments with the same response id, follow-up run-starts alias the root, sub-agents
nest. Texts use a tiny alphabet so blocks often extend streamed text.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

AGENTS = ["orchestrator-r1", "a1", "a2", "orchestrator-r2", "a3", "agent-001", "__proto__"]
#: events mostly come from agents that exist: the first run's orchestrator and its children
AGENT_WEIGHTS = ["orchestrator-r1"] * 6 + ["a1"] * 3 + ["a2"] * 2 + AGENTS[3:]
PARENT_WEIGHTS = ["orchestrator-r1"] * 4 + ["a1"] * 2 + AGENTS[2:]
RUNS = ["r1", "r2", "r3", ""]
TOOL_IDS = ["tc1", "tc2", "tc3", "tc4"]
RESPONSE_IDS = [None, "s1", "s1", "s1", "s2", ""]
TOOL_NAMES = ["workflows", "delegate", "create-tasks", "plan", "nodes"]
#: mostly 'a'/'b' so that block texts often extend streamed text; a few odd characters
TEXT_ALPHABET = "aaabbb *\né"


class _Draw:
    """Choices from a seeded ``random.Random``; choice 0 is the simplest."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, options: list[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def maybe(self, probability: float = 0.5) -> bool:
        return self.rng.random() < probability

    def text(self) -> str:
        return "".join(self.pick(list(TEXT_ALPHABET)) for _ in range(self.rng.randrange(5)))

    def json(self, depth: int = 0) -> Any:
        kind = self.rng.randrange(7 if depth < 2 else 5)
        if kind == 0:
            return None
        if kind == 1:
            return self.maybe()
        if kind == 2:
            return self.rng.randrange(-5, 6)
        if kind in (3, 4):
            return self.pick(["x", "y", "wf-1", ""])
        if kind == 5:
            return [self.json(depth + 1) for _ in range(self.rng.randrange(3))]
        return {self.pick(["k", "id", "name"]): self.json(depth + 1) for _ in range(self.rng.randrange(3))}

    def tool_id(self, payload: dict[str, Any]) -> dict[str, Any]:
        choice = self.rng.randrange(6)
        if choice < 4:
            payload["toolCallId"] = TOOL_IDS[choice]
        elif choice == 4:
            payload["toolCallId"] = ""
        return payload  # 5: absent (seed dialect)


def _optional(d: _Draw, payload: dict[str, Any], **fields: Callable[[], Any]) -> dict[str, Any]:
    for key, make in fields.items():
        if d.maybe():
            payload[key] = make()
    return payload


PayloadMaker = Callable[[_Draw], dict[str, Any]]

PAYLOADS: dict[str, PayloadMaker] = {
    "run-start": lambda d: _optional(
        d, {"messageId": "m"}, messageGroupId=lambda: d.pick(["mg1", "mg2"]), userMessage=d.text
    ),
    "run-finish": lambda d: _optional(
        d,
        {"status": d.pick(["completed", "cancelled", "error", "interrupted", "weird"])},
        reason=lambda: d.pick(["user_cancelled", "timeout", "service_shutdown", "crash_interrupted", "boom"]),
        archivedWorkflowIds=lambda: [d.pick(["w1", "w2"])],
    ),
    "text-delta": lambda d: {"text": d.text()},
    "reasoning-delta": lambda d: {"text": d.text()},
    "text-block": lambda d: {"text": d.text()},
    "reasoning-block": lambda d: {"text": d.text()},
    "tool-input-start": lambda d: {"toolCallId": d.pick(TOOL_IDS), "toolName": d.pick(TOOL_NAMES)},
    "tool-call": lambda d: d.tool_id(
        _optional(d, {"toolName": d.pick(TOOL_NAMES)}, args=lambda: {d.pick(["a", "b"]): d.json()})
    ),
    "tool-result": lambda d: d.tool_id(_optional(d, {}, result=d.json)),
    "tool-error": lambda d: d.tool_id({"error": d.text()}),
    "tool-interrupted": lambda d: d.tool_id({"error": d.text()}),
    "agent-spawned": lambda d: _optional(
        d,
        {"parentId": d.pick(PARENT_WEIGHTS), "role": d.pick(["builder", "debugger"])},
        tools=lambda: [d.pick(TOOL_NAMES)],
        title=d.text,
        kind=lambda: d.pick(["builder", "agent-builder"]),
        targetResource=lambda: _optional(
            d, {"type": d.pick(["workflow", "agent"])}, id=lambda: d.pick(["x", "y"]), name=d.text
        ),
        activity=lambda: "exploring",
    ),
    "agent-completed": lambda d: _optional(
        d,
        {"role": "builder"},
        result=d.text,
        error=d.text,
        status=lambda: d.pick(["completed", "cancelled", "error", "interrupted", "odd"]),
        agentChange=lambda: "none",
    ),
    "confirmation-request": lambda d: d.tool_id(
        _optional(
            d,
            {"requestId": d.pick(["q1", "q2"]), "severity": d.pick(["warning", "info", "bogus"]), "message": d.text()},
            toolName=lambda: d.pick(TOOL_NAMES),
            args=lambda: {},
            inputType=lambda: d.pick(["approval", "plan-review", "questions"]),
            questions=lambda: [{"id": "q", "question": d.text(), "type": d.pick(["single", "text"])}],
            expired=d.maybe,
        )
    ),
    "tasks-update": lambda d: (
        {
            "tasks": [
                {"id": d.pick(["t1", "t2"]), "description": d.text(), "status": d.pick(["pending", "in_progress", "completed"])}
                for _ in range(d.rng.randrange(3))
            ]
        }
        if d.maybe()
        else _optional(
            d,
            {
                "tasks": {
                    "tasks": [
                        {"id": "t", "description": d.text(), "status": d.pick(["todo", "done", "failed", "cancelled"])}
                        for _ in range(d.rng.randrange(3))
                    ]
                }
            },
            planItems=lambda: [{"id": "p", "title": d.text(), "kind": "build-workflow", "spec": "", "deps": []}],
        )
    ),
    "setup-items": lambda d: {
        "workflowId": d.pick(["wf1", "wf2", "__proto__"]),
        "items": [{"id": "i", "kind": "credential"} for _ in range(d.rng.randrange(3))],
    },
    "preferences-applied": lambda d: {"preferences": [], "renderedLength": 3, "injectedThisTurn": d.maybe()},
    "filesystem-request": lambda d: {"requestId": "f", "operation": "read"},
    "thread-title-updated": lambda d: {"title": d.text()},
    "status": lambda d: {"message": d.text()},
    "error": lambda d: _optional(
        d,
        {"content": d.text()},
        code=lambda: d.pick(["quota_exhausted", "other"]),
        statusCode=lambda: 500,
        provider=lambda: "openai",
    ),
    # unknown types: newer n8n and made-up ones
    "instance-context": lambda d: {"injection": {"state": "absent"}},
    "mystery-type": lambda d: {"x": d.json()},
}

#: deltas and tool traffic are the bulk of real streams: weight them up
KINDS = sorted(PAYLOADS) + ["text-delta"] * 6 + ["reasoning-delta"] * 2 + ["text-block"] * 2 + ["tool-call", "tool-result"] * 2


def _valid(d: _Draw) -> dict[str, Any]:
    kind = d.pick(KINDS)
    event: dict[str, Any] = {
        "type": kind,
        "runId": d.pick(RUNS),
        "agentId": d.pick(AGENT_WEIGHTS),
        "payload": PAYLOADS[kind](d),
    }
    if d.maybe(0.7):
        event["responseId"] = d.pick(RESPONSE_IDS)
    if d.maybe(0.3):
        event["ts"] = d.pick([0, 1_700_000_000_000, 2**45, -1, 1.5e300, float("nan"), float("inf")])
    if d.maybe(0.1):
        event["userId"] = "u1"
    return event


MALFORMED: list[Callable[[_Draw], Any]] = [
    lambda d: None,
    lambda d: d.rng.randrange(100),
    lambda d: d.text(),
    lambda d: "{not json",
    lambda d: [1, 2],
    lambda d: {},
    lambda d: {"type": d.pick([5, None, "", ["x"]])},
    lambda d: {"type": d.pick(sorted(PAYLOADS)), "payload": d.pick([5, "x", [None]])},
    lambda d: {
        "type": d.pick(["text-delta", "reasoning-delta", "status"]),
        "agentId": d.pick(AGENTS),
        "payload": {"text": 5, "message": 6},
    },
    lambda d: {"type": "tool-input-start", "agentId": d.pick(AGENTS), "payload": {}},
    lambda d: {"type": "confirmation-request", "payload": {"toolCallId": "tc1"}},
    lambda d: {"type": d.pick(["text-delta", "tool-call"]), "runId": 3, "agentId": 4, "payload": {"text": "x"}},
    lambda d: {"type": "agent-spawned", "agentId": "a9", "payload": {"parentId": 7}},
]


def decode_event(seed: int) -> Any:
    """One event for ``seed``: 4 in 5 are valid (some of unknown types), 1 in 5 malformed."""
    d = _Draw(seed)
    if d.rng.randrange(5) == 0:
        return d.pick(MALFORMED)(d)
    return _valid(d)


def _decode_stream(raw: bytes) -> list[Any]:
    return [decode_event(int.from_bytes(raw[i : i + 2], "big")) for i in range(0, len(raw) - 1, 2)]


events = st.integers(0, 2**16 - 1).map(decode_event)
#: one binary draw per stream, two bytes per event (a draw per event would cost ~0.2 ms)
event_streams = st.binary(max_size=80).map(_decode_stream)

RUN_START = {"type": "run-start", "runId": "r1", "agentId": "orchestrator-r1", "payload": {"messageId": "m"}}

#: longer streams (8-60 events) for the properties that need events to meet; most
#: begin with the first run's run-start, as a real stream does
long_event_streams = st.tuples(st.integers(0, 3), st.binary(min_size=16, max_size=120)).map(
    lambda drawn: ([dict(RUN_START)] if drawn[0] else []) + _decode_stream(drawn[1])
)
