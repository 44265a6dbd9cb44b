"""The app's ingest takes a run of deltas received in one piece as one item (``client.base.join_deltas``,
``Client.fold_events``) and folds it with ``Conversation.apply_wire_run``: the conversation is the one
its events folded one by one build, diagnostics included, on random streams full of what could tell
them apart (agents unknown or spawned later, responses, status, ids going backwards, control
characters cut between deltas, malformed deltas), in random pieces; and every event is counted."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from instance_ai_tui.client.base import StreamItem, join_deltas, wire_item
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import EventParseError, parse_event

RUNS = ("r1", "r2")
TEXTS = ("hello ", "wor", "ld\n", "\x1b", "[31m", "\u202e!", "✓ ", "", "a\tb")


def random_stream(seed: int, count: int = 400) -> list[tuple[int | None, dict[str, Any]]]:
    """Runs started late, a sub-agent spawned late, deltas of unknown agents, of both kinds and
    responses, statuses, malformed deltas, a tool call; ids mostly going up, some back, some absent."""
    rng = random.Random(seed)
    items: list[tuple[int | None, dict[str, Any]]] = []
    next_id = 1
    started = 0
    for _ in range(count):
        roll = rng.random()
        run = rng.choice(RUNS)
        agent = rng.choice([f"orchestrator-{run}", "child", "nobody"])
        if roll < 0.04 or not started:
            run = RUNS[started % 2]
            started += 1
            event: dict[str, Any] = {"type": "run-start", "runId": run, "agentId": f"orchestrator-{run}",
                                     "payload": {"messageId": f"m-{run}", "messageGroupId": f"g-{run}"}}
        elif roll < 0.06:
            event = {"type": "agent-spawned", "runId": run, "agentId": "child",
                     "payload": {"parentId": f"orchestrator-{run}", "role": "helper", "tools": []}}
        elif roll < 0.08:
            event = {"type": "status", "runId": run, "agentId": agent, "payload": {"message": rng.choice(TEXTS)}}
        elif roll < 0.1:
            event = {"type": "text-delta", "runId": run, "agentId": agent,
                     "payload": {"text": rng.choice([5, None, "x"])}, "ts": rng.choice([1, "late", None])}
        elif roll < 0.11:
            event = {"type": "tool-call", "runId": run, "agentId": agent,
                     "payload": {"toolCallId": f"c{next_id}", "toolName": "list", "args": {}}}
        else:  # runs of deltas of one agent, as a model streams them
            kind = rng.choice(["text-delta", "text-delta", "reasoning-delta"])
            rid = rng.choice([None, "a", "b"])
            numbered = rng.random() < 0.85
            for _ in range(rng.randint(1, 12)):
                event = {"type": kind, "runId": run, "agentId": agent, "payload": {"text": rng.choice(TEXTS)}}
                if rid is not None:
                    event["responseId"] = rid
                if rng.random() < 0.05:
                    event["userId"] = "u"
                items.append((next_id if numbered else None, event))
                next_id += numbered
            continue
        event_id: int | None = None
        if rng.random() < 0.8:
            event_id = next_id if rng.random() < 0.9 else max(1, next_id - rng.randint(1, 5))  # some go backwards
            next_id += 1
        items.append((event_id, event))
    return items


def client_items(stream: list[tuple[int | None, dict[str, Any]]]) -> list[StreamItem]:
    """What a client yields for ``stream``: hot events as decoded JSON, the rest parsed (a malformed
    one skipped, as the client skips it with a diagnostic)."""
    items: list[StreamItem] = []
    for event_id, data in stream:
        item = wire_item(event_id, data)
        if item is None:
            try:
                item = StreamItem(event_id, parse_event(data))
            except EventParseError:
                continue
        items.append(item)
    return items


def fold(items: list[StreamItem]) -> tuple[Any, list[str]]:
    """The app's ingest (``tui.projection``): joined runs by ``apply_wire_run``, hot JSON by
    ``apply_wire``, the rest by ``apply``."""
    conversation = Conversation()
    for item in items:
        if item.wire is not None and not item.parsed:
            if item.parts is None:
                conversation.apply_wire(item.id, item.wire)
            else:
                conversation.apply_wire_run(item.parts)
        elif item.event is not None:
            conversation.apply(item.id, item.event)
    notes = list(conversation.diagnostics)
    for message in conversation.messages:
        if message.reducer is not None:
            notes.extend(message.reducer.diagnostics)
    messages = [message.to_message().to_wire() for message in conversation.messages]
    for message in messages:
        message.pop("createdAt", None)  # the clock when the message was made
    return messages, notes


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


def sse_client(stream: list[tuple[int | None, dict[str, Any]]], chunk: int) -> RemoteClient:
    body = b"".join(
        (f"id: {event_id}\n" if event_id is not None else "").encode()
        + f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
        for event_id, data in stream
    )

    async def content(after: int) -> AsyncIterator[bytes]:
        if after:  # the reader came back after the end: a live stream with nothing more
            await asyncio.Event().wait()
        for start in range(0, len(body), chunk):
            yield body[start:start + chunk]
            await asyncio.sleep(0)

    def handler(request: httpx.Request) -> httpx.Response:
        after = int(request.headers.get("last-event-id") or 0)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content(after))

    return RemoteClient("http://127.0.0.1:9", http=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


async def take(stream: AsyncIterator[StreamItem], events: int) -> list[StreamItem]:
    items: list[StreamItem] = []
    seen = 0
    async for item in stream:
        items.append(item)
        seen += item.count
        if seen >= events:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    return items


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
