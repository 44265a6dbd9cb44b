"""Conversions between SQLite column values and the store's records.

Timestamps are stored as UTC ISO-8601 text with microseconds, so text order is time order.
JSON columns are compact JSON text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from .base import CheckpointRecord, MessageRecord, RunRecord, ThreadRecord

UTC = UTC

THREAD_COLUMNS = "id, title, metadata, created_at, updated_at"
MESSAGE_COLUMNS = "id, thread_id, role, content, run_id, seq, created_at, data"
CHECKPOINT_COLUMNS = "run_id, thread_id, status, version, state, created_at, updated_at, expires_at"
RUN_COLUMNS = "run_id, thread_id, status, message_group_id, owner, started_at, finished_at, data"


def to_text(value: datetime) -> str:
    """A datetime as sortable UTC text; a naive datetime is taken to be UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def to_text_or_none(value: datetime | None) -> str | None:
    return None if value is None else to_text(value)


def from_text(value: str) -> datetime:
    return datetime.fromisoformat(value)


def from_text_or_none(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def dumps(value: Any, what: str) -> str:
    """Compact JSON text; a clear ``ValueError`` naming ``what`` if the value is not JSON."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not JSON-serialisable: {exc}") from None


class Clock:
    """Strictly increasing UTC timestamps (ties broken by one microsecond), as text."""

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=UTC)

    def stamp(self) -> str:
        now = datetime.now(UTC)
        if now <= self._last:
            now = self._last + timedelta(microseconds=1)
        self._last = now
        return to_text(now)


def thread_record(row: Any) -> ThreadRecord:
    return ThreadRecord(
        id=row[0],
        title=row[1],
        metadata=json.loads(row[2]),
        created_at=from_text(row[3]),
        updated_at=from_text(row[4]),
    )


def message_record(row: Any) -> MessageRecord:
    return MessageRecord(
        id=row[0],
        thread_id=row[1],
        role=row[2],
        content=json.loads(row[3]),
        run_id=row[4],
        seq=row[5],
        created_at=from_text(row[6]),
        data=json.loads(row[7]),
    )


def checkpoint_record(row: Any) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=row[0],
        thread_id=row[1],
        status=row[2],
        version=row[3],
        state=json.loads(row[4]),
        created_at=from_text(row[5]),
        updated_at=from_text(row[6]),
        expires_at=from_text_or_none(row[7]),
    )


def run_record(row: Any) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        thread_id=row[1],
        status=row[2],
        message_group_id=row[3],
        owner=row[4],
        started_at=from_text(row[5]),
        finished_at=from_text_or_none(row[6]),
        data=json.loads(row[7]),
    )
