"""Errors of the storage (SQLite, Redis), raised where the storage is called.

A store wraps what its driver raises (``sqlite3``, ``redis``) into one of these at the call, with a
message that names the part (the database file, the Redis server), what happened and the next step.
Failures are classified by where they were raised, never by an exception's type alone: a timeout
or refused connection of the *model* server is not a storage failure (``is_unavailable``)::

    StoreError                      code "storage"             the message says why and what to do
    ├── StoreClosed                 "storage_closed"           the store is not open (or its writer stopped)
    ├── StorageUnavailable          "storage_unavailable"      down for now: worth a retry (and a 503)
    │   ├── StorageLocked           "storage_locked"           the SQLite file is locked by another program
    │   └── RedisDown               "redis_down"               the Redis server refused, timed out, is loading
    ├── StorageCorrupt              "storage_corrupt"          the file is not a (sound) SQLite database
    ├── StorageReadOnly             "storage_read_only"        the file or its folder cannot be written
    ├── StorageFull                 "storage_full"             the disk is full
    └── StorageWrongSchema          "storage_schema"           a schema this version cannot use
                                                               (``sqlite_schema.SchemaError`` is one)
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class StoreError(RuntimeError):
    """The store cannot do what was asked; the message says why and what to do."""

    code = "storage"
    #: the part that failed, in words
    part = "the storage"


class StoreClosed(StoreError):
    """The store is not open (``open()`` was not awaited, or ``close()`` already was)."""

    code = "storage_closed"


class StorageUnavailable(StoreError):
    """The storage is down or busy for now; trying again later may work."""

    code = "storage_unavailable"


class StorageLocked(StorageUnavailable):
    """The SQLite file is locked by another program (longer than the busy timeout); ``holder_pid``:
    that program's process id when the system says (``lock_holder``)."""

    code = "storage_locked"

    def __init__(self, message: str, holder_pid: int | None = None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


class RedisDown(StorageUnavailable):
    """The Redis server cannot be reached (refused, timed out, loading, cluster down)."""

    code = "redis_down"
    part = "the Redis server"


class StorageCorrupt(StoreError):
    """The database file is damaged or is not a SQLite database."""

    code = "storage_corrupt"


class StorageReadOnly(StoreError):
    """The database file, or the folder it lives in, cannot be written."""

    code = "storage_read_only"


class StorageFull(StoreError):
    """The disk that holds the database is full."""

    code = "storage_full"


class StorageWrongSchema(StoreError):
    """The database has a schema this version of the app cannot use."""

    code = "storage_schema"


_REDIS_UNAVAILABLE = frozenset({"ConnectionError", "TimeoutError", "BusyLoadingError", "ClusterDownError",
                                "TryAgainError", "MasterDownError"})
_SQLITE_TRANSIENT = ("database is locked", "disk i/o error", "unable to open database", "database is busy")


def _storage_driver(exc: BaseException) -> str | None:
    """``"redis"`` / ``"sqlite"`` when ``exc`` was raised by that storage driver itself."""
    module = type(exc).__module__
    if module.startswith("redis"):
        return "redis"
    if module == "sqlite3" or module.startswith(("aiosqlite", "_sqlite3")):
        return "sqlite"
    return None


def is_unavailable(exc: BaseException, *, from_storage: bool = False) -> bool:
    """Whether ``exc`` says the storage is down or unreachable for now (Redis refused or timed out,
    SQLite locked or an I/O error, a closed store): worth a retry and a 503, unlike a bug.

    Only what the storage raised counts: a ``StoreError``, or an exception of the Redis or SQLite
    driver, at ``exc`` or along its explicit causes (``raise ... from``). A plain ``TimeoutError``
    or ``ConnectionError`` counts only when the caller knows it came out of a storage call
    (``from_storage``: the event bus, the store). A model error (``runtime.errors.ModelError``)
    never does, whatever it wraps: its refused connection is the model server's."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StoreError):
            return isinstance(current, StoreClosed | StorageUnavailable)
        if type(current).__module__.endswith("runtime.errors"):
            return False  # a model failure: never the storage's
        driver = _storage_driver(current)
        if driver == "redis" and any(c.__name__ in _REDIS_UNAVAILABLE for c in type(current).__mro__):
            return True
        if driver == "sqlite" and type(current).__name__ == "OperationalError":
            if any(text in str(current).lower() for text in _SQLITE_TRANSIENT):
                return True
        if from_storage and isinstance(current, ConnectionError | TimeoutError):
            return True
        current = current.__cause__
    return False


def storage_error(exc: BaseException) -> StoreError | None:
    """The ``StoreError`` that ``exc`` is or was raised from (its explicit causes); an error the
    Redis or SQLite driver raised itself, as the class that says what it means (``RedisDown``,
    ``StorageLocked``, ...); else None (not the storage's)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, StoreError):
            return current
        if type(current).__module__.endswith("runtime.errors"):
            return None  # a model failure
        driver = _storage_driver(current)
        if driver == "redis":
            if is_unavailable(current):
                return RedisDown(f"the Redis server did not answer ({str(current).strip() or type(current).__name__}): "
                                 "is it running? (--redis URL)")
            return StoreError(f"the Redis server refused the request: {current}")
        if driver == "sqlite":
            return sqlite_error(None, current, "write")
        current = current.__cause__
    return None


#: bytes free on the database's disk under which a "disk I/O error" means the disk is full
FULL_BELOW = 4_000_000


def free_bytes(path: Path | None) -> int | None:
    """Bytes free (for this user) on the disk that holds ``path`` (its nearest existing folder); None: unknown."""
    if path is None:
        return None
    import shutil

    for folder in (path, *path.parents):
        try:
            if folder.exists():
                return shutil.disk_usage(folder if folder.is_dir() else folder.parent).free
        except OSError:
            return None
    return None


def sqlite_error(path: Path | None, exc: BaseException, doing: str = "open") -> StoreError:
    """What ``sqlite3`` (or the file system) said about the database ``path`` (None: not known
    here), as the ``StoreError`` that names the file, the cause and the fix."""
    detail = str(exc).strip() or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        detail = exc.strerror
    low = detail.lower()
    code = getattr(exc, "errno", None)
    db = f"the database {path}" if path is not None else "the database"
    another = "or open another database with --db PATH"
    if "locked" in low or "busy" in low:
        pid = lock_holder(path) if path is not None else None
        program = f"another program (PID {pid})" if pid is not None else "another program"
        return StorageLocked(f"cannot {doing} {db}: it is locked by {program} ({detail}); "
                             f"close the other instance-ai that uses it, {another}", pid)
    free = free_bytes(path)
    # SQLite says "disk I/O error" when the disk is full at the wrong moment (its -shm file, a WAL
    # frame): with (almost) nothing free on the database's disk, that is what happened
    if code == errno.ENOSPC or "disk is full" in low or "database or disk is full" in low or (
            ("disk i/o error" in low or code == errno.EIO) and free is not None and free < FULL_BELOW):
        room = f"{free / 1_000_000:.1f} MB free" if free is not None else detail
        return StorageFull(f"cannot {doing} {db}: the disk is full ({room}); free some space, "
                           f"{another} on another disk")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "readonly" in low or "read-only" in low \
            or "permission denied" in low or "unable to open database" in low:
        folder = f" and of its folder {path.parent}" if path is not None else " and of its folder"
        return StorageReadOnly(f"cannot {doing} {db}: it cannot be written ({detail}); check the "
                               f"permissions of the file{folder}, {another}")
    if "not a database" in low or "malformed" in low or "corrupt" in low or "file is encrypted" in low:
        aside = f"move it aside (mv {path} {path}.broken)" if path is not None else "move it aside"
        return StorageCorrupt(f"{db} is damaged or is not a SQLite database ({detail}); {aside} to start "
                              f"afresh, {another}")
    return StoreError(f"cannot {doing} {db}: {detail}; {another}")


def write_failure(path: Path, exc: Exception) -> Exception:
    """A write's failure as its caller gets it (``store.sqlite``, on the writer thread): the disk (full,
    failing) or a lock another program holds, in words that name ``path``, the space left, the holder's
    PID (``sqlite_error``); any other as raised."""
    if type(exc).__name__ == "OperationalError" and any(
            text in str(exc).lower() for text in ("disk is full", "disk i/o error", "locked", "busy")):
        said = sqlite_error(path, exc, "write")
        said.__cause__ = exc
        return said
    return exc


def lock_holder(path: Path, locks: Path = Path("/proc/locks")) -> int | None:
    """The process that holds a write lock on the SQLite database ``path`` (its file, ``-wal`` or
    ``-shm``: WAL's writer lock is a byte of the ``-shm`` file), not this one; ``None`` where the
    system does not say (no ``/proc/locks``, an OFD lock, the lock already gone)."""
    import os

    inodes: set[int] = set()
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            inodes.add(os.stat(name).st_ino)
        except OSError:
            continue
    try:
        lines = locks.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    own = os.getpid()
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a process waiting for the lock, not holding it
            continue
        # ``N: POSIX  ADVISORY  WRITE 1234 fe:00:2164065 120 120``
        if len(fields) < 6 or fields[3] != "WRITE" or not fields[4].isdigit():
            continue
        device = fields[5].split(":")
        if len(device) != 3 or not device[2].isdigit():
            continue
        pid, inode = int(fields[4]), int(device[2])
        if pid != own and inode in inodes:
            return pid
    return None


def waiting_words(exc: BaseException) -> str:
    """What a write waits for while the storage is unavailable, in a few words for a status line:
    "the database is locked by another program (PID 4242)", "the Redis server does not answer"."""
    stored = storage_error(exc)
    if isinstance(stored, StorageLocked):
        pid = f" (PID {stored.holder_pid})" if stored.holder_pid else ""
        return f"the database is locked by another program{pid}"
    if isinstance(stored, RedisDown):
        return "the Redis server does not answer"
    return "the storage is unavailable"


#: how long a write the storage refused for now (locked, Redis down) is tried again before it fails
RETRY_FOR = 60.0


async def retry_while_unavailable(operation: Callable[[], Awaitable[T]], *, what: str,
                                  retry_for: float = RETRY_FOR) -> T:
    """``await operation()``, tried again with back-off (up to 1 s apart) for ``retry_for`` seconds
    while the storage says it is unavailable for now (``StorageUnavailable``: the SQLite file locked
    by another program longer than the busy timeout, Redis down), as the run's events are
    (``assistant.emitter``); any other failure, a closed store, or the time up: raised as it is.
    ``what``: the write in words, for the one warning logged when the first try fails."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + retry_for
    attempt = 0
    while True:
        try:
            return await operation()
        except Exception as exc:
            stored = storage_error(exc)
            if not isinstance(stored, StorageUnavailable) or loop.time() >= give_up_at:
                raise
            if attempt == 0:
                log.warning("%s: %s; trying again for up to %d s", what, stored, round(retry_for))
            attempt += 1
            await asyncio.sleep(min(1.0, 0.05 * 2**attempt))
