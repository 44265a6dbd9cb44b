"""Fixtures of the SQLite store tests: a real database file in the test's tmp_path."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.store.base import NewEvent
from instance_ai_tui.store.sqlite import SqliteStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "store.sqlite3"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(db_path) as s:
        yield s


def delta(text: str, run_id: str = "r1") -> NewEvent:
    return new_event({"type": "text-delta", "runId": run_id, "agentId": "a1", "payload": {"text": text}})


def new_event(data: dict[str, Any]) -> NewEvent:
    """A log record of ``data`` as the bus writes one (type, run id, compact JSON)."""
    return NewEvent(data["type"], data.get("runId", ""), json.dumps(data, separators=(",", ":"), ensure_ascii=False))


async def raw_sql(path: Path, fn: Callable[[sqlite3.Connection], Any]) -> Any:
    """Run ``fn`` on a separate plain sqlite3 connection (another writer), off the loop."""

    def run() -> Any:
        db = sqlite3.connect(path, isolation_level=None, timeout=5)
        try:
            return fn(db)
        finally:
            db.close()

    return await asyncio.to_thread(run)
