"""A write while a second process holds the SQLite file's lock (issue 39 item 1): the store says
``StorageLocked`` — with that process's PID — where it used to hand back ``sqlite3``'s own
``OperationalError`` unclassified (which the layers above could not tell from a bug)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from instance_ai_tui.store.errors import StorageLocked, is_unavailable, lock_holder
from instance_ai_tui.store.sqlite import SqliteStore

HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


async def test_a_write_while_another_process_holds_the_lock_names_it(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    store = SqliteStore(db, busy_timeout=0.2)
    await store.open()
    try:
        await store.create_thread("t1")
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,  # noqa: ASYNC220 - the second program; returns at once
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            assert lock_holder(db) == holder.pid
            with pytest.raises(StorageLocked) as caught:
                await store.create_thread("t2")
            assert caught.value.holder_pid == holder.pid and is_unavailable(caught.value)
            assert f"locked by another program (PID {holder.pid})" in str(caught.value) and str(db) in str(caught.value)
            assert (await store.get_thread("t1")) is not None  # reading goes on meanwhile (WAL)
        finally:
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.close()
            holder.wait(timeout=10)
        assert lock_holder(db) is None
        await store.create_thread("t2")  # free again: the write goes
        assert (await store.get_thread("t2")) is not None
    finally:
        await store.close()


def test_no_lock_table_names_nobody(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    db.write_bytes(b"")
    assert lock_holder(db, locks=tmp_path / "no-such-file") is None
