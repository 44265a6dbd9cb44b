"""The ASGI app that speaks the streaming protocol over HTTP and SSE (Starlette).

``create_app(service)`` exposes an ``AssistantService`` under ``/instance-ai/...``: the routes of
``openapi.OPERATIONS`` (each served by the handler of its operationId's name, and described in
``GET openapi.json``), plus ``GET health`` (``{service: "instance-ai", version, model, authRequired}``).

Errors are JSON ``{code, message}`` with ``code`` equal to the HTTP status: 400 for invalid
input, 401 without a valid token, 404 for unknown threads and requests, 409 when busy, 413
for bodies over ``max_body_bytes``. With a ``token`` every route but ``health`` and
``openapi.json`` needs ``Authorization: Bearer <token>`` (or ``?token=`` for EventSource
clients, which cannot set headers). The lifespan starts the service (crash sweep) and shuts
it down gracefully: active runs end with ``run-finish`` cancelled, then SSE streams end.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..assistant import factory
from ..assistant.errors import AssistantError, InvalidRequest
from ..assistant.service_api import AssistantService
from ..protocol.api import (
    CompactRequest,
    CreateThreadRequest,
    RewindRequest,
    SendMessageRequest,
    SendMessageResponse,
    SetModelRequest,
    ThreadList,
    UpdateThreadRequest,
    parse_confirm_body,
)
from ..protocol.mcp import McpLogLevelRequest, McpPromptRequest
from ..store.errors import is_unavailable
from .openapi import OPERATIONS, PREFIX, build_openapi
from .sse import SSE_HEADERS, SSE_MEDIA_TYPE, EventStream, StreamHub

log = logging.getLogger("instance_ai_tui.server")

SERVICE_NAME = "instance-ai"
#: ids in paths (the assistant's rule for thread ids): letters, digits and ._:@-, at most 128
_ID_RE = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
_PUBLIC_PATHS = frozenset({f"{PREFIX}/health", f"{PREFIX}/openapi.json"})


def _bounded_int(request: Request, name: str, low: int, high: int) -> int | None:
    """An integer query parameter within ``low``..``high`` (400 otherwise), or None if absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:
        raise ApiError(400, f"{name} must be an integer from {low} to {high}")
    return int(text)

class ApiError(Exception):
    """An error answer: ``{code: status, message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
    message = str(first.get("msg", "invalid value"))
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{where}: {message}{suffix}" if where else f"{message}{suffix}"


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("instance-ai-tui")
    except PackageNotFoundError:
        return "0+unknown"


# --------------------------------------------------------------------------- middleware


#: host names that always mean this machine (``*.localhost`` too, RFC 6761)
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SAME_SITE_FETCH = frozenset({b"same-origin", b"none"})


def _host_only(value: str) -> str:
    """``Host``/authority without the port, lower case; IPv6 keeps its brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    host, sep, port = value.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else value


def loopback_hosts(bound: str | None = None) -> frozenset[str]:
    """The ``Host`` names a loopback-bound server answers: the loopback names and ``bound``."""
    names = set(LOOPBACK_HOSTS)
    if bound:
        names.add(f"[{bound.lower()}]" if ":" in bound and not bound.startswith("[") else bound.lower())
    return frozenset(names)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value)
    return None


