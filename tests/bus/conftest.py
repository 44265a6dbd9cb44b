"""Fixtures of the in-process bus tests: a real SQLite store in tmp_path under the bus."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.events import Event, parse_event
from instance_ai_tui.store.base import StoredEvent
from instance_ai_tui.store.sqlite import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "bus.sqlite3") as s:
        yield s


@pytest.fixture
async def bus(store: SqliteStore) -> AsyncIterator[InProcessBus]:
    b = InProcessBus(store, queue_size=256)
    yield b
    await b.close()


def event(n: int, type_: str = "text-delta") -> Event:
    """A typed event (the bus takes nothing else) numbered ``n`` in its payload."""
    return parse_event({"type": type_, "runId": "r1", "agentId": "a1", "payload": {"text": f"t{n}", "n": n}})


async def collect(stream: AsyncIterator[StoredEvent], upto: int) -> list[int]:
    """Ids from ``stream`` until id ``upto`` was seen; closes the stream."""
    ids: list[int] = []
    try:
        async for item in stream:
            ids.append(item.id)
            if item.id >= upto:
                break
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return ids
