"""``RemoteClient``: our own ``instance-ai serve`` over HTTP and SSE.

Requests go through one ``httpx.AsyncClient`` with the Bearer token; the event stream uses
``client.sse.reconnecting_sse`` (backoff with jitter, ``Last-Event-ID`` resume, keep-alive
timeout), so ``events()`` survives dropped connections and server restarts without losing or
repeating an event. ``open()`` probes ``/instance-ai/health`` so that a wrong URL is reported
as such instead of as a confusing 404 later.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from ..protocol.ingest import Batch, DeltaRun, Joiner, StreamItem, events_of
from .base import (
    AuthError,
    Client,
    ClientError,
    ConnectionState,
    ServerProtocolError,
    ServerUnreachable,
    for_status,
)
from .sse import SseFrame, SseGaveUp, SseStatusError, reconnecting_sse_batches

if TYPE_CHECKING:  # the wire models (pydantic) load on the first answer that needs one, not at import:
    # a TUI or ``run`` by URL sends its first request before they are built
    from pydantic import BaseModel

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

API_PREFIX = "/instance-ai"
#: the connection state's detail when the server refuses the token (never "connected")
UNAUTHORIZED = "unauthorized: check --token"


def normalise_base_url(url: str) -> str:
    """``http://host:port`` from what a user typed (trailing ``/`` or ``/instance-ai`` removed)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ClientError(f"invalid server URL {url!r}: it must start with http:// or https://")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    return url


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
        if isinstance(message, str) and message:
            return message
    return str(body)[:300]


def status_error(status: int, message: str, what: str = "") -> ClientError:
    """The client error for an HTTP error status (``what`` names the request for context)."""
    prefix = f"{what}: " if what else ""
    if status in (401, 403):
        hint = "the server refused the token" if status == 403 else "the server needs a valid token (--token)"
        return for_status(status, f"{prefix}{message} ({hint})")
    if status >= 500:
        return for_status(status, f"{prefix}server error {status}: {message}")
    return for_status(status, f"{prefix}{message}")


def warm_http_stack() -> None:
    """Import what an httpx client's first request imports (httpcore's pool, h11, sniffio, anyio's
    asyncio backend), from a thread before the client is used: on the event loop that was 30-45 ms of
    CPU in one turn. Public names only (anyio loads its backend for a run: one trivial run here). Never
    raises: a module that is not installed is simply not warmed (``Client.preload``'s contract)."""
    import importlib

    for name in ("h11", "httpcore", "sniffio"):  # (sniffio: not a dependency of every anyio/httpx)
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # a speed-up only: a start never fails for it
        import anyio

        anyio.run(anyio.sleep, 0)


