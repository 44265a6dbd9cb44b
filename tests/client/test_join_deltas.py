"""The app's ingest takes a run of deltas received in one piece as one item (``client.base.join_deltas``,
``Client.fold_events``) and folds it with ``Conversation.apply_wire_run``: the conversation is the one
its events folded one by one build, diagnostics included, on random streams full of what could tell
them apart (agents unknown or spawned later, responses, status, ids going backwards, control
characters cut between deltas, malformed deltas), in random pieces; and every event is counted."""

from __future__ import annotations

import asyncio
import random

import pytest

from instance_ai_tui.client.base import StreamItem, join_deltas
from tests.support.streams import client_items, fold, random_stream, sse_client, take


def in_pieces(items: list[StreamItem], rng: random.Random) -> list[StreamItem]:
    out: list[StreamItem] = []
    start = 0
    while start < len(items):
        size = rng.choice([1, 2, 5, 37, 200])
        out.extend(join_deltas(items[start:start + size]))
        start += size
    return out


@pytest.mark.parametrize("seed", range(40))
def test_joined_runs_fold_into_the_same_conversation(seed: int) -> None:
    items = client_items(random_stream(seed))
    joined = in_pieces(items, random.Random(seed))
    assert sum(item.count for item in joined) == len(items)
    assert fold(joined) == fold(items)


def test_a_piece_of_deltas_joins_at_all() -> None:
    """(The equivalence above would hold trivially if nothing were ever joined.)"""
    stream = [(1, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    stream += [(i + 2, {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": f"{i} "}})
               for i in range(50)]
    stream.append((52, {"type": "reasoning-delta", "runId": "r", "agentId": "o", "payload": {"text": "hm"}}))
    joined = join_deltas(client_items(stream))
    assert [item.count for item in joined] == [1, 50, 1]
    run = joined[1]
    assert run.id == 51 and run.wire is not None and run.wire["payload"]["text"] == "".join(f"{i} " for i in range(50))
    assert run.parts is not None and [part_id for part_id, _ in run.parts] == list(range(2, 52))
    assert fold(joined)[0][-1]["content"] == "".join(f"{i} " for i in range(50))


def test_ids_going_back_or_missing_break_a_run() -> None:
    delta = {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": "x"}}
    items = client_items([(5, delta), (6, delta), (6, delta), (7, delta), (None, delta), (None, delta)])
    assert [item.count for item in join_deltas(items)] == [2, 2, 2]


@pytest.mark.parametrize("seed", range(6))
async def test_the_remote_client_joins_what_one_piece_holds(seed: int) -> None:
    """Over SSE bytes: ``fold_events`` yields fewer items that count every event and fold into the
    conversation ``events`` folds into; ``events`` itself never joins (``run --json`` prints each)."""
    stream = [(index + 1, data) for index, (_, data) in enumerate(random_stream(seed, 600))]  # as our server numbers them
    expected = client_items(stream)
    client = sse_client(stream, chunk=4096)
    plain = await asyncio.wait_for(take(client.events("t"), len(expected)), 30)
    joined = await asyncio.wait_for(take(client.fold_events("t"), len(expected)), 30)
    await client.close()
    assert all(item.count == 1 and item.parts is None for item in plain) and len(plain) == len(expected)
    assert sum(item.count for item in joined) == len(expected)
    assert len(joined) < len(expected) // 2
    assert fold(joined) == fold(plain)
