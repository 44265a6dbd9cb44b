"""The runs of this process that have not finished, shared by the run manager and recovery.

``RunTable`` holds each thread's ``ActiveRun`` (running or waiting for the person), which thread each
pending confirmation belongs to, and a lock per thread while someone holds or waits for it. The run
manager (``assistant.run_manager``) starts, resumes and ends runs in it; recovery after a restart
(``assistant.run_recovery``) puts the suspended runs it reloads into it and ends what cannot resume,
through the manager's ``RunEnds`` (the one way a run ends: its ``run-finish`` stored, then the record,
then delivered). Neither imports the other's module for it: both import this one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..runtime.usage import Usage

if TYPE_CHECKING:
    from ..protocol.events import Event
    from ..runtime.agent import AgentStream
    from ..store.base import RunRecord, StoredEvent
    from .confirmations import PendingConfirmation
    from .context import RunContext
    from .emitter import RunEmitter

#: what a tool call cut by a process restart is told
INTERRUPTED_TOOL = "Interrupted by a process restart — effect unverified; verify before retrying."
#: the run record's key for the title generation's usage (added to ``usage`` when the run ends)
TITLE_USAGE_KEY = "titleUsage"

RunStatus = Literal["active", "suspended"]


@dataclass
class ActiveRun:
    """A run of this process that has not finished (running or waiting for the user)."""

    ctx: RunContext
    message_id: str
    user_text: str
    record: RunRecord
    status: RunStatus = "active"
    stream: AgentStream | None = None
    task: asyncio.Task[None] | None = None
    confirmations: dict[str, PendingConfirmation] = field(default_factory=dict)
    cancel_reason: str | None = None
    title_task: asyncio.Task[None] | None = None
    finished: asyncio.Future[str] | None = None
    finishing: bool = False
    #: tokens and cost so far: the orchestrator's (cumulative over its suspensions) with its sub-agents'
    usage: Usage = field(default_factory=Usage)
    #: the title generation's
    title_usage: Usage = field(default_factory=Usage)
    #: input tokens of the orchestrator's last model request (the context window in use)
    context_tokens: int = 0
    #: the model's context window as the runtime knows it now (0: a guess, not shown)
    context_window: int = 0

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    @property
    def thread_id(self) -> str:
        return self.ctx.thread_id


@dataclass(slots=True)
class _LockEntry:
    lock: asyncio.Lock
    users: int = 0


class RunTable:
    """The unfinished runs of one assistant service, by thread (see the module docstring)."""

    def __init__(self) -> None:
        self.runs: dict[str, ActiveRun] = {}
        #: request id of a pending confirmation -> its thread
        self.by_request: dict[str, str] = {}
        self._locks: dict[str, _LockEntry] = {}

    def get(self, thread_id: str) -> ActiveRun | None:
        return self.runs.get(thread_id)

    def add(self, run: ActiveRun) -> None:
        self.runs[run.thread_id] = run
        for request_id in run.confirmations:
            self.by_request[request_id] = run.thread_id

    def remove(self, run: ActiveRun) -> None:
        """``run`` is over here (finished, or taken over by another process)."""
        if self.runs.get(run.thread_id) is run:
            del self.runs[run.thread_id]
        for request_id in run.confirmations:
            self.by_request.pop(request_id, None)

    def thread_of(self, request_id: str) -> str | None:
        return self.by_request.get(request_id)

    def locked(self, thread_id: str) -> bool:
        """Someone holds or waits for the thread's lock (a run is starting)."""
        return thread_id in self._locks

    @contextlib.asynccontextmanager
    async def lock(self, thread_id: str) -> AsyncIterator[None]:
        """The thread's lock, held for the block. It exists only while someone holds or waits
        for it (a lock per thread id ever seen grew without bound)."""
        entry = self._locks.get(thread_id)
        if entry is None:
            entry = self._locks[thread_id] = _LockEntry(asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._locks.get(thread_id) is entry:
                del self._locks[thread_id]


class RunEnds(Protocol):
    """How a run's end is written (the run manager's): what recovery uses to end what cannot resume."""

    async def run_events(self, thread_id: str, run_id: str, first_id: int | None = None,
                         upto: int | None = None) -> list[StoredEvent]: ...

    async def save_snapshot(self, thread_id: str, run_id: str, first_id: int | None = None,
                            last: Event | None = None) -> None: ...

    async def complete_checkpoint(self, run_id: str) -> None: ...

    async def count_usage(self, thread_id: str, run_id: str, usage: Usage,
                          context_tokens: int = 0, context_window: int = 0) -> dict[str, Any]: ...

    async def publish_finish(self, emitter: RunEmitter, finish_event: Event,
                             record: Callable[[], Awaitable[None]]) -> None: ...

    async def end_suspended(self, run: ActiveRun, status: str, reason: str) -> None: ...

    def publish_request(self, run: ActiveRun, pending: PendingConfirmation) -> None: ...
