"""Issue 15 item 3: a crash at the exact point between a run's end and its ``run-finish``.

A child process runs the real service (demo model, SQLite file) with a hook that kills it
(``os._exit``: no cleanup, like kill -9) at one chosen point. The test then starts a new
service on the same file, as a restart would, and checks that the run has exactly one
``run-finish``, that its stored tree equals the fold of its log, and that history says the
run is over.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.protocol.reducer import build_agent_tree_wire

REPO = Path(__file__).resolve().parents[2]

CHILD = r'''
import asyncio, os, sys
from pathlib import Path
from instance_ai_tui.assistant.emitter import RunEmitter
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.store.sqlite import SqliteStore

db, point = Path(sys.argv[1]), sys.argv[2]
original_append, original_emit = SqliteStore.append_events, RunEmitter.emit

async def append_events(self, thread_id, events):
    # the exact durable point: the run-finish row is (or is not yet) committed to the file
    finishing = any(e.type == "run-finish" for e in events)
    if finishing and point == "before-run-finish":
        os._exit(9)
    stored = await original_append(self, thread_id, events)
    if finishing and point == "after-run-finish":
        os._exit(9)
    return stored

def emit(self, event):
    if point == "before-run-start" and event.type == "run-start":
        os._exit(9)
    return original_emit(self, event)

SqliteStore.append_events, RunEmitter.emit = append_events, emit

async def main():
    service = build_service(Settings(db_path=db, model=ModelSettings(name="demo")), demo_delay=0.0)
    await service.start()
    run_id = await service.send("t-crash", "hello there")
    print(run_id, flush=True)
    await asyncio.sleep(30)  # the scenario: the process waits to be killed
    os._exit(3)  # the hook never fired

asyncio.run(main())
'''


def crash(db: Path, point: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHILD, str(db), point], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 9, (done.returncode, done.stderr[-3000:])
    return done.stdout.strip()


@pytest.mark.parametrize("point", ["before-run-finish", "after-run-finish", "before-run-start"])
async def test_restart_after_a_crash_in_the_finish_window(tmp_path: Path, point: str) -> None:
    db = tmp_path / "crash.sqlite3"
    printed_run_id = crash(db, point)
    service = build_service(Settings(db_path=db, model=ModelSettings(name="demo")), demo_delay=0.0)
    await service.start()  # the restart: recover() sweeps what the crash left
    try:
        store = service.store
        events = [e async for e in store.iter_events("t-crash", after=0)]
        runs = await store.list_runs(thread_id="t-crash")
        assert len(runs) == 1
        record = runs[0]
        mine = [e for e in events if e.run_id == record.run_id]
        starts = [e for e in mine if e.type == "run-start"]
        finishes = [e for e in mine if e.type == "run-finish"]
        history = await service.messages("t-crash")
        if point == "before-run-start":
            # POST chat never returned: no run-finish without a run-start, nothing shown
            assert printed_run_id == "" and mine == []
            assert record.status == "interrupted"
            assert history.messages == []
            assert (await service.status("t-crash")).has_active_run is False
            return
        assert printed_run_id == record.run_id
        assert len(starts) == 1 and len(finishes) == 1, [e.type for e in mine]
        assert mine[-1].type == "run-finish"
        status = json.loads(finishes[0].json)["payload"]["status"]
        assert record.status == status and record.status != "active"
        if point == "before-run-finish":
            assert json.loads(finishes[0].json)["payload"]["reason"] == "crash_interrupted"
        # the stored tree is the fold of the log; history shows it finished
        snapshot = (await store.get_snapshots("t-crash"))[record.run_id]
        assert snapshot == build_agent_tree_wire([e.json for e in mine]).to_wire()
        answer = [m for m in history.messages if m.role == "assistant"]
        assert len(answer) == 1 and answer[0].is_streaming is False
        assert answer[0].agent_tree.to_wire() == snapshot
        # the thread is free: a new message starts a new run
        assert (await service.status("t-crash")).has_active_run is False
    finally:
        await service.shutdown()
