"""The local gateway: lets a remote n8n's agent read files in one folder the user chose.

It plays the part of n8n's ``@n8n/computer-use`` daemon (reference §7), read-only:

1. pair: ``POST /rest/instance-ai/gateway/create-link`` with the user's session gives a
   pairing token (or use a gateway key given by the user);
2. ``POST gateway/init`` (header ``X-Gateway-Key``) with the folder and the MCP tool list
   ``read_file``, ``list_files``, ``search_files``; a pairing token is exchanged for a session key;
3. consume ``GET gateway/events`` (SSE): each ``filesystem-request`` frame is a tool call,
   answered with ``POST gateway/response/:requestId`` and an MCP result
   ``{content: [{type: "text", text}], isError?}``; ``gateway-disconnect`` ends the session.
   A dropped stream is reconnected (backoff + jitter); a server that forgot the gateway gets
   ``init`` again. With ``pair_again`` (the TUI's ``--gateway``), ``gateway-disconnect`` (n8n
   sends it when it shuts down) and a key the restarted server no longer knows (n8n 2.41: 403
   "Invalid API key", after a clean stop or a ``kill -9``; 401 elsewhere) lead to pairing again,
   retried with capped backoff while n8n is away, instead of the end of the session; the
   connection state says "pairing again" meanwhile. A 403 that forbids the gateway ("Local
   gateway is disabled") ends it with n8n's words.

The tools themselves (``gateway_tools.FolderTools``) confine every path to the folder with
:mod:`instance_ai_tui.confine`, the module the workspace uses, and answer resource decisions
(§7.5) for files outside the allow-list, large ones and ones with more than one hard link.

Run it alone: ``python -m instance_ai_tui.cli.gateway --url URL --email E --dir FOLDER``.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from .base import AuthError, ClientError, ConnectionState
from .gateway_tools import CONFIRMATION_PREFIX, DECISIONS, TOOL_GROUP, TOOLS, FolderTools, Policy, ToolFailure
from .n8n_auth import N8nSession
from .sse import SseStatusError, reconnecting_sse

__all__ = ["CONFIRMATION_PREFIX", "DECISIONS", "TOOLS", "TOOL_GROUP", "FolderTools", "GatewayError", "LocalGateway",
           "Policy", "ToolFailure", "refusal_kind", "share_folder"]


class GatewayError(ClientError):
    """The gateway cannot (or may no longer) serve: refused key, disabled feature, ..."""


# --------------------------------------------------------------------------- the daemon


class LocalGateway:
    """Serves ``root`` to the n8n at ``base_url``. ``start()`` runs it in the background.

    Authenticate with ``key`` (a pairing token, session key or the static
    ``N8N_INSTANCE_AI_GATEWAY_API_KEY``) or with ``session`` (a logged-in ``N8nSession``: a
    pairing token is then created for you).
    """

    def __init__(
        self,
        base_url: str,
        root: Path | str,
        *,
        key: str | None = None,
        session: N8nSession | None = None,
        allow: list[str] | tuple[str, ...] | None = None,
        confirm_reads_over: int | None = None,
        host_identifier: str | None = None,
        http: httpx.AsyncClient | None = None,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        keepalive_timeout: float = 45.0,
        log: Callable[[str], None] | None = None,
        set_state: Callable[[ConnectionState, str], None] | None = None,
        pair_again: bool = False,
    ) -> None:
        if key is None and session is None:
            raise GatewayError("the local gateway needs a gateway key or a logged-in n8n session")
        self.base_url = base_url.rstrip("/")
        policy = Policy(allow=tuple(allow) if allow is not None else None, confirm_reads_over=confirm_reads_over)
        self.tools = FolderTools(root, policy)
        self._key = key
        self._session = session
        self.host_identifier = host_identifier or platform.node() or "instance-ai"
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=30.0)
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._keepalive_timeout = keepalive_timeout
        self._log = log or (lambda message: None)
        self._set_state = set_state or (lambda state, detail: None)
        self._task: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.handled = 0
        self.ended_by_server = False
        self.pair_again = pair_again
        #: how many times the gateway paired again after n8n ended the session or restarted
        self.repairs = 0
        #: refusals of the stream in a row without it connecting in between (init/pair again at most 3)
        self._refusals = 0
        #: since when the stream has been failing (None: connected); what ``_pairing_lost`` watches
        self._reconnecting_since: float | None = None
        #: seconds between two looks at n8n's gateway status while the stream fails
        self._watch_interval = max(1.0, min(3.0, initial_backoff * 6))

    def __repr__(self) -> str:
        return f"LocalGateway({self.base_url!r}, root={str(self.tools.root)!r})"

    @property
    def api(self) -> str:
        return self.base_url + "/rest/instance-ai/gateway"

    # ------------------------------------------------------------------ handshake
    async def pair(self) -> str:
        """``create-link`` with the session: returns (and adopts) a fresh pairing token."""
        if self._session is None:
            raise GatewayError("pairing needs a logged-in n8n session")
        data = await self._post("/create-link", None, headers=self._session.headers())
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise GatewayError("n8n did not return a gateway pairing token")
        self._key = token
        return token

    async def init(self) -> None:
        """Announce the folder and the tools; exchanges a pairing token for a session key."""
        if self._key is None:
            await self.pair()
        body = {
            "rootPath": str(self.tools.root),
            "tools": self.tools.definitions(),
            "hostIdentifier": self.host_identifier,
            "toolCategories": [{"name": "filesystem", "enabled": True, "writeAccess": False}],
        }
        data = await self._post("/init", body, headers=self._key_headers())
        session_key = data.get("sessionKey") if isinstance(data, dict) else None
        if isinstance(session_key, str) and session_key:
            self._key = session_key
        self._log(f"gateway ready: {self.tools.root} shared with {self.base_url}")

    def _key_headers(self) -> dict[str, str]:
        assert self._key is not None
        return {"X-Gateway-Key": self._key}

    async def _post(self, path: str, body: Any, *, headers: dict[str, str]) -> Any:
        try:
            response = await self._http.post(self.api + path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise GatewayError(f"cannot reach n8n at {self.base_url}: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise _gateway_error(response.status_code, response.text, path)
        try:
            return response.json().get("data")
        except (ValueError, AttributeError):
            raise GatewayError(f"{self.api}{path} did not answer like n8n") from None

    # ------------------------------------------------------------------ serving
    async def start(self) -> None:
        """Pair if needed, init, then serve in a background task."""
        await self.init()
        self._task = asyncio.create_task(self.serve(initialized=True), name="local-gateway")

    async def wait(self) -> None:
        """Until the server ends the session (or ``stop()``); re-raises a fatal error."""
        if self._task is not None:
            await self._task

    def _stream_state(self, state: ConnectionState, detail: str) -> None:
        if state == ConnectionState.CONNECTED:
            self._refusals = 0  # n8n took the key: a later refusal is news (a restart), not a loop
            self._reconnecting_since = None
        elif state == ConnectionState.RECONNECTING and self._reconnecting_since is None:
            self._reconnecting_since = time.monotonic()
        self._set_state(state, detail)

    async def _pairing_lost(self) -> None:
        """Returns once n8n answers but no longer has this gateway connected while the stream keeps
        failing: n8n 2.35 answers a stale key on the stream with a 500 error page (which the stream
        retries for ever) instead of 2.41's 403 "Invalid API key". Asks n8n's own ``gateway/status``
        (the logged-in session's view) every few seconds while the stream is reconnecting."""
        assert self._session is not None
        while True:
            await asyncio.sleep(self._watch_interval)
            since = self._reconnecting_since
            if since is None or time.monotonic() - since < self._watch_interval:
                continue
            try:
                response = await self._http.get(self.api + "/status", headers=self._session.headers(), timeout=10.0)
                data = response.json().get("data") if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError, AttributeError):
                continue  # n8n away or booting: the stream's own retries go on
            if isinstance(data, dict) and data.get("connected") is False:
                return

    async def _consume(self, stream: Any) -> bool:
        """Dispatch the stream's frames; ``True`` when n8n ends the session."""
        async for frame in stream:
            if self._dispatch(frame.data):
                return True
        return False

    async def serve(self, *, initialized: bool = False) -> None:
        """Consume the request stream until ``gateway-disconnect`` (reconnecting on drops).

        What n8n 2.41's answers to the stream mean (``instance-ai.controller`` ``gatewayEvents``):
        403 "Local gateway not initialized" — its grace timer dropped us: ``init`` again; 403
        "Invalid API key" / "Missing API key" (and 401) — the pairing is gone (n8n restarted, even
        killed, and keeps session keys in memory only): pair again; any other 403 ("Local gateway
        is disabled") is final and shown with n8n's words. With ``pair_again`` and a session, a
        stream that keeps failing while n8n's ``gateway/status`` says it is not connected (n8n 2.35
        answers a stale key with a 500 page) is a lost pairing too.
        """
        if not initialized:
            await self.init()
        self._refusals = 0
        while True:
            self._reconnecting_since = None
            stream = reconnecting_sse(
                self._http,
                self.api + "/events",
                headers=self._key_headers(),
                set_state=self._stream_state,
                initial_backoff=self._initial_backoff,
                max_backoff=self._max_backoff,
                keepalive_timeout=self._keepalive_timeout,
            )
            consume = asyncio.create_task(self._consume(stream))
            watch = (asyncio.create_task(self._pairing_lost())
                     if self.pair_again and self._session is not None else None)
            ended = False
            try:
                waiting = {consume} if watch is None else {consume, watch}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if not consume.done():
                    consume.cancel()
                    await asyncio.gather(consume, return_exceptions=True)
                    self._log("n8n is back but no longer has the gateway connected; pairing again")
                    await self._pair_again("n8n restarted")
                    continue
                ended = consume.result()
            except SseStatusError as exc:
                refusal = refusal_kind(exc.status, exc.body)
                if refusal == "not-initialized" and self._refusals < 3:
                    self._refusals += 1  # n8n's grace timer dropped us: announce ourselves again
                    self._log("n8n forgot the gateway; initializing again")
                    await self.init()
                    continue
                if refusal == "pairing-gone" and self.pair_again and self._refusals < 3:
                    self._refusals += 1  # a restarted n8n (clean or killed) no longer knows our session key
                    self._log(f"n8n no longer knows the gateway key ({_message_of(exc.body)}); pairing again")
                    await self._pair_again("n8n restarted")
                    continue
                if self.pair_again and (exc.status in (200, 404) or exc.status >= 500):
                    # n8n restarting: an HTML page, then 404s while its module boots (its
                    # gateway-disconnect may have been lost with the old stream): pair again,
                    # with backoff, until it is back
                    self._log(f"n8n is restarting (HTTP {exc.status}); pairing again when it is back")
                    await self._pair_again("n8n is restarting")
                    continue
                raise _gateway_error(exc.status, exc.body, "/events") from None
            finally:
                for task in (consume, watch):
                    if task is not None and not task.done():
                        task.cancel()
                await asyncio.gather(*(t for t in (consume, watch) if t is not None), return_exceptions=True)
                await stream.aclose()
            if ended:
                self._log("n8n ended the gateway session")
                if not self.pair_again:
                    self.ended_by_server = True
                    self._set_state(ConnectionState.OFFLINE, "disconnected by n8n")
                    return
                await self._pair_again("n8n ended the session")

    async def _pair_again(self, why: str) -> None:
        """Pair (or, with a static key, init) again; while n8n is away or booting, retry with
        backoff (at most ``max_backoff`` between tries) for as long as the gateway runs. A refusal
        of the login session or a forbidden gateway (401/403 on pairing) is final."""
        from .sse import backoff_delay, format_wait

        attempt = 0
        self._set_state(ConnectionState.RECONNECTING, f"({why}: pairing again)")
        while True:
            attempt += 1
            if self._session is not None:
                self._key = None  # the old pairing is gone with the session: a fresh token
            try:
                await self.init()
            except ClientError as exc:
                if exc.status in (400, 401, 403):
                    raise
                delay = backoff_delay(attempt, self._initial_backoff, self._max_backoff)
                self._set_state(ConnectionState.RECONNECTING, f"({why}: pairing again, attempt {attempt}, "
                                                              f"next try in {format_wait(delay)})")
                await asyncio.sleep(delay)
                continue
            self.repairs += 1
            self._log(f"paired again with n8n ({why})")
            return

    def _dispatch(self, data: str) -> bool:
        """Handle one frame; ``True`` when the server ends the session."""
        try:
            message = json.loads(data)
        except ValueError:
            self._log(f"skipped a gateway frame that is not JSON: {data[:80]!r}")
            return False
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "gateway-disconnect":
            return True
        payload = message.get("payload") if isinstance(message, dict) else None
        if kind != "filesystem-request" or not isinstance(payload, dict):
            self._log(f"skipped a gateway frame of type {kind!r}")
            return False
        request_id = payload.get("requestId")
        call = payload.get("toolCall") or {}
        if not isinstance(request_id, str) or not isinstance(call, dict):
            self._log("skipped a filesystem-request without requestId/toolCall")
            return False
        task = asyncio.create_task(self._handle(request_id, str(call.get("name", "")), call.get("arguments") or {}))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
        return False

    async def _handle(self, request_id: str, name: str, arguments: dict[str, Any]) -> None:
        shown = arguments.get("path") or arguments.get("query") or ""
        self._log(f"{name} {shown}".rstrip())
        try:
            body: dict[str, Any] = {"result": await self.tools.call(name, arguments)}
        except Exception as exc:  # noqa: BLE001 - a bug in a tool must still answer the request
            body = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            response = await self._http.post(f"{self.api}/response/{request_id}", json=body,
                                             headers=self._key_headers())
        except httpx.HTTPError as exc:
            self._log(f"could not answer {request_id}: {type(exc).__name__}")
            return
        if response.status_code == 404:
            self._log(f"n8n no longer waits for {request_id} (timed out?)")
        elif response.status_code >= 400:
            self._log(f"n8n refused the answer to {request_id}: HTTP {response.status_code}")
        else:
            self.handled += 1

    async def stop(self, *, disconnect: bool = True) -> None:
        """Stop serving; ``disconnect`` also ends the session on the server."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for task in list(self._handlers):
            task.cancel()
        if disconnect and self._key is not None and not self.ended_by_server:
            try:
                await self._http.post(self.api + "/disconnect", headers=self._key_headers())
            except httpx.HTTPError:
                pass
        if self._own_http:
            await self._http.aclose()


def _message_of(body: str) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else body[:200]


#: n8n 2.41's words when a gateway key is unknown (``validateGatewayApiKey``): the pairing is gone
_PAIRING_GONE = ("invalid api key", "missing api key")


def refusal_kind(status: int, body: str) -> str:
    """What a 401/403 from n8n's gateway routes means: ``"not-initialized"`` (init again),
    ``"pairing-gone"`` (the key is unknown: pair again, like a 401), ``"forbidden"`` (final:
    e.g. "Local gateway is disabled"), or ``""`` for another status."""
    if status == 401:
        return "pairing-gone"
    if status != 403:
        return ""
    message = _message_of(body).strip().lower()
    if "not initialized" in message:
        return "not-initialized"
    if message in _PAIRING_GONE:
        return "pairing-gone"
    return "forbidden"


def _gateway_error(status: int, body: str, path: str) -> ClientError:
    message = _message_of(body)
    if status in (401, 403):
        if path == "/create-link" and status == 401:
            return AuthError(f"n8n refused to pair a gateway: log in again ({message})", status)
        if refusal_kind(status, body) == "forbidden":
            return GatewayError(f"n8n refused the local gateway: {message} (HTTP {status})", status)
        return GatewayError(f"n8n refused the local gateway's key ({status}): {message}", status)
    return GatewayError(f"gateway {path} failed ({status}): {message}", status)


# --------------------------------------------------------------------------- command line


async def share_folder(url: str, folder: Path, *, key: str | None = None, email: str | None = None,
                       allow: list[str] | None = None, confirm_reads_over: int | None = None) -> int:
    """Share ``folder`` with the n8n at ``url`` until stopped (``python -m instance_ai_tui.cli.gateway``);
    the exit code. Pairs with ``key``, or logs in as ``email`` first. Logged in, it pairs again by
    itself after n8n restarts (cleanly or killed); with a key (a one-time pairing token) it ends when
    n8n ends the session."""
    from .n8n_auth import load_browser_id, login, resolve_credentials

    session: N8nSession | None = None
    async with httpx.AsyncClient(timeout=30.0) as http:
        if key is None:
            credentials = await asyncio.to_thread(resolve_credentials, email, None)
            if credentials is None:
                print("gateway: give --key, or --email with N8N_PASSWORD or a terminal to type it", file=sys.stderr)
                return 2
            session = N8nSession(browser_id=await asyncio.to_thread(load_browser_id))
            await login(http, url, session, credentials)
        gateway = LocalGateway(url, folder, key=key, session=session, allow=allow,
                               confirm_reads_over=confirm_reads_over, http=http, pair_again=session is not None,
                               max_backoff=8.0,
                               log=lambda message: print(f"gateway: {message}", file=sys.stderr, flush=True))
        await gateway.start()
        try:
            await gateway.wait()
        finally:
            await gateway.stop()
    return 0
