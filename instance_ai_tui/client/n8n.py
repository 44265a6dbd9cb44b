"""``N8nClient``: the ``Client`` for a real n8n with its Instance AI module (tested: 2.41.1).

n8n's dialect differs from our server's (reference ``n8n-instance-ai-wire-protocol.md``):

* routes live under ``/rest/instance-ai``; JSON answers are wrapped in ``{"data": ...}`` and
  errors are ``{"code", "message"}`` (401 = session, 403 = scope/disabled, 409 = busy thread);
* auth is a session cookie from ``POST /rest/login``, bound to a ``browser-id`` header that
  must go on every request (``n8n_auth``);
* a thread must be created (``POST /threads`` with the personal project id) before chatting,
  and thread ids are UUIDs;
* the event stream has deltas without ids, ``text-block``/``reasoning-block`` facts on replay
  and ``event: run-sync`` control frames that replace a live message group's tree: they come
  out of ``events()`` as ``StreamItem(None, event)`` / ``StreamItem(None, run_sync)``;
* confirm bodies are keyed on ``kind``.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import SecretStr, ValidationError

from ..aio import aclosing
from ..protocol.api import (
    ConfirmBody,
    ConfirmResponse,
    SendMessageRequest,
    ThreadInfo,
    ThreadMessages,
    ThreadStatus,
    parse_confirm_body,
)
from ..protocol.events import EventParseError, first_error, parse_event
from ..protocol.ingest import Batch, Item
from ..protocol.tree import RunSyncPayload
from . import n8n_shutdown
from .base import (
    AuthError,
    Client,
    ClientError,
    ConnectionState,
    NotFoundError,
    ServerProtocolError,
    ServerUnreachable,
    StreamItem,
    for_status,
)
from .n8n_auth import (
    Credentials,
    MfaRequired,
    N8nSession,
    PasswordMissing,
    ask_mfa_code,
    load_browser_id,
    login,
    resolve_credentials,
)
from .sse import SseFrame, SseGaveUp, SseStatusError, reconnecting_sse_batches

if TYPE_CHECKING:
    from .gateway import LocalGateway
    from .n8n_capabilities import InstanceCapabilities

THREAD_SOURCE = "assistant_page"
HISTORY_LIMIT = 100
#: at most this many pages of history (of ``HISTORY_LIMIT``) and of threads are read
MAX_PAGES = 50
#: pages of 100 read by ``search_threads``
SEARCH_PAGES = 20
#: seconds between two probes of an n8n that does not answer (``GET /healthz``), and the longest
#: wait between two attempts of the event stream: n8n is used within about a second of answering
PROBE_INTERVAL = 1.0
#: the time limit of one probe
PROBE_TIMEOUT = 3.0


class N8nClient(Client):
    """Talks to ``base_url`` (e.g. ``http://127.0.0.1:5678``) as the n8n browser UI does."""

    mode = "n8n"
    supports_login = True

    def __init__(
        self,
        base_url: str,
        email: str | None = None,
        password: str | SecretStr | None = None,
        *,
        mfa_code: str | SecretStr | None = None,
        browser_id: str | None = None,
        auth_cookie: str | SecretStr | None = None,
        config_dir: Path | None = None,
        interactive: bool | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        keepalive_timeout: float = 45.0,
        initial_backoff: float = 0.25,
        max_backoff: float = PROBE_INTERVAL,
        max_attempts: int | None = None,
        time_zone: str | None = None,
        wait_while_down: bool = False,
    ) -> None:
        """``email``/``password`` default to ``N8N_EMAIL``/``N8N_PASSWORD``, then a prompt when
        ``interactive`` (default: stdin is a terminal); ``mfa_code`` (the two-factor code of an
        account with MFA) defaults to ``N8N_MFA_CODE``, then a prompt when n8n asks for it. ``auth_cookie`` reuses an existing
        ``n8n-auth`` session instead. ``browser_id`` defaults to the id saved in ``config_dir``.

        ``wait_while_down`` (the TUI): ``open()`` on an n8n that does not answer yet (not started,
        restarting, its Instance AI module still booting) waits for it instead of failing: it
        probes ``/healthz`` every ``PROBE_INTERVAL`` seconds, in state ``RECONNECTING``, and opens
        once n8n answers. Without it (``run``, ``threads``, ``export``) that is an error at once."""
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self._email = email
        self._password = SecretStr(password) if isinstance(password, str) else password
        self._mfa_code = SecretStr(mfa_code) if isinstance(mfa_code, str) else mfa_code
        self._config_dir = config_dir
        self._interactive = interactive
        cookie = SecretStr(auth_cookie) if isinstance(auth_cookie, str) else auth_cookie
        self._session = N8nSession(browser_id=browser_id or "", cookie=cookie)
        self._credentials: Credentials | None = None
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        self._keepalive_timeout = keepalive_timeout
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_attempts = max_attempts
        self._time_zone = time_zone if time_zone is not None else _local_time_zone()
        self.wait_while_down = wait_while_down
        #: workflow id -> name (None: could not be read), for setup cards (``_name_workflows``)
        self._workflow_names: dict[str, str | None] = {}
        self._project_id: str | None = None
        self._known_threads: set[str] = set()
        self._open_lock = asyncio.Lock()
        self._opened = False
        #: what the instance can do (``n8n_capabilities``), read after login; ``None`` until then
        self.capabilities: InstanceCapabilities | None = None

    def __repr__(self) -> str:
        return f"N8nClient({self.base_url!r}, email={self._email!r})"

    # ------------------------------------------------------------------ lifecycle
    @property
    def session(self) -> N8nSession:
        """The browser id and auth cookie (for the local gateway's pairing call)."""
        return self._session

    @property
    def email(self) -> str:
        """The login email known so far (for the login dialog); "" when none."""
        return self._email or os.environ.get("N8N_EMAIL", "")

    @property
    def project_id(self) -> str | None:
        return self._project_id

    async def open(self) -> None:
        async with self._open_lock:
            if self._opened:
                return
            self._set_state(ConnectionState.CONNECTING, self.base_url)
            attempt = 0
            while True:
                try:
                    await self._open_steps()
                    break
                except ClientError as exc:
                    if not (self.wait_while_down and _not_up(exc)):
                        self._set_state(ConnectionState.OFFLINE, str(exc))
                        raise
                    attempt = await self._wait_until_answering(attempt + 1, exc)
            self._opened = True
            self._set_state(ConnectionState.CONNECTED, self.base_url)

    async def _open_steps(self) -> None:
        if not self._session.browser_id:
            self._session.browser_id = await asyncio.to_thread(load_browser_id, self._config_dir)
        if not self._session.logged_in:
            await self._login()
        project = await self._request("GET", "/rest/projects/personal")
        if not isinstance(project, dict) or not isinstance(project.get("id"), str):
            raise ClientError(f"{self.base_url} gave no personal project id; is it n8n 2.41 or newer, with Instance AI?")
        self._project_id = project["id"]
        await self._load_model_name()
        await self.read_capabilities()

    async def _wait_until_answering(self, attempt: int, exc: ClientError) -> int:
        """n8n did not answer (``exc``): probe ``/healthz`` every ``PROBE_INTERVAL`` seconds until it
        does (then ``open`` tries again: its module may still be booting, which is one more round).
        ``attempt`` is the number the banner says first; returns the last one said (it only goes up)."""
        why = "starting (its Instance AI module is not ready yet)" if isinstance(exc, ModuleNotReadyError) \
            else "not answering yet"
        probes = 0
        while True:
            probes += 1
            # (the banner names the URL: "Reconnecting to URL (n8n is …; attempt N, next try in 1s)")
            self._set_state(ConnectionState.RECONNECTING,
                            f"(n8n is {why}; attempt {attempt + probes - 1}, next try in {PROBE_INTERVAL:.0f}s)")
            await asyncio.sleep(PROBE_INTERVAL)
            try:
                response = await self._http.get(self.base_url + "/healthz", timeout=PROBE_TIMEOUT)
            except httpx.HTTPError:
                continue
            if response.status_code == 200:
                return attempt + probes - 1

    async def close(self) -> None:
        if self._own_http:
            await self._http.aclose()
        self._opened = False
        self._set_state(ConnectionState.OFFLINE, "closed")

    async def _login(self) -> None:
        if self._credentials is None:
            self._credentials = await asyncio.to_thread(
                resolve_credentials, self._email, self._password, mfa_code=self._mfa_code,
                interactive=self._interactive,
            )
        if self._credentials is None:
            email = self._email or os.environ.get("N8N_EMAIL")
            if email:
                raise PasswordMissing(f"no n8n password for {email}: set N8N_PASSWORD, or run on a terminal to be asked",
                                      email)
            raise AuthError(
                "n8n needs an email and password: pass --email (the password is asked for), "
                "or set N8N_EMAIL and N8N_PASSWORD"
            )
        try:
            await login(self._http, self.base_url, self._session, self._credentials)
        except MfaRequired:
            credentials = self._credentials
            if credentials.mfa_code is not None:
                raise  # the code given was refused (or has expired): say so, do not ask again
            code = await asyncio.to_thread(ask_mfa_code, credentials.email, interactive=self._interactive)
            if code is None:
                raise MfaRequired(
                    f"n8n asks for the two-factor code of {credentials.email}: pass --mfa-code CODE or set "
                    "N8N_MFA_CODE (the code from your authenticator app, or a recovery code)", 401) from None
            credentials.mfa_code = SecretStr(code)
            await login(self._http, self.base_url, self._session, credentials)

    async def login(self, email: str, password: str, mfa_code: str | None = None) -> None:
        """Log in with what the user typed (the app's login dialog), then open.

        Raises ``n8n_auth.MfaRequired`` when n8n wants the two-factor code, ``AuthError`` when
        it refuses, ``ClientError`` when it cannot be reached."""
        self._email = email
        self._credentials = Credentials(
            email=email, password=SecretStr(password), mfa_code=SecretStr(mfa_code) if mfa_code else None
        )
        self._session.cookie = None
        self._opened = False
        await self.open()

    def _can_login(self) -> bool:
        return self._credentials is not None or bool(self._email or os.environ.get("N8N_EMAIL"))

    async def identify(self) -> None:
        """n8n's model again, after a reconnect (a restarted n8n may run another)."""
        await self._load_model_name()

    async def _load_model_name(self) -> None:
        """Best effort: the admin settings name the model (members get 403, which is fine).
        An env-configured model is not named there (``envManaged.model.*`` are booleans)."""
        try:
            settings = await self._request("GET", "/rest/instance-ai/settings")
        except ModuleNotReadyError:
            raise  # n8n is booting: not a fact about the model (``open`` waits when asked to)
        except ClientError:
            return
        if not isinstance(settings, dict):
            return
        name = settings.get("modelName")
        if isinstance(name, str) and name:
            self.model_name = name
        elif settings.get("modelEnvConfigured") is True:
            self.model_name = "n8n (model set by its environment)"

    # ------------------------------------------------------------------ HTTP
    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        relogin: bool = True,
    ) -> Any:
        """One REST call; returns the unwrapped ``data``. Logs in again once on a 401."""
        url = self.base_url + path
        try:
            response = await self._http.request(method, url, json=json, params=params, headers=self._session.headers())
        except httpx.HTTPError as exc:
            # no state change here: the event stream owns the connection state (it reconnects
            # by itself); marking it offline from a failed request could stick after n8n is back
            raise ServerUnreachable(f"cannot reach n8n at {self.base_url}: {type(exc).__name__} {exc}".rstrip()) from None
        self._session.absorb(response)
        if response.status_code == 401 and relogin and self._can_login():
            self._session.cookie = None
            await self._login()
            return await self._request(method, path, json=json, params=params, relogin=False)
        if response.status_code >= 400:
            raise _error_for(response, method, path)
        try:
            body = response.json()
        except ValueError:
            raise ServerProtocolError(f"{url} did not answer with JSON; is {self.base_url} an n8n instance?") from None
        if not isinstance(body, dict) or "data" not in body:
            raise ServerProtocolError(f"{url} did not answer like n8n (no data envelope); is it n8n 2.41 or newer, with Instance AI?")
        return body["data"]

    async def _ai(self, method: str, path: str, **kwargs: Any) -> Any:
        await self.open()
        return await self._request(method, "/rest/instance-ai" + path, **kwargs)

    # ------------------------------------------------------------------ threads
    async def list_threads(self) -> list[ThreadInfo]:
        """Every thread, newest first. n8n's ``GET /threads`` gives only the first 100
        (``hasMore``); the rest come page by page from ``GET /threads/history``."""
        data = await self._ai("GET", "/threads")
        threads = data.get("threads", []) if isinstance(data, dict) else []
        out = [_model(ThreadInfo, item, "thread") for item in threads]
        if not (isinstance(data, dict) and data.get("hasMore")):
            return out
        seen = {t.id for t in out}
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page, cursor = await self.thread_history(None, cursor, limit=100)
            out.extend(t for t in page if t.id not in seen)
            seen.update(t.id for t in page)
            if cursor is None:
                break
        return out

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        tid = _thread_uuid(thread_id) if thread_id else str(uuid.uuid4())
        await self.open()
        data = await self._ai(
            "POST", "/threads", json={"threadId": tid, "projectId": self._project_id, "source": THREAD_SOURCE}
        )
        self._known_threads.add(tid)
        info = _model(ThreadInfo, data.get("thread") if isinstance(data, dict) else None, "thread")
        if title.strip():
            info = await self.rename_thread(tid, title)
        return info

    async def _ensure_thread(self, thread_id: str) -> str:
        tid = _thread_uuid(thread_id)
        if tid not in self._known_threads:
            await self.create_thread(tid)
        return tid

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        if not title.strip():
            raise ClientError("a thread title must not be empty")
        data = await self._ai("PATCH", f"/threads/{_thread_uuid(thread_id)}", json={"title": title.strip()[:255]})
        return _model(ThreadInfo, data.get("thread") if isinstance(data, dict) else None, "thread")

    async def delete_thread(self, thread_id: str) -> None:
        tid = _thread_uuid(thread_id)
        await self._ai("DELETE", f"/threads/{tid}")
        self._known_threads.discard(tid)

    # ------------------------------------------------------------------ runs
    async def send(self, thread_id: str, text: str) -> str:
        try:
            body = SendMessageRequest(message=text, time_zone=self._time_zone).to_wire()
        except ValidationError:
            raise ClientError("the message is empty") from None
        tid = await self._ensure_thread(thread_id)
        data = await self._ai("POST", f"/chat/{tid}", json=body)
        run_id = data.get("runId") if isinstance(data, dict) else None
        if not isinstance(run_id, str):
            raise ClientError(f"n8n accepted the message but returned no runId: {data!r}")
        return run_id

    async def cancel(self, thread_id: str) -> None:
        try:
            await self._ai("POST", f"/chat/{_thread_uuid(thread_id)}/cancel")
        except NotFoundError:
            return  # no such thread: nothing runs

    async def confirm(self, request_id: str, body: ConfirmBody | Mapping[str, Any]) -> ConfirmResponse:
        """Answer a confirmation; a bare seed-style ``{"approved": bool}`` becomes ``kind: approval``."""
        if isinstance(body, Mapping):
            try:
                body = parse_confirm_body(dict(body))
            except ValidationError as exc:
                raise ClientError(f"not a valid confirmation answer: {exc.errors()[0].get('msg')}") from None
        data = await self._ai("POST", f"/confirm/{request_id}", json=body.to_wire())
        return _model(ConfirmResponse, data, "confirmation answer")

    async def messages(self, thread_id: str) -> ThreadMessages:
        """The whole history: n8n pages it (``limit`` 100, ``page`` 0 = the newest); older pages
        are read until one is empty or brings nothing new. ``nextEventId`` is the newest page's."""
        tid = _thread_uuid(thread_id)
        try:
            data = await self._ai("GET", f"/threads/{tid}/messages", params={"limit": str(HISTORY_LIMIT)})
        except NotFoundError as exc:
            if isinstance(exc, ModuleNotReadyError):
                raise  # n8n's HTML 404 (booting, or no module): not an empty thread
            return ThreadMessages(thread_id=tid)  # a thread not created yet has no history
        self._known_threads.add(tid)
        await self._name_workflows(data)
        history: ThreadMessages = _model(ThreadMessages, data, "thread history")
        if not history.messages:
            return history
        # a page counts n8n's stored messages, not these: only an empty page proves the start
        seen = {m.id for m in history.messages}
        messages = list(history.messages)
        for page in range(1, MAX_PAGES):
            older = await self._ai(
                "GET", f"/threads/{tid}/messages", params={"limit": str(HISTORY_LIMIT), "page": str(page)}
            )
            await self._name_workflows(older)
            items = _model(ThreadMessages, older, "thread history").messages
            new = [m for m in items if m.id not in seen]
            if not new:
                break
            seen.update(m.id for m in new)
            messages[:0] = new
        return await self._with_shutdown_causes(tid, history.model_copy(update={"messages": messages}))

    async def _with_shutdown_causes(self, tid: str, history: ThreadMessages) -> ThreadMessages:
        """n8n's fold says "user" for a run its shutdown cut: the cause its log recorded first (``n8n_shutdown``)."""
        runs = n8n_shutdown.suspects(history)
        if not runs:
            return history
        causes = await n8n_shutdown.true_causes(self._http, f"{self.base_url}/rest/instance-ai/events/{tid}",
                                                self._session.headers(), history.next_event_id, runs)
        return n8n_shutdown.apply(history, causes)

    async def status(self, thread_id: str) -> ThreadStatus:
        data = await self._ai("GET", f"/threads/{_thread_uuid(thread_id)}/status")
        return _model(ThreadStatus, data, "thread status")

    # ------------------------------------------------------------------ background tasks, thread history
    async def cancel_task(self, thread_id: str, task_id: str) -> None:
        """``POST /chat/:threadId/tasks/:taskId/cancel``: n8n then publishes ``agent-completed``
        with ``status: cancelled`` for the task's agent."""
        await self._ai("POST", f"/chat/{_thread_uuid(thread_id)}/tasks/{task_id}/cancel")

    async def correct_task(self, thread_id: str, task_id: str, message: str) -> None:
        """``POST /chat/:threadId/tasks/:taskId/correct``: queue a correction for a running task."""
        if not message.strip():
            raise ClientError("a correction must not be empty")
        await self._ai("POST", f"/chat/{_thread_uuid(thread_id)}/tasks/{task_id}/correct", json={"message": message})

    async def thread_history(
        self, search: str | None = None, cursor: str | None = None, limit: int = 30
    ) -> tuple[list[ThreadInfo], str | None]:
        """One page of ``GET /threads/history`` (n8n's thread search and cursor paging):
        the threads and the cursor of the next page (``None`` at the end)."""
        params = {"limit": str(max(1, min(limit, 100)))}
        if search and search.strip():
            params["search"] = search.strip()[:500]
        if cursor:
            params["cursor"] = cursor
        data = await self._ai("GET", "/threads/history", params=params)
        if not isinstance(data, dict):
            raise ClientError(f"n8n sent a thread history this client cannot read: {data!r:.200}")
        threads = [_model(ThreadInfo, item, "thread") for item in data.get("threads") or []]
        next_cursor = data.get("nextCursor")
        more = bool(data.get("hasMore")) and isinstance(next_cursor, str) and bool(next_cursor)
        return threads, next_cursor if more else None

    async def search_threads(self, query: str) -> list[ThreadInfo]:
        """n8n searches its threads itself (``GET /threads/history?search=``); every page is read
        (at most ``SEARCH_PAGES`` of 100)."""
        found: list[ThreadInfo] = []
        cursor: str | None = None
        for _ in range(SEARCH_PAGES):
            page, cursor = await self.thread_history(query, cursor, limit=100)
            found.extend(page)
            if cursor is None:
                break
        return found

    # ------------------------------------------------------------------ events
    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        """Replay after ``after`` (None: everything), then live; reconnects and resumes from the
        highest id seen. Deltas and ``run-sync`` frames come with ``id=None``."""
        async with aclosing(self.batches(thread_id, after)) as batches:
            async for batch in batches:
                for item in batch.items:
                    yield item  # type: ignore[misc]  # (n8n's items are models: no DeltaRun)

    async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        """``events``, the frames of each piece received as one batch with what still waited on the
        connection (``Batch.queued``: the app tells a flood by it, a replay after a reconnect)."""
        tid = _thread_uuid(thread_id)
        await self.open()
        cursor = after
        relogged = False
        worked = False
        url = f"{self.base_url}/rest/instance-ai/events/{tid}"

        def on_state(state: ConnectionState, detail: str) -> None:
            nonlocal worked
            worked = worked or state == ConnectionState.CONNECTED
            self._set_state(state, detail)

        while True:
            stream = reconnecting_sse_batches(
                self._http,
                url,
                headers=self._session.headers(),
                last_event_id=cursor,
                set_state=on_state,
                initial_backoff=self._initial_backoff,
                max_backoff=self._max_backoff,
                keepalive_timeout=self._keepalive_timeout,
                max_attempts=self._max_attempts,
                resumed=worked,
                is_gone=lambda: self.thread_gone(tid),
            )
            try:
                async for piece in stream:
                    items: list[Item] = []
                    for frame in piece.frames:
                        if _SETUP_MARK in frame.data:  # type: ignore[union-attr]  # (no DeltaRun, as below)
                            frame = await self._named_setup_frame(frame)  # type: ignore[arg-type]
                        item = self._item(frame)  # type: ignore[arg-type]  # (no DeltaRun: asked for without runs)
                        if frame.id is not None:
                            cursor = frame.id if cursor is None else max(cursor, frame.id)
                        if item is not None:
                            items.append(item)
                    if items:
                        yield Batch(items, piece.queued)
            except SseStatusError as exc:
                if exc.status == 401 and not relogged and self._can_login():
                    relogged = True
                    self._session.cookie = None
                    await self._login()
                    continue
                raise _sse_error(exc, tid) from None
            except SseGaveUp as exc:
                raise ClientError(str(exc)) from None
            finally:
                await stream.aclose()
            return

    async def thread_gone(self, thread_id: str) -> bool:
        """Whether n8n proves ``thread_id`` is gone: a thread this client created or read
        answers ``GET /threads/:id`` with n8n's JSON 404. While n8n boots, its routes answer
        HTML (or nothing): that proves nothing. A thread never created here is never "gone"
        (n8n lets a client subscribe before the first message)."""
        tid = _thread_uuid(thread_id)
        if tid not in self._known_threads:
            return False
        try:
            response = await self._http.get(
                f"{self.base_url}/rest/instance-ai/threads/{tid}", headers=self._session.headers()
            )
        except httpx.HTTPError:
            return False
        if response.status_code != 404 or "json" not in response.headers.get("content-type", ""):
            return False
        self._known_threads.discard(tid)
        return True

    # ------------------------------------------------------------------ workflow names for setup cards
    async def _named_setup_frame(self, frame: SseFrame) -> SseFrame:
        """A frame carrying a workflow setup request, with the workflow's name added (``_name_workflows``)."""
        try:
            data = json.loads(frame.data)
        except ValueError:
            return frame
        if not await self._name_workflows(data):
            return frame
        return frame._replace(data=json.dumps(data, ensure_ascii=False))

    async def _name_workflows(self, data: Any) -> bool:
        """n8n's setup request (``setupRequests`` with a ``workflowId``) names the workflow only by id:
        its name is read once (``GET /rest/workflows/:id``) and added as ``workflowName`` to each such
        request in ``data`` (a frame or a history page), so its card says which workflow. Best effort:
        a workflow that cannot be read keeps its id. Returns whether a name was added."""
        found: list[dict[str, Any]] = []
        _setup_requests(data, found, 0)
        named = False
        for request in found:
            workflow_id = request.get("workflowId")
            if not isinstance(workflow_id, str) or "workflowName" in request:
                continue
            if workflow_id not in self._workflow_names:
                try:
                    workflow = await self._request("GET", f"/rest/workflows/{workflow_id}", relogin=False)
                except ClientError:
                    workflow = None
                name = workflow.get("name") if isinstance(workflow, dict) else None
                self._workflow_names[workflow_id] = name if isinstance(name, str) and name.strip() else None
            name = self._workflow_names[workflow_id]
            if name is not None:
                request["workflowName"] = name
                named = True
        return named

    def _item(self, frame: SseFrame) -> StreamItem | None:
        if frame.event == "run-sync":
            try:
                return StreamItem(None, RunSyncPayload.model_validate_json(frame.data))
            except ValidationError as exc:
                self._diagnose(f"skipped a run-sync frame that does not parse: {exc.errors()[0].get('msg')}")
                return None
        if frame.event not in ("", "message"):
            self._diagnose(f"skipped an SSE frame of unknown event type {frame.event!r}")
            return None
        try:
            return StreamItem(frame.id, parse_event(frame.data))
        except EventParseError as exc:
            self._diagnose(f"skipped an SSE frame (id {frame.raw_id}): {exc}")
            return None

    # ------------------------------------------------------------------ capabilities
    async def read_capabilities(self) -> InstanceCapabilities:
        """Read what the instance can do (``n8n_capabilities``) into ``capabilities``. Never raises:
        a route this n8n lacks or refuses leaves that part unknown."""
        from .n8n_capabilities import InstanceCapabilities

        try:
            module = await self._request("GET", "/rest/module-settings", relogin=False)
        except ClientError:
            module = None
        browser = None
        if isinstance(module, dict) and (module.get("instance-ai") or {}).get("browserUseEnabled") is True:
            try:
                browser = await self._request("GET", "/rest/instance-ai/browser/status", relogin=False)
            except ClientError:
                browser = None
        self.capabilities = InstanceCapabilities.from_module_settings(module, browser)
        return self.capabilities

    # ------------------------------------------------------------------ local gateway
    async def start_gateway(self, root: Path | str, **options: Any) -> LocalGateway:
        """Pair a local gateway with this session and start serving ``root`` (see ``gateway``)."""
        from .gateway import LocalGateway

        await self.open()
        gateway = LocalGateway(self.base_url, root, session=self._session, **options)
        await gateway.start()
        return gateway


