"""A local HTTP server that behaves like n8n 2.41's Instance AI module, for tests.

It speaks the *released* wire dialect (reference: ``n8n-instance-ai-wire-protocol.md``), not
the seed's: ``POST /rest/login`` sets a ``Secure; HttpOnly`` ``n8n-auth`` cookie bound to the
``browser-id`` header, every JSON answer is wrapped in ``{data}``, errors are ``{code, message}``,
threads must be created with a project id before chatting, deltas carry no ids and are
coalesced into ``text-block``/``reasoning-block`` facts that only appear on replay, a
reconnecting stream gets the replay, then one ``event: run-sync`` frame per live message
group, then a synthetic delta with the open segment's text, then live frames and ``: ping``.
Runs follow a script (a list of steps); a confirmation suspends the run (no ``run-finish``)
until ``POST /confirm/:requestId`` with a ``kind`` body. The local-gateway routes (§7) are here
too, so a gateway daemon can be tested end to end.

Usage::

    fake = FakeN8n()
    await fake.start()          # uvicorn on 127.0.0.1, a free port
    ... fake.base_url ...
    await fake.stop()

``python -m tests.support.fake_n8n --port 5678`` serves it for manual trials.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fold import apply_all_wire

#: Events n8n never persists nor gives an id (see the reference, section 2): the fake does the same.
EPHEMERAL_TYPES: frozenset[str] = frozenset({"text-delta", "reasoning-delta", "status", "filesystem-request"})

if TYPE_CHECKING:
    from .asgi import AsgiServer

GATEWAY_CONFIRMATION_PREFIX = "GATEWAY_CONFIRMATION_REQUIRED::"
ORCHESTRATOR = "$orchestrator"  # placeholder in scripted payloads/agents: this run's orchestrator id
SOURCES = frozenset(
    {
        "website-template", "template-view", "canvas_action_button", "canvas_choice_prompt", "node_error_view",
        "credential_edit", "credentials_list", "agent_builder_page", "agent_preview", "assistant_page",
        "workflow_list_auto", "workflow_list_button", "evals", "playwright",
    }
)  # fmt: skip
SSE_HEADERS = {"Cache-Control": "no-cache, no-transform", "Connection": "keep-alive", "X-Accel-Buffering": "no"}


# --------------------------------------------------------------------------- script steps


@dataclass
class Say:
    """Stream ``text`` as deltas (one per word) in segment ``response_id``."""

    text: str
    response_id: str
    reasoning: bool = False
    agent: str = ORCHESTRATOR


@dataclass
class Emit:
    """Publish one event as is (``$orchestrator`` in the agent or a payload value is replaced)."""

    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    agent: str = ORCHESTRATOR
    response_id: str | None = None


@dataclass
class Pause:
    seconds: float


@dataclass
class ToolCall:
    """``tool-input-start`` -> ``tool-call`` -> ``tool-result`` (or ``tool-error``)."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    result: Any = None
    error: str | None = None
    agent: str = ORCHESTRATOR


#: answer(body) -> (tool result, steps to run next)
Answer = Callable[[dict[str, Any]], tuple[Any, list["Step"]]]


@dataclass
class Confirm:
    """A tool call that suspends the run with a ``confirmation-request`` until answered."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    request: dict[str, Any]  # extra payload: message, severity, inputType, questions, approvalDetails, ...
    answer: Answer
    agent: str = ORCHESTRATOR


@dataclass
class GatewayCall:
    """A tool call answered by the connected local gateway (with resource decisions, §7.5)."""

    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    agent: str = ORCHESTRATOR


@dataclass
class FollowUp:
    """After this run finishes, start another run in the same message group."""

    steps: list[Step]


@dataclass
class Fail:
    """End the run with an ``error`` event and ``run-finish {status: error}``."""

    content: str = "Something went wrong before I could finish that response. Please try again."


Step = Say | Emit | Pause | ToolCall | Confirm | GatewayCall | FollowUp | Fail
Script = Callable[[str], list[Step]]


def approval(
    tool_call_id: str,
    tool_name: str,
    args: dict[str, Any],
    *,
    message: str,
    approved_result: Any,
    then_approved: list[Step] | None = None,
    then_denied: list[Step] | None = None,
    **extra: Any,
) -> Confirm:
    """An approval card (``kind: approval``); a denial gives n8n's ``{denied: true}`` result."""

    def answer(body: dict[str, Any]) -> tuple[Any, list[Step]]:
        if body.get("kind") == "approval" and body.get("approved") is True:
            return approved_result, list(then_approved or [])
        return {"success": False, "denied": True, "reason": "User denied the action"}, list(then_denied or [])

    request = {"severity": "warning", "message": message, **extra}
    return Confirm(tool_call_id, tool_name, args, request, answer)


def default_script(message: str) -> list[Step]:
    """What the fake agent does with a message.

    * mentions "archive": list workflows (read tool), then archive one (approval card);
    * mentions "plan": a nested ``tasks-update`` and a follow-up run in the same message group;
    * anything else: reasoning, a read tool call and a two-segment answer.
    """
    text = message.lower()
    listing = ToolCall(
        "call_list_1",
        "workflows",
        {"action": "list"},
        result={"workflows": [{"id": "wf1", "name": "Daily report"}, {"id": "wf2", "name": "Old sync"}]},
    )
    if "archive" in text:
        return [
            Say("Let me look at your workflows first.", "resp-1"),
            listing,
            approval(
                "call_archive_1",
                "workflows",
                {"action": "delete", "workflowId": "wf2"},
                message='Archive workflow "Old sync"?',
                approved_result={"success": True, "archived": "wf2"},
                approvalDetails={"action": "archive-workflow", "name": "Old sync", "id": "wf2"},
                resourceName="Old sync",
                then_approved=[Say("Done: Old sync is archived.", "resp-2")],
                then_denied=[Say("OK, I left Old sync alone.", "resp-2")],
            ),
        ]
    if "plan" in text:
        tasks = [
            {"id": "t1", "description": "Inspect workflows", "status": "in_progress"},
            {"id": "t2", "description": "Write summary", "status": "todo"},
        ]
        done = [{**tasks[0], "status": "done"}, {**tasks[1], "status": "in_progress"}]
        return [
            Emit("tasks-update", {"tasks": {"tasks": tasks}}),
            Say("Here is the plan.", "resp-1"),
            FollowUp(
                [
                    Emit("tasks-update", {"tasks": {"tasks": done}}),
                    Say("Follow-up: the summary is written.", "resp-f1"),
                ]
            ),
        ]
    return [
        Say("The user wants an overview.", "resp-0", reasoning=True),
        Say("Let me check.", "resp-1"),
        listing,
        Say("You have 2 workflows: Daily report and Old sync.", "resp-2"),
    ]


