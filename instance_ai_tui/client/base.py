"""The one async ``Client`` interface the TUI and the headless CLI talk to.

Implementations: ``EmbeddedClient`` (the assistant in process, SQLite), ``RemoteClient``
(our server over HTTP+SSE) and its n8n dialect. The UI cannot tell them apart.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
from enum import StrEnum
from typing import TYPE_CHECKING

from ..protocol.ingest import Batch, Item, StreamItem, decode
from ..protocol.safe_text import visible

if TYPE_CHECKING:  # the wire models load after the app's first frame (start-up time)
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
    from ..protocol.mcp import McpPromptText, McpStatus

class ClientError(Exception):
    """A failure the user should read: bad URL, refused token, unknown thread, ...

    Its message often quotes a server: it is kept with control characters made visible
    (``protocol.safe_text``), so every printer and notification can show it as it is.

    The classes (one per part that can fail, each with the ``code`` a screen or ``run`` keys on)::

        ClientError                 code "client"
        ├── ServerUnreachable       "server_unreachable"   the server (ours or n8n) cannot be reached
        ├── ServerProtocolError     "server_protocol"      the server's answer or event stream is broken
        ├── AuthError               "auth"                 missing or refused credentials (401/403)
        ├── NotFoundError           "not_found"            no such thread or confirmation (404)
        ├── RunActiveError          "run_active"           a run is active in the thread (409)
        ├── ReadOnlyError           "read_only"            this source cannot change what it shows
        └── StorageError            the storage's own code  the embedded assistant's database or Redis

    An HTTP status becomes its class in one place, ``for_status`` (401/403, 404, 409; the rest
    ``ClientError``): our server's answers, n8n's, and the embedded assistant's errors
    (``assistant.errors``, which carry the status the server would answer with). The layers below
    have their own modules, each drawing its hierarchy: ``runtime.errors`` (the model),
    ``store.errors`` (the storage), ``assistant.errors`` (a request the assistant refuses).
    """

    code = "client"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(visible(message))
        self.status = status


class ServerUnreachable(ClientError):
    """The server cannot be reached (refused, unknown host, timed out)."""

    code = "server_unreachable"


class ServerProtocolError(ClientError):
    """The server answered, but not as the protocol says (broken frames, ids going backwards, ...)."""

    code = "server_protocol"


class StorageError(ClientError):
    """The embedded assistant's storage failed (``store.errors``); ``code`` is the storage's class;
    ``holder_pid``: the program that holds a locked database, when known."""

    #: the storage's classes that are down for now (a retry may work): a locked file, Redis down
    UNAVAILABLE = frozenset({"storage_locked", "storage_unavailable", "redis_down"})

    def __init__(self, message: str, code: str = "storage", *, holder_pid: int | None = None) -> None:
        super().__init__(message, 503)
        self.code = code
        self.holder_pid = holder_pid

    @property
    def unavailable(self) -> bool:
        """Down for now (locked, Redis down): worth trying again later."""
        return self.code in self.UNAVAILABLE


class RunActiveError(ClientError):
    """A run is already active (or suspended) in this thread: HTTP 409."""

    code = "run_active"


class NotFoundError(ClientError):
    """Thread or confirmation request not found: HTTP 404."""

    code = "not_found"


class AuthError(ClientError):
    """Missing or refused credentials: HTTP 401/403."""

    code = "auth"


class ReadOnlyError(ClientError):
    """This source cannot change what it shows (HTTP 405 in spirit): the message says why."""

    code = "read_only"

    def __init__(self, message: str) -> None:
        super().__init__(message, 405)


#: the error class of each HTTP status a client meets (the rest: ``ClientError``)
STATUS_ERRORS: dict[int, type[ClientError]] = {401: AuthError, 403: AuthError, 404: NotFoundError, 409: RunActiveError}


def for_status(status: int, message: str) -> ClientError:
    """The one mapping from an HTTP status to the client error (``message`` as the caller words
    it): our server's answers (``client.remote``), n8n's (``client.n8n``) and the embedded
    assistant's errors, which carry the status the server would answer with (``client.embedded``)."""
    return STATUS_ERRORS.get(status, ClientError)(message, status)


class ConnectionState(StrEnum):
    EMBEDDED = "embedded"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    OFFLINE = "offline"


StateListener = Callable[[ConnectionState, str], None]


