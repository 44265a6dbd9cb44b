"""``instance-ai replay`` folds a run of deltas as one ``DeltaRun`` (``replay._Fold``) and decodes JSON
lines a batch at a time (``replay._decode_batch``): the conversation it builds is the one the events
decoded and folded one by one build, diagnostics included, on random streams full of
what could tell them apart (agents unknown or spawned later, responses, status, ids going backwards,
control characters cut between deltas, deltas of wrong types, a run-sync)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from instance_ai_tui import replay as replay_module
from instance_ai_tui.protocol.conversation import Conversation
from tests.support.fold import apply_wire
from tests.support.streams import Odds
from tests.support.streams import random_stream as shared_stream

#: replay's streams: single deltas (a run of them is what ``_Fold`` joins, whatever lies between), more
#: starts, spawns and statuses between them, more ids absent, ``userId`` of a wrong type
REPLAY_ODDS = Odds(run_start=0.06, spawn=0.04, status=0.03, broken_delta=0.03, tool_call=0.02, longest_run=1,
                   numbered=0.7, event_id=0.7, user_id=0.1, user_ids=("u", 7))


def random_stream(seed: int) -> list[tuple[int | None, dict[str, Any]]]:
    return shared_stream(seed, 400, odds=REPLAY_ODDS)


def folded(items: list[tuple[int | None, dict[str, Any]]], *, joined: bool) -> tuple[Any, list[str]]:
    conversation = Conversation()
    if joined:
        fold = replay_module._Fold(conversation)
        for start in range(0, len(items), 37):  # batches, as the decoder hands them over
            fold.feed(items[start:start + 37])
    else:
        for event_id, data in items:
            apply_wire(conversation, event_id, data)
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
    real = conversation.fold
    conversation.fold = lambda batch: applied.extend(batch) or real(batch)  # type: ignore[method-assign,func-returns-value]
    fold = replay_module._Fold(conversation)
    fold.feed(items)
    assert len(applied) == 2 and applied[1].count == 50  # the run-start, the 50 deltas as one run
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


@pytest.mark.parametrize("seed", range(12))
def test_lines_read_in_bulk_fold_as_decoded_one_by_one(seed: int) -> None:
    """``replay._decode_lines`` reads runs of plain delta lines (``run --json``'s and our log's form,
    with or without a response id) in bulk; the conversation and the diagnostics are those of the
    lines decoded one by one, and some runs were read so (else the equality proves nothing)."""
    rng = __import__("random").Random(seed)
    lines = []
    order = ("type", "runId", "agentId", "responseId", "payload")  # (the models' order, as ``run --json`` writes)
    for _, data in shared_stream(seed, 600, odds=Odds(numbered=0.0, event_id=0.0)):
        ordered = {key: data[key] for key in order if key in data} | data
        lines.append(json.dumps(ordered, separators=(",", ":")) if rng.random() < 0.9 else json.dumps(data))
    bulk_notes, one_notes = replay_module._Diagnostics(), replay_module._Diagnostics()
    bulk_items = [item for start in range(0, len(lines), 97)
                  for item in replay_module._decode_lines(lines[start:start + 97], start, bulk_notes)]
    one_items = [item for number, line in enumerate(lines) for item in replay_module._decode_batch([line], number, one_notes)]
    runs = [data for _, data in bulk_items if type(data).__name__ == "DeltaRun"]
    assert any(run.response_id is None for run in runs) and any(run.response_id is not None for run in runs)
    assert bulk_notes.shown == one_notes.shown

    def folded(items: list[tuple[int | None, Any]]) -> tuple[Any, list[str]]:
        conversation = Conversation()
        replay_module._Fold(conversation).feed(items)
        notes = list(conversation.diagnostics)
        for message in conversation.messages:
            if message.reducer is not None:
                notes.extend(message.reducer.diagnostics)
        return [{k: v for k, v in m.to_message().to_wire().items() if k != "createdAt"}
                for m in conversation.messages], notes

    assert folded(bulk_items) == folded(one_items)
