"""An MCP server's start waits for a quiet event loop before it imports the ``mcp`` SDK (issue 44.2).

The import holds the interpreter's lock for about half a CPU-second: started at once, it slowed
the app's first message by 12-50 % with three servers configured (``launch_to_ready``'s ``mcp3``).
Nothing here asserts a time: the order of what happened, and that the wait has an end."""

from __future__ import annotations

import asyncio
import time

import pytest

from instance_ai_tui.assistant.mcp import connection
from instance_ai_tui.assistant.mcp.connection import quiet_moment


async def _busy(ticks: int, said: list[str]) -> None:
    """The loop kept busy: each turn blocks it for 30 ms (a first frame, a message being sent)."""
    for _ in range(ticks):
        time.sleep(0.03)  # noqa: ASYNC251 - blocking the loop is what this test is about
        await asyncio.sleep(0)
    said.append("busy ended")


async def test_the_sdk_is_imported_once_the_loop_has_nothing_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(connection, "_SDK_MODULES", ("instance_ai_tui_not_imported_yet",))
    monkeypatch.setattr(connection, "_import_sdk", lambda: said.append("imported"))
    monkeypatch.setattr(connection, "QUIET_WAIT", 30.0)
    busy = asyncio.create_task(_busy(10, said))
    await connection.load_sdk()
    await busy
    assert said == ["busy ended", "imported"]


async def test_a_loop_never_quiet_delays_the_start_no_longer_than_the_limit() -> None:
    said: list[str] = []
    busy = asyncio.create_task(_busy(1_000_000, said))
    try:
        await quiet_moment(limit=0.2)
        said.append("started anyway")
    finally:
        busy.cancel()
    assert said == ["started anyway"]
