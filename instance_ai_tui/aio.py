"""Closing async iterators: the one ``aclosing`` of the package (a leaf: imports nothing of ours).

``contextlib.aclosing`` needs an ``aclose`` method; the iterators passed around here are typed
``AsyncIterator`` (a bus subscription, a store's pages, a model's stream) and only the async
generators among them have one. ``aclose(iterator)`` closes one if it can; ``aclosing(iterator)``
is the ``async with`` form, so a consumer that stops early (a break, an exception, a
cancellation) closes the producer at once instead of leaving it to the garbage collector.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


async def aclose(iterator: AsyncIterator[Any]) -> None:
    """Close ``iterator`` if it has an ``aclose`` (an async generator does); else do nothing."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()


class aclosing(Generic[T]):  # named as contextlib's, which it replaces
    """``async with aclosing(source) as items: async for item in items: ...`` closes ``source``
    on the way out, whatever ends the block."""

    __slots__ = ("_iterator",)

    def __init__(self, iterator: AsyncIterator[T]) -> None:
        self._iterator = iterator

    async def __aenter__(self) -> AsyncIterator[T]:
        return self._iterator

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await aclose(self._iterator)


