"""``SqliteStore``: the ``Store`` protocol on one local SQLite file (aiosqlite, WAL).

Two aiosqlite connections, each with its own thread, keep SQLite off the event loop:

- the **writer** is driven by one task that owns every write. Callers queue a request and await
  a future; the task takes everything queued (up to ``batch_max_events``), runs it as ONE
  transaction in one trip to the connection's thread, then resolves each caller's future
  (group commit). So a burst of text deltas, or many concurrent ``append_events`` calls, share
  a commit. Event ids are assigned inside that transaction from a per-thread counter, so they
  are gap-free and monotonic under any concurrency. If a batch fails it is rolled back and its
  requests are retried one by one, so one failing request fails alone and ids never skip
  (the counters are reloaded from the database).
- the **reader** serves every query. With WAL it sees committed data only and never waits for
  the writer. ``iter_events`` pages by id (keyset), so a replay never holds the whole log.

Appending events, upserting messages or saving a snapshot for a thread that has no row yet
creates the thread row (empty title), so the foreign keys (events, messages and snapshots ->
threads, ON DELETE CASCADE) always hold. ``delete_thread`` removes everything of the thread:
events, messages, snapshots, checkpoints, runs, and settings whose scope is the thread id or
ends with ``:<thread id>`` (``thread:<id>``, ``embeddings:<id>``).
A thread's ``updated_at`` moves when it is created or updated and when messages are upserted
(not on every event).

The file is created 0600 (its parent directory 0700 if missing) in the platform data
directory unless a path is given. One process should own a database file at a time; if another
writer appends to the same thread anyway, the id collision is detected and the append retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ..config import default_db_path
from .base import (
    CheckpointRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    StoredEvent,
    ThreadNotFound,
    ThreadRecord,
)
from .coalesce import plan_coalesce
from .errors import StorageWrongSchema, StoreClosed, StoreError, sqlite_error, write_failure
from .sqlite_codec import (
    CHECKPOINT_COLUMNS,
    MESSAGE_COLUMNS,
    RUN_COLUMNS,
    THREAD_COLUMNS,
    Clock,
    checkpoint_record,
    dumps,
    message_record,
    run_record,
    thread_record,
    to_text,
    to_text_or_none,
)
from .sqlite_requests import WriteStats, _Append, _on_thread, _Request, _Write
from .sqlite_schema import SchemaError, prepare_file, setup_writer
from .wal import LostWal, copy_if_settled, lost_wal

T = TypeVar("T")
log = logging.getLogger(__name__)

_INSERT_EVENT = "INSERT INTO events (thread_id, id, type, run_id, json) VALUES (?, ?, ?, ?, ?)"
_SELECT_EVENTS = "SELECT id, type, run_id, json FROM events WHERE thread_id = ? AND id > ? ORDER BY id LIMIT ?"
_ENSURE_THREAD = (
    "INSERT INTO threads (id, title, metadata, created_at, updated_at) VALUES (?, '', '{}', ?, ?) "
    "ON CONFLICT(id) DO NOTHING"
)
_TOUCH_THREAD = (
    "INSERT INTO threads (id, title, metadata, created_at, updated_at) VALUES (?, '', '{}', ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at"
)


#: threads whose last event id the writer keeps (the others read it with one indexed query)
_LAST_IDS = 256


def fts_query(search: str) -> str:
    """An FTS5 query from what a user typed: every word must occur, each as a word prefix.
    Words are quoted, so no character of the input can be read as FTS5 syntax."""
    words = [w for w in re.findall(r"\w+", search)]
    return " ".join('"' + w.replace('"', '""') + '"*' for w in words)


def _check_thread_id(thread_id: str) -> None:
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError(f"thread id must be a non-empty string, got {thread_id!r}")


def _casefold(value: str | None) -> str | None:
    return None if value is None else value.casefold()


def _ignore_result(future: asyncio.Future[Any]) -> None:
    """A read nobody waits for any more: its failure is not "never retrieved"."""
    if not future.cancelled():
        future.exception()


class SqliteStore:
    """The app's storage in one SQLite file. ``await open()`` before use, ``await close()``
    after (or ``async with``).

    ``path``: the database file (default: ``config.default_db_path()``).
    ``batch_max_events``: at most this many events (other writes count one) share one
    transaction when requests pile up; a single ``append_events`` call is never split.
    ``busy_timeout``: seconds to wait for a lock held by another process.
    ``checkpoint_interval``: seconds between WAL checkpoints while there are writes. They run
    on a third connection, off the writer's path (an automatic checkpoint inside a commit would
    stall it for milliseconds).
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        batch_max_events: int = 10_000,
        busy_timeout: float = 5.0,
        checkpoint_interval: float = 0.5,
    ) -> None:
        self.path: Path = Path(path).expanduser() if path is not None else default_db_path()
        self.stats = WriteStats()
        self._batch_max = max(1, batch_max_events)
        self._busy_timeout = busy_timeout
        self._checkpoint_interval = checkpoint_interval
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._checkpointer: aiosqlite.Connection | None = None
        self._writer_task: asyncio.Task[None] | None = None
        self._checkpoint_task: asyncio.Task[None] | None = None
        self._queue: deque[_Request] = deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._closing = False
        # Owned by the writer thread (only touched inside batch transactions): the last event id
        # of the threads written to lately, oldest first (at most ``_LAST_IDS`` of them: one entry
        # per thread ever written grew the server by ~100 bytes per new thread)
        self._last_id: dict[str, int] = {}
        self._clock = Clock()
        #: what the last ``open`` found lost with a deleted WAL (``store.wal``), else None
        self.lost_wal: LostWal | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> SqliteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def is_open(self) -> bool:
        return self._writer_task is not None and not self._closing

    async def open(self) -> None:
        """Create or open the file, apply migrations, start the writer. Idempotent."""
        if self._writer_task is not None:
            return
        try:
            await asyncio.to_thread(prepare_file, self.path)
            self.lost_wal = await asyncio.to_thread(lost_wal, self.path)  # before SQLite rebuilds its index
        except OSError as exc:
            raise sqlite_error(self.path, exc, "create") from None
        if self.lost_wal is not None:
            log.error("%s", self.lost_wal.message)
        writer = reader = checkpointer = None
        try:
            writer = await self._connect()
            await _on_thread(writer, setup_writer)
            reader = await self._connect()
            await reader.execute("PRAGMA query_only=ON")
            await reader.create_function("casefold", 1, _casefold, deterministic=True)
            checkpointer = await self._connect()
        except BaseException as exc:
            for conn in (checkpointer, reader, writer):
                if conn is not None:
                    await conn.close()
            if isinstance(exc, SchemaError):
                raise StorageWrongSchema(f"the database {self.path}: {exc} (or open another database with "
                                         "--db PATH)") from None
            if isinstance(exc, StoreError):
                raise
            if isinstance(exc, sqlite3.Error | OSError):
                raise sqlite_error(self.path, exc) from None
            raise
        self._writer, self._reader, self._checkpointer = writer, reader, checkpointer
        self._queue.clear()
        self._last_id.clear()
        self._closing = False
        loop = asyncio.get_running_loop()
        self._writer_task = loop.create_task(self._write_loop(), name="sqlite-store-writer")
        self._checkpoint_task = loop.create_task(self._checkpoint_loop(), name="sqlite-store-checkpoints")

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(str(self.path), timeout=self._busy_timeout, isolation_level=None)
        await conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout * 1000)}")
        return conn

    async def close(self) -> None:
        """Commit everything queued, stop the writer, close the connections. Idempotent."""
        task = self._writer_task
        if task is None:
            return
        self._closing = True
        self._wake_writer()
        try:
            await asyncio.shield(task)
        finally:
            if self._checkpoint_task is not None:
                self._checkpoint_task.cancel()
                await asyncio.gather(self._checkpoint_task, return_exceptions=True)
            if self._writer is not None:
                try:  # fold the WAL into the file, so the file alone is the database
                    await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:
                    log.warning("final checkpoint of %s failed: %s", self.path, exc)
            for conn in (self._checkpointer, self._reader, self._writer):
                if conn is not None:
                    await conn.close()
            self._checkpointer = self._reader = self._writer = None
            self._writer_task = self._checkpoint_task = None
            self._closing = False

    async def _checkpoint_loop(self) -> None:
        assert self._checkpointer is not None
        seen = self.stats.transactions
        while True:
            await asyncio.sleep(self._checkpoint_interval)
            if self.stats.transactions == seen:
                continue
            seen = self.stats.transactions
            try:  # PASSIVE: copies what it can without blocking the writer or readers
                await self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:
                log.warning("checkpoint of %s failed: %s", self.path, exc)

    def _check_open(self) -> None:
        if self._writer_task is None or self._closing:
            raise StoreClosed(f"the store {self.path} is not open (await store.open() first)")

    # -- the writer (group commit) ---------------------------------------------------------

    def _submit(self, request: _Request) -> None:
        self._check_open()
        self._queue.append(request)
        self._wake_writer()

    def _wake_writer(self) -> None:
        waiter = self._wakeup
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._submit(_Write(fn, future))
        return await future

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        queue = self._queue
        batch: list[_Request] = []
        try:
            while True:
                if not queue:
                    if self._closing:
                        return
                    self._wakeup = loop.create_future()
                    await self._wakeup
                    self._wakeup = None
                    continue
                batch = []
                weight = 0
                while queue and weight < self._batch_max:
                    request = queue.popleft()
                    if request.future.done():  # the caller gave up before it ran
                        continue
                    batch.append(request)
                    weight += request.weight
                if batch:
                    await self._commit(batch)
                batch = []
        except BaseException as exc:
            failure = StoreClosed(f"the writer of {self.path} stopped: {exc!r}")
            for request in [*batch, *queue]:
                if not request.future.done():
                    request.future.set_exception(failure)
            queue.clear()
            raise

    async def _commit(self, batch: list[_Request]) -> None:
        assert self._writer is not None
        outcomes = await _on_thread(self._writer, lambda db: self._run_batch(db, batch))
        stats = self.stats
        for request, (ok, result) in zip(batch, outcomes, strict=False):
            if ok:
                stats.requests += 1
                if type(request) is _Append:
                    stats.events += len(request.events)
            if not request.future.done():
                if ok:
                    request.future.set_result(result)
                else:
                    request.future.set_exception(result)

    # Everything below up to "reads" runs on the writer thread.

    def _run_batch(self, db: sqlite3.Connection, batch: list[_Request]) -> list[tuple[bool, Any]]:
        try:
            results = self._transaction(db, batch)
        except Exception as exc:  # noqa: BLE001 - the writer thread hands every failure back to the waiting caller
            if len(batch) == 1:
                return [(False, write_failure(self.path, exc))]
        else:
            copy_if_settled(db, batch, self.path)
            return [(True, result) for result in results]
        self.stats.retried_batches += 1
        outcomes: list[tuple[bool, Any]] = []
        for request in batch:
            try:
                outcomes.append((True, self._transaction(db, [request])[0]))
            except Exception as exc:  # noqa: BLE001 - the writer thread hands every failure back to the waiting caller
                outcomes.append((False, write_failure(self.path, exc)))
        return outcomes

    def _transaction(self, db: sqlite3.Connection, batch: list[_Request]) -> list[Any]:
        db.execute("BEGIN IMMEDIATE")
        try:
            rows: list[tuple[str, int, str, str, str]] = []
            results: list[Any] = []
            for request in batch:
                if isinstance(request, _Append):
                    results.append(self._assign_ids(db, request, rows))
                else:
                    if rows:  # keep the order of writes within the batch
                        db.executemany(_INSERT_EVENT, rows)
                        rows = []
                    results.append(request.fn(db))
            if rows:
                db.executemany(_INSERT_EVENT, rows)
            db.execute("COMMIT")
        except BaseException:
            self._last_id.clear()  # they may hold ids of the rolled-back batch: reload
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self.stats.transactions += 1
        return results

    def _assign_ids(
        self, db: sqlite3.Connection, request: _Append, rows: list[tuple[str, int, str, str, str]]
    ) -> list[StoredEvent]:
        thread_id = request.thread_id
        last = self._last_id.get(thread_id)
        if last is None:
            now = self._clock.stamp()
            db.execute(_ENSURE_THREAD, (thread_id, now, now))
            last = db.execute("SELECT COALESCE(MAX(id), 0) FROM events WHERE thread_id = ?", (thread_id,)).fetchone()[0]
        stored: list[StoredEvent] = []
        for event in request.events:
            last += 1
            rows.append((thread_id, last, event.type, event.run_id, event.json))
            stored.append(StoredEvent(thread_id, last, event.type, event.run_id, event.json, event.event))
        self._last_id.pop(thread_id, None)  # (to the end: the most recent)
        self._last_id[thread_id] = last
        if len(self._last_id) > _LAST_IDS:
            del self._last_id[next(iter(self._last_id))]
        return stored

    # -- reads -----------------------------------------------------------------------------

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self._check_open()
        assert self._reader is not None
        return list(await self._reader.execute_fetchall(sql, params))

    # -- threads ---------------------------------------------------------------------------

    async def create_thread(
        self, thread_id: str, title: str = "", metadata: dict[str, Any] | None = None
    ) -> ThreadRecord:
        """Create the thread. If it exists already (e.g. made by an append), a non-empty
        ``title`` and a given ``metadata`` replace the stored ones."""
        _check_thread_id(thread_id)
        meta = dumps(metadata, "thread metadata") if metadata is not None else None

        def run(db: sqlite3.Connection) -> Any:
            now = self._clock.stamp()
            return db.execute(
                "INSERT INTO threads (id, title, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET "
                "title = CASE WHEN excluded.title <> '' THEN excluded.title ELSE threads.title END, "
                "metadata = CASE WHEN ? THEN excluded.metadata ELSE threads.metadata END, "
                f"updated_at = excluded.updated_at RETURNING {THREAD_COLUMNS}",
                (thread_id, title or "", meta or "{}", now, now, meta is not None),
            ).fetchall()  # fetchall: a RETURNING statement must run to its end before COMMIT

        return thread_record((await self._write(run))[0])

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        rows = await self._read(f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,))
        return thread_record(rows[0]) if rows else None

    async def list_threads(self, search: str | None = None, limit: int | None = None) -> list[ThreadRecord]:
        """Threads, most recently updated first. ``search`` matches the title (a substring,
        ignoring case) or the text of the thread's messages (every word, as a word prefix,
        in one message of the user or the assistant; full-text index ``message_text``)."""
        sql = f"SELECT {THREAD_COLUMNS} FROM threads"
        params: list[Any] = []
        if search:
            sql += " WHERE instr(casefold(title), ?) > 0"
            params.append(search.casefold())
            match = fts_query(search)
            if match:
                sql += " OR id IN (SELECT thread_id FROM message_text WHERE message_text MATCH ?)"
                params.append(match)
        sql += " ORDER BY updated_at DESC, rowid DESC LIMIT ?"
        params.append(-1 if limit is None else max(0, limit))
        return [thread_record(row) for row in await self._read(sql, params)]

    async def update_thread(
        self, thread_id: str, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ThreadRecord:
        """Set the title and/or replace the metadata; raises ``ThreadNotFound``."""
        meta = dumps(metadata, "thread metadata") if metadata is not None else None

        def run(db: sqlite3.Connection) -> Any:
            return db.execute(
                "UPDATE threads SET title = COALESCE(?, title), metadata = COALESCE(?, metadata), "
                f"updated_at = ? WHERE id = ? RETURNING {THREAD_COLUMNS}",
                (title, meta, self._clock.stamp(), thread_id),
            ).fetchall()

        rows = await self._write(run)
        if not rows:
            raise ThreadNotFound(thread_id)
        return thread_record(rows[0])

    async def delete_thread(self, thread_id: str) -> bool:
        """Remove the thread and everything of it; False if there was nothing to remove."""

        def run(db: sqlite3.Connection) -> bool:
            removed = 0
            for sql in (
                "DELETE FROM events WHERE thread_id = ?",
                "DELETE FROM messages WHERE thread_id = ?",
                "DELETE FROM snapshots WHERE thread_id = ?",
                "DELETE FROM checkpoints WHERE thread_id = ?",
                "DELETE FROM runs WHERE thread_id = ?",
                "DELETE FROM threads WHERE id = ?",
            ):
                removed += max(0, db.execute(sql, (thread_id,)).rowcount)
            removed += max(
                0,
                db.execute(  # scope "<id>" or "<anything>:<id>" (thread:<id>, embeddings:<id>)
                    "DELETE FROM settings WHERE scope = ? OR (length(scope) > length(?) + 1 "
                    "AND substr(scope, -length(?) - 1) = ':' || ?)",
                    (thread_id,) * 4,
                ).rowcount,
            )
            self._last_id.pop(thread_id, None)
            return removed > 0

        return await self._write(run)

    # -- events ----------------------------------------------------------------------------

    async def append_events(self, thread_id: str, events: Sequence[NewEvent]) -> list[StoredEvent]:
        """Append to the thread's log (the thread row is created if missing). The call's events
        get consecutive ids; it returns once they are committed."""
        _check_thread_id(thread_id)
        self._check_open()
        if not events:
            return []
        future: asyncio.Future[list[StoredEvent]] = asyncio.get_running_loop().create_future()
        self._submit(_Append(thread_id, events, future))
        return await future

    async def read_events(self, thread_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        rows = await self._read(_SELECT_EVENTS, (thread_id, after, -1 if limit is None else max(0, limit)))
        return [StoredEvent(thread_id, row[0], row[1], row[2], row[3]) for row in rows]

    async def iter_events(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[StoredEvent]:
        """Every event with id > ``after``, read ``batch`` at a time (events appended while
        iterating are included)."""
        async for page in self.iter_event_pages(thread_id, after, batch):
            for event in page:
                yield event

    async def iter_event_pages(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[list[StoredEvent]]:
        """``iter_events`` a page at a time (never empty): what one read gave. The next page is
        read (in the reader's thread) while the caller takes this one."""
        batch = max(1, batch)
        following: asyncio.Future[list[Any]] | None = asyncio.ensure_future(
            self._read(_SELECT_EVENTS, (thread_id, after, batch)))
        try:
            while following is not None:
                rows = await following
                following = None
                if len(rows) == batch:
                    following = asyncio.ensure_future(self._read(_SELECT_EVENTS, (thread_id, rows[-1][0], batch)))
                if rows:
                    from_row = StoredEvent.from_row
                    yield [from_row(thread_id, *row) for row in rows]
        finally:
            if following is not None:  # (left early: the read ahead is not wanted, nor its failure)
                following.add_done_callback(_ignore_result)
                following.cancel()

    async def coalesce_run(self, thread_id: str, run_id: str, after: int = 0) -> int:
        """One write transaction: the run's deltas become one block per segment (``store.coalesce``)."""

        def run(db: sqlite3.Connection) -> int:
            rows = db.execute(
                "SELECT id, json FROM events WHERE thread_id = ? AND id > ? AND run_id = ? ORDER BY id",
                (thread_id, after, run_id),
            ).fetchall()
            plan = plan_coalesce(rows)
            if plan.empty:
                return 0
            db.executemany("DELETE FROM events WHERE thread_id = ? AND id = ?", [(thread_id, i) for i in plan.remove])
            db.executemany(
                "UPDATE events SET type = ?, json = ? WHERE thread_id = ? AND id = ?",
                [(kind, text, thread_id, event_id) for event_id, (kind, text) in plan.replace.items()],
            )
            return len(plan.remove)

        return await self._write(run)

    async def last_event_id(self, thread_id: str) -> int:
        """The id of the thread's last committed event (0 if none)."""
        rows = await self._read("SELECT COALESCE(MAX(id), 0) FROM events WHERE thread_id = ?", (thread_id,))
        return int(rows[0][0])

    # -- messages --------------------------------------------------------------------------

    async def upsert_messages(self, thread_id: str, messages: Sequence[MessageRecord]) -> None:
        """New messages go to the end of the thread (next ``seq``). A message whose id is
        stored already gets role, content, run id and data replaced and keeps its seq and
        created_at. The records' own ``seq`` is ignored."""
        _check_thread_id(thread_id)
        rows = []
        for message in messages:
            if message.thread_id != thread_id:
                raise ValueError(f"message {message.id!r} belongs to thread {message.thread_id!r}, not {thread_id!r}")
            rows.append(
                (
                    thread_id,
                    message.id,
                    thread_id,
                    message.role,
                    dumps(message.content, f"content of message {message.id!r}"),
                    message.run_id,
                    to_text(message.created_at),
                    dumps(message.data, f"data of message {message.id!r}"),
                )
            )
        if not rows:
            return

        def run(db: sqlite3.Connection) -> None:
            now = self._clock.stamp()
            db.execute(_TOUCH_THREAD, (thread_id, now, now))
            db.executemany(
                "INSERT INTO messages (thread_id, id, seq, role, content, run_id, created_at, data) VALUES "
                "(?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE thread_id = ?), ?, ?, ?, ?, ?) "
                "ON CONFLICT(thread_id, id) DO UPDATE SET role = excluded.role, content = excluded.content, "
                "run_id = excluded.run_id, data = excluded.data",
                rows,
            )

        await self._write(run)

    async def list_messages(self, thread_id: str, last: int | None = None) -> list[MessageRecord]:
        if last is None:
            rows = await self._read(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,))
        else:  # the newest ``last`` through the (thread_id, seq) index, then in order
            rows = await self._read(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT ?",
                (thread_id, max(0, last)),
            )
            rows.reverse()
        return [message_record(row) for row in rows]

    # -- checkpoints -----------------------------------------------------------------------

    async def save_checkpoint(self, record: CheckpointRecord) -> CheckpointRecord:
        """Write the checkpoint unconditionally. The stored version is the previous one + 1
        (for a new run id: ``record.version``, at least 1); an existing checkpoint keeps its
        ``created_at``; ``updated_at`` is now. Returns what was stored."""
        state = dumps(record.state, f"checkpoint state of run {record.run_id!r}")

        def run(db: sqlite3.Connection) -> Any:
            return db.execute(
                "INSERT INTO checkpoints (run_id, thread_id, status, version, state, created_at, updated_at, "
                "expires_at) VALUES (?, ?, ?, max(?, 1), ?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
                "thread_id = excluded.thread_id, status = excluded.status, version = checkpoints.version + 1, "
                "state = excluded.state, updated_at = excluded.updated_at, expires_at = excluded.expires_at "
                f"RETURNING {CHECKPOINT_COLUMNS}",
                (
                    record.run_id,
                    record.thread_id,
                    record.status,
                    record.version,
                    state,
                    to_text(record.created_at),
                    self._clock.stamp(),
                    to_text_or_none(record.expires_at),
                ),
            ).fetchall()

        return checkpoint_record((await self._write(run))[0])

    async def get_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        rows = await self._read(f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE run_id = ?", (run_id,))
        return checkpoint_record(rows[0]) if rows else None

    async def compare_and_set_checkpoint(
        self, run_id: str, expected_version: int, status: str, state: dict[str, Any] | None = None
    ) -> CheckpointRecord | None:
        """Set status (and state, if given) only if the stored version is ``expected_version``;
        the version then grows by one. Returns the new record, or None if the checkpoint is
        missing or someone else changed it first."""
        state_text = dumps(state, f"checkpoint state of run {run_id!r}") if state is not None else None

        def run(db: sqlite3.Connection) -> Any:
            return db.execute(
                "UPDATE checkpoints SET status = ?, state = COALESCE(?, state), version = version + 1, "
                f"updated_at = ? WHERE run_id = ? AND version = ? RETURNING {CHECKPOINT_COLUMNS}",
                (status, state_text, self._clock.stamp(), run_id, expected_version),
            ).fetchall()

        rows = await self._write(run)
        return checkpoint_record(rows[0]) if rows else None

    async def list_checkpoints(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]:
        sql = f"SELECT {CHECKPOINT_COLUMNS} FROM checkpoints WHERE 1"
        params: list[Any] = []
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        sql += " ORDER BY created_at, run_id"
        return [checkpoint_record(row) for row in await self._read(sql, params)]

    async def delete_checkpoint(self, run_id: str) -> None:
        await self._write(lambda db: db.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,)).rowcount)

    async def sweep_checkpoints(self, now: datetime) -> int:
        """Every checkpoint whose ``expires_at`` is at or before ``now`` and whose status is not
        ``expired`` yet is marked ``expired`` (version + 1), as ``RedisStore`` does, so its
        owner can tell the user. Checkpoints that were already ``expired`` (marked by an earlier
        sweep) are deleted, so the table does not grow forever. Returns how many were marked
        or deleted."""
        cutoff = to_text(now)

        def run(db: sqlite3.Connection) -> int:
            deleted = db.execute(
                "DELETE FROM checkpoints WHERE expires_at IS NOT NULL AND expires_at <= ? AND status = 'expired'",
                (cutoff,),
            ).rowcount
            marked = db.execute(
                "UPDATE checkpoints SET status = 'expired', version = version + 1, updated_at = ? "
                "WHERE expires_at IS NOT NULL AND expires_at <= ? AND status <> 'expired'",
                (self._clock.stamp(), cutoff),
            ).rowcount
            return max(0, deleted) + max(0, marked)

        return await self._write(run)

    # -- runs ------------------------------------------------------------------------------

    async def upsert_run(self, record: RunRecord) -> None:
        """Insert the run or replace every field of the stored one."""
        params = (
            record.run_id,
            record.thread_id,
            record.status,
            record.message_group_id,
            record.owner,
            to_text(record.started_at),
            to_text_or_none(record.finished_at),
            dumps(record.data, f"data of run {record.run_id!r}"),
        )
        await self._write(
            lambda db: db.execute(
                f"INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET "
                "thread_id = excluded.thread_id, status = excluded.status, "
                "message_group_id = excluded.message_group_id, owner = excluded.owner, "
                "started_at = excluded.started_at, finished_at = excluded.finished_at, data = excluded.data",
                params,
            ).rowcount
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        rows = await self._read(f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        return run_record(rows[0]) if rows else None

    async def list_runs(self, thread_id: str | None = None, status: Sequence[str] | None = None, *,
                        limit: int | None = None, skip_newest: int = 0) -> list[RunRecord]:
        """Runs in start order, optionally of one thread and/or with one of the given statuses; with
        ``limit``, the newest ``limit`` before the newest ``skip_newest`` (only those rows read)."""
        sql = f"SELECT {RUN_COLUMNS} FROM runs WHERE 1"
        params: list[Any] = []
        if thread_id is not None:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            if not statuses:
                return []
            sql += f" AND status IN ({', '.join('?' for _ in statuses)})"
            params.extend(statuses)
        if limit is not None:
            sql += " ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?"
            params.extend([max(0, limit), max(0, skip_newest)])
            return [run_record(row) for row in reversed(await self._read(sql, params))]
        sql += " ORDER BY started_at, rowid"
        return [run_record(row) for row in await self._read(sql, params)]

    # -- agent-tree snapshots --------------------------------------------------------------

    async def save_snapshot(self, thread_id: str, run_id: str, tree: dict[str, Any]) -> None:
        """Store (or replace) the agent tree of a run."""
        _check_thread_id(thread_id)
        text = dumps(tree, f"agent-tree snapshot of run {run_id!r}")

        def run(db: sqlite3.Connection) -> None:
            now = self._clock.stamp()
            db.execute(_ENSURE_THREAD, (thread_id, now, now))
            db.execute(
                "INSERT INTO snapshots (thread_id, run_id, tree, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(thread_id, run_id) DO UPDATE SET tree = excluded.tree, updated_at = excluded.updated_at",
                (thread_id, run_id, text, now),
            )

        await self._write(run)

    async def get_snapshots(
        self, thread_id: str, run_ids: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """run id -> tree, in the order the runs were first saved (``run_ids``: only these runs'
        snapshots, through the (thread_id, run_id) key: a page of history reads only its own)."""
        if run_ids is None:
            rows = await self._read("SELECT run_id, tree FROM snapshots WHERE thread_id = ? ORDER BY rowid", (thread_id,))
        else:
            rows = []
            wanted = list(run_ids)
            for start in range(0, len(wanted), 500):  # (SQLite's limit on bound parameters)
                part = wanted[start : start + 500]
                rows += await self._read(
                    f"SELECT run_id, tree FROM snapshots WHERE thread_id = ? AND run_id IN ({', '.join('?' for _ in part)})"
                    " ORDER BY rowid",
                    (thread_id, *part),
                )
        return {row[0]: json.loads(row[1]) for row in rows}

    # -- settings --------------------------------------------------------------------------

    async def get_setting(self, scope: str, key: str) -> Any:
        """The stored value, or None. Settings scoped ``thread:<id>`` (or ``<id>``, or
        ``<anything>:<id>``) are deleted with the thread."""
        rows = await self._read("SELECT value FROM settings WHERE scope = ? AND key = ?", (scope, key))
        return json.loads(rows[0][0]) if rows else None

    async def set_setting(self, scope: str, key: str, value: Any) -> None:
        text = dumps(value, f"setting {scope}/{key}")
        await self._write(
            lambda db: db.execute(
                "INSERT INTO settings (scope, key, value) VALUES (?, ?, ?) "
                "ON CONFLICT(scope, key) DO UPDATE SET value = excluded.value",
                (scope, key, text),
            ).rowcount
        )


