"""The SQLite schema of ``SqliteStore`` as an ordered list of migrations.

``MIGRATIONS[i]`` upgrades a database from version ``i`` to ``i + 1``. The version lives in the
one-row table ``schema_version``. ``migrate`` applies every missing step in ONE transaction, so
a database is either fully upgraded or left as it was. Never edit a released step: append one.

Timestamps are ISO-8601 text in UTC with microseconds (``2024-05-01T12:00:00.000000+00:00``),
so they sort as text. JSON columns hold compact JSON text.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path

from .errors import StoreError

# Each step is a sequence of SQL statements (no parameters).
MIGRATIONS: list[Sequence[str]] = [
    # 1: threads, their event log, their messages, small settings.
    (
        """CREATE TABLE threads (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        "CREATE INDEX threads_by_updated ON threads(updated_at)",
        # Clustered on (thread_id, id): a thread's log is one contiguous, ordered range.
        """CREATE TABLE events (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            id INTEGER NOT NULL,
            type TEXT NOT NULL,
            run_id TEXT NOT NULL,
            json TEXT NOT NULL,
            PRIMARY KEY (thread_id, id)
        ) WITHOUT ROWID""",
        """CREATE TABLE messages (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            run_id TEXT,
            created_at TEXT NOT NULL,
            data TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (thread_id, id)
        )""",
        "CREATE UNIQUE INDEX messages_by_seq ON messages(thread_id, seq)",
        """CREATE TABLE settings (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (scope, key)
        )""",
    ),
    # 2: run state: checkpoints (compare-and-set by version), runs, agent-tree snapshots.
    (
        """CREATE TABLE checkpoints (
            run_id TEXT PRIMARY KEY,
            thread_id TEXT,
            status TEXT NOT NULL,
            version INTEGER NOT NULL,
            state TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT
        )""",
        "CREATE INDEX checkpoints_by_thread ON checkpoints(thread_id)",
        "CREATE INDEX checkpoints_by_status ON checkpoints(status)",
        "CREATE INDEX checkpoints_by_expiry ON checkpoints(expires_at) WHERE expires_at IS NOT NULL",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            thread_id TEXT NOT NULL,
            status TEXT NOT NULL,
            message_group_id TEXT,
            owner TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            data TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX runs_by_thread ON runs(thread_id, started_at)",
        "CREATE INDEX runs_by_status ON runs(status)",
        """CREATE TABLE snapshots (
            thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
            run_id TEXT NOT NULL,
            tree TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (thread_id, run_id)
        )""",
    ),
    # 3: full-text search over what the user and the assistant wrote (thread search finds
    # "slack" in a thread titled "Weather alerts"). Kept in step with ``messages`` by triggers;
    # the FTS row id is the message's rowid, so updates and deletes are O(1).
    (
        """CREATE VIRTUAL TABLE message_text USING fts5(
            text, thread_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
        )""",
        """CREATE TRIGGER message_text_insert AFTER INSERT ON messages
            WHEN new.role IN ('user', 'assistant') AND json_valid(new.content)
                AND json_type(new.content) = 'text'
            BEGIN
                INSERT INTO message_text (rowid, text, thread_id)
                VALUES (new.rowid, json_extract(new.content, '$'), new.thread_id);
            END""",
        """CREATE TRIGGER message_text_update AFTER UPDATE OF role, content ON messages
            BEGIN
                DELETE FROM message_text WHERE rowid = old.rowid;
                INSERT INTO message_text (rowid, text, thread_id)
                SELECT new.rowid, json_extract(new.content, '$'), new.thread_id
                WHERE new.role IN ('user', 'assistant') AND json_valid(new.content)
                    AND json_type(new.content) = 'text';
            END""",
        """CREATE TRIGGER message_text_delete AFTER DELETE ON messages
            BEGIN
                DELETE FROM message_text WHERE rowid = old.rowid;
            END""",
        """INSERT INTO message_text (rowid, text, thread_id)
            SELECT rowid, json_extract(content, '$'), thread_id FROM messages
            WHERE role IN ('user', 'assistant') AND json_valid(content) AND json_type(content) = 'text'""",
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(StoreError):
    """The database cannot be used by this version of the app."""


def current_version(db: sqlite3.Connection) -> int:
    """The schema version of the database (0 for a new, empty file)."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").fetchone():
        return 0
    row = db.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(db: sqlite3.Connection, target: int = SCHEMA_VERSION) -> tuple[int, int]:
    """Bring the database to ``target``; returns (version before, version after).

    Blocking: call it on the connection's own thread. ``db`` must be in autocommit mode
    (``isolation_level=None``). All steps run in one ``BEGIN IMMEDIATE`` transaction (DDL is
    transactional in SQLite), so a failure leaves the file as it was.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        before = current_version(db)
        if before > len(MIGRATIONS):
            raise SchemaError(
                f"the database has schema version {before}, newer than this app supports "
                f"({len(MIGRATIONS)}); upgrade instance-ai or use another database file"
            )
        if before < target:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            for step in MIGRATIONS[before:target]:
                for statement in step:
                    db.execute(statement)
            db.execute("DELETE FROM schema_version")
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (target,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return before, max(before, target)


# -- the database file -----------------------------------------------------------------


def prepare_file(path: Path) -> None:
    """Create the parent directory (0700) and the database file (0600) if they are missing; an
    existing database (and its WAL files) readable by others is made 0600 (it holds every
    conversation)."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(parent, 0o700)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for existing in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            try:
                mode = existing.stat().st_mode
                if stat.S_ISREG(mode) and mode & 0o077:
                    os.chmod(existing, stat.S_IMODE(mode) & 0o600)
            except OSError:
                pass  # absent, or not ours to change: opening will tell
        return
    os.close(fd)
    os.chmod(path, 0o600)


def setup_writer(db: sqlite3.Connection) -> None:
    mode = db.execute("PRAGMA journal_mode=WAL").fetchone()
    if not mode or str(mode[0]).lower() != "wal":
        raise StoreError(f"cannot switch the database to WAL mode (journal_mode is {mode[0] if mode else None!r})")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA foreign_keys=ON")
    # Checkpoints (copying the WAL into the file, with fsyncs) run on their own connection
    # (see _checkpoint_loop), so a commit never stalls behind one.
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
    migrate(db)
