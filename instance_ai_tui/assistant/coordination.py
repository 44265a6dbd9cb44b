"""Run coordination: which process runs a thread's run, and how cancel/confirm reach it.

The run manager keeps its runs in memory; a ``RunCoordinator`` decides what that means when
several processes serve the same threads (``bus.redis_control.RedisCoordinator``) or only one
(``LocalCoordinator``, the default):

* ``acquire(thread, run)`` before a run starts or resumes, ``release`` when it suspends or ends:
  at most one process holds a thread at a time (the one-active-run-per-thread rule across
  processes). A suspended run holds no lock: its stored run record keeps the thread busy.
* ``cancel_elsewhere`` / ``confirm_elsewhere``: the run manager has no such run or request in
  memory, so the coordinator finds the process that has it (or takes an orphaned run over).
* ``recover(record)``: a run found ``active`` or ``suspended`` in the store at start. The
  coordinator sweeps or adopts it only when no live process owns it.

The coordinator calls back into the run manager through ``CoordinatedRuns`` (implemented by
``run_manager.RunManager``).
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any, Protocol

from ..protocol.api import ConfirmBody, ConfirmResponse
from ..store.base import RunRecord, Store
from .errors import AssistantError, ConfirmationNotFound


class RunOwnerUnavailable(AssistantError):
    """The process that runs this thread's run did not answer (it may be stopping): try again."""

    status = 503


def default_instance_id() -> str:
    """``<hostname>-<pid>-<random>``: unique per process, readable in logs and run records."""
    host = socket.gethostname().split(".")[0] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def check_instance_id(value: str) -> str:
    if not value or len(value) > 100 or any(c in value for c in "|\n\r\t ") or not value.isprintable():
        raise ValueError(f"invalid instance id {value!r}: 1-100 printable characters, no spaces or '|'")
    return value


class CoordinatedRuns(Protocol):
    """What a coordinator needs of the run manager."""

    store: Store

    def live(self, thread_id: str) -> Any: ...
    def live_runs(self) -> list[Any]: ...
    def has_request(self, request_id: str) -> bool: ...
    async def cancel(self, thread_id: str, reason: str = "user_cancelled", *, route: bool = True) -> bool: ...
    async def confirm(self, request_id: str, body: ConfirmBody, *, route: bool = True) -> ConfirmResponse: ...
    async def sweep_orphan(self, record: RunRecord) -> None: ...
    async def adopt(self, record: RunRecord) -> None: ...
    def abandon(self, thread_id: str, run_id: str) -> None: ...


class RunCoordinator(Protocol):
    #: this process's id; stored as ``RunRecord.owner`` of the runs it starts or adopts
    instance_id: str

    async def start(self, runs: CoordinatedRuns) -> None:
        """Begin (heartbeats, sweeper, control channel). Called once, before ``recover``."""
        ...

    async def stop(self) -> None: ...

    async def acquire(self, thread_id: str, run_id: str) -> bool:
        """Hold ``thread_id`` for ``run_id`` (starting or resuming it); False when another run has it."""
        ...

    async def release(self, thread_id: str, run_id: str, *, finished: bool) -> None:
        """Let go of the thread (the run suspended, or ``finished``). Never raises."""
        ...

    async def recover(self, record: RunRecord) -> None:
        """A run left ``active``/``suspended`` in the store: sweep or adopt it if nobody owns it."""
        ...

    async def cancel_elsewhere(self, thread_id: str, reason: str) -> bool:
        """Cancel a run this process does not hold; False when the thread has none."""
        ...

    async def confirm_elsewhere(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        """Answer a confirmation this process does not hold (``ConfirmationNotFound`` if nobody does)."""
        ...


class LocalCoordinator:
    """One process owns every run: nothing to route; what the store says is unfinished at start
    was left by a crash (``active`` runs are swept, ``suspended`` ones reloaded)."""

    def __init__(self, instance_id: str | None = None) -> None:
        self.instance_id = instance_id or default_instance_id()
        self._held: dict[str, str] = {}
        self._runs: CoordinatedRuns | None = None

    async def start(self, runs: CoordinatedRuns) -> None:
        self._runs = runs

    async def stop(self) -> None:
        self._held.clear()

    async def acquire(self, thread_id: str, run_id: str) -> bool:
        holder = self._held.get(thread_id)
        if holder is not None and holder != run_id:
            return False
        self._held[thread_id] = run_id
        return True

    async def release(self, thread_id: str, run_id: str, *, finished: bool) -> None:
        if self._held.get(thread_id) == run_id:
            del self._held[thread_id]

    async def recover(self, record: RunRecord) -> None:
        assert self._runs is not None, "start() first"
        if record.status == "active":
            await self._runs.sweep_orphan(record)
        elif record.status == "suspended":
            await self._runs.adopt(record)

    async def cancel_elsewhere(self, thread_id: str, reason: str) -> bool:
        return False

    async def confirm_elsewhere(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        raise ConfirmationNotFound(f"no pending confirmation {request_id!r} (answered, cancelled or unknown)")
