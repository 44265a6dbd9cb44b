"""The assistant service's public surface: what the server and the embedded client call.

``assistant.service.InstanceAI`` implements it on a ``Store`` and an ``EventBus``.
Errors are those of ``assistant.errors``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ..protocol.api import (
    ConfirmBody,
    ConfirmResponse,
    ModelList,
    RewindResponse,
    ThreadInfo,
    ThreadMessages,
    ThreadPermissions,
    ThreadStatus,
)
from ..store.base import StoredEvent


@runtime_checkable
class AssistantService(Protocol):
    #: label of the model for the UI, e.g. "gpt-4o-mini" or "demo (offline)"
    model_label: str

    async def start(self) -> None:
        """Open storage, sweep runs a crash left unfinished, start background sweepers."""
        ...

    async def shutdown(self) -> None:
        """End active runs with ``run-finish {cancelled, service_shutdown}``; keep suspended ones."""
        ...

    async def list_threads(self, search: str | None = None) -> list[ThreadInfo]: ...
    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo: ...
    async def get_thread(self, thread_id: str) -> ThreadInfo: ...
    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo: ...
    async def delete_thread(self, thread_id: str) -> None: ...

    async def send(self, thread_id: str, text: str) -> str:
        """Start a run (creating the thread if new); returns the runId. ``RunActive`` if busy."""
        ...

    async def cancel(self, thread_id: str) -> bool:
        """Idempotent; True if a run was cancelled."""
        ...

    def storage_wait(self, thread_id: str) -> str:
        """What the thread's run waits for in the storage, in words ("" when nothing)."""
        ...

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse: ...

    def events(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        """Stored events with id > after, then live ones."""
        ...

    def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        """``events`` in lists (never empty): a page of the log, a live batch (a reader of a long
        log takes it a page at a time)."""
        ...

    async def models(self, thread_id: str | None = None) -> ModelList:
        """The models a thread can use (``/model``), the one it uses, context windows."""
        ...

    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        """Use model ``name`` in the thread from its next run on (``InvalidRequest`` if it cannot be built)."""
        ...

    async def compact(self, thread_id: str, keep: str = "") -> str:
        """A run that compacts the thread's context into notes (``/compact``); its runId."""
        ...

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        """Supersede the turn of ``message_id`` and every later one (``RunActive`` if busy)."""
        ...

    async def messages(self, thread_id: str, *, limit: int | None = None, page: int = 0) -> ThreadMessages:
        """The thread's history; with ``limit``, one page of it (page 0 the newest)."""
        ...
    async def status(self, thread_id: str) -> ThreadStatus: ...
    async def permissions(self, thread_id: str) -> ThreadPermissions:
        """The thread's "always allow" grants."""
        ...

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        """Revoke one grant (404 ``PermissionNotFound`` if the thread has none for it)."""
        ...
