"""The one async ``Client`` interface the TUI and the headless CLI talk to.

Implementations: ``EmbeddedClient`` (the assistant in process, SQLite), ``RemoteClient``
(our server over HTTP+SSE) and its n8n dialect. The UI cannot tell them apart.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..protocol.hot_events import HOT_TYPES, is_plain_hot_event, loads
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
    from ..protocol.events import Event
    from ..protocol.mcp import McpPromptText, McpStatus
    from ..protocol.tree import RunSyncPayload

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
        ├── StorageError            the storage's own code  the embedded assistant's database or Redis
        ├── N8nToolError            "n8n_tool"             an n8n tool call failed (n8n's own words)
        └── WorkspaceRefused        "workspace_refused"    a shared folder or the gateway refused a path

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
    """The embedded assistant's storage failed (``store.errors``); ``code`` is the storage's class."""

    def __init__(self, message: str, code: str = "storage") -> None:
        super().__init__(message, 503)
        self.code = code


class N8nToolError(ClientError):
    """A tool call of n8n's agent failed; the message is n8n's."""

    code = "n8n_tool"


class WorkspaceRefused(ClientError):
    """A shared folder (the workspace, the local gateway) refused a path."""

    code = "workspace_refused"


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


#: event types a client may hand over as decoded JSON (``StreamItem.wire``) instead of a model: the
#: bulk of every stream, which ``Conversation.apply_wire`` folds without building one
WIRE_TYPES = HOT_TYPES


def wire_item(id: int | None, data: Any) -> StreamItem | None:
    """``data`` (a decoded JSON event) as a ``StreamItem`` that keeps it as ``wire``, when it is a
    well-formed event of ``WIRE_TYPES`` (``protocol.hot_events.is_plain_hot_event``: only what
    ``parse_event`` accepts as it is); ``None`` for anything else (parse it into a model)."""
    return StreamItem(id, wire=data) if is_plain_hot_event(data) else None


class StreamItem:
    """One item of a thread's event stream.

    Exactly one of ``event`` / ``run_sync`` is set. ``id`` is the event's id in the
    thread's log, or ``None`` for frames that carry none (n8n deltas, control frames).

    A client may give an event of ``WIRE_TYPES`` as its decoded JSON (``wire``) instead: ``event``
    is then parsed from it on first use, so a consumer that folds ``wire`` directly
    (``Conversation.apply_wire``, the app's ingest) never builds the model, and any other
    consumer sees the same ``event`` as before. Immutable once built.

    From ``Client.fold_events`` only, an item may stand for a run of deltas (``join_deltas``):
    ``parts`` holds them, ``count`` says how many, ``wire`` is one delta of their joined text
    and ``id`` the last one's (``Conversation.apply_wire_run`` folds ``parts`` exactly as one by one).
    """

    __slots__ = ("_event", "count", "id", "parts", "run_sync", "wire")

    id: int | None
    run_sync: RunSyncPayload | None
    wire: dict[str, Any] | None
    #: how many events of the stream this item stands for (1, or a joined run's length)
    count: int
    #: a joined run's events as ``(id, decoded JSON)``, in order (``join_deltas``, or a
    #: ``protocol.delta_runs.DeltaRun`` decoded on demand); else ``None``
    parts: Sequence[tuple[int | None, dict[str, Any]]] | None
    _event: Event | None

    def __init__(self, id: int | None, event: Event | None = None, run_sync: RunSyncPayload | None = None,
                 *, wire: dict[str, Any] | None = None,
                 parts: Sequence[tuple[int | None, dict[str, Any]]] | None = None) -> None:
        # (the slots' own setters: ``object.__setattr__`` costs twice as much, once per event of a stream)
        _set_id(self, id)
        _set_event(self, event)
        _set_run_sync(self, run_sync)
        if event is None and wire is not None:
            _set_wire(self, wire)
            _set_parts(self, parts)
            _set_count(self, len(parts) if parts else 1)
        else:
            _set_wire(self, None)
            _set_parts(self, None)
            _set_count(self, 1)

    @property
    def event(self) -> Event | None:
        event: Event | None = self._event
        if event is None and self.wire is not None:
            from ..protocol.events import EventParseError, parse_event

            try:
                event = parse_event(self.wire)
            except EventParseError:  # (``wire_item`` lets through only what parses: a malformed one is skipped)
                _set_wire(self, None)
                return None
            _set_event(self, event)
        return event

    @property
    def parsed(self) -> bool:
        """Whether ``event`` is built already (else it is only ``wire``)."""
        return self._event is not None or self.wire is None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"StreamItem is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamItem):
            return NotImplemented
        return (self.id, self.event, self.run_sync) == (other.id, other.event, other.run_sync)

    def __hash__(self) -> int:
        return hash(self.id)  # (equal items have equal ids)

    def __repr__(self) -> str:
        if not self.parsed:
            joined = f", count={self.count}" if self.parts is not None else ""
            return f"StreamItem(id={self.id!r}, wire={self.wire!r}{joined})"
        return f"StreamItem(id={self.id!r}, event={self._event!r}, run_sync={self.run_sync!r})"


#: the slots' own setters (``StreamItem.__init__``)
_SLOTS = StreamItem.__dict__
_set_id = _SLOTS["id"].__set__
_set_event = _SLOTS["_event"].__set__
_set_run_sync = _SLOTS["run_sync"].__set__
_set_wire = _SLOTS["wire"].__set__
_set_parts = _SLOTS["parts"].__set__
_set_count = _SLOTS["count"].__set__


#: the delta types ``join_deltas`` joins (a status replaces, it does not append)
_JOINED_TYPES = frozenset({"text-delta", "reasoning-delta"})


def join_deltas(items: list[StreamItem]) -> list[StreamItem]:
    """``items`` (the events of one piece received, in order) with each run of two or more
    consecutive text deltas (or reasoning deltas) of one run, agent and response given as one item
    (``StreamItem.parts``, ``count``; ``wire`` the delta of their joined text, ``id`` the last one's).

    Only items a client keeps as ``wire`` (``is_plain_hot_event`` accepted them) join, and only
    while their ids go up (or none has one): ``Conversation.apply_wire_run`` then folds the run into
    the same conversation as its events one by one. Other items pass as they are."""
    out: list[StreamItem] = []
    run: list[StreamItem] = []
    key: tuple[Any, Any, Any, Any] | None = None
    last_id: int | None = None
    for item in items:
        wire = item.wire
        if wire is not None and item.parts is None and item._event is None and wire["type"] in _JOINED_TYPES:
            here = (wire["type"], wire.get("runId"), wire.get("agentId"), wire.get("responseId"))
            item_id = item.id
            if here == key and ((item_id is None and last_id is None)
                                or (item_id is not None and last_id is not None and item_id > last_id)):
                run.append(item)
                last_id = item_id
                continue
            _flush_run(run, out)
            run = [item]
            key, last_id = here, item_id
            continue
        if run:
            _flush_run(run, out)
            run, key = [], None
        out.append(item)
    _flush_run(run, out)
    return out


def _flush_run(run: list[StreamItem], out: list[StreamItem]) -> None:
    if len(run) < 2:
        out.extend(run)
        return
    out.append(run_item([(item.id, item.wire) for item in run]))  # type: ignore[misc]


def run_item(parts: list[tuple[int | None, dict[str, Any]]]) -> StreamItem:
    """The item of a run of deltas ``join_deltas`` joins (``parts``: plain text or reasoning deltas
    of one type, run, agent and response as ``(id, decoded JSON)``, ids going up or all absent);
    a run of one is that delta's own item."""
    if len(parts) == 1:
        return StreamItem(parts[0][0], wire=parts[0][1])
    first = parts[0][1]
    joined: dict[str, Any] = {"type": first["type"], "runId": first.get("runId", ""),
                              "agentId": first.get("agentId", ""),
                              "payload": {"text": "".join([wire["payload"].get("text", "") for _, wire in parts])}}
    if first.get("responseId") is not None:
        joined["responseId"] = first["responseId"]
    return StreamItem(parts[-1][0], wire=joined, parts=tuple(parts))


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

    def _json_item(self, event_id: int | None, data: str, *, hot: bool, source: str,
                   raw_id: object) -> StreamItem | None:
        """The item of one event given as JSON text (``source`` names where it was read: "frame",
        "stored event"; ``raw_id`` the id as written there): a hot one (``hot``, its type is in
        ``WIRE_TYPES``) kept as its decoded JSON when it is well formed (``wire_item``), any other
        parsed into a model; ``None``, with a diagnostic, for one that does not parse; an unknown
        type is kept as is, said."""
        if hot:
            try:
                item = wire_item(event_id, loads(data))
            except (ValueError, RecursionError):
                item = None
            if item is not None:
                return item
        from ..protocol.events import EventParseError, UnknownEvent, parse_event

        try:
            event = parse_event(data)
        except EventParseError as exc:
            self._diagnose(f"skipped malformed {source} (id {raw_id}): {exc}")
            return None
        if isinstance(event, UnknownEvent):
            self._diagnose(f"unknown event type {event.type!r} (id {raw_id}) kept as is")
        return StreamItem(id=event_id, event=event)

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
        words = query.casefold().split()
        return [t for t in await self.list_threads() if all(w in f"{t.title} {t.id}".casefold() for w in words)]

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

    def fold_events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        """``events`` for a consumer that folds them (the app's ingest): a client may join a run of
        deltas received together into one item (``join_deltas``; ``StreamItem.count`` events),
        which only ``Conversation.apply_wire_run`` unfolds. This default joins nothing."""
        return self.events(thread_id, after)

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
