"""The storage interface. SQLite (``store.sqlite``) and Redis (``store.redis``) implement it.

Events are stored as their wire JSON text, so replay never re-serialises them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from ..protocol.events import Event


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event on its way into the log: type, run id and the wire JSON text (what is stored), and
    the model it was serialised from, if any (``bus.base.to_new_event``): a store hands it on in
    the ``StoredEvent`` it returns, so the bus delivers it in process without parsing the JSON."""

    type: str
    run_id: str
    json: str
    event: Event | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event in a thread's log, with its per-thread monotonic id (1, 2, 3, ...).

    ``event`` is the model the producer built when the event was published in this process
    (the bus delivers it so that nothing parses its JSON back); ``None`` when read from the log.
    """

    thread_id: str
    id: int
    type: str
    run_id: str
    json: str
    event: Event | None = field(default=None, compare=False, repr=False)
    _cache: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def data(self) -> dict[str, Any]:
        """The event as a dict (parsed once, then cached)."""
        cache = self._cache
        if cache is None:
            cache = {"d": json.loads(self.json)}
            object.__setattr__(self, "_cache", cache)
        return cache["d"]

    @classmethod
    def from_row(cls, thread_id: str, id: int, type: str, run_id: str, json: str) -> StoredEvent:
        """One read from the log (no model): what the constructor builds, at half its cost (a
        page of the log is a thousand of them)."""
        stored = _new(cls)
        _set_thread_id(stored, thread_id)
        _set_id(stored, id)
        _set_type(stored, type)
        _set_run_id(stored, run_id)
        _set_json(stored, json)
        _set_event(stored, None)
        _set_cache(stored, None)
        return stored


_new = object.__new__
_EVENT_SLOTS = StoredEvent.__dict__
_set_thread_id = _EVENT_SLOTS["thread_id"].__set__
_set_id = _EVENT_SLOTS["id"].__set__
_set_type = _EVENT_SLOTS["type"].__set__
_set_run_id = _EVENT_SLOTS["run_id"].__set__
_set_json = _EVENT_SLOTS["json"].__set__
_set_event = _EVENT_SLOTS["event"].__set__
_set_cache = _EVENT_SLOTS["_cache"].__set__


class ThreadRecord(BaseModel):
    id: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class MessageRecord(BaseModel):
    """A stored conversation message. ``seq`` orders a thread's messages (assigned by the store)."""

    id: str
    thread_id: str
    role: str
    content: Any = None
    run_id: str | None = None
    seq: int = 0
    created_at: datetime
    data: dict[str, Any] = Field(default_factory=dict)


class CheckpointRecord(BaseModel):
    """A run's serialised state. ``version`` grows on every write (compare-and-set)."""

    run_id: str
    thread_id: str | None = None
    status: str = "suspended"
    version: int = 0
    state: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None


class RunRecord(BaseModel):
    """A run of a thread: the crash sweeper finds the ones left ``active`` or ``suspended``."""

    run_id: str
    thread_id: str
    status: str = "active"  # active | suspended | completed | cancelled | error | interrupted
    message_group_id: str | None = None
    owner: str | None = None
    started_at: datetime
    finished_at: datetime | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class ThreadNotFound(KeyError):
    """The thread does not exist."""


# Small protocols, one per kind of record: a caller depends on the one(s) it uses; ``Store`` is
# all of them (SQLite and Redis implement it). The runtime declares its own, smaller still
# (``runtime.checkpoints.CheckpointStorage``, ``runtime.memory.MemoryStorage``).


class ThreadStore(Protocol):
    """Threads, newest ``updated_at`` first."""

    async def create_thread(
        self, thread_id: str, title: str = "", metadata: dict[str, Any] | None = None
    ) -> ThreadRecord: ...
    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...
    async def list_threads(self, search: str | None = None, limit: int | None = None) -> list[ThreadRecord]: ...
    async def update_thread(
        self, thread_id: str, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ThreadRecord: ...
    async def delete_thread(self, thread_id: str) -> bool: ...


class EventLog(Protocol):
    """The per-thread event log; ids are assigned here, gap-free, starting at 1."""

    async def append_events(self, thread_id: str, events: Sequence[NewEvent]) -> list[StoredEvent]: ...
    async def read_events(self, thread_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]: ...
    def iter_events(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[StoredEvent]: ...
    def iter_event_pages(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[list[StoredEvent]]:
        """``iter_events`` as the pages read (each a non-empty list, in order)."""
        ...
    async def last_event_id(self, thread_id: str) -> int: ...
    async def coalesce_run(self, thread_id: str, run_id: str, after: int = 0) -> int:
        """Rewrite a *finished* run's deltas (ids > ``after``) as n8n stores them: one ``text-block`` /
        ``reasoning-block`` per segment (``store.coalesce``). Returns how many events went."""
        ...


class MessageStore(Protocol):
    """Messages, upserted by id; ``seq`` keeps insertion order."""

    async def upsert_messages(self, thread_id: str, messages: Sequence[MessageRecord]) -> None: ...
    async def list_messages(self, thread_id: str, last: int | None = None) -> list[MessageRecord]:
        """The thread's messages in order; with ``last``, only the newest ``last`` of them (a page:
        a run's context must not read the whole history)."""
        ...


class CheckpointRecords(Protocol):
    """Suspended runs' checkpoints (versioned: compare-and-set)."""

    async def save_checkpoint(self, record: CheckpointRecord) -> CheckpointRecord: ...
    async def get_checkpoint(self, run_id: str) -> CheckpointRecord | None: ...
    async def compare_and_set_checkpoint(
        self, run_id: str, expected_version: int, status: str, state: dict[str, Any] | None = None
    ) -> CheckpointRecord | None: ...
    async def list_checkpoints(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]: ...
    async def delete_checkpoint(self, run_id: str) -> None: ...
    async def sweep_checkpoints(self, now: datetime) -> int: ...


class RunRecords(Protocol):
    """The record of each run (status, usage, what it waits for)."""

    async def upsert_run(self, record: RunRecord) -> None: ...
    async def get_run(self, run_id: str) -> RunRecord | None: ...
    async def list_runs(self, thread_id: str | None = None, status: Sequence[str] | None = None, *,
                        limit: int | None = None, skip_newest: int = 0) -> list[RunRecord]:
        """Runs in start order, optionally of one thread and/or with one of the given statuses; with
        ``limit``, only the newest ``limit`` of those before the newest ``skip_newest`` (a page of a
        long thread, read without the rest)."""
        ...


class SnapshotStore(Protocol):
    """Agent-tree snapshots per run (the reducer's tree as a wire dict)."""

    async def save_snapshot(self, thread_id: str, run_id: str, tree: dict[str, Any]) -> None: ...
    async def get_snapshots(
        self, thread_id: str, run_ids: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]: ...


class SettingsStore(Protocol):
    """Small per-scope key/value settings (e.g. tools "always allowed" in a thread)."""

    async def get_setting(self, scope: str, key: str) -> Any: ...
    async def set_setting(self, scope: str, key: str, value: Any) -> None: ...


@runtime_checkable
class Store(
    ThreadStore, EventLog, MessageStore, CheckpointRecords, RunRecords, SnapshotStore, SettingsStore, Protocol
):
    """Everything the app persists. Every method is a coroutine; none blocks the loop."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...