class GuardMiddleware:
    """What every request passes before a route:

    * ``Host`` must be one of ``allowed_hosts`` (when given): a DNS-rebinding page reaches a
      loopback server under its own name, so it gets 421 and can read or answer nothing;
    * writes (any method but GET/HEAD/OPTIONS) must not come from another site: an ``Origin``
      other than this server's, or ``Sec-Fetch-Site`` other than same-origin/none, gets 403, and
      a body must be ``application/json`` (415) — no HTML form or simple ``fetch`` can send it;
    * the bearer token (when configured), also accepted as ``?token=`` (compared as bytes);
    * an access log that never prints query strings;
    * an unexpected exception becomes a JSON 500 *without* closing the keep-alive connection
      (Starlette's outermost handler re-raises, which made uvicorn drop it).
    """

    def __init__(self, app: ASGIApp, token: str | None, allowed_hosts: frozenset[str] | None = None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.allowed_hosts = allowed_hosts

    def _authorised(self, scope: Scope) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token):
                    return True
        query = scope.get("query_string", b"")
        if b"token=" in query:
            for part in query.split(b"&"):
                if part.startswith(b"token="):
                    candidate = unquote_to_bytes(part[6:].replace(b"+", b" "))
                    if hmac.compare_digest(candidate, self.token):
                        return True
        return False

    def _host_allowed(self, host: str) -> bool:
        assert self.allowed_hosts is not None
        return host in self.allowed_hosts or host.endswith(".localhost")

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        raw_host = _header(scope, b"host")
        host = _host_only(raw_host.decode("latin-1")) if raw_host is not None else None
        if self.allowed_hosts is not None and host is not None and not self._host_allowed(host):
            return error_response(421, f"this server does not answer to the host name '{host[:100]}' (use "
                                       "127.0.0.1 or localhost); refused to protect against DNS rebinding")
        if scope["method"] in _SAFE_METHODS:
            return None
        fetch_site = _header(scope, b"sec-fetch-site")
        if fetch_site is not None and fetch_site.strip().lower() not in _SAME_SITE_FETCH:
            return error_response(403, "cross-site request refused (Sec-Fetch-Site: "
                                       f"{fetch_site.decode('latin-1')[:40]})")
        origin = _header(scope, b"origin")
        if origin is not None:
            origin_host = _host_only(urlsplit(origin.decode("latin-1")).netloc)
            same = origin_host == host if host is not None else False
            if not (same or (self.allowed_hosts is not None and origin_host and self._host_allowed(origin_host))):
                return error_response(403, f"cross-site request refused (Origin: {origin.decode('latin-1')[:100]})")
        content_type = _header(scope, b"content-type")
        length = _header(scope, b"content-length")
        has_body = _header(scope, b"transfer-encoding") is not None or (length is not None and length.strip() != b"0")
        if content_type is not None or has_body:
            media = (content_type or b"").split(b";")[0].strip().lower()
            if media != b"application/json" and not media.endswith(b"+json"):
                return error_response(415, "send the body as JSON with 'Content-Type: application/json'")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        response_started = False

        async def send_logged(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
                elapsed = (time.perf_counter() - started) * 1000
                log.info("%s %s -> %s (%.1f ms)", scope["method"], scope["path"], message["status"], elapsed)
            await send(message)

        refusal = self._refusal(scope)
        if refusal is None and self.token is not None and scope["path"] not in _PUBLIC_PATHS \
                and not self._authorised(scope):
            refusal = error_response(
                401, "missing or invalid token: send 'Authorization: Bearer <token>'", {"WWW-Authenticate": "Bearer"}
            )
        if refusal is not None:
            await refusal(scope, receive, send_logged)
            return
        try:
            await self.app(scope, receive, send_logged)
        except Exception as exc:
            if is_unavailable(exc):  # Redis/SQLite down for now: say so, and when to retry
                log.warning("storage unavailable on %s %s: %s", scope["method"], scope["path"], exc)
                if response_started:
                    raise
                response = error_response(
                    503, f"storage unavailable ({_short(exc)}); nothing was lost, retry in a few seconds",
                    {"Retry-After": str(RETRY_AFTER_SECONDS)})
                await response(scope, receive, send_logged)
                return
            log.error("unexpected error on %s %s: %s", scope["method"], scope["path"], exc, exc_info=exc)
            if response_started:
                raise
            response = error_response(500, "internal server error (this is a bug; the server log has the details)")
            await response(scope, receive, send_logged)


#: seconds a client is asked to wait after a 503 (storage unavailable)
RETRY_AFTER_SECONDS = 2


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text.splitlines()[0][:160]


# --------------------------------------------------------------------------- the API


class InstanceAIApi:
    """The route handlers, bound to one service."""

    def __init__(
        self, service: AssistantService, hub: StreamHub, *, ping_interval: float, max_body_bytes: int, flush_interval: float
    ) -> None:
        self.service = service
        self.hub = hub
        self.ping_interval = ping_interval
        self.max_body_bytes = max_body_bytes
        self.flush_interval = flush_interval

    # ----------------------------------------------------------------- helpers
    @staticmethod
    def _path_id(request: Request, name: str) -> str:
        value = request.path_params[name]
        if not _ID_RE.match(value):
            raise ApiError(400, f"invalid {name}: use 1-128 letters, digits or ._:@-")
        return value

    async def _json(self, request: Request, *, required: bool = True) -> Any:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            raise ApiError(413, f"request body too large (limit {self.max_body_bytes} bytes)")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self.max_body_bytes:
                raise ApiError(413, f"request body too large (limit {self.max_body_bytes} bytes)")
        if not body.strip():
            if required:
                raise ApiError(400, "a JSON body is required")
            return None
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise ApiError(400, f"the body is not valid JSON: {str(exc)[:200]}") from None
        try:  # JSON may spell a lone UTF-16 surrogate ("\\ud800"); no store or client can keep it
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(400, "the body contains a lone UTF-16 surrogate (e.g. \\ud800); send valid Unicode") from None
        except RecursionError:
            raise ApiError(400, "the body is nested too deeply") from None
        if data is None and not required:
            raise ApiError(400, "the body must be a JSON object (or empty), not null")
        return data

    @staticmethod
    def _model(model: type[BaseModel], data: Any) -> Any:
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        return model.model_validate(data)

    @staticmethod
    def _ok(model: BaseModel | dict[str, Any], status: int = 200) -> JSONResponse:
        payload = model.to_wire() if hasattr(model, "to_wire") else model
        return JSONResponse(payload, status_code=status)

    async def _thread(self, request: Request) -> str:
        thread_id = self._path_id(request, "threadId")
        await self.service.get_thread(thread_id)  # ThreadNotFound -> 404
        return thread_id

    # ----------------------------------------------------------------- routes
    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "service": SERVICE_NAME,
                "version": request.app.state.version,
                "model": self.service.model_label,
                "authRequired": request.app.state.auth_required,
            }
        )

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(request.app.state.openapi)

    async def send_message(self, request: Request) -> Response:
        thread_id = self._path_id(request, "threadId")
        body: SendMessageRequest = self._model(SendMessageRequest, await self._json(request))
        if not body.message.strip():
            raise ApiError(400, "message: must not be empty")
        run_id = await self.service.send(thread_id, body.message)
        return self._ok(SendMessageResponse(run_id=run_id))

    async def cancel_run(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        await self.service.cancel(thread_id)
        return JSONResponse({"ok": True})

    async def confirm(self, request: Request) -> Response:
        request_id = self._path_id(request, "requestId")
        data = await self._json(request)
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        body = parse_confirm_body(data)
        return self._ok(await self.service.confirm(request_id, body))

    async def events(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        cursor = self._cursor(request)
        source = self.service.events(thread_id, after=cursor)
        stream = EventStream(source, ping_interval=self.ping_interval, hub=self.hub, flush_interval=self.flush_interval)
        return StreamingResponse(stream, media_type=SSE_MEDIA_TYPE, headers=SSE_HEADERS)

    @staticmethod
    def _cursor(request: Request) -> int:
        """``Last-Event-ID`` wins when present (400 if invalid); else ``?lastEventId=`` (400 if invalid); else 0.

        A bad header used to be ignored, silently replaying the whole thread."""

        def valid(value: str) -> bool:
            return value.isascii() and value.isdigit() and len(value) <= 18

        header = request.headers.get("last-event-id")
        if header is not None and header.strip():
            if not valid(header.strip()):
                raise ApiError(400, "Last-Event-ID must be a non-negative integer")
            return int(header.strip())
        query = request.query_params.get("lastEventId")
        if query is None:
            return 0
        if not valid(query.strip()):
            raise ApiError(400, "lastEventId must be a non-negative integer")
        return int(query.strip())

    async def list_threads(self, request: Request) -> Response:
        search = request.query_params.get("search") or None
        threads = await self.service.list_threads(search)
        return self._ok(ThreadList(threads=threads, total=len(threads), has_more=False))

    async def create_thread(self, request: Request) -> Response:
        data = await self._json(request, required=False)
        body: CreateThreadRequest = self._model(CreateThreadRequest, {} if data is None else data)
        if body.thread_id is not None:
            if not _ID_RE.match(body.thread_id):
                raise ApiError(400, "threadId: use 1-128 letters, digits or ._:@-")
            with contextlib.suppress(AssistantError):
                existing = await self.service.get_thread(body.thread_id)
                return self._ok(existing)
        if body.title is not None and len(body.title) > 255:
            raise ApiError(400, "title: at most 255 characters")
        created = await self.service.create_thread(body.thread_id, body.title or "")
        return self._ok(created, status=201)

    async def rename_thread(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        body: UpdateThreadRequest = self._model(UpdateThreadRequest, await self._json(request))
        if body.metadata is not None:
            raise ApiError(400, "metadata cannot be changed over this API; send {title}")
        if body.title is None or not body.title.strip():
            raise ApiError(400, "title: required and not blank")
        return self._ok(await self.service.rename_thread(thread_id, body.title))

    async def delete_thread(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        await self.service.delete_thread(thread_id)
        return JSONResponse({"ok": True})

    async def thread_messages(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        # n8n's paging: ``limit`` 1-200, ``page`` 0-1000 (page 0 the newest); no limit: the whole thread
        limit = _bounded_int(request, "limit", 1, 200)
        page = _bounded_int(request, "page", 0, 1000)
        return self._ok(await self.service.messages(thread_id, limit=limit, page=page or 0))

    async def thread_status(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        return self._ok(await self.service.status(thread_id))

    async def list_models(self, request: Request) -> Response:
        thread_id = request.query_params.get("threadId")
        if thread_id is not None and not _ID_RE.match(thread_id):
            raise ApiError(400, "invalid threadId: use 1-128 letters, digits or ._:@-")
        return self._ok(await self.service.models(thread_id))

    async def set_thread_model(self, request: Request) -> Response:
        thread_id = await self._thread(request)  # an unknown thread is a 404 (it was created)
        body: SetModelRequest = self._model(SetModelRequest, await self._json(request))
        return self._ok(await self.service.set_model(thread_id, body.model))

    async def compact_thread(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        body: CompactRequest = self._model(CompactRequest, await self._json(request))
        return self._ok(SendMessageResponse(run_id=await self.service.compact(thread_id, body.keep)))

    async def rewind_thread(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        body: RewindRequest = self._model(RewindRequest, await self._json(request))
        return self._ok(await self.service.rewind(thread_id, body.message_id))

    async def thread_permissions(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        return self._ok(await self.service.permissions(thread_id))

    async def revoke_permission(self, request: Request) -> Response:
        thread_id = await self._thread(request)
        tool_name = request.path_params.get("toolName", "")
        if not _ID_RE.match(tool_name):
            raise InvalidRequest("toolName must be 1-128 letters, digits or ._:@-")
        return self._ok(await self.service.revoke_permission(thread_id, tool_name))

    async def mcp_status(self, request: Request) -> Response:
        return self._ok(factory.mcp_status(self.service))

    async def restart_mcp_server(self, request: Request) -> Response:
        return self._ok(await factory.restart_mcp_server(self.service, request.path_params.get("name", "")))

    async def mcp_prompt(self, request: Request) -> Response:
        body: McpPromptRequest = self._model(McpPromptRequest, await self._json(request))
        return self._ok(await factory.mcp_prompt(self.service, request.path_params.get("name", ""),
                                                 request.path_params.get("prompt", ""), body.arguments))

    async def set_mcp_log_level(self, request: Request) -> Response:
        body: McpLogLevelRequest = self._model(McpLogLevelRequest, await self._json(request))
        return self._ok(await factory.set_mcp_log_level(self.service, request.path_params.get("name", ""), body.level))

    async def sign_out_mcp_server(self, request: Request) -> Response:
        return self._ok(await factory.sign_out_mcp_server(self.service, request.path_params.get("name", "")))

    async def approve_mcp_server(self, request: Request) -> Response:
        return self._ok(factory.approve_mcp_server(self.service, request.path_params.get("name", "")))

    def routes(self) -> list[Route]:
        """Each operation of the OpenAPI document, served by the method of its operationId's name."""
        routes = [Route(f"{PREFIX}/health", self.health, methods=["GET"]),
                  Route(f"{PREFIX}/openapi.json", self.openapi, methods=["GET"])]
        for path, method, operation_id, *_ in OPERATIONS:
            handler = getattr(self, re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), operation_id))
            routes.append(Route(PREFIX + path, handler, methods=[method.upper()]))
        return routes


# --------------------------------------------------------------------------- errors


async def _error_with_status(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError | AssistantError)
    return error_response(exc.status, exc.message)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ValidationError)
    return error_response(400, _validation_message(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(404, f"no such route: {request.method} {request.url.path}")
    if exc.status_code == 405:
        # Allow: every method of every route on this path (Starlette names only the first route's)
        allowed: set[str] = set()
        for route in request.app.routes:
            if isinstance(route, Route) and route.path_regex.match(request.url.path) and route.methods:
                allowed |= route.methods
        headers = dict(exc.headers or {})
        if allowed:
            headers["Allow"] = ", ".join(sorted(allowed))
        return error_response(405, f"method {request.method} not allowed on {request.url.path}", headers)
    return error_response(exc.status_code, str(exc.detail))


# --------------------------------------------------------------------------- factory


def create_app(
    service: AssistantService,
    *,
    token: str | None = None,
    ping_interval: float = 15.0,
    max_body_bytes: int = 1_000_000,
    manage_service: bool = True,
    flush_interval: float = 0.005,
    allowed_hosts: frozenset[str] | str | None = "auto",
) -> Starlette:
    """The ASGI app for ``service``.

    ``flush_interval``: an SSE stream writes at most once per this many seconds; frames that
    arrive meanwhile go out together (fewer writes and wake-ups with many subscribers).
    With ``manage_service`` the app's lifespan calls ``service.start()`` and, on shutdown,
    ``service.shutdown()``. ``app.state.shutdown_gracefully()`` (idempotent) ends active runs
    and then the open SSE streams; the ``serve`` runner calls it before uvicorn waits for
    connections to close, so streams deliver the final ``run-finish`` and end cleanly.

    ``allowed_hosts``: the ``Host`` names answered (others get 421, against DNS rebinding).
    ``"auto"`` (the default): without a token, the loopback names only (:func:`loopback_hosts`;
    ``serve`` adds the bound address); with a token, any (a rebinding page cannot know the
    token). ``None``: any.
    """
    if allowed_hosts == "auto":
        allowed_hosts = None if token else loopback_hosts()
    assert allowed_hosts is None or isinstance(allowed_hosts, frozenset)
    hub = StreamHub()
    api = InstanceAIApi(
        service, hub, ping_interval=ping_interval, max_body_bytes=max_body_bytes, flush_interval=flush_interval
    )
    shut = {"done": False}

    async def shutdown_gracefully() -> None:
        if shut["done"]:
            return
        shut["done"] = True
        try:
            if manage_service:
                await service.shutdown()
        finally:
            hub.close_all()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_service:
            await service.start()
        try:
            yield
        finally:
            await shutdown_gracefully()

    app = Starlette(
        routes=api.routes(),
        exception_handlers={
            ApiError: _error_with_status,
            AssistantError: _error_with_status,
            ValidationError: _validation_error,
            HTTPException: _http_error,
        },
        middleware=[Middleware(GuardMiddleware, token=token, allowed_hosts=allowed_hosts)],
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.hub = hub
    app.state.auth_required = token is not None
    app.state.version = _package_version()
    app.state.openapi = build_openapi(app.state.version)
    app.state.shutdown_gracefully = shutdown_gracefully
    return app