# --------------------------------------------------------------------------- state


class _HttpError(Exception):
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def _error(status: int, message: str, **extra: Any) -> _HttpError:
    return _HttpError(status, {"code": status, "message": message, **extra})


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _nanoid(n: int = 21) -> str:
    return secrets.token_urlsafe(n)[:n]


@dataclass
class _Segment:
    kind: str  # "text" | "reasoning"
    response_id: str | None
    text: str = ""


@dataclass
class _Run:
    run_id: str
    group_id: str
    thread_id: str
    status: str = "active"  # active | suspended | finished
    task: asyncio.Task[None] | None = None


@dataclass
class _Group:
    group_id: str
    run_ids: list[str]
    user_message_id: str
    created_at: str


@dataclass
class _Thread:
    id: str
    owner: str
    project_id: str | None = None
    created: bool = False  # False: only subscribed to / chatted without POST /threads
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=_now_iso)
    updated_at: str = field(default_factory=_now_iso)
    log: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    segments: dict[tuple[str, str], _Segment] = field(default_factory=dict)
    subscribers: set[asyncio.Queue[str | None]] = field(default_factory=set)
    run: _Run | None = None  # the live run (active or suspended)
    groups: list[_Group] = field(default_factory=list)
    user_messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs_started: int = 0

    @property
    def max_seq(self) -> int:
        return self.log[-1][0] if self.log else 0

    def info(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "resourceId": self.owner,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "metadata": self.metadata,
        }


@dataclass
class _PendingConfirm:
    thread_id: str
    owner: str
    future: asyncio.Future[dict[str, Any]]


@dataclass
class _GatewayState:
    owner: str
    root_path: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    host_identifier: str | None = None
    tool_categories: list[dict[str, Any]] = field(default_factory=list)
    connected_at: str | None = None
    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    streams: int = 0


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    query: str


# --------------------------------------------------------------------------- server


