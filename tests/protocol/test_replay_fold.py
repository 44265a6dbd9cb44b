"""``instance-ai replay`` folds a run of deltas as one delta of their joined text (``replay._Fold``) and
decodes JSON lines a batch at a time (``replay._decode_batch``): the conversation it builds is the one
``Conversation.apply_wire`` builds event by event, diagnostics included, on random streams full of
what could tell them apart (agents unknown or spawned later, responses, status, ids going backwards,
control characters cut between deltas, deltas of wrong types, a run-sync)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from instance_ai_tui import replay as replay_module
from instance_ai_tui.protocol.conversation import Conversation

RUNS = ("r1", "r2")
TEXTS = ("hello ", "wor", "ld\n", "\x1b", "[31m", "\u202e!", "✓ ", "", "a\tb")


def random_stream(seed: int, count: int = 400) -> list[tuple[int | None, dict[str, Any]]]:
    rng = random.Random(seed)
    items: list[tuple[int | None, dict[str, Any]]] = []
    next_id = 1
    started: list[str] = []
    for _ in range(count):
        roll = rng.random()
        run = rng.choice(RUNS)
        agent = rng.choice([f"orchestrator-{run}", "child", "nobody"])
        if roll < 0.06 or not started:
            run = RUNS[len(started) % 2] if len(started) < 2 else run
            event: dict[str, Any] = {"type": "run-start", "runId": run, "agentId": f"orchestrator-{run}",
                                     "payload": {"messageId": f"m-{run}", "messageGroupId": f"g-{run}"}}
            started.append(run)
        elif roll < 0.1:
            event = {"type": "agent-spawned", "runId": run, "agentId": "child",
                     "payload": {"parentId": f"orchestrator-{run}", "role": "helper", "tools": []}}
        elif roll < 0.13:
            event = {"type": "status", "runId": run, "agentId": agent, "payload": {"message": rng.choice(TEXTS)}}
        elif roll < 0.16:
            event = {"type": "text-delta", "runId": run, "agentId": agent,
                     "payload": {"text": rng.choice([5, None, "x"])}, "ts": rng.choice([1, "late", None])}
        elif roll < 0.18:
            event = {"type": "tool-call", "runId": run, "agentId": agent,
                     "payload": {"toolCallId": f"c{next_id}", "toolName": "list", "args": {}}}
        else:
            kind = rng.choice(["text-delta", "text-delta", "reasoning-delta"])
            event = {"type": kind, "runId": run, "agentId": agent, "payload": {"text": rng.choice(TEXTS)}}
            if rng.random() < 0.5:
                event["responseId"] = rng.choice(["a", "b"])
            if rng.random() < 0.1:
                event["userId"] = rng.choice(["u", 7])
        event_id: int | None = None
        if rng.random() < 0.7:
            event_id = next_id if rng.random() < 0.9 else max(1, next_id - rng.randint(1, 5))  # some go backwards
            next_id += 1
        items.append((event_id, event))
    return items


def folded(items: list[tuple[int | None, dict[str, Any]]], *, joined: bool) -> tuple[Any, list[str]]:
    conversation = Conversation()
    if joined:
        fold = replay_module._Fold(conversation)
        for start in range(0, len(items), 37):  # batches, as the decoder hands them over
            fold.feed(items[start:start + 37])
        fold.flush()
    else:
        for event_id, data in items:
            conversation.apply_wire(event_id, data)
    notes = list(conversation.diagnostics)
    for message in conversation.messages:
        if message.reducer is not None:
            notes.extend(message.reducer.diagnostics)
    messages = [message.to_message().to_wire() for message in conversation.messages]
    for message in messages:
        message.pop("createdAt", None)  # the clock when the message was made
    return messages, notes


@pytest.mark.parametrize("seed", range(40))
def test_joined_deltas_fold_into_the_same_conversation(seed: int) -> None:
    items = random_stream(seed)
    assert folded(items, joined=True) == folded(items, joined=False)


def test_the_stream_joins_deltas_at_all() -> None:
    """(The equivalence above would hold trivially if nothing were ever joined.)"""
    items = [(None, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    items += [(None, {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": f"{i} "}}) for i in range(50)]
    applied: list[Any] = []
    conversation = Conversation()
    real = conversation.apply_wire
    conversation.apply_wire = lambda event_id, data: applied.append(data) or real(event_id, data)  # type: ignore[method-assign]
    fold = replay_module._Fold(conversation)
    fold.feed(items)
    fold.flush()
    assert len(applied) == 3  # the run-start, the first delta, the other 49 joined
    assert conversation.messages[-1].content == "".join(f"{i} " for i in range(50))


@pytest.mark.parametrize("lines", [
    ['{"type": "text-delta"}', '{"a": 1}, {"b": 2}', '{"type": "x"}'],  # two values on one line
    ['{"type": "a"}', "", '{"type": "b"}'],  # a blank line
    ['{"type": "a"}', "{broken", "[1, 2]", '"text"'],
    ['{"id": 3, "event": {"type": "a"}}', '{"type": "run-sync", "payload": {"runId": 5}}'],
])
def test_a_batch_decodes_as_its_lines_one_by_one(lines: list[str]) -> None:
    one_by_one = replay_module._Diagnostics()
    expected = []
    for number, line in enumerate(lines, 11):
        expected.extend(replay_module._decode_batch([line], number - 1, one_by_one))
    batch = replay_module._Diagnostics()
    got = replay_module._decode_batch(lines, 10, batch)
    assert json.dumps(got, default=repr) == json.dumps(expected, default=repr)
    assert batch.shown == one_by_one.shown
