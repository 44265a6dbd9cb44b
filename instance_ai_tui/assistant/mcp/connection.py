"""One MCP server: started in the background, its tools listed, called, stopped, restarted.

A ``ServerConnection`` owns one task that holds the SDK's transport (``stdio_client`` or
``streamable_http_client``) and its ``ClientSession`` open until ``stop()``; calls are made from
the runs' tasks on that session. A server that fails to start, dies (its stderr pipe closes) or
breaks a call is ``failed`` with the reason and the tail of its stderr, and is started again by
its next call (``ensure_ready``).

The environment of a stdio server holds only what its config names (``env``, ``pass_env``) and
``PATH`` when its command is a bare name: the SDK would add ``HOME``, ``USER``, ``SHELL``, ...
of the app's own environment, so the command runs under ``env -u NAME…`` for those (``env``
execs it: the server keeps the PID that ``env`` started with; no value is on a command line).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .catalog import RELISTS, Catalog, list_all
from .hooks import McpHooks
from .oauth import SIGN_IN_SECONDS, TokenFile

if TYPE_CHECKING:
    import mcp_types
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT

    from ...config import McpServerSettings

log = logging.getLogger(__name__)

#: bytes of the server's stderr kept (the last ones)
STDERR_TAIL_BYTES = 8_192
#: longest tool description offered to the model (outside text: bounded)
MAX_DESCRIPTION = 2_000
#: lines of a server's log notifications kept (``/mcp`` shows them)
LOG_LINES = 200


#: the SDK's modules a connection uses (a second or more to import: done in a thread)
_SDK_MODULES = ("mcp_types", "httpx2", "mcp", "mcp.client.stdio", "mcp.client.streamable_http",
                "mcp.shared.dispatcher")


def _import_sdk() -> None:
    import importlib

    for name in _SDK_MODULES:
        importlib.import_module(name)


#: the longest a start waits for the event loop to have nothing to do (``quiet_moment``)
QUIET_WAIT = 1.5


async def quiet_moment(limit: float | None = None, *, step: float = 0.02, beats: int = 3) -> None:
    """Until the event loop has been idle for ``beats`` steps in a row (each sleep ended at most a
    quarter of a step late), at most ``limit`` seconds: an app starting up, or sending its first
    message, goes first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (QUIET_WAIT if limit is None else limit)
    calm = 0
    while calm < beats and loop.time() < deadline:
        asked = loop.time()
        await asyncio.sleep(step)
        calm = calm + 1 if loop.time() - asked <= step * 1.25 else 0


async def load_sdk() -> None:
    """Import the ``mcp`` SDK off the event loop (the app keeps drawing while servers start), once
    the loop is quiet: the import holds the interpreter's lock for about half a CPU-second."""
    if not all(name in sys.modules for name in _SDK_MODULES):
        await quiet_moment()
        await asyncio.to_thread(_import_sdk)


class McpCallError(Exception):
    """A call that could not be made or did not complete: the message says why (and the server's stderr)."""


