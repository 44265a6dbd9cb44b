"""Storage failure classes against real files and a real Redis (issue 26): a corrupt, locked, read-only or
too new SQLite file, and a stopped redis-server. Each asserts the class and that the words name the
part (the file's path, the Redis server) and the fix; a model server's failure is never "storage"."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from instance_ai_tui.runtime.errors import ModelTimeout, ModelUnreachable
from instance_ai_tui.store.errors import (
    RedisDown,
    StorageCorrupt,
    StorageFull,
    StorageLocked,
    StorageReadOnly,
    StorageUnavailable,
    StorageWrongSchema,
    StoreClosed,
    is_unavailable,
    sqlite_error,
    storage_error,
)
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.store.sqlite_schema import MIGRATIONS
from tests.support import free_port, wait_for_port


async def test_corrupt_file(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    db.write_bytes(os.urandom(8192))
    with pytest.raises(StorageCorrupt) as info:
        await SqliteStore(db).open()
    words = str(info.value)
    assert info.value.code == "storage_corrupt" and str(db) in words
    assert f"mv {db} {db}.broken" in words and "--db PATH" in words


async def test_a_damaged_page_in_a_real_database(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    async with SqliteStore(db) as store:
        await store.create_thread("t")
    raw = bytearray(db.read_bytes())
    raw[100:4096] = b"\xff" * (4096 - 100)  # the schema page is garbage now
    db.write_bytes(bytes(raw))
    with pytest.raises(StorageCorrupt, match="is damaged or is not a SQLite database"):
        await SqliteStore(db).open()


async def test_locked_file(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageLocked) as info:
            await SqliteStore(db, busy_timeout=0.2).open()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(info.value, StorageUnavailable) and is_unavailable(info.value)  # worth a retry
    assert str(db) in str(info.value) and "locked by another program" in str(info.value)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    folder.chmod(0o500)
    immutable = os.geteuid() == 0  # root ignores modes: the immutable flag holds even for root
    if immutable and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        folder.chmod(0o700)
        pytest.skip("root, and chattr +i does not work here")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o700)


async def test_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    with read_only(folder), pytest.raises(StorageReadOnly) as info:
        await SqliteStore(folder / "db.sqlite3").open()
    assert info.value.code == "storage_read_only"
    assert str(folder / "db.sqlite3") in str(info.value) and f"permissions of the file and of its folder {folder}" in str(
        info.value)


async def test_read_only_database_file(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "db.sqlite3"
    async with SqliteStore(db) as store:
        await store.create_thread("t")
    for leftover in folder.glob("db.sqlite3-*"):
        leftover.unlink()
    with read_only(folder):
        db.chmod(0o400)
        try:
            with pytest.raises(StorageReadOnly, match="cannot be written"):
                await SqliteStore(db).open()
        finally:
            db.chmod(0o600)


async def test_newer_schema(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    async with SqliteStore(db):
        pass
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 3,))
    with pytest.raises(StorageWrongSchema) as info:
        await SqliteStore(db).open()
    assert str(db) in str(info.value) and "newer than this app supports" in str(info.value)


def test_disk_full_and_other_words_are_classified_where_sqlite_raised_them(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    full = sqlite_error(db, sqlite3.OperationalError("database or disk is full"), "write")
    assert type(full) is StorageFull and "the disk is full" in str(full) and str(db) in str(full)
    assert type(sqlite_error(db, OSError(errno.ENOSPC, "No space left on device"), "create")) is StorageFull
    assert type(sqlite_error(db, OSError(errno.EROFS, "Read-only file system"), "create")) is StorageReadOnly


def test_only_what_the_storage_raised_counts_as_storage() -> None:
    """Issue 26: ``is_unavailable`` treated any timeout or refused connection as storage."""
    refused = ConnectionRefusedError(111, "Connection refused")
    model = ModelUnreachable("the model server at http://127.0.0.1:9/v1 refused the connection")
    model.__cause__ = refused  # as the adapter raises it: from the transport's error
    assert not is_unavailable(model)
    timeout = ModelTimeout("the model server at http://x/v1 sent nothing for 60 s")
    timeout.__context__ = TimeoutError()
    assert not is_unavailable(timeout)
    assert not is_unavailable(TimeoutError()) and not is_unavailable(refused)  # whose? nobody said
    assert is_unavailable(refused, from_storage=True)  # raised by a storage call: the storage's
    assert is_unavailable(StoreClosed("closed")) and storage_error(RuntimeError("x")) is None


@pytest.fixture
def stopped_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server that was running and has been shut down (its port refuses now)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_port(port, timeout=10), "redis-server did not start"
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_redis_stopped_is_storage_unavailable(stopped_redis: str) -> None:
    from instance_ai_tui.store.redis import RedisStore

    store = RedisStore.from_url(stopped_redis)
    await store.open()
    await store.create_thread("t")
    port = int(stopped_redis.rsplit(":", 1)[1].split("/")[0])
    import redis.asyncio as aioredis

    admin = aioredis.from_url(stopped_redis)
    with contextlib.suppress(Exception):
        await admin.shutdown(nosave=True)  # Redis stops, as in an outage
    with contextlib.suppress(Exception):
        await admin.aclose()
    assert not wait_for_port(port, timeout=0.5)
    with pytest.raises(Exception) as info:
        await store.get_thread("t")
    assert is_unavailable(info.value), repr(info.value)  # raised by the Redis driver: the storage's
    named = storage_error(info.value)
    assert type(named) is RedisDown and named.code == "redis_down" and "the Redis server did not answer" in str(named)
    with contextlib.suppress(Exception):
        await store.close()
