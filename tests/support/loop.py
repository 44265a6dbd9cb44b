"""Watching the event loop: how long it went without running a ready task."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def loop_gaps(tick: float = 0.01) -> AsyncIterator[list[float]]:
    """The gaps between ticks of a heartbeat task while the block runs (a stalled loop shows
    as a long gap): ``async with loop_gaps() as gaps: ...; assert max(gaps) < 1.0``."""
    gaps: list[float] = []

    async def heartbeat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(tick)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    try:
        yield gaps
    finally:
        beat.cancel()
        gaps.append(0.0)  # never empty
