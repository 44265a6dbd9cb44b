"""The one way tests wait: for a condition, never for a fixed time.

``await until(lambda: ..., pilot)`` returns as soon as the condition holds and fails, naming the
condition, only after ``timeout`` seconds. The default is long on purpose: a condition that holds
costs no more with a long timeout, while a short one fails a correct app on a loaded 2-core
machine (the suite must pass with two CPU-bound processes beside it, and without reruns).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

#: seconds before a condition counts as never reached
DEFAULT_TIMEOUT = 30.0


def _describe(predicate: Callable[[], Any], what: str | Callable[[], str]) -> str:
    if callable(what):
        return what()
    if what:
        return what
    code = getattr(predicate, "__code__", None)
    if code is None:
        return repr(predicate)
    try:
        source = inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        source = ""
    return f"{code.co_filename}:{code.co_firstlineno} {source[:160]}"


async def until(predicate: Callable[[], Any], pilot: Any = None, timeout: float = DEFAULT_TIMEOUT,
                what: str | Callable[[], str] = "", interval: float = 0.02) -> None:
    """Wait until ``predicate()`` is true (checked every ``interval`` seconds; with a Textual
    ``pilot``, by ``pilot.pause`` so the app processes its messages meanwhile). ``what`` names the
    condition in the failure, or is called then to say what is still missing."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached in {timeout} s: {_describe(predicate, what)}")
        if pilot is not None:
            await pilot.pause(interval)
        else:
            await asyncio.sleep(interval)


async def until_async(predicate: Callable[[], Awaitable[Any]], timeout: float = DEFAULT_TIMEOUT,
                      what: str = "", interval: float = 0.02) -> None:
    """``until`` for a condition that must be awaited (a query of a server or a store)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached in {timeout} s: {_describe(predicate, what)}")
        await asyncio.sleep(interval)


async def until_settled(client: Any, thread_id: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Until the thread's run is over: neither running nor waiting for an answer (``client`` is
    any ``Client``: its ``status`` names both)."""

    async def settled() -> bool:
        status = await client.status(thread_id)
        return not status.has_active_run and not status.is_suspended

    await until_async(settled, timeout, f"the run of {thread_id} settled")
