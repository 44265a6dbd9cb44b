"""Hypothesis strategies: random event streams, valid, malformed and unknown mixed.

Ids are drawn from small pools so that events meet: results find their calls, blocks
meet open segments with the same response id, follow-up run-starts alias the root,
sub-agents nest. Texts use a tiny alphabet so blocks often extend streamed text.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

AGENTS = ["orchestrator-r1", "orchestrator-r2", "a1", "a2", "a3", "agent-001", "__proto__"]
RUNS = ["r1", "r2", "r3", ""]
TOOL_IDS = ["tc1", "tc2", "tc3", "tc4"]
RESPONSE_IDS = [None, "", "s1", "s2"]
TOOL_NAMES = ["workflows", "delegate", "create-tasks", "plan", "nodes"]

texts = st.text(alphabet="ab *\né", max_size=5)
names = st.sampled_from(TOOL_NAMES)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(alphabet="xyz", max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["k", "id", "name"]), inner, max_size=3)),
    max_leaves=6,
)
maybe_tool_id = st.one_of(st.sampled_from(TOOL_IDS), st.just(""), st.just(None))


def _payload(required: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(required, optional=optional or {})


def _with_tool_id(base: dict[str, Any], optional: dict[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A payload whose toolCallId is a pool id, empty, or absent (seed dialect)."""

    def build(parts: tuple[dict[str, Any], str | None]) -> dict[str, Any]:
        payload, tool_id = parts
        if tool_id is not None:
            payload = {**payload, "toolCallId": tool_id}
        return payload

    return st.tuples(_payload(base, optional), maybe_tool_id).map(build)


PAYLOADS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "run-start": _payload(
        {"messageId": st.just("m")},
        {"messageGroupId": st.sampled_from(["mg1", "mg2"]), "userMessage": texts},
    ),
    "run-finish": _payload(
        {"status": st.sampled_from(["completed", "cancelled", "error", "interrupted", "weird"])},
        {
            "reason": st.sampled_from(["user_cancelled", "timeout", "service_shutdown", "crash_interrupted", "boom"]),
            "archivedWorkflowIds": st.lists(st.sampled_from(["w1", "w2"]), max_size=2),
        },
    ),
    "text-delta": _payload({"text": texts}),
    "reasoning-delta": _payload({"text": texts}),
    "text-block": _payload({"text": texts}),
    "reasoning-block": _payload({"text": texts}),
    "tool-input-start": _payload({"toolCallId": st.sampled_from(TOOL_IDS), "toolName": names}),
    "tool-call": _with_tool_id({"toolName": names}, {"args": st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=2)}),
    "tool-result": _with_tool_id({}, {"result": json_values}),
    "tool-error": _with_tool_id({"error": texts}),
    "tool-interrupted": _with_tool_id({"error": texts}),
    "agent-spawned": _payload(
        {"parentId": st.sampled_from(AGENTS), "role": st.sampled_from(["builder", "debugger"])},
        {
            "tools": st.lists(names, max_size=2),
            "title": texts,
            "kind": st.sampled_from(["builder", "agent-builder"]),
            "targetResource": _payload({"type": st.sampled_from(["workflow", "agent"])}, {"id": st.sampled_from(["x", "y"]), "name": texts}),
            "activity": st.just("exploring"),
        },
    ),
    "agent-completed": _payload(
        {"role": st.just("builder")},
        {
            "result": texts,
            "error": texts,
            "status": st.sampled_from(["completed", "cancelled", "error", "interrupted", "odd"]),
            "agentChange": st.just("none"),
        },
    ),
    "confirmation-request": _with_tool_id(
        {"requestId": st.sampled_from(["q1", "q2"]), "severity": st.sampled_from(["warning", "info", "bogus"]), "message": texts},
        {
            "toolName": names,
            "args": st.just({}),
            "inputType": st.sampled_from(["approval", "plan-review", "questions"]),
            "questions": st.lists(_payload({"id": st.just("q"), "question": texts, "type": st.sampled_from(["single", "text"])}), max_size=1),
            "expired": st.booleans(),
        },
    ),
    "tasks-update": st.one_of(
        _payload({"tasks": st.lists(_payload({"id": st.sampled_from(["t1", "t2"]), "description": texts, "status": st.sampled_from(["pending", "in_progress", "completed"])}), max_size=3)}),
        _payload(
            {"tasks": _payload({"tasks": st.lists(_payload({"id": st.just("t"), "description": texts, "status": st.sampled_from(["todo", "done", "failed", "cancelled"])}), max_size=3)})},
            {"planItems": st.lists(_payload({"id": st.just("p"), "title": texts, "kind": st.just("build-workflow"), "spec": st.just(""), "deps": st.just([])}), max_size=1)},
        ),
    ),
    "setup-items": _payload({"workflowId": st.sampled_from(["wf1", "wf2", "__proto__"]), "items": st.lists(_payload({"id": st.just("i"), "kind": st.just("credential")}), max_size=2)}),
    "preferences-applied": _payload({"preferences": st.just([]), "renderedLength": st.integers(0, 9), "injectedThisTurn": st.booleans()}),
    "filesystem-request": _payload({"requestId": st.just("f")}, {"operation": st.just("read")}),
    "thread-title-updated": _payload({"title": texts}),
    "status": _payload({"message": texts}),
    "error": _payload({"content": texts}, {"code": st.sampled_from(["quota_exhausted", "other"]), "statusCode": st.integers(400, 599), "provider": st.just("openai")}),
    "instance-context": _payload({"injection": st.just({"state": "absent"})}),
    "mystery-type": _payload({}, {"x": json_values}),
}


def _event(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "type": st.just(kind),
            "runId": st.sampled_from(RUNS),
            "agentId": st.sampled_from(AGENTS),
            "payload": PAYLOADS[kind],
        },
        optional={
            "responseId": st.sampled_from(RESPONSE_IDS),
            "ts": st.one_of(st.integers(0, 2**45), st.floats(allow_nan=True, allow_infinity=True)),
            "userId": st.just("u1"),
        },
    )


# deltas are the bulk of real streams: weight them up
_WEIGHTED = ["text-delta", "text-delta", "reasoning-delta", "text-block", "tool-call", "tool-result"]
valid_events = st.sampled_from(sorted(PAYLOADS) + _WEIGHTED).flatmap(_event)

malformed_events = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=2),
    st.just({}),
    st.fixed_dictionaries({"type": st.one_of(st.integers(), st.none(), st.just(""))}),
    st.fixed_dictionaries({"type": st.sampled_from(sorted(PAYLOADS)), "payload": st.one_of(st.integers(), st.text(max_size=3), st.lists(st.none(), max_size=1))}),
    st.fixed_dictionaries({"type": st.sampled_from(["text-delta", "reasoning-delta", "status"]), "agentId": st.sampled_from(AGENTS), "payload": st.fixed_dictionaries({"text": st.integers(), "message": st.integers()})}),
    st.fixed_dictionaries({"type": st.just("tool-input-start"), "agentId": st.sampled_from(AGENTS), "payload": st.just({})}),
    st.fixed_dictionaries({"type": st.just("confirmation-request"), "payload": st.just({"toolCallId": "tc1"})}),
    st.fixed_dictionaries({"type": st.sampled_from(["text-delta", "tool-call"]), "runId": st.integers(), "agentId": st.integers(), "payload": st.just({"text": "x"})}),
)

#: mostly valid events, some malformed and unknown ones
events = st.one_of(valid_events, valid_events, valid_events, valid_events, malformed_events)
event_streams = st.lists(events, max_size=40)
