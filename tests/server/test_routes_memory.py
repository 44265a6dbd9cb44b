"""What made the server grow per run after run 1,000 (issue 31 item 5; ``benchmarks/server_soak.py``).

- the SSE frame cache kept 4,096 whole frames whatever their size (it filled over the first
  ~1,500 runs): now bounded in bytes too, and a frame too big for it is not kept;
- the SQLite writer kept the last event id of every thread ever written: now of the 256 most
  recent, and a thread that left the cache continues its ids where they were.
"""

from __future__ import annotations

import json
from pathlib import Path

from instance_ai_tui.server.sse import StreamHub, encode_frame
from instance_ai_tui.store import sqlite as sqlite_store
from instance_ai_tui.store.base import NewEvent, StoredEvent
from instance_ai_tui.store.sqlite import SqliteStore


def _event(thread: str, event_id: int, text: str) -> StoredEvent:
    return StoredEvent(thread, event_id, "text-delta", "r", json.dumps({"type": "text-delta", "payload": {"text": text}}))


def test_the_frame_cache_is_bounded_in_bytes_and_keeps_no_huge_frame() -> None:
    hub = StreamHub(frame_cache_size=10_000, frame_cache_bytes=64 * 1024)
    for n in range(2_000):
        event = _event(f"t{n}", 1, "x" * 1000)
        assert hub.frame(event) == encode_frame(1, event.json)
    assert hub._cached_bytes <= 64 * 1024
    assert sum(len(f) + len(k[2]) for k, f in hub._frames.items()) == hub._cached_bytes
    assert 20 <= len(hub._frames) <= 40  # about 2 KB a frame with its key
    huge = _event("big", 1, "y" * 100_000)
    frame = hub.frame(huge)
    assert frame == encode_frame(1, huge.json) and ("big", 1, huge.json) not in hub._frames
    recent = _event("t1999", 1, "x" * 1000)
    assert hub.frame(recent) is hub.frame(recent)  # shared while cached


async def test_the_writer_keeps_the_last_ids_of_recent_threads_only(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    await store.open()
    try:
        limit = sqlite_store._LAST_IDS
        for n in range(limit + 300):
            await store.append_events(f"thread-{n}", [NewEvent("status", "r", '{"type":"status"}')])
        assert len(store._last_id) == limit
        # an old thread (out of the cache) goes on from its last id, not from 1
        again = await store.append_events("thread-0", [NewEvent("status", "r", '{"type":"status"}')] * 2)
        assert [e.id for e in again] == [2, 3]
        assert len(store._last_id) == limit and "thread-0" in store._last_id
    finally:
        await store.close()