class FakeN8n:
    """The fake server. Tweak ``script``, ``ping_interval`` etc. before or between runs."""

    def __init__(
        self,
        *,
        email: str = "owner@example.com",
        password: str = "Passw0rd!Passw0rd",
        script: Script = default_script,
        ping_interval: float = 15.0,
        step_delay: float = 0.0,
        gateway_static_key: str | None = None,
        version: str = "2.41.1",
    ) -> None:
        self.email = email
        self.password = password
        self.script = script
        self.ping_interval = ping_interval
        self.step_delay = step_delay
        self.gateway_static_key = gateway_static_key
        #: the admin turned the local gateway off: its routes answer 403 "Local gateway is disabled"
        self.gateway_disabled = False
        #: answer an unknown gateway key with n8n 2.35's 500 error page instead of 2.41's 403
        self.gateway_stale_key_500 = False
        #: module settings as n8n 2.41 serves them (``/rest/module-settings``); browser use is off by default
        self.browser_use_enabled = False
        self.browser_connected = False
        self.version = version
        self.user_id = str(uuid.uuid4())
        self.project_id = _nanoid(16)
        self.requests: list[RecordedRequest] = []
        #: background tasks by thread (``GET status`` lists them; ``start_background_task`` adds one)
        self.background: dict[str, list[dict[str, Any]]] = {}
        #: ``(thread id, task id, message)`` of every correction received
        self.corrections: list[tuple[str, str, str]] = []
        #: workflow ids the next completed run reports as archived (``run-finish.archivedWorkflowIds``)
        self.archived_on_finish: list[str] = []
        self.logins = 0
        self._tokens: dict[str, str | None] = {}  # auth cookie -> browser id it is bound to
        self._threads: dict[str, _Thread] = {}
        self._background_tasks: set[asyncio.Task[None]] = set()
        #: user messages of runs that started, by id, until they are in the history
        self._unstored: dict[str, dict[str, Any]] = {}
        self._confirms: dict[str, _PendingConfirm] = {}
        self._pairing: dict[str, str] = {}
        self._session_keys: dict[str, str] = {}
        self._gateways: dict[str, _GatewayState] = {}
        self._server: AsgiServer | None = None
        self.port = 0
        #: answers requests itself while it returns True (``testing.n8n_boot``: n8n's boot window)
        self.boot_gate: Callable[[dict[str, Any], Any, Any], Awaitable[bool]] | None = None
        #: the account's two-factor code: login then needs it, as n8n's validateMfa does (None: no MFA)
        self.mfa_code: str | None = None
        #: seconds after POST /chat until the user message is in the history: n8n 2.41.1 publishes
        #: run-start first and its agent stores the message after (0.25-2.2 s measured, issue 42.3)
        self.user_message_delay = 0.3
        routes = [
            Route("/rest/login", self._login, methods=["POST"]),
            # n8n 2.41.1 answers {"status":"ok"} as soon as its HTTP server listens (before its modules)
            Route("/healthz", lambda request: JSONResponse({"status": "ok"}), methods=["GET"]),
            Route("/rest/settings", self._settings, methods=["GET"]),
            Route("/rest/projects/personal", self._personal_project, methods=["GET"]),
            Route("/rest/instance-ai/settings", self._instance_ai_settings, methods=["GET"]),
            Route("/rest/module-settings", self._module_settings, methods=["GET"]),
            Route("/rest/instance-ai/browser/status", self._browser_status, methods=["GET"]),
            Route("/rest/instance-ai/threads", self._threads_route, methods=["GET", "POST"]),
            Route("/rest/instance-ai/threads/history", self._thread_history, methods=["GET"]),
            Route("/rest/instance-ai/threads/{tid}", self._thread_route, methods=["GET", "PATCH", "DELETE"]),
            Route("/rest/instance-ai/threads/{tid}/messages", self._messages, methods=["GET"]),
            Route("/rest/instance-ai/threads/{tid}/status", self._status, methods=["GET"]),
            Route("/rest/instance-ai/chat/{tid}", self._chat, methods=["POST"]),
            Route("/rest/instance-ai/chat/{tid}/cancel", self._cancel, methods=["POST"]),
            Route("/rest/instance-ai/chat/{tid}/tasks/{task}/cancel", self._task_cancel, methods=["POST"]),
            Route("/rest/instance-ai/chat/{tid}/tasks/{task}/correct", self._task_correct, methods=["POST"]),
            Route("/rest/instance-ai/confirm/{rid}", self._confirm, methods=["POST"]),
            Route("/rest/instance-ai/events/{tid}", self._events, methods=["GET"]),
            Route("/rest/instance-ai/gateway/create-link", self._gw_create_link, methods=["POST"]),
            Route("/rest/instance-ai/gateway/init", self._gw_init, methods=["POST"]),
            Route("/rest/instance-ai/gateway/events", self._gw_events, methods=["GET"]),
            Route("/rest/instance-ai/gateway/response/{rid}", self._gw_response, methods=["POST"]),
            Route("/rest/instance-ai/gateway/disconnect", self._gw_disconnect, methods=["POST"]),
            Route("/rest/instance-ai/gateway/status", self._gw_status, methods=["GET"]),
        ]
        self._app = Starlette(routes=routes, exception_handlers={_HttpError: self._on_http_error})

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            self.requests.append(
                RecordedRequest(scope["method"], scope["path"], headers, scope.get("query_string", b"").decode())
            )
            if self.boot_gate is not None and await self.boot_gate(scope, receive, send):
                return
        await self._app(scope, receive, send)

    async def start(self, port: int = 0) -> str:
        from .asgi import AsgiServer

        self._server = AsgiServer(self, port=port, graceful_shutdown=1)
        await self._server.start()
        self.port = self._server.port
        return self.base_url

    async def stop(self) -> None:
        tasks = [t.run.task for t in self._threads.values() if t.run is not None and t.run.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        self.drop_streams()
        for gateway in self._gateways.values():
            gateway.queue.put_nowait(None)
        if self._server is not None:
            await self._server.stop()
            self._server = None

    async def __aenter__(self) -> FakeN8n:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ test hooks
    def drop_streams(self, thread_id: str | None = None) -> None:
        """End the open event streams (of one thread, or all): clients must reconnect."""
        for thread in self._threads.values():
            if thread_id is None or thread.id == thread_id:
                for queue in list(thread.subscribers):
                    queue.put_nowait(None)

    def events_of(self, thread_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The persisted log of a thread (including text-blocks)."""
        return list(self._threads[thread_id].log)

    def invalidate_sessions(self) -> None:
        """Forget every issued auth cookie (as if the JWT secret rotated)."""
        self._tokens.clear()

    def requests_to(self, path_prefix: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    # ------------------------------------------------------------------ helpers
    async def _on_http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, _HttpError)
        return JSONResponse(exc.body, status_code=exc.status)

    def _user(self, request: Request, *, check_browser_id: bool = True) -> str:
        token = request.cookies.get("n8n-auth")
        if token is None or token not in self._tokens:
            raise _HttpError(401, {"status": "error", "message": "Unauthorized"})
        bound = self._tokens[token]
        if check_browser_id and bound is not None and request.headers.get("browser-id") != bound:
            raise _HttpError(401, {"status": "error", "message": "Unauthorized"})
        return self.user_id

    @staticmethod
    def _ok(data: Any) -> JSONResponse:
        return JSONResponse({"data": data})

    @staticmethod
    async def _json(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise _error(400, "Request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise _HttpError(400, {"code": "invalid_type", "path": [], "message": "Expected object"})
        return body

    def _owned_thread(self, tid: str, user: str, *, allow_missing: bool = False) -> _Thread | None:
        thread = self._threads.get(tid)
        if thread is None or not thread.created:
            if allow_missing:
                return thread
            raise _error(404, "Thread not found")
        if thread.owner != user:
            raise _error(403, "Not authorized for this thread")
        return thread

    # ------------------------------------------------------------------ auth and misc routes
    async def _login(self, request: Request) -> Response:
        body = await self._json(request)
        if body.get("emailOrLdapLoginId") != self.email or body.get("password") != self.password:
            raise _error(401, "Wrong username or password. Do you have caps lock on?")
        if self.mfa_code is not None:  # n8n 2.41.1 auth.controller validateMfa
            code = body.get("mfaCode") or body.get("mfaRecoveryCode")
            if not code:
                raise _HttpError(401, {"code": 998, "message": "MFA Error"})
            if code != self.mfa_code:
                raise _error(401, "Invalid mfa token or recovery code")
        self.logins += 1
        token = secrets.token_urlsafe(32)
        self._tokens[token] = request.headers.get("browser-id")
        response = self._ok({"id": self.user_id, "email": self.email, "firstName": "Test", "role": "global:owner"})
        response.set_cookie("n8n-auth", token, httponly=True, secure=True, samesite="lax", max_age=7 * 86400)
        return response

    async def _settings(self, request: Request) -> Response:
        public = {
            "settingsMode": "public",
            "userManagement": {"authenticationMethod": "email", "showSetupOnFirstLoad": False},
            "authCookie": {"secure": True},
        }
        try:
            self._user(request)
        except _HttpError:
            return self._ok(public)
        return self._ok({**public, "settingsMode": "full", "versionCli": self.version, "instanceId": "fake-n8n"})

    async def _instance_ai_settings(self, request: Request) -> Response:
        self._user(request)
        return self._ok({"enabled": True, "modelName": None, "modelEnvConfigured": True,
                         "envManaged": {"model": {"provider": True, "apiKey": True, "baseUrl": True, "model": True}}})

    async def _personal_project(self, request: Request) -> Response:
        self._user(request)
        return self._ok({"id": self.project_id, "name": "Test Owner <owner@example.com>", "type": "personal"})

    # ------------------------------------------------------------------ threads
    async def _threads_route(self, request: Request) -> Response:
        user = self._user(request)
        if request.method == "GET":
            mine = [t for t in self._threads.values() if t.created and t.owner == user]
            mine.sort(key=lambda t: t.updated_at, reverse=True)
            # 2.41.1 memoryService.listThreads: always page 0, 100 per page (more via /threads/history)
            return self._ok({"threads": [t.info() for t in mine[:100]], "total": len(mine), "page": 0,
                             "hasMore": len(mine) > 100})
        body = await self._json(request)
        tid = body.get("threadId") or str(uuid.uuid4())
        try:
            tid = str(uuid.UUID(str(tid)))
        except ValueError:
            raise _HttpError(400, {"code": "invalid_string", "path": ["threadId"], "message": "Invalid uuid"}) from None
        if not isinstance(body.get("projectId"), str):
            raise _HttpError(400, {"code": "invalid_type", "path": ["projectId"], "message": "Required"})
        if body.get("source") not in SOURCES:
            raise _HttpError(400, {"code": "invalid_enum_value", "path": ["source"], "message": "Invalid enum value"})
        if body["projectId"] != self.project_id:
            raise _error(403, "You do not have access to this project")
        thread = self._threads.get(tid)
        if thread is not None and thread.created:
            if thread.owner != user:
                raise _error(403, "Not authorized for this thread")
            return self._ok({"thread": thread.info(), "created": False})
        if thread is None:
            thread = self._threads[tid] = _Thread(id=tid, owner=user)
        thread.created, thread.project_id = True, body["projectId"]
        thread.metadata = {"source": body["source"], "origin": body.get("origin", "internal")}
        return self._ok({"thread": thread.info(), "created": True})

    async def _thread_history(self, request: Request) -> Response:
        """n8n 2.41's ``GET /threads/history``: title search (case-insensitive substring), newest
        ``updatedAt`` first (then id), ``limit`` 1-100, an opaque base64url cursor of the last row."""
        import base64

        user = self._user(request)
        query = request.query_params
        limit_raw = query.get("limit", "30")
        if not limit_raw.isdigit() or not 1 <= int(limit_raw) <= 100:
            raise _HttpError(400, {"code": "too_big", "path": ["limit"], "message": "Invalid limit"})
        limit = int(limit_raw)
        search = query.get("search", "")
        if len(search) > 500:
            raise _HttpError(400, {"code": "too_big", "path": ["search"], "message": "String must contain at most 500 character(s)"})
        rows = [t for t in self._threads.values() if t.created and t.owner == user
                and (not search or search.lower() in t.title.lower())]
        rows.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
        cursor = query.get("cursor")
        if cursor:
            try:
                before = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
                key = (str(before["updatedAt"]), str(before["id"]))
            except (ValueError, KeyError, TypeError):
                raise _error(400, "Invalid thread history cursor") from None
            rows = [t for t in rows if (t.updated_at, t.id) < key]
        page = rows[:limit]
        more = len(rows) > limit
        next_cursor = None
        if more and page:
            raw = json.dumps({"updatedAt": page[-1].updated_at, "id": page[-1].id}).encode()
            next_cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        return self._ok({"threads": [t.info() for t in page], "hasMore": more, "nextCursor": next_cursor})

    async def _thread_route(self, request: Request) -> Response:
        user = self._user(request)
        thread = self._owned_thread(request.path_params["tid"], user)
        assert thread is not None
        if request.method == "GET":
            return self._ok({"thread": thread.info()})
        if request.method == "DELETE":
            if thread.run is not None and thread.run.task is not None:
                thread.run.task.cancel()
            self.drop_streams(thread.id)
            del self._threads[thread.id]
            return self._ok({"ok": True})
        body = await self._json(request)
        if "title" in body:
            title = body["title"].strip() if isinstance(body["title"], str) else ""
            if not 1 <= len(title) <= 255:
                raise _HttpError(400, {"code": "too_small", "path": ["title"], "message": "Invalid title"})
            thread.title = title
            thread.metadata = {**thread.metadata, "titleRefined": True}
        if isinstance(body.get("metadata"), dict):
            thread.metadata = {**thread.metadata, **body["metadata"]}
        thread.updated_at = _now_iso()
        return self._ok({"thread": thread.info()})

    async def _messages(self, request: Request) -> Response:
        user = self._user(request)
        thread = self._owned_thread(request.path_params["tid"], user)
        assert thread is not None
        limit = request.query_params.get("limit", "50")
        if not limit.isdigit() or not 1 <= int(limit) <= 200:
            raise _HttpError(400, {"code": "too_big", "path": ["limit"], "message": "Invalid limit"})
        messages: list[dict[str, Any]] = []
        live_group = thread.run.group_id if thread.run is not None and thread.run.status == "active" else None
        for group in thread.groups:
            user_message = thread.user_messages.get(group.user_message_id)
            if user_message is not None:
                messages.append(user_message)
            if group.group_id == live_group:
                continue
            tree = self._fold(thread, group.run_ids)
            messages.append(
                {
                    "id": group.group_id,
                    "runId": group.run_ids[-1],
                    "messageGroupId": group.group_id,
                    "runIds": list(group.run_ids),
                    "role": "assistant",
                    "createdAt": group.created_at,
                    "content": tree.get("textContent", ""),
                    "reasoning": tree.get("reasoning", ""),
                    "isStreaming": False,
                    "agentTree": tree,
                }
            )
        page_raw = request.query_params.get("page", "0")
        if not page_raw.isdigit() or int(page_raw) > 1000:
            raise _HttpError(400, {"code": "too_big", "path": ["page"], "message": "Invalid page"})
        # page 0 = the newest ``limit`` messages, page 1 the ones before them, ... (getRichMessages)
        end = len(messages) - int(page_raw) * int(limit)
        messages = messages[max(0, end - int(limit)) : max(0, end)]
        return self._ok(
            {"threadId": thread.id, "projectId": thread.project_id, "messages": messages, "nextEventId": thread.max_seq + 1}
        )

    async def _status(self, request: Request) -> Response:
        user = self._user(request)
        thread = self._owned_thread(request.path_params["tid"], user, allow_missing=True)
        run = thread.run if thread is not None else None
        data: dict[str, Any] = {
            "hasActiveRun": run is not None and run.status == "active",
            "isSuspended": run is not None and run.status == "suspended",
            "backgroundTasks": [dict(t) for t in self.background.get(request.path_params["tid"], [])],
        }
        if run is not None:
            data["runId"] = run.run_id
        return self._ok(data)

    # ------------------------------------------------------------------ runs
    async def _chat(self, request: Request) -> Response:
        user = self._user(request)
        tid = request.path_params["tid"]
        thread = self._owned_thread(tid, user, allow_missing=True)
        body = await self._json(request)
        message = body.get("message", "")
        if not isinstance(message, str) or not message.strip():
            raise _error(400, "Message must not be empty")
        if thread is None:
            thread = self._threads[tid] = _Thread(id=tid, owner=user)
        if thread.run is not None:
            raise _error(409, "A run is already active for this thread")
        run_id = f"run_{_nanoid()}"
        group = _Group(f"mg_{_nanoid()}", [run_id], f"msg_{_nanoid()}", _now_iso())
        thread.groups.append(group)
        stored = {
            "id": group.user_message_id,
            "role": "user",
            "createdAt": group.created_at,
            "content": message,
            "reasoning": "",
            "isStreaming": False,
        }

        async def store_user_message() -> None:
            await asyncio.sleep(self.user_message_delay)
            self._store_user_message(thread, group)

        self._unstored[group.user_message_id] = stored
        if self.user_message_delay > 0:
            self._background_tasks.add(task := asyncio.create_task(store_user_message()))
            task.add_done_callback(self._background_tasks.discard)
        else:
            self._store_user_message(thread, group)
        thread.updated_at = _now_iso()
        steps: list[Step] = [Fail()] if not thread.created else list(self.script(message))
        run = _Run(run_id, group.group_id, thread.id)
        thread.run = run
        run.task = asyncio.create_task(self._drive(thread, run, group, steps, message))
        return self._ok({"runId": run_id})

    def _store_user_message(self, thread: _Thread, group: _Group) -> None:
        """The user message of ``group`` in the history (at the latest when its run ends, as n8n's
        agent stores its input before its first model call returns)."""
        stored = self._unstored.pop(group.user_message_id, None)
        if stored is not None:
            thread.user_messages[group.user_message_id] = stored

    async def _cancel(self, request: Request) -> Response:
        user = self._user(request)
        thread = self._owned_thread(request.path_params["tid"], user)
        assert thread is not None
        run = thread.run
        if run is not None and run.task is not None and not run.task.done():
            run.task.cancel()
            await asyncio.wait([run.task], timeout=5)
        return self._ok({"ok": True})

    def start_background_task(self, thread_id: str, role: str = "workflow-builder") -> dict[str, Any]:
        """A sub-agent that keeps running after its run finished (n8n's background task):
        ``agent-spawned`` with a ``taskId`` in the thread's last message group, listed by the
        status route until ``finish_background_task`` or a cancel."""
        thread = self._threads[thread_id]
        group = thread.groups[-1]
        run_id = group.run_ids[-1]
        task = {"taskId": f"task_{_nanoid(8)}", "role": role, "agentId": f"agent_{_nanoid(8)}", "status": "running",
                "startedAt": int(time.time() * 1000), "runId": run_id, "messageGroupId": group.group_id}
        self.background.setdefault(thread_id, []).append(task)
        self._publish(thread, None, {"type": "agent-spawned", "runId": run_id, "agentId": task["agentId"],
                                     "payload": {"parentId": f"orchestrator-{run_id}", "role": role, "tools": [],
                                                 "taskId": task["taskId"], "kind": "builder"}})
        return task

    def finish_background_task(self, thread_id: str, task_id: str, status: str = "completed",
                               result: str = "done") -> None:
        task = next(t for t in self.background.get(thread_id, []) if t["taskId"] == task_id)
        task["status"] = status
        payload: dict[str, Any] = {"role": task["role"], "result": result, "status": status}
        self._publish(self._threads[thread_id], None, {"type": "agent-completed", "runId": task["runId"],
                                                       "agentId": task["agentId"], "payload": payload})

    def _task(self, request: Request) -> dict[str, Any]:
        user = self._user(request)
        thread = self._owned_thread(request.path_params["tid"], user)
        assert thread is not None
        for task in self.background.get(thread.id, []):
            if task["taskId"] == request.path_params["task"]:
                return task
        raise _error(404, "Background task not found")

    async def _task_cancel(self, request: Request) -> Response:
        task = self._task(request)
        if task["status"] == "running":
            self.finish_background_task(request.path_params["tid"], task["taskId"], "cancelled", "Cancelled by user")
        return self._ok({"ok": True})

    async def _task_correct(self, request: Request) -> Response:
        task = self._task(request)
        body = await self._json(request)
        message = body.get("message")
        if not isinstance(message, str) or not message:
            raise _HttpError(400, {"code": "too_small", "path": ["message"], "message": "String must contain at least 1 character(s)"})
        self.corrections.append((request.path_params["tid"], task["taskId"], message))
        return self._ok({"ok": True})

    async def _confirm(self, request: Request) -> Response:
        user = self._user(request)
        body = await self._json(request)
        if not isinstance(body.get("kind"), str):  # n8n 2.41.1 answers this one as {code, message}
            raise _error(400, "Invalid discriminator value. Expected 'approval' | 'questions' | 'planDeny' | "
                              "'resourceDecision' | ...")
        _check_confirm_body(body)  # the rest of n8n's zod union (api-types InstanceAiConfirmRequestDto)
        pending = self._confirms.get(request.path_params["rid"])
        if pending is None or pending.owner != user or pending.future.done():
            raise _error(404, "Confirmation request not found or not authorized")
        del self._confirms[request.path_params["rid"]]
        pending.future.set_result(body)
        thread = self._threads.get(pending.thread_id)
        run_id = thread.run.run_id if thread is not None and thread.run is not None else None
        return self._ok({"ok": True, "runId": run_id} if run_id else {"ok": True})

    async def _drive(self, thread: _Thread, run: _Run, group: _Group, steps: list[Step], message: str) -> None:
        """Run a scripted run and its follow-ups; always ends with ``run-finish``."""
        while True:
            thread.runs_started += 1
            self._publish(thread, run, {"type": "run-start", "userId": thread.owner,
                                        "payload": {"messageId": f"msg_{_nanoid()}", "messageGroupId": group.group_id}})
            follow_ups: list[FollowUp] = []
            finish: dict[str, Any] = {"status": "completed"}
            try:
                await self._steps(thread, run, steps, follow_ups)
            except asyncio.CancelledError:
                finish = {"status": "cancelled", "reason": "user_cancelled"}
                follow_ups = []
            except _RunFailed as exc:
                self._publish(thread, run, {"type": "error", "payload": {"content": exc.content}})
                finish = {"status": "error", "reason": exc.content}
                follow_ups = []
            for rid in [rid for rid, p in self._confirms.items() if p.thread_id == thread.id]:
                self._confirms.pop(rid).future.cancel()
            if finish["status"] == "completed" and self.archived_on_finish:
                finish["archivedWorkflowIds"], self.archived_on_finish = list(self.archived_on_finish), []
            self._store_user_message(thread, group)
            self._publish(thread, run, {"type": "run-finish", "payload": finish})
            run.status = "finished"
            if thread.run is run:
                thread.run = None
            if not thread.title and thread.created and finish["status"] == "completed":
                thread.title = message.strip()[:60]
                self._publish(thread, None, {"type": "thread-title-updated", "runId": "", "agentId": "orchestrator",
                                             "payload": {"title": thread.title}})
            if not follow_ups or thread.id not in self._threads:
                return
            steps = [s for f in follow_ups for s in f.steps]
            run = _Run(f"run_{_nanoid()}", group.group_id, thread.id)
            group.run_ids.append(run.run_id)
            thread.run = run
            run.task = asyncio.current_task()

    async def _steps(self, thread: _Thread, run: _Run, steps: list[Step], follow_ups: list[FollowUp]) -> None:
        queue = list(steps)
        while queue:
            step = queue.pop(0)
            if self.step_delay:
                await asyncio.sleep(self.step_delay)
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Say):
                kind = "reasoning-delta" if step.reasoning else "text-delta"
                words = step.text.split(" ")
                for i, word in enumerate(words):
                    piece = word if i == len(words) - 1 else word + " "
                    self._publish(thread, run, {"type": kind, "agentId": step.agent, "responseId": step.response_id,
                                                "payload": {"text": piece}})
                    await asyncio.sleep(0)
            elif isinstance(step, Emit):
                event: dict[str, Any] = {"type": step.type, "agentId": step.agent, "payload": dict(step.payload)}
                if step.response_id is not None:
                    event["responseId"] = step.response_id
                self._publish(thread, run, event)
            elif isinstance(step, ToolCall):
                self._tool_start(thread, run, step.agent, step.tool_call_id, step.tool_name, step.args)
                if step.error is not None:
                    self._publish(thread, run, {"type": "tool-error", "agentId": step.agent,
                                                "payload": {"toolCallId": step.tool_call_id, "error": step.error}})
                else:
                    self._publish(thread, run, {"type": "tool-result", "agentId": step.agent,
                                                "payload": {"toolCallId": step.tool_call_id, "result": step.result}})
            elif isinstance(step, Confirm):
                self._tool_start(thread, run, step.agent, step.tool_call_id, step.tool_name, step.args)
                body = await self._suspend(thread, run, step.agent, step.tool_call_id, step.tool_name, step.args,
                                           step.request)
                result, more = step.answer(body)
                self._publish(thread, run, {"type": "tool-result", "agentId": step.agent,
                                            "payload": {"toolCallId": step.tool_call_id, "result": result}})
                queue[:0] = more
            elif isinstance(step, GatewayCall):
                await self._gateway_step(thread, run, step)
            elif isinstance(step, FollowUp):
                follow_ups.append(step)
            elif isinstance(step, Fail):
                raise _RunFailed(step.content)

    def _tool_start(self, thread: _Thread, run: _Run, agent: str, call_id: str, name: str, args: dict[str, Any]) -> None:
        self._publish(thread, run, {"type": "tool-input-start", "agentId": agent,
                                    "payload": {"toolCallId": call_id, "toolName": name}})
        self._publish(thread, run, {"type": "tool-call", "agentId": agent,
                                    "payload": {"toolCallId": call_id, "toolName": name, "args": args}})

    async def _suspend(self, thread: _Thread, run: _Run, agent: str, call_id: str, name: str, args: dict[str, Any],
                       request: dict[str, Any]) -> dict[str, Any]:
        request_id = f"req_{_nanoid()}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._confirms[request_id] = _PendingConfirm(thread.id, thread.owner, future)
        run.status = "suspended"
        payload = {"requestId": request_id, "toolCallId": call_id, "toolName": name, "args": args, **request,
                   "inputThreadId": thread.id}
        self._publish(thread, run, {"type": "confirmation-request", "agentId": agent, "payload": payload})
        try:
            return await future
        finally:
            run.status = "active"

    async def _gateway_step(self, thread: _Thread, run: _Run, step: GatewayCall) -> None:
        self._tool_start(thread, run, step.agent, step.tool_call_id, step.name, step.arguments)
        arguments = {k: v for k, v in step.arguments.items() if k != "_confirmation"}
        while True:
            try:
                result = await self.gateway_call(step.name, arguments)
            except (RuntimeError, TimeoutError) as exc:
                self._publish(thread, run, {"type": "tool-error", "agentId": step.agent,
                                            "payload": {"toolCallId": step.tool_call_id, "error": str(exc)}})
                return
            needed = _confirmation_required(result)
            if needed is None:
                break
            body = await self._suspend(
                thread, run, step.agent, step.tool_call_id, step.name, step.arguments,
                {"severity": "warning", "message": needed.get("description", "Allow access?"),
                 "inputType": "resource-decision", "resourceDecision": needed},
            )
            decision = body.get("resourceDecision") if body.get("kind") == "resourceDecision" else "denyOnce"
            arguments = {**arguments, "_confirmation": decision}
        self._publish(thread, run, {"type": "tool-result", "agentId": step.agent,
                                    "payload": {"toolCallId": step.tool_call_id, "result": result}})

    # ------------------------------------------------------------------ the event log
    def _publish(self, thread: _Thread, run: _Run | None, event: dict[str, Any]) -> None:
        """Persist (durable types, with coalesced blocks first) and fan out to live streams."""
        run_id = run.run_id if run is not None else event.get("runId", "")
        orchestrator = f"orchestrator-{run_id}"
        event = {"type": event["type"], "runId": run_id, "agentId": event.get("agentId", ORCHESTRATOR), **event}
        event["runId"] = run_id
        if event["agentId"] == ORCHESTRATOR:
            event["agentId"] = orchestrator
        event["payload"] = {k: orchestrator if v == ORCHESTRATOR else v for k, v in event.get("payload", {}).items()}
        event.setdefault("ts", int(time.time() * 1000))
        kind = event["type"]
        key = (run_id, event["agentId"])
        if kind in ("text-delta", "reasoning-delta"):
            seg_kind = "text" if kind == "text-delta" else "reasoning"
            segment = thread.segments.get(key)
            if segment is not None and (segment.kind != seg_kind or segment.response_id != event.get("responseId")):
                self._flush(thread, key)
                segment = None
            if segment is None:
                segment = thread.segments[key] = _Segment(seg_kind, event.get("responseId"))
            segment.text += event["payload"].get("text", "")
            self._fan_out(thread, None, event)
            return
        if kind in EPHEMERAL_TYPES:
            self._fan_out(thread, None, event)
            return
        if kind == "run-finish":
            for open_key in [k for k in thread.segments if k[0] == run_id]:
                self._flush(thread, open_key)
        elif key in thread.segments:
            self._flush(thread, key)
        seq = thread.max_seq + 1
        thread.log.append((seq, event))
        self._fan_out(thread, seq, event)

    def _flush(self, thread: _Thread, key: tuple[str, str]) -> None:
        segment = thread.segments.pop(key)
        block: dict[str, Any] = {
            "type": "text-block" if segment.kind == "text" else "reasoning-block",
            "runId": key[0],
            "agentId": key[1],
            "payload": {"text": segment.text},
            "ts": int(time.time() * 1000),
        }
        if segment.response_id is not None:
            block["responseId"] = segment.response_id
        thread.log.append((thread.max_seq + 1, block))  # replay only: never sent live

    @staticmethod
    def _frame(seq: int | None, event: dict[str, Any]) -> str:
        data = json.dumps(event, separators=(",", ":"))
        return f"id: {seq}\ndata: {data}\n\n" if seq is not None else f"data: {data}\n\n"

    def _fan_out(self, thread: _Thread, seq: int | None, event: dict[str, Any]) -> None:
        frame = self._frame(seq, event)
        for queue in thread.subscribers:
            queue.put_nowait(frame)

    def _fold(self, thread: _Thread, run_ids: list[str]) -> dict[str, Any]:
        from instance_ai_tui.protocol.reducer import RunReducer

        wanted = set(run_ids)
        events = [json.loads(json.dumps(event)) for _seq, event in thread.log if event.get("runId") in wanted]
        return json.loads(json.dumps(apply_all_wire(RunReducer(), events).tree_dict()))

    def _bootstrap(self, thread: _Thread, cursor: int) -> list[str]:
        frames = [self._frame(seq, event) for seq, event in thread.log if seq > cursor]
        run = thread.run
        if run is not None and run.status in ("active", "suspended"):
            group = next(g for g in thread.groups if g.group_id == run.group_id)
            sync = {
                "runId": run.run_id,
                "messageGroupId": group.group_id,
                "runIds": list(group.run_ids),
                "agentTree": self._fold(thread, group.run_ids),
                "status": run.status,
                "backgroundTasks": [],
            }
            frames.append(f"event: run-sync\ndata: {json.dumps(sync, separators=(',', ':'))}\n\n")
            for (run_id, agent_id), segment in thread.segments.items():
                if run_id in group.run_ids and segment.text:
                    synthetic = {
                        "type": "text-delta" if segment.kind == "text" else "reasoning-delta",
                        "runId": run_id,
                        "agentId": agent_id,
                        "payload": {"text": segment.text},
                    }
                    if segment.response_id is not None:
                        synthetic["responseId"] = segment.response_id
                    frames.append(self._frame(None, synthetic))
        return frames

    async def _events(self, request: Request) -> Response:
        user = self._user(request, check_browser_id=False)  # EventSource cannot set headers
        tid = request.path_params["tid"]
        thread = self._threads.get(tid)
        if thread is not None and thread.owner != user:
            raise _error(403, "Not authorized for this thread")
        raw = request.headers.get("last-event-id")
        if raw is None or not raw.isdigit():
            raw = request.query_params.get("lastEventId")
            if raw is not None and not raw.isdigit():
                raise _HttpError(400, {"code": "invalid_string", "path": ["lastEventId"], "message": "Invalid"})
        cursor = int(raw) if raw is not None else 0
        if thread is None:
            thread = self._threads[tid] = _Thread(id=tid, owner=user)
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        frames = self._bootstrap(thread, cursor)
        thread.subscribers.add(queue)
        return StreamingResponse(self._stream(thread.subscribers, queue, frames), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

    async def _stream(self, owners: set[asyncio.Queue[str | None]], queue: asyncio.Queue[str | None],
                      frames: list[str]) -> AsyncIterator[str]:
        try:
            for frame in frames:
                yield frame
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), self.ping_interval)
                except TimeoutError:
                    yield ": ping\n\n"
                    continue
                if item is None:
                    return
                yield item
        finally:
            owners.discard(queue)

    # ------------------------------------------------------------------ capabilities (issue 27)
    async def _module_settings(self, request: Request) -> Response:
        self._user(request)
        return self._ok({"instance-ai": {
            "enabled": True, "localGatewayDisabled": self.gateway_disabled, "browserUseEnabled": self.browser_use_enabled,
            "proxyEnabled": False, "cloudManaged": False, "setupCompleted": True, "sandboxEnabled": False,
            "workflowBuilderAvailable": False, "sandboxUnavailableReason": "disabled", "runDebugEnabled": False,
            "activationCapped": False, "instanceAiSetupPanelEnabled": False}})

    async def _browser_status(self, request: Request) -> Response:
        self._user(request)
        if not self.browser_use_enabled:
            raise _error(403, "Browser Use is disabled")
        return self._ok({"connected": self.browser_connected, "connectedAt": None, "toolCategories": []})

    # ------------------------------------------------------------------ local gateway (§7)
    def _gateway_owner(self, request: Request, *, session_only: bool = False) -> tuple[str, str]:
        key = request.headers.get("x-gateway-key", "")
        if not 1 <= len(key) <= 256:
            raise _error(403, "Missing API key")  # n8n 2.41 validateGatewayApiKey
        if key in self._session_keys:
            owner = self._session_keys[key]
        elif self.gateway_static_key is not None and key == self.gateway_static_key:
            owner = "env-gateway"
        elif not session_only and key in self._pairing:
            owner = self._pairing[key]
        elif self.gateway_stale_key_500:
            raise _error(500, "ResponseError: Invalid API key")  # n8n 2.35: the route renders its error page
        else:
            raise _error(403, "Invalid API key")
        if self.gateway_disabled:  # n8n checks the key first, then assertGatewayEnabled
            raise _error(403, "Local gateway is disabled")
        return owner, key

    async def _gw_create_link(self, request: Request) -> Response:
        user = self._user(request)
        if self.gateway_disabled:
            raise _error(403, "Local gateway is disabled")
        token = next((t for t, owner in self._pairing.items() if owner == user), None) or f"gw_{_nanoid(32)}"
        self._pairing[token] = user
        return self._ok({"token": token, "command": f"npx @n8n/computer-use {self.base_url} {token}",
                         "expiresAt": None, "ttlSeconds": 300})

    async def _gw_init(self, request: Request) -> Response:
        owner, key = self._gateway_owner(request)
        body = await self._json(request)
        if not isinstance(body.get("rootPath"), str):
            raise _HttpError(400, {"code": "invalid_type", "path": ["rootPath"], "message": "Required"})
        tools = body.get("tools", [])
        for i, tool in enumerate(tools if isinstance(tools, list) else [None]):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) \
                    or not isinstance(tool.get("inputSchema"), dict):
                raise _HttpError(400, {"code": "invalid_type", "path": ["tools", i], "message": "Invalid tool"})
        state = self._gateways.get(owner)
        if state is None:
            state = self._gateways[owner] = _GatewayState(owner=owner)
        state.root_path, state.tools = body["rootPath"], tools
        state.host_identifier = body.get("hostIdentifier")
        state.tool_categories = body.get("toolCategories", [])
        state.connected_at = _now_iso()
        data: dict[str, Any] = {"ok": True}
        if key in self._pairing:
            del self._pairing[key]
            session_key = f"sess_{_nanoid(32)}"
            self._session_keys[session_key] = owner
            data["sessionKey"] = session_key
        return self._ok(data)

    async def _gw_events(self, request: Request) -> Response:
        owner, _key = self._gateway_owner(request, session_only=True)
        state = self._gateways.get(owner)
        if state is None or state.connected_at is None:
            raise _error(403, "Local gateway not initialized")
        state.streams += 1
        holder: set[asyncio.Queue[str | None]] = {state.queue}
        return StreamingResponse(self._stream(holder, state.queue, []), media_type="text/event-stream",
                                 headers=SSE_HEADERS)

    async def _gw_response(self, request: Request) -> Response:
        owner, _key = self._gateway_owner(request, session_only=True)
        state = self._gateways.get(owner)
        body = await self._json(request)
        future = state.pending.pop(request.path_params["rid"], None) if state is not None else None
        if future is None or future.done():
            raise _error(404, "Gateway request not found")
        if isinstance(body.get("error"), str):
            future.set_exception(RuntimeError(body["error"]))
        else:
            result = body.get("result")
            future.set_result(result if isinstance(result, dict) else {"content": []})
        return self._ok({"ok": True})

    async def _gw_disconnect(self, request: Request) -> Response:
        owner, key = self._gateway_owner(request, session_only=True)
        self._session_keys.pop(key, None)
        state = self._gateways.pop(owner, None)
        if state is not None:
            for future in state.pending.values():
                future.set_exception(RuntimeError("Local gateway disconnected"))
            state.queue.put_nowait(None)
        return self._ok({"ok": True})

    async def _gw_status(self, request: Request) -> Response:
        user = self._user(request)
        state = self._gateways.get(user)
        return self._ok({
            "connected": state is not None and state.connected_at is not None,
            "connectedAt": state.connected_at if state else None,
            "directory": state.root_path if state else None,
            "hostIdentifier": state.host_identifier if state else None,
            "toolCategories": state.tool_categories if state else [],
        })

    def gateway(self, owner: str | None = None) -> _GatewayState | None:
        """The gateway registered by ``owner`` (default: the test user)."""
        return self._gateways.get(owner or self.user_id)

    async def gateway_call(self, name: str, arguments: dict[str, Any], *, owner: str | None = None,
                           timeout: float = 60.0) -> dict[str, Any]:
        """Send a ``filesystem-request`` to the connected gateway and wait for its MCP result."""
        state = self._gateways.get(owner or self.user_id) or next(iter(self._gateways.values()), None)
        if state is None:
            raise RuntimeError("Local gateway is not connected")
        request_id = f"gw_{_nanoid()}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        state.pending[request_id] = future
        frame = {"type": "filesystem-request",
                 "payload": {"requestId": request_id, "toolCall": {"name": name, "arguments": arguments}}}
        state.queue.put_nowait(f"data: {json.dumps(frame)}\n\n")
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            state.pending.pop(request_id, None)

    def drop_gateway_stream(self, owner: str | None = None) -> None:
        """End the gateway's event stream without ending its session (it should reconnect)."""
        state = self.gateway(owner)
        if state is not None:
            state.queue.put_nowait(None)

    def forget_gateway(self, owner: str | None = None) -> None:
        """Drop the gateway as n8n's grace timer does (its session key stays valid): the
        next ``gateway/events`` answers 403 "Local gateway not initialized"."""
        state = self._gateways.pop(owner or self.user_id, None)
        if state is not None:
            state.queue.put_nowait(None)

    def send_gateway_disconnect(self, owner: str | None = None) -> None:
        state = self.gateway(owner)
        if state is not None:
            state.queue.put_nowait('data: {"type":"gateway-disconnect"}\n\n')
            state.queue.put_nowait(None)


class _RunFailed(Exception):
    def __init__(self, content: str) -> None:
        super().__init__(content)
        self.content = content


def _check_confirm_body(body: dict[str, Any]) -> None:
    """400 with the first issue (as n8n's Zod validation answers) for a body outside the union."""
    from pydantic import ValidationError

    from instance_ai_tui.protocol.api import parse_confirm_body

    try:
        parse_confirm_body(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = [str(p) for p in first.get("loc", ())][1:]
        raise _HttpError(400, {"code": "invalid_type", "path": path, "message": first.get("msg", "Invalid input")}) from None


def _confirmation_required(result: dict[str, Any]) -> dict[str, Any] | None:
    """The decision request in a gateway result that asks for one (§7.5), else ``None``."""
    if not result.get("isError"):
        return None
    for item in result.get("content") or []:
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, str):
            continue
        if text.startswith("{"):
            try:
                text = json.loads(text).get("error", text)
            except (ValueError, AttributeError):
                pass
        if isinstance(text, str) and text.startswith(GATEWAY_CONFIRMATION_PREFIX):
            try:
                data = json.loads(text[len(GATEWAY_CONFIRMATION_PREFIX) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the fake n8n Instance AI server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=5678)
    args = parser.parse_args(argv)

    return serve_forever(FakeN8n(step_delay=0.05), args.port)


def serve_forever(fake: FakeN8n, port: int, *, after_start: Callable[[FakeN8n], str] | None = None) -> int:
    """Run ``fake`` on ``port`` until Ctrl+C, saying where (and what ``after_start`` adds) once it is up."""

    async def serve() -> None:
        await fake.start(port)
        extra = after_start(fake) if after_start is not None else ""
        print(f"fake n8n on {fake.base_url} (login {fake.email} / {fake.password}){extra}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await fake.stop()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