class _StderrTail(asyncio.Protocol):
    """Reads a server's stderr pipe to the end, keeping its last ``STDERR_TAIL_BYTES``."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > STDERR_TAIL_BYTES:
            del self.data[: len(self.data) - STDERR_TAIL_BYTES]

    def eof_received(self) -> bool | None:
        self.closed.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


def describe(exc: BaseException) -> str:
    """A readable one-line reason for ``exc`` (an exception group: its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    name = type(exc).__name__
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    return f"{name}: {text}" if text else name


class ServerConnection:
    """One configured MCP server."""

    def __init__(self, name: str, settings: McpServerSettings, hooks: McpHooks | None = None) -> None:
        self.name = name
        self.settings = settings
        self.state = "stopped" if settings.enabled else "disabled"
        #: its tools, resources, prompts and instructions as last listed
        self.catalog = Catalog()
        self.error: str | None = None
        self.starts = 0
        #: what the server logged (``notifications/message``), newest last; ``log_level``: what it was asked for
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self.log_level: str | None = None
        #: what the session asks of the app (roots, elicitation), shared by every server of a service
        self.hooks = hooks or McpHooks()
        #: the tool calls in progress (their contexts: an elicitation is asked in the newest one's run)
        self.calls: dict[int, Any] = {}
        self._stderr: _StderrTail | None = None
        self._stderr_text = ""
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        #: called when the tool list or the state changes
        self.on_change: Callable[[], None] | None = None
        self.last_failure = 0.0
        self._relists: dict[str, asyncio.Task[None]] = {}
        #: set when the service shuts down: no call starts it again
        self.closed = False
        #: the project file (``.mcp.json``) it comes from; None: the person's own config
        self.origin: Path | None = None
        #: a start being given up (quit, restart): its process is stopped at once, without the grace
        self._abandon = False
        #: the HTTP transport that answered (``http`` or ``sse``), once one did
        self._http_kind: str | None = None
        #: the last HTTP error status of this server and its ``WWW-Authenticate`` (the SDK only says
        #: "Server returned an error response")
        self._http_refusal: tuple[int, str] | None = None
        #: its sign-in (``assistant.mcp.oauth``): the SDK's OAuth auth, its token file, the URL the
        #: person is asked to open while a sign-in waits
        self._oauth: Any = None
        self.tokens: TokenFile | None = None
        self.sign_in_url: str | None = None
        self._deadline: asyncio.Timeout | None = None

    # ----------------------------------------------------------------- what it is
    @property
    def tools(self) -> list[mcp_types.Tool]:
        return self.catalog.tools

    @property
    def note(self) -> str | None:
        return self.catalog.note

    @property
    def transport(self) -> str:
        """``stdio``, ``http`` (Streamable HTTP) or ``sse`` (the legacy HTTP+SSE transport: configured,
        or found when Streamable HTTP was refused with 404/405)."""
        if not self.settings.url:
            return "stdio"
        return self._http_kind or ("sse" if self.settings.transport == "sse" else "http")

    @property
    def target(self) -> str:
        s = self.settings
        if s.url:
            from urllib.parse import urlsplit

            url = urlsplit(s.url)  # a token in the query or the user part stays out of sight
            return f"{url.scheme}://{url.hostname or ''}{f':{url.port}' if url.port else ''}{url.path}"
        return shlex.join([s.command or "", *s.args])

    @property
    def stderr(self) -> str:
        return self._stderr.text() if self._stderr is not None else self._stderr_text

    def failure(self) -> str:
        """The reason its calls fail now, with the tail of its stderr."""
        reason = f"MCP server {self.name!r} is not available: {self.error or self.state}"
        tail = _last_lines(self.stderr, 12)
        return f"{reason}\n--- its stderr (last lines) ---\n{tail}" if tail else reason

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start it in the background (no-op when starting, ready, disabled, unapproved or closed)."""
        if not self.settings.enabled or self.closed or self.state == "unapproved":
            return
        if self._task is not None and not self._task.done():
            return
        self._settled = asyncio.Event()
        self._stop = asyncio.Event()
        self._abandon = False
        self.state = "starting"
        self.error = None
        self.starts += 1
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp:{self.name}")
        self._changed()

    async def wait_settled(self, timeout: float | None = None) -> None:
        """Until a start in progress has ended (ready or failed)."""
        if self.state != "starting":
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._settled.wait(), timeout)

    async def ensure_ready(self) -> ClientSession:
        """The session, starting the server first when it is stopped or failed."""
        async with self._lock:
            if self.state in ("stopped", "failed") and self.settings.enabled:
                task = self._task
                if task is not None and not task.done():  # the broken connection is still closing
                    self._stop.set()
                    with contextlib.suppress(TimeoutError, Exception):
                        await asyncio.wait_for(asyncio.shield(task), 10)
                self.start()
        await self.wait_settled(self.settings.startup_timeout + 5)
        session = self._session
        if self.state != "ready" or session is None:
            raise McpCallError(self.failure())
        return session

    async def restart(self) -> None:
        await self.stop()
        self.start()
        await self.wait_settled(self.settings.startup_timeout + 5)

    async def stop(self) -> None:
        """Stop it and wait until its process is gone (stdin closed, then terminated). A start
        still in progress is given up at once: nothing waits for a server that never answered."""
        task = self._task
        if task is None:
            return
        self._stop.set()
        if not task.done() and self.state == "starting":
            self._abandon = True
            task.cancel()
        if not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 15)
            except TimeoutError:
                self._abandon = True
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            except asyncio.CancelledError:
                task.cancel()
                raise
        self._task = None
        if self.state != "disabled":
            self.state = "stopped"
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("MCP change listener failed")

    def scrub_data(self, value: Any) -> Any:
        """``scrub`` on every string of JSON-like data (a result a server sends back: it may echo
        its own environment); the same object when nothing changed."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            out = {self.scrub_data(k): self.scrub_data(v) for k, v in value.items()}
            return value if all(a is b for a, b in zip(out.values(), value.values(), strict=True)) and \
                list(out) == list(value) else out
        if isinstance(value, list):
            items = [self.scrub_data(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    def scrub(self, text: str) -> str:
        """``text`` (an error of the SDK or httpx, a result) without the config's secrets: the URL
        (its query or user part may hold a token) as ``target``, env and header values as ``***``."""
        if self.settings.url:
            text = text.replace(self.settings.url, self.target)
        for secret in [*self.settings.env.values(), *self.settings.headers.values()]:
            value = secret.get_secret_value()
            if len(value) >= 8:
                text = text.replace(value, "***")
        return text

    def _fail(self, reason: str) -> None:
        self.sign_in_url = None
        self.state = "failed"
        self.error = self.scrub(reason)
        self.last_failure = time.monotonic()
        self._session = None
        self._changed()

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                try:
                    # the transport's task groups are entered and left in this task (no wait_for)
                    await load_sdk()
                    try:
                        async with asyncio.timeout(self.settings.startup_timeout) as self._deadline:
                            session = await self._connect(stack)
                    finally:
                        self._deadline = None
                except Exception as exc:  # noqa: BLE001 - any start failure is this server's state, never the app's
                    self._fail(f"it did not start: {self._start_failure(exc)}")
                    self._settled.set()
                    return
                self._session = session
                self.sign_in_url = None
                self.state = "ready"
                self._settled.set()
                self._changed()
                waits = [asyncio.ensure_future(self._stop.wait())]
                if self._stderr is not None:
                    waits.append(asyncio.ensure_future(self._stderr.closed.wait()))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                if not self._stop.is_set():
                    # its stderr closed: the process ended (let the pipe's last bytes arrive)
                    await asyncio.sleep(0.05)
                    self._fail("the server exited")
        except asyncio.CancelledError:
            if self.state == "starting":
                self._fail("its start was stopped")
        except Exception as exc:
            if self.state == "ready":
                self._fail(f"the connection broke: {describe(exc)}")
            log.debug("MCP server %s: closing failed", self.name, exc_info=True)
        finally:
            self._session = None
            self._settled.set()
            if self._stderr is not None:
                self._stderr_text = self._stderr.text()

    def _start_failure(self, exc: BaseException) -> str:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, McpCallError):
            return str(exc)
        if self._http_refusal is not None:
            words = self._refusal_words()
            if self._http_refusal[0] == 401 and self._oauth is not None and type(exc).__name__ != "MCPError":
                words += f"; signing in failed: {describe(exc)} (r in /mcp tries again)"
            return words
        if isinstance(exc, TimeoutError):
            return f"it did not answer within {self.settings.startup_timeout:g} s"
        if self._stderr is not None and self._stderr.closed.is_set():
            return "it exited before answering (see its stderr)"
        if isinstance(exc, OSError) and not self.settings.url:
            return f"it could not be run: {exc.strerror or exc}"
        return describe(exc)

    def _refusal_words(self) -> str:
        """What an HTTP error status of the server means, and what to do."""
        assert self._http_refusal is not None
        status, _challenge = self._http_refusal
        if status == 401:
            _, headers = http_target(self.settings)
            if any(k.lower() == "authorization" for k in headers):
                how = "the Authorization it was given was refused: check headers.Authorization"
            elif self.settings.oauth == "off":
                how = 'give its token in headers = { Authorization = "Bearer …" }, or set oauth = "auto" to sign in'
            else:
                how = "it signs you in with OAuth: a browser opens, or /mcp shows the address to open"
            return f"the server answered HTTP 401 Unauthorized: it wants you to sign in ({how})"
        if status == 403:
            return "the server answered HTTP 403 Forbidden: the credentials given are not allowed to use it"
        if status in (404, 405):
            return (f"the server answered HTTP {status} at {self.target}: no MCP server there (neither Streamable "
                    "HTTP nor the legacy SSE transport); check the URL (often …/mcp, or …/sse for an SSE server)")
        return f"the server answered HTTP {status}"

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        kind = "stdio" if not self.settings.url else "sse" if self.settings.transport == "sse" else "http"
        try:
            session, own = await self._attempt(kind)
        except Exception:
            refused = self._http_refusal
            if kind != "http" or self.settings.transport != "auto" or refused is None or refused[0] not in (404, 405):
                raise
            # a legacy HTTP+SSE server refuses Streamable HTTP's POST: speak its transport
            try:
                session, own = await self._attempt("sse")
            except Exception:
                if self._http_refusal is None:
                    self._http_refusal = refused
                raise
        await stack.enter_async_context(own)  # closed with the connection
        return session

    async def _attempt(self, kind: str) -> tuple[ClientSession, AsyncExitStack]:
        """A session over transport ``kind``, in an exit stack of its own. A transport that fails
        cancels its caller, then raises its error as its task group closes: that error is raised."""
        own = AsyncExitStack()
        try:
            if kind == "stdio":
                streams = await self._stdio_transport(own)
            else:
                streams = await own.enter_async_context(self._http_transport(kind))
            return await self._open_session(own, streams), own
        except BaseException as first:
            try:
                await own.aclose()
            except BaseException as closing:
                if isinstance(first, asyncio.CancelledError) and not isinstance(closing, asyncio.CancelledError):
                    raise closing from None  # the transport's own failure, not a stop
            raise

    async def _open_session(self, stack: AsyncExitStack, streams: tuple[Any, Any]) -> ClientSession:
        import mcp_types
        from mcp import ClientSession

        read, write = streams
        session = await stack.enter_async_context(ClientSession(
            read, write, client_info=mcp_types.Implementation(name="instance-ai", version="1"),
            message_handler=self._on_message, logging_callback=self._on_log,
            list_roots_callback=self._list_roots if self.settings.roots else None, elicitation_callback=self._elicit))
        await session.initialize()
        self.catalog = await list_all(session)
        return session

    async def _on_message(self, message: Any) -> None:
        """A server's notification: a ``…/list_changed`` lists that list again (in a task: the
        handler runs in the session's receive loop, which must go on to read the answer)."""
        kind = type(message).__name__
        relist = RELISTS.get(kind)
        session = self._session
        if relist is None or session is None:
            return
        running = self._relists.get(kind)
        if running is None or running.done():
            self._relists[kind] = asyncio.get_running_loop().create_task(self._relist(session, relist))

    async def _relist(self, session: ClientSession, relist: Callable[..., Any]) -> None:
        catalog = Catalog(**{**vars(self.catalog), "left_out": dict(self.catalog.left_out)})
        try:
            await asyncio.wait_for(relist(session, catalog), self.settings.startup_timeout)
        except Exception as exc:  # noqa: BLE001 - the old list stays; the next call shows what is wrong
            log.info("MCP server %s: listing what it said changed failed: %s", self.name, describe(exc))
            return
        if session is self._session:
            self.catalog = catalog
            self._changed()

    async def wait_relisted(self, timeout: float = 5.0) -> None:
        """Until the lists a server said changed are listed again."""
        tasks = [task for task in self._relists.values() if not task.done()]
        if tasks:
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.gather(*(asyncio.shield(t) for t in tasks)), timeout)

    # ----------------------------------------------------------------- what the server asks of us
    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        """A log line of the server (``notifications/message``): kept for ``/mcp`` (bounded, scrubbed)."""
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
        who = f" {params.logger}" if params.logger else ""
        self.log.append(self.scrub(f"{params.level}{who}: {data[:2000]}"))
        self._changed()

    async def _list_roots(self, context: Any) -> mcp_types.ListRootsResult:
        import mcp_types

        return mcp_types.ListRootsResult(roots=[mcp_types.Root.model_validate(
            {"uri": path.resolve().as_uri(), "name": path.name or str(path)}) for path in self.hooks.roots()])

    async def _elicit(self, context: Any, params: Any) -> Any:
        return await self.hooks.elicit(self, params)

    async def set_log_level(self, level: str) -> None:
        """Ask the server to send its log lines from ``level`` up (``logging/setLevel``)."""
        import warnings

        session = self._session
        if session is None or self.state != "ready":
            raise McpCallError(self.failure())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in the 2026 protocol, still what servers speak
            try:
                await session.set_logging_level(level)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - the server's refusal is its own
                raise McpCallError(self.scrub(f"MCP server {self.name!r}: {describe(exc)}")) from None
        self.log_level = level

    async def roots_changed(self) -> None:
        """Tell the server its roots changed (``notifications/roots/list_changed``)."""
        import warnings

        session = self._session
        if session is not None and self.state == "ready" and self.settings.roots:
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                await session.send_roots_list_changed()

    def _http_client(self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        """An httpx2 client for this server: its headers (a ``user:pw@`` in the URL is Basic auth
        only where no ``Authorization`` is configured), and a hook noting error statuses."""
        import httpx2

        async def note_refusal(response: httpx2.Response) -> None:
            # a POST carries every message; a GET is the legacy transport's stream (Streamable HTTP's
            # optional GET stream may be refused with 405 by a server that works)
            method = response.request.method
            if response.status_code >= 400 and (method == "POST" or (method == "GET" and self._http_kind == "sse")):
                self._http_refusal = (response.status_code, response.headers.get("www-authenticate", ""))

        _, configured = http_target(self.settings)
        merged = {**configured, **(headers or {})}
        from .stdio import bounded_http_transport

        return httpx2.AsyncClient(
            headers=merged, auth=auth or self._oauth, event_hooks={"response": [note_refusal]},
            transport=bounded_http_transport(self.settings.max_result_bytes),
            timeout=timeout or httpx2.Timeout(30.0, read=max(self.settings.call_timeout, 60.0)))

    def _make_oauth(self, url: str) -> None:
        """The sign-in of a URL server without an ``Authorization`` of its own (``oauth = "auto"``):
        the SDK's OAuth client, used only once the server answers 401 (``assistant.mcp.oauth``)."""
        _, headers = http_target(self.settings)
        if self.settings.oauth == "off" or any(k.lower() == "authorization" for k in headers):
            self._oauth = None
            return
        from .oauth import provider

        async def on_url(auth_url: str) -> None:
            self.sign_in_url = auth_url
            if self._deadline is not None:  # the person's time to sign in, not the server's to start
                self._deadline.reschedule(asyncio.get_running_loop().time() + SIGN_IN_SECONDS)
            self._changed()
            opened = await asyncio.to_thread(self.hooks.open_url, auth_url)
            log.warning("MCP server %s wants you to sign in: %s %s", self.name,
                        "a browser was opened at" if opened else "open", self.target)

        self._oauth, self.tokens = provider(self.name, url, self.hooks.data_dir(), on_url=on_url)

    def sign_out(self) -> bool:
        """Forget this server's sign-in (its tokens and registration); whether there was one."""
        return self.tokens.forget() if self.tokens is not None else False

    def _http_transport(self, kind: str) -> Any:
        url, _ = http_target(self.settings)
        self._http_refusal = None
        self._make_oauth(url)
        self._http_kind = kind

        @contextlib.asynccontextmanager
        async def streamable() -> Any:
            from mcp.client.streamable_http import streamable_http_client

            client = self._http_client()
            limit = 2 * self.settings.max_result_bytes + 64 * 1024
            async with client, streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams:
                yield streams

        @contextlib.asynccontextmanager
        async def sse() -> Any:
            from mcp.client.sse import sse_client

            async with sse_client(url, httpx_client_factory=self._http_client,
                                  sse_read_timeout=max(self.settings.call_timeout, 300.0)) as streams:
                yield streams

        return streamable() if kind == "http" else sse()

    async def _stdio_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        from .stdio import stdio_transport

        command, env = server_command(self.settings)
        cwd = self.settings.cwd.expanduser() if self.settings.cwd else None
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        tail = _StderrTail()
        self._stderr = tail
        reader = os.fdopen(read_fd, "rb", buffering=0)  # owned by the pipe transport
        pipe, _ = await loop.connect_read_pipe(lambda: tail, reader)
        stack.callback(pipe.close)
        try:
            # the child gets the write end; ours is closed below: the pipe ends when the server (and its children) exit
            streams = await stack.enter_async_context(stdio_transport(
                command, env, cwd, write_fd, name=self.name, result_limit=self.settings.max_result_bytes,
                grace=lambda: 0.0 if self._abandon else 2.0, describe_line=self.scrub))
        finally:
            os.close(write_fd)
        return streams

    # ----------------------------------------------------------------- calls
    async def call(self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None) -> Any:
        """``tools/call`` on a ready session (started first if needed). A broken connection
        fails the server (restarted by the next call) and raises ``McpCallError``."""
        session = await self.ensure_ready()
        stop = self._stop  # this connection's (a restart meanwhile makes a new one)
        self._http_refusal = None
        try:
            return await session.call_tool(tool, arguments, read_timeout_seconds=self.settings.call_timeout,
                                           progress_callback=progress)
        except Exception as exc:  # noqa: BLE001 - every failure of a call is this server's, told to the model
            from mcp import MCPError
            from mcp_types import REQUEST_TIMEOUT

            if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT and self._alive():
                raise McpCallError(f"MCP server {self.name!r}: {tool} did not answer within "
                                   f"{self.settings.call_timeout:g} s (call_timeout); it was cancelled") from None
            refused = self._http_refusal
            if refused is not None and refused[0] in (401, 403) and self._alive():
                raise McpCallError(f"MCP server {self.name!r}: {self._refusal_words()}") from None
            if not (isinstance(exc, MCPError) and _connection_lost(exc)) and self._alive():
                # an error answer, or a result the SDK refused (its output schema): the server stays
                raise McpCallError(self.scrub(f"MCP server {self.name!r}: {describe(exc)}")) from None
            # the server died or the connection broke mid-call: this call fails, the next restarts it
            await asyncio.sleep(0.1)  # its last stderr lines
            if self._session is session and self.state == "ready":
                self._fail(f"the call broke: {describe(exc)}")
            stop.set()
            raise McpCallError(self.failure()) from None

    def _alive(self) -> bool:
        return self.state == "ready" and not (self._stderr is not None and self._stderr.closed.is_set())


def http_target(settings: McpServerSettings) -> tuple[str, dict[str, str]]:
    """The URL to connect to (its ``user:pw@`` taken out) and the headers to send: the configured
    ones, and Basic auth from the URL's user part only when no ``Authorization`` is configured
    (httpx would let the URL's credentials replace the configured header)."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    url = str(settings.url or "")
    headers = {k: v.get_secret_value() for k, v in settings.headers.items()}
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, headers
    userinfo, host = parts.netloc.rsplit("@", 1)
    if not any(name.lower() == "authorization" for name in headers):
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return urlunsplit(parts._replace(netloc=host)), headers


def _connection_lost(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "connection closed" in text or ("closed" in text and "connection" in text)


def _last_lines(text: str, count: int) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-count:])


def server_command(settings: McpServerSettings) -> tuple[list[str], dict[str, str]]:
    """The command line and the environment of a stdio server: only what the config names, plus
    ``PATH`` when the command is a bare name (found on the app's ``PATH``).

    A path runs as written (made absolute against ``cwd``, never resolved: a venv's
    ``bin/python`` is a symlink to the base interpreter, and only the link finds the venv)."""
    command = settings.command or ""
    env = {name: os.environ[name] for name in settings.pass_env if name in os.environ}
    env.update({k: v.get_secret_value() for k, v in settings.env.items()})
    if "/" in command:
        path = Path(command).expanduser()
        if not path.is_absolute():
            base = settings.cwd.expanduser() if settings.cwd is not None else Path.cwd()
            path = base / path
        resolved = str(path)
        if not os.path.exists(resolved):
            raise McpCallError(f"command {command!r}: no such file ({resolved})")
    else:
        app_path = os.environ.get("PATH", os.defpath)
        found = shutil.which(command, path=env.get("PATH", app_path))
        if found is None:
            raise McpCallError(f"command {command!r} not found on PATH")
        resolved = found
        env.setdefault("PATH", app_path)
    return [resolved, *settings.args], env
