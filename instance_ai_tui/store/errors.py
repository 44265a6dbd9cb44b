"""Errors a store raises for conditions a user can cause (bad file, closed store, old app)."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The store cannot do what was asked; the message says why and what to do."""


class StoreClosed(StoreError):
    """The store is not open (``open()`` was not awaited, or ``close()`` already was)."""


_UNAVAILABLE_NAMES = frozenset({"ConnectionError", "TimeoutError", "BusyLoadingError", "ClusterDownError",
                                "TryAgainError", "MasterDownError"})
_SQLITE_TRANSIENT = ("database is locked", "disk i/o error", "unable to open database", "database is busy")


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the storage is down or unreachable for now (Redis
    connection refused or timed out, SQLite locked or I/O error, a closed store) — worth a retry
    and a 503, unlike a bug."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StoreClosed | ConnectionError | TimeoutError):
            return True
        kind = type(current)
        if kind.__module__.startswith("redis") and any(c.__name__ in _UNAVAILABLE_NAMES for c in kind.__mro__):
            return True
        if kind.__module__ == "sqlite3" and kind.__name__ == "OperationalError":
            if any(text in str(current).lower() for text in _SQLITE_TRANSIENT):
                return True
        current = current.__cause__ or current.__context__
    return False