# --------------------------------------------------------------------------- helpers


class ModuleNotReadyError(NotFoundError):
    """n8n answered an Instance AI route with its HTML 404: the module is not loaded (yet).

    While n8n restarts its HTTP server answers before the module is ready (about 6.5 s of
    HTML 404s), so this is not a proof that a thread does not exist."""



#: how a frame with a workflow setup request looks (checked before parsing it: most frames are not)
_SETUP_MARK = '"setupRequests"'
#: how deep ``_setup_requests`` looks into a history page (messages, trees, children, tool calls)
_SETUP_DEPTH = 40


def _setup_requests(value: Any, found: list[dict[str, Any]], depth: int) -> None:
    """Every object in ``value`` with ``setupRequests`` and a ``workflowId`` (confirmations: live
    events' payloads and the history's tool calls)."""
    if depth > _SETUP_DEPTH:
        return
    if isinstance(value, dict):
        if "setupRequests" in value and "workflowId" in value:
            found.append(value)
        for item in value.values():
            if isinstance(item, dict | list):
                _setup_requests(item, found, depth + 1)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _setup_requests(item, found, depth + 1)


def _not_up(exc: ClientError) -> bool:
    """n8n is not (yet) answering as itself: no connection, its Instance AI module still booting (an
    HTML 404), or a server error while it starts."""
    return isinstance(exc, ServerUnreachable | ModuleNotReadyError) or (exc.status or 0) >= 500


