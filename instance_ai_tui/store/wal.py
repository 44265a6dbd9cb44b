"""The SQLite write-ahead log, watched: a WAL deleted under a running process is found and named.

A committed transaction lives in the WAL file (``ia.db-wal``) until a checkpoint copies it into
the database file. Delete the WAL while a process has it open (a clean-up script, a person
tidying a folder) and SQLite goes on writing to the deleted file: nothing fails, but whatever
is not copied into the database file when the process dies (``kill -9``, a power cut) is gone,
and what was copied before stays — a thread row without its last run.

Two defences (``store.sqlite.SqliteStore``):

- the store copies the WAL into the database file as soon as a run finishes or asks a person
  (a commit holding a ``run-finish`` or ``confirmation-request``): what a person was shown as
  done is in the database file itself, whatever happens to the WAL next;
- at open, before SQLite rebuilds its index, ``lost_wal`` reads the wal-index (``ia.db-shm``,
  which survives the process): when it says the WAL held committed frames not yet copied
  (``mxFrame > nBackfill``) and the WAL file is gone, those changes are lost, and the store
  says so in words (``LostWal.message``) instead of opening as if nothing happened.

The wal-index header is SQLite's documented file format (https://sqlite.org/walformat.html):
two copies of a 48-byte ``WalIndexHdr`` (``mxFrame`` at offset 16, page size at 14), then
``WalCkptInfo`` at 96 (``nBackfill`` at 96), in the machine's byte order.
"""

from __future__ import annotations

import logging
import sqlite3
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: ``WalIndexHdr.iVersion`` of every SQLite 3.7+
_WAL_INDEX_VERSION = 3007000
#: event types after whose commit the WAL is copied into the database file at once
CHECKPOINT_AFTER = frozenset({"run-finish", "confirmation-request"})


@dataclass(frozen=True)
class LostWal:
    """Committed changes that were only in a WAL file that is gone."""

    path: Path
    frames: int
    page_size: int

    @property
    def message(self) -> str:
        kb = self.frames * self.page_size / 1000
        return (f"the database {self.path} lost its write-ahead log ({self.path.name}-wal was deleted while "
                f"instance-ai had it open, then the process stopped): the last {self.frames} changed pages "
                f"({kb:,.0f} KB) written after the last copy into the database file are gone. A run that had not "
                "finished by then is missing its newest events (finished runs are copied at once); check the "
                "threads of the last minutes before the stop")


def lost_wal(path: Path) -> LostWal | None:
    """What the wal-index of ``path`` says was lost with a missing WAL (None: nothing, or nothing
    known: no ``-shm`` file, an empty or foreign one, a WAL that is there)."""
    wal = path.with_name(path.name + "-wal")
    shm = path.with_name(path.name + "-shm")
    if wal.exists():
        return None
    try:
        with open(shm, "rb") as fh:
            head = fh.read(136)
    except OSError:
        return None
    if len(head) < 136:
        return None
    order = "<" if sys.byteorder == "little" else ">"
    version, = struct.unpack_from(order + "I", head, 0)
    is_init = head[12]
    page_size, = struct.unpack_from(order + "H", head, 14)
    max_frame, = struct.unpack_from(order + "I", head, 16)
    backfilled, = struct.unpack_from(order + "I", head, 96)
    if version != _WAL_INDEX_VERSION or not is_init or head[:48] != head[48:96]:
        return None  # not a wal-index we can read (or one caught mid-write): say nothing rather than guess
    if max_frame <= backfilled:
        return None
    return LostWal(path, max_frame - backfilled, 65536 if page_size == 1 else page_size)


def copy_if_settled(db: sqlite3.Connection, batch: Iterable[object], path: Path) -> None:
    """After a commit (on the writer thread): when a request of ``batch`` appended a ``run-finish`` or
    ``confirmation-request``, copy the WAL into the database file now, before anyone is told, so what a
    person sees as done does not live in the WAL alone (see the module docstring)."""
    if not any(event.type in CHECKPOINT_AFTER for request in batch for event in getattr(request, "events", ())):
        return
    try:  # PASSIVE: copies every frame no reader still needs, waits for nobody
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error as exc:
        log.warning("copying the WAL of %s into the database file failed: %s", path, exc)
