"""Checkpoint stores: where a suspended run's state waits for ``resume``.

A checkpoint is a ``store.base.CheckpointRecord`` (JSON state + ``version``). Every write bumps
the version; ``claim`` moves a suspended checkpoint to ``running`` only if its version is still
the one the caller read (compare-and-set), so two concurrent resumes cannot both run.
``InMemoryCheckpointStore`` lives in the process; ``StoreCheckpointStore`` keeps checkpoints in a
``Store`` (the SQLite file), so a new process can resume a run after a restart.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from ..store.base import CheckpointRecord, CheckpointRecords


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def is_expired(record: CheckpointRecord, now: datetime | None = None) -> bool:
    return record.expires_at is not None and _aware(record.expires_at) <= (now or utcnow())


@runtime_checkable
class CheckpointStore(Protocol):
    async def save(
        self,
        run_id: str,
        state: dict[str, Any],
        *,
        thread_id: str | None = None,
        status: str = "suspended",
        ttl: float | None = None,
    ) -> CheckpointRecord:
        """Write (create or overwrite) a run's checkpoint; ``ttl`` seconds until it expires."""
        ...

    async def load(self, run_id: str) -> CheckpointRecord | None:
        """The checkpoint, or None when there is none or it has expired."""
        ...

    async def claim(self, run_id: str, expected_version: int) -> CheckpointRecord | None:
        """Compare-and-set ``suspended`` -> ``running``; None if someone else changed it first."""
        ...

    async def complete(self, run_id: str) -> None:
        """The run finished: remove its checkpoint."""
        ...

    async def list(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]: ...

    async def sweep(self, now: datetime | None = None) -> int:
        """Remove expired checkpoints; returns how many."""
        ...


class InMemoryCheckpointStore:
    """Checkpoints in a dict; expired ones are swept by ``sweep`` (and on every ``save``)."""

    def __init__(self, default_ttl: float | None = None) -> None:
        self._records: dict[str, CheckpointRecord] = {}
        self.default_ttl = default_ttl

    async def save(
        self,
        run_id: str,
        state: dict[str, Any],
        *,
        thread_id: str | None = None,
        status: str = "suspended",
        ttl: float | None = None,
    ) -> CheckpointRecord:
        now = utcnow()
        await self.sweep(now)
        previous = self._records.get(run_id)
        ttl = self.default_ttl if ttl is None else ttl
        record = CheckpointRecord(
            run_id=run_id,
            thread_id=thread_id,
            status=status,
            version=(previous.version + 1) if previous else 1,
            state=state,
            created_at=previous.created_at if previous else now,
            updated_at=now,
            expires_at=now + timedelta(seconds=ttl) if ttl else None,
        )
        self._records[run_id] = record
        return record

    async def load(self, run_id: str) -> CheckpointRecord | None:
        record = self._records.get(run_id)
        if record is None or is_expired(record):
            return None
        return record.model_copy(deep=True)

    async def claim(self, run_id: str, expected_version: int) -> CheckpointRecord | None:
        record = self._records.get(run_id)
        if record is None or record.version != expected_version or record.status != "suspended":
            return None
        if is_expired(record):
            return None
        claimed = record.model_copy(update={"status": "running", "version": record.version + 1, "updated_at": utcnow()})
        self._records[run_id] = claimed
        return claimed.model_copy(deep=True)

    async def complete(self, run_id: str) -> None:
        self._records.pop(run_id, None)

    async def list(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]:
        return [
            r.model_copy(deep=True)
            for r in self._records.values()
            if (status is None or r.status == status) and (thread_id is None or r.thread_id == thread_id)
        ]

    async def sweep(self, now: datetime | None = None) -> int:
        now = now or utcnow()
        expired = [k for k, r in self._records.items() if is_expired(r, now)]
        for key in expired:
            del self._records[key]
        return len(expired)



class CheckpointStorage(CheckpointRecords, Protocol):
    """What ``StoreCheckpointStore`` needs of a store: the versioned checkpoint records (the runtime's
    own declaration; SQLite and Redis implement it)."""

class StoreCheckpointStore:
    """Checkpoints on a ``Store``'s checkpoint methods (e.g. ``store.sqlite.SqliteStore``)."""

    def __init__(self, store: CheckpointStorage, default_ttl: float | None = 7 * 24 * 3600.0) -> None:
        self.store = store
        self.default_ttl = default_ttl

    async def save(
        self,
        run_id: str,
        state: dict[str, Any],
        *,
        thread_id: str | None = None,
        status: str = "suspended",
        ttl: float | None = None,
    ) -> CheckpointRecord:
        now = utcnow()
        ttl = self.default_ttl if ttl is None else ttl
        record = CheckpointRecord(
            run_id=run_id,
            thread_id=thread_id,
            status=status,
            version=0,  # the store assigns the version (previous + 1)
            state=state,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=ttl) if ttl else None,
        )
        return await self.store.save_checkpoint(record)

    async def load(self, run_id: str) -> CheckpointRecord | None:
        record = await self.store.get_checkpoint(run_id)
        if record is None or record.status == "expired" or is_expired(record):
            return None
        return record

    async def claim(self, run_id: str, expected_version: int) -> CheckpointRecord | None:
        current = await self.store.get_checkpoint(run_id)
        if current is None or current.status != "suspended" or is_expired(current):
            return None
        return await self.store.compare_and_set_checkpoint(run_id, expected_version, "running")

    async def complete(self, run_id: str) -> None:
        await self.store.delete_checkpoint(run_id)

    async def list(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]:
        return [r for r in await self.store.list_checkpoints(status=status, thread_id=thread_id) if not is_expired(r)]

    async def sweep(self, now: datetime | None = None) -> int:
        return await self.store.sweep_checkpoints(now or utcnow())
