"""Work for a worker that is not a coroutine until the worker starts it.

``run_worker(self.refresh(), exclusive=True)`` builds the coroutine at once; when a later
exclusive worker of the group replaces this one before it started, the coroutine is never awaited
(Python warns; the work silently never ran). ``Deferred(self.refresh)`` is awaitable like the
coroutine, but calls the function only when awaited, so a replaced worker leaves nothing behind.
(Textual also accepts a coroutine function, but its ``WorkType`` cannot be typed for one.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class Deferred(Generic[R]):
    __slots__ = ("_call",)

    def __init__(self, function: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs) -> None:
        self._call: Callable[[], Awaitable[R]] = lambda: function(*args, **kwargs)

    def __await__(self) -> Generator[Any, None, R]:
        return self._call().__await__()
