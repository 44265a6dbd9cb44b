"""The embedded client reads a thread's log a page at a time (``InProcessBus.subscribe_batches`` over
``SqliteStore.iter_event_pages``) and reads a run of our deltas in a page in bulk
(``protocol.delta_runs.line_runs``): over a real SQLite log of random streams (our own JSON, and JSON
in forms our log never holds), the conversation its ``batches`` build is the one ``events`` builds
one by one, diagnostics included; live events go on arriving after the log."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.protocol.delta_runs import DeltaRun, line_runs
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.store.base import NewEvent, StoredEvent
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.streams import client_items, fold, random_stream, take, wire_json

TEXTS = ('say "hi"', "back\\slash", "line\n", "\x1b[2J", "é ✓ ", "", "\ud83d", "\ude00", "a\tb", "😀")


class BusService:
    """What ``EmbeddedClient`` reads of the assistant service: the service's ``events`` and
    ``event_batches`` are these two calls on its bus."""

    def __init__(self, bus: InProcessBus) -> None:
        self.bus = bus

    async def get_thread(self, thread_id: str) -> None:
        return None

    def events(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        return self.bus.subscribe(thread_id, after)

    def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        return self.bus.subscribe_batches(thread_id, after)


def log_line(data: dict[str, Any], rng: random.Random) -> str:
    if rng.random() < 0.15:  # our key order with every non-ASCII character escaped: not our log's form
        order = ("type", "runId", "agentId", "responseId", "payload")
        ordered = {key: data[key] for key in order if key in data} | data
        return json.dumps(ordered, separators=(",", ":"), ensure_ascii=True)
    return wire_json(data)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "log.sqlite3") as opened:
        yield opened


async def write_log(store: SqliteStore, stream: list[tuple[int | None, dict[str, Any]]], rng: random.Random) -> None:
    await store.create_thread("t")
    rows = [NewEvent(str(data.get("type", "")), str(data.get("runId", "")), log_line(data, rng)) for _, data in stream]
    for start in range(0, len(rows), 97):  # (several appends: the log's pages do not follow them)
        await store.append_events("t", rows[start:start + 97])


@pytest.mark.parametrize("seed", range(8))
async def test_a_log_read_in_pages_folds_like_one_by_one(store: SqliteStore, seed: int) -> None:
    rng = random.Random(seed)
    stream = [(index + 1, data) for index, (_, data) in enumerate(random_stream(seed, 1500, TEXTS))]
    await write_log(store, stream, rng)
    events = len(client_items(stream))  # (a malformed one is skipped)
    bus = InProcessBus(store)
    plain_client, bulk_client = EmbeddedClient(BusService(bus)), EmbeddedClient(BusService(bus))  # type: ignore[arg-type]
    plain = await asyncio.wait_for(take(plain_client.events("t"), events), 30)
    batches = await asyncio.wait_for(take(bulk_client.batches("t"), events), 30)
    bulk = [item for batch in batches for item in batch.items]
    assert all(type(item) is not DeltaRun for item in plain) and len(plain) == events
    assert sum(item.count for item in bulk) == events
    assert any(type(item) is DeltaRun and item.bodies is not None for item in bulk)  # (else the equality proves nothing)
    assert fold(bulk) == fold(plain)
    assert bulk_client.diagnostics == plain_client.diagnostics
    await bus.close()


async def test_live_events_follow_the_log(store: SqliteStore) -> None:
    """After the pages of the log, what is published goes on arriving (the bus's live batches)."""
    stream = [(1, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    stream += [(i, {"type": "text-delta", "runId": "r", "agentId": "o", "responseId": "x", "payload": {"text": f"{i} "}})
               for i in range(2, 2500)]
    await write_log(store, stream, random.Random(1))
    bus = InProcessBus(store)
    client = EmbeddedClient(BusService(bus))  # type: ignore[arg-type]
    items = client.batches("t")
    seen = 0
    async for batch in items:
        seen += batch.count
        if seen == len(stream):
            break
    live = [parse_event({"type": "text-delta", "runId": "r", "agentId": "o", "responseId": "x",
                         "payload": {"text": f"live {i}"}}) for i in range(3)]
    await bus.publish_many("t", live)
    got = []
    while len(got) < 3:
        got.extend((await asyncio.wait_for(anext(items), 10)).items)
    assert [item.event.payload.text for item in got] == ["live 0", "live 1", "live 2"]  # type: ignore[union-attr]
    assert [item.id for item in got] == [2500, 2501, 2502]
    await items.aclose()  # type: ignore[attr-defined]
    await bus.close()


async def test_pages_and_events_are_the_same_events(store: SqliteStore) -> None:
    """``subscribe_batches`` is ``subscribe`` in lists: catching up in pages, then live, with a
    subscriber that falls behind (a small live buffer) levelled up from the log."""
    await store.create_thread("t")
    bus = InProcessBus(store, queue_size=8)
    delta = {"type": "text-delta", "runId": "r", "agentId": "o", "payload": {"text": "x"}}
    await bus.publish_many("t", [parse_event(delta) for _ in range(2100)])
    batches = bus.subscribe_batches("t", after=5)
    ids: list[int] = []
    sizes: list[int] = []
    async for batch in batches:
        ids.extend(event.id for event in batch)
        sizes.append(len(batch))
        if ids[-1] == 2100:
            break
    for _ in range(5):  # live, faster than read: the buffer of 8 overflows and the log levels up
        await bus.publish_many("t", [parse_event(delta) for _ in range(20)])
    while ids[-1] < 2200:
        batch = await asyncio.wait_for(anext(batches), 10)
        assert batch
        ids.extend(event.id for event in batch)
    assert ids == list(range(6, 2201))
    assert max(sizes) == 1000  # (pages of the log, not events one by one)
    await batches.aclose()  # type: ignore[attr-defined]
    await bus.close()


def test_line_runs_need_our_form_and_whole_lines() -> None:
    def line(text: str, agent: str = "o") -> str:
        return json.dumps({"type": "text-delta", "runId": "r", "agentId": agent, "responseId": "x",
                           "payload": {"text": text}}, separators=(",", ":"), ensure_ascii=False)

    lines = [line("a"), line("b\n"), line("c", "p"), line("d", "p"), line("e", "p"), '{"type":"text-delta"}', line("f")]
    runs = line_runs([1, 2, 3, 4, 5, 6, 7], lines)
    assert [(start, end, run.ids) for start, end, run in runs] == [(0, 2, [1, 2]), (2, 5, [3, 4, 5])]
    assert runs[0][2].joined() == "ab\n" and (runs[1][2].id, runs[1][2].rest()) == (5, "de")
    assert line_runs([1, 2], [line("a"), line("b") + "\n" + line("c")]) == []  # a line break inside a row
