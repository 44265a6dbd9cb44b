"""The writer's requests of ``SqliteStore`` (``store/sqlite.py``): what callers queue for the one
writer task, its counters, and the one trip to the connection's thread a batch takes."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import aiosqlite

from .base import NewEvent, StoredEvent

T = TypeVar("T")


@dataclass
class WriteStats:
    """Counters of the writer (for tests and benchmarks)."""

    transactions: int = 0  # committed write transactions
    requests: int = 0  # write requests committed (one append_events call is one request)
    events: int = 0  # events appended
    retried_batches: int = 0  # failed batches that were retried request by request


@dataclass(slots=True)
class _Append:
    thread_id: str
    events: Sequence[NewEvent]
    future: asyncio.Future[list[StoredEvent]]

    @property
    def weight(self) -> int:
        return len(self.events)


@dataclass(slots=True)
class _Write:
    """Any other write: ``fn`` runs on the writer thread inside the batch's transaction."""

    fn: Callable[[sqlite3.Connection], Any]
    future: asyncio.Future[Any]
    weight: int = 1


_Request = _Append | _Write


async def _on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn(sqlite3 connection)`` on the aiosqlite connection's own thread, in one trip.

    aiosqlite runs every call of a connection on that connection's thread; ``_execute`` is the
    hook it uses to queue a callable there. Running a whole transaction in one trip instead of
    one trip per statement halves the latency of a commit. It is not public aiosqlite API, so
    ``tests/store`` pins it.
    """
    result: T = await conn._execute(lambda: fn(conn._conn))
    return result
