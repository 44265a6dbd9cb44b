"""The one way into the reducer takes a run of deltas read together as one item (``protocol.ingest.join``,
``Client.batches``) and ``Conversation.fold`` folds it: the conversation is the one its events
folded one by one build, diagnostics included, on random streams full of what could tell them apart
(agents unknown or spawned later, responses, status, ids going backwards, control characters cut
between deltas, malformed deltas), in random pieces; and every event is counted. (This is the
equivalence test of the ingest: one path, batched or not.)"""

from __future__ import annotations

import asyncio
import random

import pytest

from instance_ai_tui.protocol.ingest import DeltaRun, Item, join
from tests.support.streams import client_items, fold, random_stream, sse_client, take


def in_pieces(items: list[Item], rng: random.Random) -> list[Item]:
    out: list[Item] = []
    start = 0
    while start < len(items):
        size = rng.choice([1, 2, 5, 37, 200])
        out.extend(join(items[start:start + size]))
        start += size
    return out


@pytest.mark.parametrize("seed", range(40))
def test_joined_runs_fold_into_the_same_conversation(seed: int) -> None:
    items = client_items(random_stream(seed))
    joined = in_pieces(client_items(random_stream(seed)), random.Random(seed))  # (joined in place: fresh items)
    assert sum(item.count for item in joined) == len(items)
    assert fold(joined) == fold(items)


def test_a_piece_of_deltas_joins_at_all() -> None:
    """(The equivalence above would hold trivially if nothing were ever joined.)"""
    stream = [(1, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    stream += [(i + 2, {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": f"{i} "}})
               for i in range(50)]
    stream.append((52, {"type": "reasoning-delta", "runId": "r", "agentId": "o", "payload": {"text": "hm"}}))
    joined = join(client_items(stream))
    assert [item.count for item in joined] == [1, 50, 1]
    run = joined[1]
    assert type(run) is DeltaRun and run.id == 51 and run.joined() == "".join(f"{i} " for i in range(50))
    assert run.ids == list(range(2, 52))
    assert fold(joined)[0][-1]["content"] == "".join(f"{i} " for i in range(50))


def test_ids_going_back_or_missing_break_a_run() -> None:
    delta = {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": "x"}}
    items = client_items([(5, delta), (6, delta), (6, delta), (7, delta), (None, delta), (None, delta)])
    assert [item.count for item in join(items)] == [2, 2, 2]


@pytest.mark.parametrize("seed", range(6))
async def test_the_remote_client_joins_what_one_piece_holds(seed: int) -> None:
    """Over SSE bytes: ``batches`` yields fewer items that count every event and fold into the
    conversation ``events`` folds into; ``events`` itself gives each event's model (``run --json``
    prints each)."""
    stream = [(index + 1, data) for index, (_, data) in enumerate(random_stream(seed, 600))]  # as our server numbers them
    expected = client_items(stream)
    client = sse_client(stream, chunk=4096)
    plain = await asyncio.wait_for(take(client.events("t"), len(expected)), 30)
    batches = await asyncio.wait_for(take(client.batches("t"), len(expected)), 30)
    await client.close()
    joined = [item for batch in batches for item in batch.items]
    assert all(type(item) is not DeltaRun for item in plain) and len(plain) == len(expected)
    assert sum(item.count for item in joined) == len(expected)
    assert len(joined) < len(expected) // 2
    assert fold(joined) == fold(plain)
