"""A WAL deleted under a running process (issue 43.5): finished runs survive, a loss is named.

The attack: delete ``ia.db-wal`` while ``instance-ai serve`` runs, let another thread's run
finish, ``kill -9``: the restarted server had the thread's row (copied into the database file
earlier) but not its finished run. Now a commit holding a ``run-finish`` copies the WAL into the
database file before the run's end is published, so the run is there after the restart; and
what a deleted WAL did take along (a writer killed before any copy) is found at the next open
from the wal-index (``-shm``) and said in words, on ``serve``'s stderr too.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx

from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.store.wal import lost_wal
from tests.server.live import ServeProcess
from tests.server.test_restart import read_until

API = "/instance-ai"
REPO = Path(__file__).resolve().parents[2]


async def test_a_run_finished_after_the_wal_was_deleted_survives_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "ia.db"
    server = ServeProcess(db)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url + API, timeout=20) as http:
            assert (await http.post("/chat/a", json={"message": "hello"})).status_code == 200
            await read_until(server.url, "a", lambda e: e["type"] == "run-finish")
            await asyncio.sleep(1.0)  # the background copy has run: thread a is in the database file
            os.unlink(f"{db}-wal")
            assert (await http.post("/chat/b", json={"message": "hello there"})).status_code == 200
            live = await read_until(server.url, "b", lambda e: e["type"] == "run-finish")
        server.kill()  # at once: no background copy in between
        await server.start()
        async with httpx.AsyncClient(base_url=server.url + API, timeout=20) as http:
            answer = await http.get("/threads/b/messages")
            assert answer.status_code == 200, answer.text
            messages = answer.json()["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == "hello there"
            replay = await read_until(server.url, "b", lambda e: e["type"] == "run-finish")
            assert replay[-1][1]["type"] == "run-finish" and replay[-1][1]["runId"] == live[-1][1]["runId"]
    finally:
        server.kill()


CHILD = textwrap.dedent("""
    import asyncio, os, sys
    from instance_ai_tui.store.sqlite import SqliteStore

    async def main(path):
        store = SqliteStore(path, checkpoint_interval=3600)
        await store.open()
        for n in range(20):
            await store.create_thread(f"t{n}", title="x" * 2000)  # no run finished: nothing copied yet
        os.unlink(path + "-wal")
        os._exit(9)  # as kill -9: the deleted WAL goes with the process

    asyncio.run(main(sys.argv[1]))
""")


async def test_a_lost_wal_is_found_at_open_and_said(tmp_path: Path) -> None:
    db = tmp_path / "ia.db"
    seed = SqliteStore(db)
    await seed.open()
    await seed.create_thread("kept", title="kept")
    await seed.close()  # (a clean close: all in the database file)
    child = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", CHILD, str(db)],
                                    env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                                    timeout=60)
    assert child.returncode == 9, child.stderr
    found = lost_wal(db)
    assert found is not None and found.frames > 0
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data")}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "instance_ai_tui", "threads", "--db", str(db),
                                                    "--json"], capture_output=True, text=True, env=environ,
                                   cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    said = done.stderr
    assert f"the database {db} lost its write-ahead log" in said and "changed pages" in said, said
    assert [t["id"] for t in json.loads(done.stdout)] == ["kept"]
    store = SqliteStore(db)
    await store.open()  # the next open: SQLite rebuilt its index, nothing more is lost
    assert store.lost_wal is None
    await store.close()


async def test_a_clean_stop_or_a_present_wal_says_nothing(tmp_path: Path) -> None:
    db = tmp_path / "ia.db"
    store = SqliteStore(db)
    await store.open()
    await store.create_thread("t1")
    assert lost_wal(db) is None  # the WAL is there
    await store.close()
    assert lost_wal(db) is None
    (tmp_path / "ia.db-shm").write_bytes(b"\x00" * 200)  # a foreign or empty index: nothing is claimed
    assert lost_wal(db) is None