class Client(abc.ABC):
    """Async client of an Instance AI backend."""

    #: "embedded", "remote" or "n8n"
    mode: str = "embedded"
    #: model label for the status line (e.g. "gpt-4o-mini", "demo (offline)")
    model_name: str = ""
    #: a thread source beside the main client (e.g. "redis"): its threads get their own section
    #: of the thread list, titled ``source_title``; "" for the main client
    source: str = ""
    source_title: str = ""
    #: threads cannot be created, renamed or deleted here (``ReadOnlyError``)
    read_only: bool = False
    #: shown after an open thread's title (e.g. "Redis session (read-only)")
    thread_label: str = ""

    def __init__(self) -> None:
        self._state = ConnectionState.OFFLINE
        self._state_detail = ""
        self._listeners: list[StateListener] = []
        self.diagnostics: list[str] = []

    # ----------------------------------------------------------------- connection state
    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def state_detail(self) -> str:
        """E.g. "attempt 3" while reconnecting, or the last error while offline."""
        return self._state_detail

    def add_state_listener(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(state, detail)`` on every change. Returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _set_state(self, state: ConnectionState, detail: str = "") -> None:
        detail = visible(detail)  # (often a server's words)
        if state == self._state and detail == self._state_detail:
            return
        self._state, self._state_detail = state, detail
        for listener in list(self._listeners):
            listener(state, detail)

    def _diagnose(self, message: str) -> None:
        """Record a skipped frame or other recoverable oddity (bounded list)."""
        self.diagnostics.append(message)
        del self.diagnostics[:-200]

    def _json_item(self, event_id: int | None, data: str, *, source: str, raw_id: object) -> Item | None:
        """The typed item of one event given as JSON text (``protocol.ingest.decode``; ``source`` names
        where it was read: "frame", "stored event"; ``raw_id`` the id as written there); ``None``,
        with a diagnostic, for one that does not parse; an unknown type is kept as is, said."""
        from ..protocol.events import EventParseError, UnknownEvent

        try:
            item = decode(event_id, data)
        except EventParseError as exc:
            self._diagnose(f"skipped malformed {source} (id {raw_id}): {exc}")
            return None
        if type(item) is StreamItem and isinstance(item.event, UnknownEvent):
            self._diagnose(f"unknown event type {item.event.type!r} (id {raw_id}) kept as is")
        return item

    # ----------------------------------------------------------------- login
    #: whether ``login()`` works here (the n8n dialect): the app then offers a login dialog
    supports_login: bool = False

    async def login(self, email: str, password: str, mfa_code: str | None = None) -> None:
        """Log in with typed credentials (and a two-factor code), then open."""
        raise ClientError("this connection has no login")

    # ----------------------------------------------------------------- lifecycle
    def preload(self) -> None:  # noqa: B027 - optional hook: most clients have nothing heavy to import
        """Import what ``open`` will need (called off the event loop after the first frame, so
        that opening does not freeze the screen). Blocking; never raises for a missing extra."""

    async def open(self) -> None:  # noqa: B027 - optional hook: most clients have nothing to open
        """Connect / start the in-process runtime. Idempotent."""

    async def close(self) -> None:  # noqa: B027 - optional hook: most clients have nothing to close
        """Release everything. Idempotent."""

    def storage_wait(self, thread_id: str | None) -> str:
        """What the thread's run waits for in the storage, in words, while its progress is held
        there ("the database is locked by another program (PID 4242)"); "" when nothing is, no thread
        is open, or this client cannot tell (a server says its storage failures in the run's events)."""
        return ""

    async def identify(self) -> None:  # noqa: B027 - optional hook: a client in process does not change
        """Read again who answers (``model_name``): after a reconnect the server may be another one
        (restarted with another model, the demo or not). Raises ``ClientError`` when it cannot say."""

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- threads
    @abc.abstractmethod
    async def list_threads(self) -> list[ThreadInfo]: ...

    async def search_threads(self, query: str) -> list[ThreadInfo]:
        """Threads whose title or messages match ``query``. This default matches titles only
        (every word, ignoring case); clients whose server searches message text override it."""
        return [t for t in await self.list_threads() if t.matches(query)]

    @abc.abstractmethod
    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo: ...

    @abc.abstractmethod
    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo: ...

    @abc.abstractmethod
    async def delete_thread(self, thread_id: str) -> None: ...

    # ----------------------------------------------------------------- runs
    @abc.abstractmethod
    async def send(self, thread_id: str, text: str) -> str:
        """Start a run; returns its runId. Raises ``RunActiveError`` when busy."""

    @abc.abstractmethod
    def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        """The thread's events after ``after`` (None = full history), then live, forever.

        Remote implementations reconnect by themselves and resume from the last id seen.
        """

    async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        """``events`` for a consumer that folds them (the app's ingest, ``Conversation.fold``): what
        was read together as one ``Batch`` (a page of the log, a piece received), a run of deltas
        as one ``DeltaRun``, and how much was still waiting at the source (``Batch.queued``). This
        default hands each event over as a batch of its own."""
        async for item in self.events(thread_id, after):
            yield Batch([item])

    @abc.abstractmethod
    async def cancel(self, thread_id: str) -> None:
        """Cancel the thread's active run. Idempotent; a no-op when nothing runs."""

    @abc.abstractmethod
    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse: ...

    @abc.abstractmethod
    async def messages(self, thread_id: str) -> ThreadMessages:
        """History with agent trees, and ``next_event_id`` for the stream cursor."""

    async def recent_messages(self, thread_id: str, limit: int) -> ThreadMessages:
        """The newest ``limit`` messages or so, ``has_more`` true when older ones exist (what
        opening a thread shows first). A client whose server does not page returns the whole
        history (``has_more`` None)."""
        return await self.messages(thread_id)

    @abc.abstractmethod
    async def status(self, thread_id: str) -> ThreadStatus: ...

    # ----------------------------------------------------------------- background tasks (n8n)
    async def cancel_task(self, thread_id: str, task_id: str) -> None:
        """Cancel one background task of the thread (n8n). Other backends have none."""
        raise ClientError(f"this backend ({self.mode}) has no background tasks")

    async def correct_task(self, thread_id: str, task_id: str, message: str) -> None:
        """Send a correction to a running background task (n8n). Other backends have none."""
        raise ClientError(f"this backend ({self.mode}) has no background tasks")

    #: whether ``compact`` works here (``/compact``)
    can_compact: bool = False

    async def compact(self, thread_id: str, keep: str = "") -> str:
        """Compact the thread's context into notes now (``/compact [what to keep]``): a run of its own,
        whose ``context-compacted`` row and finish come through ``events``; returns its run id."""
        raise ClientError("this server compacts on its own (/compact needs our own server or the embedded agent)")

    #: whether ``rewind`` works here (retry, edit and rewind need it)
    can_rewind: bool = False
    #: whether ``set_model`` works here (``/model``)
    can_switch_model: bool = False

    async def list_models(self, thread_id: str | None = None) -> ModelList:
        """The models a thread can use and the one it uses (``/model``)."""
        raise ClientError("this server does not offer a model choice (/model needs our own server)")

    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        """Use model ``name`` in the thread from its next run on (``""``: the default)."""
        raise ClientError("this server does not let the client choose the model (/model needs our own server)")

    # ----------------------------------------------------------------- "always allow" grants
    async def permissions(self, thread_id: str) -> ThreadPermissions:
        """The tools the user chose "always allow" for in this thread (our own server and
        embedded). n8n keeps such grants in its own settings: ``ClientError``."""
        raise ClientError("this server does not list 'always allow' grants (n8n keeps them in its own settings)")

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        """Revoke one "always allow" grant; returns what is left (``NotFoundError`` if none)."""
        raise ClientError("this server cannot revoke 'always allow' grants (n8n keeps them in its own settings)")

    # ----------------------------------------------------------------- MCP servers (``/mcp``)
    async def mcp_status(self) -> McpStatus:
        """The assistant's MCP servers: state, tools, last error, stderr (embedded and our server)."""
        raise ClientError("this server does not list MCP servers (/mcp needs embedded mode or instance-ai serve)")

    async def restart_mcp_server(self, name: str) -> McpStatus:
        """Stop and start one MCP server; the status after its start."""
        raise ClientError("this server cannot restart MCP servers (/mcp needs embedded mode or instance-ai serve)")

    async def mcp_prompt(self, server: str, name: str, arguments: dict[str, str]) -> McpPromptText:
        """An MCP server's prompt as the text of a message (``/mcp__<server>__<name>``)."""
        raise ClientError("this server has no MCP prompts (they need embedded mode or instance-ai serve)")

    async def set_mcp_log_level(self, server: str, level: str) -> McpStatus:
        """Ask an MCP server to send its log lines from ``level`` up; the status after."""
        raise ClientError("this server cannot change MCP log levels (embedded mode or instance-ai serve can)")

    async def sign_out_mcp_server(self, server: str) -> McpStatus:
        """Forget an MCP server's sign-in (its OAuth tokens) and stop it; the status after."""
        raise ClientError("this server keeps no MCP sign-ins (embedded mode or instance-ai serve do)")

    async def approve_mcp_server(self, server: str) -> McpStatus:
        """Approve a project's (``.mcp.json``) MCP server: it starts, now and at later starts."""
        raise ClientError("this server has no project MCP servers (embedded mode or instance-ai serve do)")

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        """Supersede the turn of user message ``message_id`` and every later turn: they stay
        in the history, marked, and leave the model's context. Servers that cannot (n8n)
        raise ``ClientError``."""
        raise ClientError("this server cannot rewind a conversation (retry and edit need our own server)")