class RemoteClient(Client):
    """Client of our server at ``base_url`` (``http://127.0.0.1:5680``)."""

    mode = "remote"

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        http: httpx.AsyncClient | None = None,
        request_timeout: float = 30.0,
        keepalive_timeout: float = 45.0,
        initial_backoff: float = 0.25,
        max_backoff: float = 10.0,
        max_reconnect_attempts: int | None = None,
    ) -> None:
        super().__init__()
        self.base_url = normalise_base_url(base_url)
        self._api = self.base_url + API_PREFIX
        self._token = token
        self._http = http
        self._owns_http = http is None
        self._request_timeout = request_timeout
        self._sse_options: dict[str, Any] = {
            "keepalive_timeout": keepalive_timeout,
            "initial_backoff": initial_backoff,
            "max_backoff": max_backoff,
            "max_attempts": max_reconnect_attempts,
        }
        self._opened = False

    def __repr__(self) -> str:  # never shows the token
        return f"RemoteClient({self.base_url!r}, token={'***' if self._token else None})"

    # ----------------------------------------------------------------- lifecycle
    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            # (the certificate store, some 50 ms to load, only for https: no redirect is followed)
            self._http = httpx.AsyncClient(timeout=self._request_timeout,
                                           verify=self.base_url.startswith("https:"))
        return self._http

    def preload(self) -> None:
        """Off the event loop (``Client.preload``): the HTTP client, and what its first request imports
        (httpcore's connection pool, h11, anyio's asyncio backend): on the loop, ``open`` spent 45 ms of CPU
        in one turn importing them, after the first frame."""
        warm_http_stack()
        self._client()

    async def open(self) -> None:
        if self._opened:
            return
        self._set_state(ConnectionState.CONNECTING)
        try:
            response = await self._client().get(f"{self._api}/health", headers=self._headers)
        except httpx.HTTPError as exc:
            self._set_state(ConnectionState.OFFLINE, str(exc) or type(exc).__name__)
            raise ServerUnreachable(f"cannot reach the server at {self.base_url}: {exc or type(exc).__name__}; "
                                    "is it running? (--url)") from None
        body: Any = None
        try:
            body = response.json()
        except ValueError:
            pass
        if response.status_code != 200 or not isinstance(body, dict) or body.get("service") != "instance-ai":
            self._set_state(ConnectionState.OFFLINE, "not an Instance AI server")
            raise ClientError(
                f"{self.base_url} is not an Instance AI server (GET {API_PREFIX}/health answered "
                f"{response.status_code}); for a real n8n instance use the n8n dialect (--email)"
            )
        if body.get("authRequired") and not self._token:
            self._set_state(ConnectionState.OFFLINE, "token required")
            raise AuthError(f"{self.base_url} requires a token: pass --token or set remote.token", 401)
        if self._token or body.get("authRequired"):
            await self._check_token()
        self.model_name = str(body.get("model") or "")
        self._opened = True
        self._set_state(ConnectionState.CONNECTED)

    async def identify(self) -> None:
        """The server's model again (``GET /health``), after a reconnect."""
        try:
            response = await self._client().get(f"{self._api}/health", headers=self._headers)
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ServerUnreachable(f"cannot ask {self.base_url} which model it runs: {exc or type(exc).__name__}") \
                from None
        if isinstance(body, dict) and body.get("service") == "instance-ai":
            self.model_name = str(body.get("model") or "")

    async def _check_token(self) -> None:
        """The health route is public: ask an authenticated one so a wrong token is caught now."""
        try:
            response = await self._client().get(f"{self._api}/threads", headers=self._headers)
        except httpx.HTTPError as exc:
            self._set_state(ConnectionState.OFFLINE, str(exc) or type(exc).__name__)
            raise ServerUnreachable(f"cannot reach the server at {self.base_url}: {exc or type(exc).__name__}; "
                                    "is it running? (--url)") from None
        if response.status_code in (401, 403):
            self._set_state(ConnectionState.OFFLINE, UNAUTHORIZED)
            raise AuthError(f"{UNAUTHORIZED} ({_error_message(response)})", response.status_code)

    async def close(self) -> None:
        if self._http is not None and self._owns_http:
            await self._http.aclose()
            self._http = None
        self._opened = False
        self._set_state(ConnectionState.OFFLINE, "closed")

    # ----------------------------------------------------------------- requests
    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        what: str = "",
        answer: type[BaseModel] | None = None,
    ) -> Any:
        """The server's JSON answer to the request; with ``answer``, as that model."""
        what = what or f"{method} {path}"
        try:
            response = await self._client().request(
                method, f"{self._api}{path}", json=json, params=params, headers=self._headers
            )
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise ServerUnreachable(f"{what}: cannot reach the server at {self.base_url}: {reason}; is it running? (--url)") from None
        if response.status_code in (401, 403):
            self._set_state(ConnectionState.OFFLINE, UNAUTHORIZED)
        if response.status_code >= 400:
            raise status_error(response.status_code, _error_message(response), what)
        try:
            data = response.json()
        except ValueError:
            raise ServerProtocolError(f"{what}: the server at {self.base_url} answered with something that is not JSON") from None
        if answer is None:
            return data
        from pydantic import ValidationError

        try:
            return answer.model_validate(data)
        except ValidationError as exc:
            raise ServerProtocolError(f"{what}: unexpected answer from the server ({exc.errors()[0]['msg']})") from None

    @staticmethod
    def _quote(value: str) -> str:
        return quote(value, safe="")

    # ----------------------------------------------------------------- threads
    async def list_threads(self) -> list[ThreadInfo]:
        from ..protocol.api import ThreadList

        return (await self._request("GET", "/threads", what="list threads", answer=ThreadList)).threads

    async def search_threads(self, query: str) -> list[ThreadInfo]:
        from ..protocol.api import ThreadList

        """Full text on the server (``GET threads?search=``: titles and message text)."""
        return (await self._request("GET", "/threads", params={"search": query},
                                    what="search threads", answer=ThreadList)).threads

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        from ..protocol.api import CreateThreadRequest, ThreadInfo

        body = CreateThreadRequest(thread_id=thread_id, title=title or None).to_wire()
        return await self._request("POST", "/threads", json=body, what="create thread", answer=ThreadInfo)

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        from ..protocol.api import ThreadInfo

        return await self._request("PATCH", f"/threads/{self._quote(thread_id)}", json={"title": title},
                                   what="rename thread", answer=ThreadInfo)

    async def delete_thread(self, thread_id: str) -> None:
        await self._request("DELETE", f"/threads/{self._quote(thread_id)}", what="delete thread")

    # ----------------------------------------------------------------- runs
    async def send(self, thread_id: str, text: str) -> str:
        from ..protocol.api import SendMessageResponse

        return (await self._request("POST", f"/chat/{self._quote(thread_id)}", json={"message": text},
                                    what="send", answer=SendMessageResponse)).run_id

    async def cancel(self, thread_id: str) -> None:
        await self._request("POST", f"/chat/{self._quote(thread_id)}/cancel", what="cancel")

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        from ..protocol.api import ConfirmResponse

        return await self._request("POST", f"/confirm/{self._quote(request_id)}", json=body.to_wire(),
                                   what="confirm", answer=ConfirmResponse)

    async def messages(self, thread_id: str) -> ThreadMessages:
        from ..protocol.api import ThreadMessages

        return await self._request("GET", f"/threads/{self._quote(thread_id)}/messages",
                                   what="messages", answer=ThreadMessages)

    async def recent_messages(self, thread_id: str, limit: int) -> ThreadMessages:
        from ..protocol.api import ThreadMessages

        return await self._request("GET", f"/threads/{self._quote(thread_id)}/messages", params={"limit": str(limit)},
                                   what="messages", answer=ThreadMessages)

    async def status(self, thread_id: str) -> ThreadStatus:
        from ..protocol.api import ThreadStatus

        return await self._request("GET", f"/threads/{self._quote(thread_id)}/status",
                                   what="status", answer=ThreadStatus)

    can_rewind = True
    can_switch_model = True
    can_compact = True

    async def compact(self, thread_id: str, keep: str = "") -> str:
        from ..protocol.api import SendMessageResponse

        return (await self._request("POST", f"/threads/{self._quote(thread_id)}/compact", json={"keep": keep},
                                    what="compact", answer=SendMessageResponse)).run_id

    async def list_models(self, thread_id: str | None = None) -> ModelList:
        from ..protocol.api import ModelList

        params = {"threadId": thread_id} if thread_id else None
        return await self._request("GET", "/models", params=params, what="models", answer=ModelList)

    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        from ..protocol.api import ThreadInfo

        return await self._request("PUT", f"/threads/{self._quote(thread_id)}/model", json={"model": name},
                                   what="set model", answer=ThreadInfo)

    async def permissions(self, thread_id: str) -> ThreadPermissions:
        from ..protocol.api import ThreadPermissions

        return await self._request("GET", f"/threads/{self._quote(thread_id)}/permissions",
                                   what="permissions", answer=ThreadPermissions)

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        from ..protocol.api import ThreadPermissions

        path = f"/threads/{self._quote(thread_id)}/permissions/{self._quote(tool_name)}"
        return await self._request("DELETE", path, what="revoke permission", answer=ThreadPermissions)

    async def mcp_status(self) -> McpStatus:
        from ..protocol.mcp import McpStatus

        return await self._request("GET", "/mcp", what="MCP servers", answer=McpStatus)

    async def restart_mcp_server(self, name: str) -> McpStatus:
        from ..protocol.mcp import McpStatus

        return await self._request("POST", f"/mcp/{self._quote(name)}/restart",
                                   what="restart MCP server", answer=McpStatus)

    async def mcp_prompt(self, server: str, name: str, arguments: dict[str, str]) -> McpPromptText:
        from ..protocol.mcp import McpPromptText

        return await self._request("POST", f"/mcp/{self._quote(server)}/prompts/{self._quote(name)}", json={"arguments": arguments},
                                   what="MCP prompt", answer=McpPromptText)

    async def set_mcp_log_level(self, server: str, level: str) -> McpStatus:
        from ..protocol.mcp import McpStatus

        return await self._request("POST", f"/mcp/{self._quote(server)}/log-level", json={"level": level},
                                   what="MCP log level", answer=McpStatus)

    async def sign_out_mcp_server(self, server: str) -> McpStatus:
        from ..protocol.mcp import McpStatus

        return await self._request("POST", f"/mcp/{self._quote(server)}/sign-out",
                                   what="MCP sign-out", answer=McpStatus)

    async def approve_mcp_server(self, server: str) -> McpStatus:
        from ..protocol.mcp import McpStatus

        return await self._request("POST", f"/mcp/{self._quote(server)}/approve",
                                   what="approve MCP server", answer=McpStatus)

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        from ..protocol.api import RewindResponse

        # the server validates the body (an empty id is its 400, shown as a ClientError)
        body = {"messageId": message_id}
        return await self._request("POST", f"/threads/{self._quote(thread_id)}/rewind", json=body,
                                   what="rewind", answer=RewindResponse)

    async def thread_gone(self, thread_id: str) -> bool:
        """Whether the server proves ``thread_id`` is gone: its status route answers our JSON
        404. A server that is restarting (connection refused, 5xx, an HTML 404) proves nothing."""
        try:
            response = await self._client().get(
                f"{self._api}/threads/{self._quote(thread_id)}/status", headers=self._headers
            )
        except httpx.HTTPError:
            return False
        if response.status_code != 404:
            return False
        try:
            body = response.json()
        except ValueError:
            return False
        message = str(body.get("message", "")).lower() if isinstance(body, dict) else ""
        return message.startswith("thread") and message.endswith("not found")

    # ----------------------------------------------------------------- events
    def _stream_error(self, frame: SseFrame) -> None:
        said = _stream_error_text(frame.data)
        self._diagnose(f"the server ended the event stream: {said}")
        self._set_state(ConnectionState.RECONNECTING, said)

    def batch_of(self, frames: list[SseFrame | DeltaRun], queued: int) -> Batch:
        """The batch of the frames of one piece received: each frame's item (a ``DeltaRun`` the
        reader found as it is), neighbouring runs of deltas joined."""
        from ..protocol.events import EventParseError, UnknownEvent

        joiner = Joiner()
        take = joiner.json
        items = joiner.items
        for frame in frames:
            if type(frame) is DeltaRun:
                joiner.add(frame)
                continue
            if frame.event == "error":  # type: ignore[union-attr]
                self._stream_error(frame)  # type: ignore[arg-type]
                continue
            if frame.event not in ("", "message"):  # type: ignore[union-attr]
                self._diagnose(f"skipped SSE frame with unknown event name {frame.event!r}")  # type: ignore[union-attr]
                continue
            before = len(items)
            try:
                take(frame.id, frame.data)  # type: ignore[union-attr]
            except EventParseError as exc:
                self._diagnose(f"skipped malformed frame (id {frame.raw_id}): {exc}")  # type: ignore[union-attr]
                continue
            if len(items) > before and type(items[-1]) is StreamItem and isinstance(items[-1].event, UnknownEvent):
                self._diagnose(f"unknown event type {items[-1].event.type!r} (id {frame.raw_id}) kept as is")  # type: ignore[union-attr]
        return Batch(joiner.done(), queued)

    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        async for batch in self._batches(thread_id, after, runs=False):
            for item in batch.items:
                if type(item) is DeltaRun:
                    for event in events_of(item):
                        yield event
                else:
                    yield item  # type: ignore[misc]

    def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        """The frames of each piece received as one batch (runs of our deltas read in bulk,
        ``protocol.delta_runs``), with what was still waiting on the connection (``queued``). The
        ids the reader hands over only go up (it drops a replayed one), as joining needs."""
        return self._batches(thread_id, after, runs=True)

    async def _batches(self, thread_id: str, after: int | None, *, runs: bool) -> AsyncIterator[Batch]:
        url = f"{self._api}/events/{self._quote(thread_id)}"
        pieces = reconnecting_sse_batches(
            self._client(),
            url,
            headers=self._headers,
            last_event_id=after,
            set_state=self._set_state,
            is_gone=lambda: self.thread_gone(thread_id),
            on_skip=self._diagnose,
            runs=runs,
            **self._sse_options,
        )
        try:
            batch_of = self.batch_of
            async for piece in pieces:  # the frames of one piece received, decoded in one step
                batch = batch_of(piece.frames, piece.queued)
                if batch.items:
                    yield batch
        except SseStatusError as exc:
            raise status_error(exc.status, _sse_error_message(exc), f"events of {thread_id}") from None
        except SseGaveUp as exc:
            raise ClientError(str(exc)) from None
        finally:
            await pieces.aclose()


def _stream_error_text(data: str) -> str:
    """The words of an ``event: error`` frame (``{"message"}``; any other data, cut)."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return data.strip()[:300] or "the server ended the event stream"
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:300]
    return data.strip()[:300]


def _sse_error_message(exc: SseStatusError) -> str:
    try:
        body = json.loads(exc.body)
    except ValueError:
        return exc.body.strip()[:300] or str(exc)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return str(exc)
