"""SqliteStore: the database file (location, permissions, pragmas), migrations, open/close."""

from __future__ import annotations

import asyncio
import inspect
import os
import sqlite3
import stat
from datetime import UTC
from pathlib import Path

import pytest

from instance_ai_tui.store.base import Store
from instance_ai_tui.store.errors import StorageCorrupt, StorageWrongSchema, StoreClosed, StoreError
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, migrate

from .conftest import delta, raw_sql


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_protocol_is_implemented_with_the_same_signatures() -> None:
    store = SqliteStore(Path("/nonexistent/never-opened.sqlite3"))
    assert isinstance(store, Store)
    for name, member in inspect.getmembers(Store, predicate=inspect.isfunction):
        if name.startswith("_"):
            continue
        expected = list(inspect.signature(member).parameters)
        actual = list(inspect.signature(getattr(SqliteStore, name)).parameters)
        assert actual == expected, name


async def test_file_is_created_0600_in_a_0700_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "db.sqlite3"
    async with SqliteStore(path) as store:
        await store.append_events("t", [delta("x")])
        assert mode(path) == 0o600
        assert mode(path.parent) == 0o700
        wal = path.with_name(path.name + "-wal")
        assert wal.exists() and mode(wal) == 0o600  # SQLite gives the WAL the file's mode


async def test_default_path_is_in_the_platform_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    store = SqliteStore()
    assert store.path == tmp_path / "xdg" / "instance-ai" / "instance-ai.sqlite3"
    async with store:
        assert mode(store.path) == 0o600
        assert mode(store.path.parent) == 0o700


async def test_existing_directory_mode_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    async with SqliteStore(folder / "db.sqlite3"):
        pass
    assert mode(folder) == 0o755
    assert mode(folder / "db.sqlite3") == 0o600


async def test_wal_mode_and_schema_version(store: SqliteStore, db_path: Path) -> None:
    def inspect_db(db: sqlite3.Connection) -> tuple[str, int]:
        return db.execute("PRAGMA journal_mode").fetchone()[0], db.execute("SELECT version FROM schema_version").fetchone()[0]

    assert await raw_sql(db_path, inspect_db) == ("wal", SCHEMA_VERSION)


async def test_old_database_is_upgraded_and_keeps_its_data(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)

    def make_v1(db: sqlite3.Connection) -> None:
        assert migrate(db, target=1) == (0, 1)
        db.execute("INSERT INTO threads VALUES ('t1', 'Old thread', '{\"a\": 1}', '2024-01-01T00:00:00.000000+00:00', "
                   "'2024-01-01T00:00:00.000000+00:00')")
        db.execute("INSERT INTO events VALUES ('t1', 1, 'run-start', 'r0', '{\"type\":\"run-start\"}')")

    await raw_sql(db_path, make_v1)
    async with SqliteStore(db_path) as store:
        thread = await store.get_thread("t1")
        assert thread is not None and thread.title == "Old thread" and thread.metadata == {"a": 1}
        assert [e.id for e in await store.read_events("t1")] == [1]
        appended = await store.append_events("t1", [delta("new")])
        assert appended[0].id == 2
        # tables of migration 2 work
        from datetime import datetime

        from instance_ai_tui.store.base import CheckpointRecord

        now = datetime.now(UTC)
        saved = await store.save_checkpoint(CheckpointRecord(run_id="r0", thread_id="t1", created_at=now, updated_at=now))
        assert saved.version == 1
    assert await raw_sql(db_path, lambda db: db.execute("SELECT version FROM schema_version").fetchone()[0]) == SCHEMA_VERSION


async def test_failed_migration_leaves_the_file_as_it_was(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)

    def make_broken_v1(db: sqlite3.Connection) -> None:
        migrate(db, target=1)
        db.execute("CREATE TABLE runs (x TEXT)")  # step 2 creates "runs": it will fail

    await raw_sql(db_path, make_broken_v1)
    with pytest.raises(StoreError, match="runs"):
        await SqliteStore(db_path).open()

    def state(db: sqlite3.Connection) -> tuple[int, list[str]]:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return db.execute("SELECT version FROM schema_version").fetchone()[0], tables

    version, tables = await raw_sql(db_path, state)
    assert version == 1
    assert "checkpoints" not in tables and "snapshots" not in tables


async def test_newer_schema_is_refused_with_a_clear_message(db_path: Path) -> None:
    async with SqliteStore(db_path):
        pass
    await raw_sql(db_path, lambda db: db.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 7,)))
    with pytest.raises(StorageWrongSchema, match=r"newer than this app supports.*--db PATH"):
        await SqliteStore(db_path).open()


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database " * 100)
    with pytest.raises(StorageCorrupt, match=r"is damaged or is not a SQLite database.*move it aside"):
        await SqliteStore(path).open()


async def test_a_directory_in_the_way_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match=r"cannot create the database .*db\.sqlite3"):
        await SqliteStore(blocker / "db.sqlite3").open()


async def test_closed_store_refuses_work_and_open_close_are_idempotent(db_path: Path) -> None:
    store = SqliteStore(db_path)
    with pytest.raises(StoreClosed, match="not open"):
        await store.append_events("t", [delta("x")])
    await store.open()
    await store.open()
    assert store.is_open
    await store.append_events("t", [delta("x")])
    await store.close()
    await store.close()
    with pytest.raises(StoreClosed):
        await store.read_events("t")
    with pytest.raises(StoreClosed):
        await store.create_thread("t2")


async def test_close_commits_everything_queued(db_path: Path) -> None:
    store = SqliteStore(db_path)
    await store.open()
    tasks = [asyncio.ensure_future(store.append_events(f"t{i % 3}", [delta(str(i))])) for i in range(60)]
    await asyncio.sleep(0)  # every task has queued its append
    await store.close()
    assert all(t.done() and not t.cancelled() for t in tasks)
    async with SqliteStore(db_path) as again:
        assert [await again.last_event_id(f"t{i}") for i in range(3)] == [20, 20, 20]


async def test_reopen_keeps_data_and_ids_continue(db_path: Path) -> None:
    async with SqliteStore(db_path) as store:
        await store.create_thread("t", title="Kept")
        await store.append_events("t", [delta("a"), delta("b"), delta("c")])
        await store.set_setting("thread:t", "k", [1, 2])
    # the WAL was folded into the file on close
    assert not db_path.with_name(db_path.name + "-wal").exists() or db_path.with_name(db_path.name + "-wal").stat().st_size == 0
    async with SqliteStore(db_path) as store:
        assert (await store.get_thread("t")).title == "Kept"  # type: ignore[union-attr]
        assert [e.data()["payload"]["text"] for e in await store.read_events("t")] == ["a", "b", "c"]
        assert [e.id for e in await store.append_events("t", [delta("d"), delta("e")])] == [4, 5]
        assert await store.last_event_id("t") == 5
        assert await store.get_setting("thread:t", "k") == [1, 2]


async def test_sqlite_runs_on_the_connection_threads_not_the_loop(store: SqliteStore) -> None:
    import threading

    from instance_ai_tui.store.sqlite import _on_thread

    assert store._writer is not None and store._reader is not None
    loop_thread = threading.get_ident()
    writer_thread = await _on_thread(store._writer, lambda db: threading.get_ident())
    reader_thread = await _on_thread(store._reader, lambda db: threading.get_ident())
    assert len({loop_thread, writer_thread, reader_thread}) == 3
    seen: list[int] = []
    await store._write(lambda db: seen.append(threading.get_ident()))
    assert seen == [writer_thread]  # every write runs on the writer's thread
