"""A suspended run is resumed by a new process from the SQLite checkpoint alone."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.openai_server import MockResponse

CHILD = Path(__file__).with_name("resume_child.py")
ROOT = Path(__file__).resolve().parents[2]


async def run_child(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("OPENAI_API_KEY", None)
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), *args, cwd=str(ROOT), env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_resume_in_a_fresh_process_from_sqlite(server, tmp_path):
    db = tmp_path / "app.sqlite3"
    marker = tmp_path / "deleted.txt"
    server.set_script([
        MockResponse.call("delete_file", {"path": "/tmp/report.txt"}, text="I'll delete it."),
        MockResponse(text="Done: /tmp/report.txt is gone."),
    ])
    started = await run_child("start", str(db), server.base_url, str(marker))
    assert started["status"] == "suspended" and started["tool_call_id"]
    assert not marker.exists()
    # the first process is gone; only the file remains
    async with SqliteStore(db) as store:
        record = await store.get_checkpoint(started["run_id"])
        assert record is not None and record.status == "suspended" and record.thread_id == "thread-1"
    resumed = await run_child("resume", str(db), server.base_url, str(marker), started["run_id"], started["tool_call_id"])
    assert resumed["status"] == "success", resumed
    assert resumed["text"] == "Done: /tmp/report.txt is gone."
    assert resumed["roles"] == ["assistant", "tool", "assistant"]
    assert marker.read_text() == "/tmp/report.txt\n"
    # the resumed model call saw the whole conversation, rebuilt from storage
    roles = [(m["role"], m.get("content")) for m in server.requests[1].body["messages"]]
    assert roles[:3] == [("system", "You manage files."), ("user", "Please delete /tmp/report.txt"),
                         ("assistant", "I'll delete it.")]
    assert roles[3] == ("tool", "deleted /tmp/report.txt")
    async with SqliteStore(db) as store:
        assert await store.get_checkpoint(started["run_id"]) is None
        stored = [r.role for r in await store.list_messages("thread-1")]
        assert stored == ["user", "assistant", "tool", "assistant"]
    # a second resume of the finished run is refused, and the tool does not run twice
    from instance_ai_tui.runtime.errors import CheckpointNotFound

    from .resume_child import build

    async with SqliteStore(db) as store:
        agent = build(store, server.base_url, marker)
        with pytest.raises(CheckpointNotFound):
            await agent.approve(started["run_id"], started["tool_call_id"])
    assert marker.read_text() == "/tmp/report.txt\n"
