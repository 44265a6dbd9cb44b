"""A turn finished while another program holds the SQLite lock is kept (issue 39.1, mid-run).

Found by hand: a second process took ``BEGIN EXCLUSIVE`` on the app's database while an answer
streamed; the answer finished, its messages could not be saved within the busy timeout, and the
run failed ("storage unavailable"), the model's answer lost from the thread, though the events of
the run were held and stored once the lock went. Now the turn's messages are tried again while the
storage says it is locked (``store.errors.retry_while_unavailable``, as the run's events are): the
run succeeds and the thread has the turn once the other program lets go.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import TextDeltaChunk
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.store.errors import StorageLocked, StoreClosed, retry_while_unavailable
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.openai_server import MockOpenAIServer, MockResponse

HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


async def test_a_turn_finished_while_another_program_holds_the_lock_is_saved(
        server: MockOpenAIServer, make_model: Callable[..., OpenAIModel], tmp_path: Path) -> None:
    server.set_script([MockResponse(text="The answer, kept.", chunk_delay=0.05)])
    db = tmp_path / "db.sqlite3"
    async with SqliteStore(db, busy_timeout=0.2) as store:
        agent = Agent("main", "x", make_model(), memory=StoreMemory(store))
        holder: subprocess.Popen[str] | None = None
        stream = agent.stream("hello", thread_id="t1")
        try:
            async for chunk in stream:
                if isinstance(chunk, TextDeltaChunk) and holder is None:  # mid-answer: the lock is taken
                    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,  # noqa: ASYNC220 - the second program; returns at once
                                              stdout=subprocess.PIPE, text=True)
                    assert holder.stdout is not None
                    assert (await asyncio.to_thread(holder.stdout.readline)).strip() == "held"
                    asyncio.get_running_loop().call_later(1.0, release, holder)  # after 5 busy timeouts
            result = await stream.result()
        finally:
            if holder is not None:
                release(holder)
                await asyncio.to_thread(holder.wait, 10)
        assert holder is not None
        assert result.status == "success" and result.text == "The answer, kept.", result.error
        stored = await store.list_messages("t1")
        assert [record.role for record in stored] == ["user", "assistant"]


def release(holder: subprocess.Popen[str]) -> None:
    if holder.stdin is not None and not holder.stdin.closed:
        holder.stdin.write("\n")
        holder.stdin.close()


async def test_only_a_storage_that_is_unavailable_for_now_is_tried_again() -> None:
    tries: list[str] = []

    async def locked_twice() -> str:
        tries.append("locked")
        if len(tries) < 3:
            raise StorageLocked("cannot write the database x: it is locked by another program (PID 1)", 1)
        return "written"

    assert await retry_while_unavailable(locked_twice, what="a write") == "written" and len(tries) == 3

    async def closed() -> None:
        tries.append("closed")
        raise StoreClosed("the store is closed")

    with pytest.raises(StoreClosed):  # a closed store (shutting down) is not waited for
        await retry_while_unavailable(closed, what="a write")
    assert tries.count("closed") == 1

    async def bug() -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        await retry_while_unavailable(bug, what="a write")

    async def always_locked() -> None:
        raise StorageLocked("locked", None)

    with pytest.raises(StorageLocked):  # the time is up: raised as it is
        await retry_while_unavailable(always_locked, what="a write", retry_for=0.3)


def test_a_run_failed_by_a_lock_names_the_lock_not_a_server() -> None:
    """A lock held longer than the retries: the run's error says the storage and the lock's holder
    in the embedded app too, where there is no server (before: "the server could not save")."""
    from instance_ai_tui.assistant.errors import describe_failure

    locked = StorageLocked("cannot write the database /d/ia.db: it is locked by another program (PID 4242) "
                           "(database is locked); close the other instance-ai that uses it", 4242)
    content, reason, code = describe_failure(locked, str(locked), None)
    assert content.startswith("storage unavailable: this run's progress could not be saved.")
    assert "locked by another program (PID 4242)" in content and "server" not in content
    assert code == "storage_locked" and "server" not in reason
