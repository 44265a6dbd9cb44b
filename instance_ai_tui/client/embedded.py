"""``EmbeddedClient``: the assistant in this process (SQLite store, in-process bus), no HTTP.

Give it ``Settings`` (it builds, starts and shuts down its own ``InstanceAI``) or a ready
``AssistantService`` (the caller starts and shuts it down). Assistant errors become the
client errors of ``client.base`` (409 -> ``RunActiveError``, 404 -> ``NotFoundError``, ...),
so callers handle the embedded and the remote client the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..aio import aclosing
from ..assistant import factory  # (light: the assistant itself is imported when a service is built)
from ..assistant.errors import AssistantError
from ..protocol.ingest import Batch, Item, Page, StreamItem, decode_lines, events_of, join
from .base import (
    Client,
    ClientError,
    ConnectionState,
    StorageError,
    for_status,
)


class LoggedEvent(Protocol):
    """What the client reads of an event the assistant hands it (the store's ``StoredEvent``)."""

    @property
    def id(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def json(self) -> str: ...
    @property
    def event(self) -> Event | None: ...


if TYPE_CHECKING:  # the wire models load after the app's first frame (start-up time)
    from ..assistant.service_api import AssistantService
    from ..config import Settings
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
    from ..protocol.events import Event
    from ..protocol.mcp import McpPromptText, McpStatus


def client_error(exc: AssistantError) -> ClientError:
    """The client error for an assistant error: the class its HTTP status maps to (``for_status``)."""
    return for_status(exc.status, exc.message)


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    from ..assistant.errors import StoreError  # the store's errors, as the assistant hands them on

    try:
        yield
    except AssistantError as exc:
        raise client_error(exc) from None
    except StoreError as exc:  # the database (or Redis) the assistant runs on: its own words and class
        raise StorageError(str(exc), exc.code, holder_pid=getattr(exc, "holder_pid", None)) from None


class EmbeddedClient(Client):
    """Runs ``InstanceAI`` in process."""

    mode = "embedded"

    def __init__(self, source: Settings | AssistantService | None = None, **service_options: Any) -> None:
        """``service_options`` go to ``assistant.factory.build_service`` (e.g. ``demo_delay``)."""
        super().__init__()
        self._service_options = service_options
        # settings or nothing: the service is built in ``open`` (the assistant is a large
        # import, which the app makes after its first frame through ``preload``)
        from ..config import Settings, load_settings

        if source is None or isinstance(source, Settings):
            self._service: AssistantService | None = None
            self._settings: Settings | None = source if source is not None else load_settings()
            self._owns_service = True
        else:
            self._service = source
            self._settings = None
            self._owns_service = False
        self._opened = False

    @property
    def service(self) -> AssistantService:
        if self._service is None:
            raise ClientError("the embedded client is not open yet (call open() or use 'async with')")
        return self._service

    def preload(self) -> None:
        """The in-process assistant is a large import (the runtime, the tools, the store)."""
        if self._service is None:
            from ..assistant import factory, service  # noqa: F401  (the model's adapter is light: httpx, no SDK)
        # the model's first request (list_models at the first frames, or the first message's) imported
        # anyio's asyncio backend and sniffio on the loop: 30 ms of CPU in one turn
        from .remote import warm_http_stack

        warm_http_stack()

    async def open(self) -> None:
        if self._opened:
            return
        if self._service is None:
            assert self._settings is not None
            try:
                with _translated():  # (a data folder that cannot be made is the storage's failure)
                    # in a thread: the model's HTTP client and its TLS context, the store and the tools
                    # are built in 60-140 ms of CPU, one turn of the loop that keys typed at start waited for
                    self._service = await asyncio.to_thread(factory.build_service, self._settings, **self._service_options)
            except ValueError as exc:
                raise ClientError(f"cannot start the assistant: {exc}") from None
        if self._owns_service:
            with _translated():
                await self._service.start()
        self.model_name = self._service.model_label
        self._opened = True
        self._set_state(ConnectionState.EMBEDDED)

    async def close(self) -> None:
        if not self._opened:
            return
        self._opened = False
        if self._owns_service and self._service is not None:
            await self._service.shutdown()
            self._service = None
        self._set_state(ConnectionState.OFFLINE, "closed")

    # ----------------------------------------------------------------- threads
    async def list_threads(self) -> list[ThreadInfo]:
        with _translated():
            return await self.service.list_threads()

    async def search_threads(self, query: str) -> list[ThreadInfo]:
        """Full text: titles and what the user and the assistant wrote (the store's index)."""
        with _translated():
            return await self.service.list_threads(search=query)

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        with _translated():
            return await self.service.create_thread(thread_id, title)

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        with _translated():
            return await self.service.rename_thread(thread_id, title)

    async def delete_thread(self, thread_id: str) -> None:
        with _translated():
            await self.service.delete_thread(thread_id)

    # ----------------------------------------------------------------- runs
    async def send(self, thread_id: str, text: str) -> str:
        with _translated():
            return await self.service.send(thread_id, text)

    async def cancel(self, thread_id: str) -> None:
        with _translated():
            await self.service.cancel(thread_id)

    def storage_wait(self, thread_id: str | None) -> str:
        return self._service.storage_wait(thread_id) if self._service is not None and thread_id else ""

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        with _translated():
            return await self.service.confirm(request_id, body)

    async def messages(self, thread_id: str) -> ThreadMessages:
        with _translated():
            return await self.service.messages(thread_id)

    async def recent_messages(self, thread_id: str, limit: int) -> ThreadMessages:
        with _translated():
            return await self.service.messages(thread_id, limit=limit)

    async def status(self, thread_id: str) -> ThreadStatus:
        with _translated():
            return await self.service.status(thread_id)

    can_rewind = True
    can_switch_model = True
    can_compact = True

    async def compact(self, thread_id: str, keep: str = "") -> str:
        with _translated():
            return await self.service.compact(thread_id, keep)

    async def list_models(self, thread_id: str | None = None) -> ModelList:
        with _translated():
            return await self.service.models(thread_id)

    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        with _translated():
            return await self.service.set_model(thread_id, name)

    async def permissions(self, thread_id: str) -> ThreadPermissions:
        with _translated():
            return await self.service.permissions(thread_id)

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        with _translated():
            return await self.service.revoke_permission(thread_id, tool_name)

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        with _translated():
            return await self.service.rewind(thread_id, message_id)

    async def mcp_status(self) -> McpStatus:
        return factory.mcp_status(self.service)

    async def restart_mcp_server(self, name: str) -> McpStatus:
        with _translated():
            return await factory.restart_mcp_server(self.service, name)

    async def mcp_prompt(self, server: str, name: str, arguments: dict[str, str]) -> McpPromptText:
        with _translated():
            return await factory.mcp_prompt(self.service, server, name, arguments)

    async def set_mcp_log_level(self, server: str, level: str) -> McpStatus:
        with _translated():
            return await factory.set_mcp_log_level(self.service, server, level)

    async def sign_out_mcp_server(self, server: str) -> McpStatus:
        with _translated():
            return await factory.sign_out_mcp_server(self.service, server)

    async def approve_mcp_server(self, server: str) -> McpStatus:
        with _translated():
            return factory.approve_mcp_server(self.service, server)  # a small private file written, then it starts

    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        """The thread's events as models: a live one is the model the assistant built
        (``StoredEvent.event``, validated once, never parsed back); one read from the log is parsed
        from its JSON."""
        item_of = self._item
        async with aclosing(self._pages(thread_id, after)) as pages:
            async for page in pages:
                for stored in page:
                    item = item_of(stored)
                    if item is not None:
                        for event in events_of(item):
                            yield event

    async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        """A page of the log, or a live publish, as one batch: a run of our deltas in a page read in
        bulk (``protocol.delta_runs.line_runs``), ``queued`` the events waiting behind it."""
        async with aclosing(self._pages(thread_id, after)) as pages:
            async for page in pages:
                items = self._page_items(page)
                if items:
                    yield Batch(items, page.queued if isinstance(page, Page) else 0)

    async def _pages(self, thread_id: str, after: int | None) -> AsyncIterator[Sequence[LoggedEvent]]:
        """The thread's stored events as the assistant hands them: the log a page at a time, then
        live batches (``AssistantService.event_batches``), its errors as the client's."""
        service = self.service
        with _translated():
            await service.get_thread(thread_id)
        async with aclosing(service.event_batches(thread_id, after=after or 0)) as source:
            with _translated():
                async for page in source:
                    yield page

    def _page_items(self, page: Sequence[LoggedEvent]) -> list[Item]:
        """The typed items of a page: live events as the models they are, each stretch of events
        read from the log decoded together (``protocol.ingest.decode_lines``)."""
        from ..protocol.events import UnknownEvent

        out: list[Item] = []
        index, size = 0, len(page)
        while index < size:
            stored = page[index]
            if stored.event is not None:
                out.append(StreamItem(stored.id, stored.event))
                index += 1
                continue
            end = index + 1
            while end < size and page[end].event is None:
                end += 1
            stretch = page[index:end]
            for item in decode_lines([s.id for s in stretch], [s.json for s in stretch], self._skipped):
                if type(item) is StreamItem and isinstance(item.event, UnknownEvent):
                    self._diagnose(f"unknown event type {item.event.type!r} (id {item.id}) kept as is")
                out.append(item)
            index = end
        return join(out) if len(out) > 1 else out

    def _skipped(self, event_id: int | None, line: str, error: Exception) -> None:
        self._diagnose(f"skipped malformed stored event (id {event_id}): {error}")

    def _item(self, stored: LoggedEvent) -> Item | None:
        """One stored event's item (``None``, with a diagnostic, for one that does not parse): the
        model a live one was built as, or one read from the log from its JSON (``Client._json_item``)."""
        event = stored.event
        if event is not None:
            return StreamItem(stored.id, event)
        return self._json_item(stored.id, stored.json, source="stored event", raw_id=stored.id)
