"""Random event streams for the tests that fold one stream two ways (one by one, and joined or
read in bulk) and compare the conversations: what a client yields for them, the fold of the app's
ingest, and our server's SSE bytes of them."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from instance_ai_tui.bus.base import to_new_event
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import EventParseError, parse_event
from instance_ai_tui.protocol.ingest import Batch, Item, decode

RUNS = ("r1", "r2")
TEXTS = ("hello ", "wor", "ld\n", "\x1b", "[31m", "\u202e!", "✓ ", "", "a\tb")


@dataclass(frozen=True)
class Odds:
    """How often ``random_stream`` makes each kind of event (the rest are runs of deltas)."""

    run_start: float = 0.04
    spawn: float = 0.02
    status: float = 0.02
    #: a text delta of a wrong shape (text not a string, a ``ts`` of any kind)
    broken_delta: float = 0.02
    tool_call: float = 0.01
    #: deltas of one agent in a row, at most (a model streams them so)
    longest_run: int = 12
    #: how often a run of deltas carries ids (else none, as n8n's deltas)
    numbered: float = 0.85
    #: how often another event carries an id (some go backwards)
    event_id: float = 0.8
    #: how often a delta carries a ``userId``, and which (7: of a wrong type)
    user_id: float = 0.05
    user_ids: tuple[Any, ...] = ("u",)


def random_stream(seed: int, count: int = 400, texts: tuple[str, ...] = TEXTS,
                  odds: Odds = Odds()) -> list[tuple[int | None, dict[str, Any]]]:
    """Runs started late, a sub-agent spawned late, deltas of unknown agents, of both kinds and
    responses, statuses, malformed deltas, a tool call; ids mostly going up, some back, some absent."""
    rng = random.Random(seed)
    items: list[tuple[int | None, dict[str, Any]]] = []
    next_id = 1
    started = 0
    spawn = odds.run_start + odds.spawn
    status = spawn + odds.status
    broken = status + odds.broken_delta
    tool = broken + odds.tool_call
    for _ in range(count):
        roll = rng.random()
        run = rng.choice(RUNS)
        agent = rng.choice([f"orchestrator-{run}", "child", "nobody"])
        if roll < odds.run_start or not started:
            run = RUNS[started % 2]
            started += 1
            event: dict[str, Any] = {"type": "run-start", "runId": run, "agentId": f"orchestrator-{run}",
                                     "payload": {"messageId": f"m-{run}", "messageGroupId": f"g-{run}"}}
        elif roll < spawn:
            event = {"type": "agent-spawned", "runId": run, "agentId": "child",
                     "payload": {"parentId": f"orchestrator-{run}", "role": "helper", "tools": []}}
        elif roll < status:
            event = {"type": "status", "runId": run, "agentId": agent, "payload": {"message": rng.choice(texts)}}
        elif roll < broken:
            event = {"type": "text-delta", "runId": run, "agentId": agent,
                     "payload": {"text": rng.choice([5, None, "x"])}, "ts": rng.choice([1, "late", None])}
        elif roll < tool:
            event = {"type": "tool-call", "runId": run, "agentId": agent,
                     "payload": {"toolCallId": f"c{next_id}", "toolName": "list", "args": {}}}
        else:  # runs of deltas of one agent, as a model streams them
            kind = rng.choice(["text-delta", "text-delta", "reasoning-delta"])
            rid = rng.choice([None, "a", "b"])
            numbered = rng.random() < odds.numbered
            for _ in range(rng.randint(1, odds.longest_run)):
                event = {"type": kind, "runId": run, "agentId": agent, "payload": {"text": rng.choice(texts)}}
                if rid is not None:
                    event["responseId"] = rid
                if rng.random() < odds.user_id:
                    user_ids = odds.user_ids
                    event["userId"] = user_ids[0] if len(user_ids) == 1 else rng.choice(user_ids)
                items.append((next_id if numbered else None, event))
                next_id += numbered
            continue
        event_id: int | None = None
        if rng.random() < odds.event_id:
            event_id = next_id if rng.random() < 0.9 else max(1, next_id - rng.randint(1, 5))  # some go backwards
            next_id += 1
        items.append((event_id, event))
    return items


def client_items(stream: list[tuple[int | None, dict[str, Any]]]) -> list[Item]:
    """What a client reads for ``stream``, event by event: each decoded to its typed item
    (``protocol.ingest.decode``: a plain delta as a ``DeltaRun`` of one; a malformed one skipped,
    as the client skips it with a diagnostic)."""
    items: list[Item] = []
    for event_id, data in stream:
        try:
            items.append(decode(event_id, data))
        except EventParseError:
            continue
    return items


def fold(items: list[Any]) -> tuple[Any, list[str]]:
    """The app's ingest (``tui.projection``): ``Conversation.fold`` of the items (or of each
    batch's items), in order."""
    conversation = Conversation()
    for item in items:
        conversation.fold(item.items if isinstance(item, Batch) else [item])
    notes = list(conversation.diagnostics)
    for message in conversation.messages:
        if message.reducer is not None:
            notes.extend(message.reducer.diagnostics)
    messages = [message.to_message().to_wire() for message in conversation.messages]
    for message in messages:
        message.pop("createdAt", None)  # the clock when the message was made
    return messages, notes


def wire_json(data: dict[str, Any]) -> str:
    """The event's JSON as our server writes it (the bus's one serialisation), or, for one that
    does not parse, as a hostile or broken server might (``json.dumps``)."""
    try:
        return to_new_event(parse_event(data)).json
    except (EventParseError, ValueError):  # (pydantic cannot write a lone surrogate: json escapes it)
        return json.dumps(data, separators=(",", ":"))


def sse_body(stream: list[tuple[int | None, dict[str, Any]]], *, server_form: bool = False) -> bytes:
    """The SSE frames of ``stream``: ``json.dumps`` of each, or with ``server_form`` our server's JSON."""
    dump = wire_json if server_form else (lambda data: json.dumps(data, separators=(",", ":")))
    return b"".join(
        (f"id: {event_id}\n" if event_id is not None else "").encode() + f"data: {dump(data)}\n\n".encode()
        for event_id, data in stream
    )


def sse_client(stream: list[tuple[int | None, dict[str, Any]]], chunk: int, *, body: bytes | None = None) -> RemoteClient:
    if body is None:
        body = sse_body(stream)

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


async def take(stream: AsyncIterator[Any], events: int) -> list[Any]:
    """Items (or batches) of ``stream`` until they stand for ``events`` events."""
    items: list[Any] = []
    seen = 0
    async for item in stream:
        items.append(item)
        seen += item.count
        if seen >= events:
            break
    await stream.aclose()  # type: ignore[attr-defined]
    return items