def _thread_uuid(thread_id: str) -> str:
    try:
        return str(uuid.UUID(thread_id))
    except (ValueError, AttributeError, TypeError):
        raise ClientError(f"n8n thread ids are UUIDs; {thread_id!r} is not one") from None


def _model(cls: Any, data: Any, what: str) -> Any:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ClientError(f"n8n sent a {what} this client cannot read ({first_error(exc)})") from None


def _error_for(response: httpx.Response, method: str, path: str) -> ClientError:
    """Map n8n's ``{code, message}`` (or a raw Zod issue, or Express's HTML) to a client error."""
    status = response.status_code
    message = ""
    is_json = True
    try:
        body = response.json()
    except ValueError:
        body, is_json = None, False
    if isinstance(body, dict):
        message = str(body.get("message") or "")
        if isinstance(body.get("path"), list) and body["path"]:  # a Zod issue
            message = f"{'.'.join(str(p) for p in body['path'])}: {message}"
        meta = body.get("meta")
        if isinstance(meta, dict) and meta.get("reason"):
            message = f"{message} ({meta['reason']}, limit {meta.get('limit')})"
    where = f"{method} {path}"
    if status == 401:
        return for_status(status, f"n8n refused the session (401 {message or 'Unauthorized'}); log in again")
    if status == 403:
        return for_status(status, f"n8n refused {where}: {message or 'forbidden'}")
    if status == 404:
        if not is_json and path.startswith("/rest/instance-ai"):
            return ModuleNotReadyError(
                f"{where}: not found; does this n8n have Instance AI (n8n 2.41 or newer, module enabled)?", status
            )
        return for_status(status, message or f"{where}: not found")
    if status == 409:
        return for_status(status, message or "A run is already active for this thread")
    if status == 429:
        return for_status(status, f"n8n refused to start a run: {message or 'too many requests'}")
    if status >= 500:
        return for_status(status, f"n8n server error ({status}) on {where}: {message or response.reason_phrase}")
    return for_status(status, f"n8n rejected {where} ({status}): {message or response.text[:200]}")


def _sse_error(exc: SseStatusError, thread_id: str) -> ClientError:
    request = httpx.Request("GET", f"/rest/instance-ai/events/{thread_id}")
    response = httpx.Response(exc.status, content=exc.body.encode(), request=request)
    if exc.status == 200:
        return ClientError(str(exc))
    return _error_for(response, "GET", f"/rest/instance-ai/events/{thread_id}")


def _local_time_zone() -> str | None:
    """The IANA zone name of this machine, when cheaply known (n8n drops invalid values)."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if "/" in tz and not tz.startswith("/"):
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return None
    marker = "zoneinfo/"
    return target.split(marker, 1)[1] if marker in target else None
