"""Watching the event loop: whether it ran other tasks while a block ran."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class LoopTurns:
    """How many times a heartbeat task on the loop ran while the block ran (``count``): 0 when the
    block held the loop (it ran without ever giving the loop back), more when other tasks ran
    meanwhile. A count, not a clock: a busy machine runs fewer of them, never none."""

    count: int = 0


@asynccontextmanager
async def loop_turns() -> AsyncIterator[LoopTurns]:
    """``async with loop_turns() as turns: await work(); assert turns.count > 0``: the loop ran other
    tasks while ``work`` ran (the heartbeat is started and has run once before the block starts)."""
    turns = LoopTurns()
    started = asyncio.Event()

    async def heartbeat() -> None:
        started.set()
        while True:
            await asyncio.sleep(0.001)
            turns.count += 1

    beat = asyncio.create_task(heartbeat())
    await started.wait()
    try:
        yield turns
    finally:
        beat.cancel()
