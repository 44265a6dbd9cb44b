"""The aiohttp application that serves the app to browsers (textual-serve's ``Server``).

textual-serve does the real work: ``/ws`` starts one app process per browser tab (its
``AppService``) and relays the terminal; ``/static`` holds its xterm.js front end;
``/download`` delivers files the app sends (screenshots). This subclass adds:

- the access guard (a middleware): with a token, nothing but the sign-in page is served
  without the cookie — no page, no static files and, above all, no ``/ws``, so a wrong token
  never starts an app process. ``/?token=...`` signs in once and redirects to a clean URL.
- the origin check for every request that carries an ``Origin`` (another site's page must
  not open ``/ws``), and the Host check on a loopback bind without a token (DNS rebinding).
- our own page: no third-party fonts, URLs from the request (so ``--host 0.0.0.0`` works from
  another machine), a title that is not the command line (which may carry paths and flags).
- bounds (issue 31): at most ``max_apps`` app processes at once (the next tab gets a page
  saying the server is full, and its ``/ws`` a 503 before any process starts); an app is run
  in its own process group and ended — quit, then SIGTERM, then SIGKILL of the group — when its
  socket closes, also while it is still starting; the terminal size a tab asks for is capped
  (``MAX_COLUMNS`` x ``MAX_ROWS``: a 4000x4000 tab took 296 MB); token checks are slowed down
  per client and capped for all clients together (``access.WrongTokenThrottle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import os
import shlex
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from .access import (
    COOKIE_NAME,
    TOKEN_PARAM,
    ThrottleClosed,
    TooManyGuesses,
    WrongTokenThrottle,
    client_key,
    cookie_matches,
    host_allowed,
    same_origin,
    session_value,
    token_matches,
)

TEMPLATES = Path(__file__).parent / "templates"
TITLE = "Instance AI"
#: how long a browser stays signed in
COOKIE_MAX_AGE = 30 * 24 * 3600
#: seconds the first wrong token of a client waits for its answer (then twice as long each time)
WRONG_TOKEN_DELAY = 0.5
#: what a sign-in is told while too many token checks wait (someone is guessing): it was not checked
BUSY = "Too many sign-in attempts are waiting right now (someone may be guessing the token); try again in a minute."
#: what a sign-in still waiting for its check is told when the server stops
STOPPING = "The server is stopping: the token was not checked."
#: app processes at once (each browser tab runs one); ``instance-ai web --max-apps``
DEFAULT_MAX_APPS = 8
#: the largest terminal a tab may ask for (cells): more is drawn at this size
MAX_COLUMNS = 400
MAX_ROWS = 150
#: seconds an app whose tab went away has to quit before its process group is ended
QUIT_GRACE = 3.0

log = logging.getLogger("instance_ai_tui.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def terminal_size(width: Any, height: Any) -> tuple[int, int]:
    """A size a tab asked for, as the app gets it: whole cells, at least 10 x 5, at most
    ``MAX_COLUMNS`` x ``MAX_ROWS``."""
    return (min(max(to_int(str(width), 80), 10), MAX_COLUMNS), min(max(to_int(str(height), 24), 5), MAX_ROWS))


class ConfinedAppService(AppService):
    """textual-serve's ``AppService`` whose app runs in a process group of its own (no shell
    in between), so ``end`` can end it and everything it started, whatever state it is in."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_exec(
            *shlex.split(self.command),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=environment, start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def end(self, grace: float = QUIT_GRACE) -> None:
        """Ask the app to quit; after ``grace`` seconds end its process group (SIGTERM, then
        SIGKILL): an app still starting, or one that ignores the request, does not outlive
        its tab."""
        process = self._process
        try:
            await asyncio.wait_for(self.stop(), grace)
        except (TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - whatever happened, end it
            pass
        if process is None:
            return
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if process.returncode is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), wait)
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class WebServer(Server):
    """textual-serve's server for ``command``, guarded by ``token`` (``None``: loopback only),
    running at most ``max_apps`` apps at once."""

    def __init__(self, command: str, *, host: str, port: int, token: str | None, public_url: str | None = None,
                 max_apps: int = DEFAULT_MAX_APPS, setup_logging: Callable[[], object] | None = None) -> None:
        #: installs the log's handler (``cli.logs.install``: every line visible text); None: textual-serve's
        self.setup_logging = setup_logging
        super().__init__(command, host=host, port=port, title=TITLE, public_url=public_url, templates_path=TEMPLATES)
        self.token = token
        self.fixed_public_url = public_url
        self.max_apps = max_apps
        #: app processes started or starting (a place is taken before the process starts)
        self.apps = 0
        self.services: set[ConfinedAppService] = set()
        self.throttle = WrongTokenThrottle(base=WRONG_TOKEN_DELAY)

    def initialize_logging(self) -> None:
        if self.setup_logging is not None:
            self.setup_logging()
        else:
            super().initialize_logging()
        # no line per request: they would fill the console and carry ?token=... into logs
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        app.router.add_post("/login", self.handle_login, name="login")
        return app

    # ------------------------------------------------------------------ access
    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is not None and not same_origin(origin, request.host):
            return web.Response(status=403, text="Forbidden: this page belongs to another site.\n")
        token = self.token
        if token is None:
            if not host_allowed(request.host, self.host):
                return web.Response(status=403, text="Forbidden: unexpected Host for a loopback-only server.\n")
            return await handler(request)
        if request.path == "/login" and request.method == "POST":
            return await handler(request)
        given = request.query.get(TOKEN_PARAM)
        if given is not None and request.path == "/":
            try:
                right = await self.throttle.check(self._client(request), lambda: token_matches(given.strip(), token))
            except TooManyGuesses:
                return self._login_page(BUSY, status=429, retry_after=True)
            except ThrottleClosed:
                return self._login_page(STOPPING, status=503)
            if right:  # once from the URL: into the cookie, out of the address bar
                query = {k: v for k, v in request.query.items() if k != TOKEN_PARAM}
                response = web.HTTPSeeOther(str(request.rel_url.with_query(query)))
                self._set_cookie(response, request)
                return response
            return self._login_page("That token is not right.", status=401)
        if cookie_matches(request.cookies.get(COOKIE_NAME), token):
            return await handler(request)
        if request.path == "/":
            return self._login_page(None, status=401)
        return web.Response(status=401, text="Unauthorized: open / and give the access token.\n")

    async def handle_login(self, request: web.Request) -> web.StreamResponse:
        assert self.token is not None
        form = await request.post()
        given = form.get("token")
        token = self.token
        try:
            right = await self.throttle.check(
                self._client(request), lambda: isinstance(given, str) and token_matches(given.strip(), token))
        except TooManyGuesses:
            return self._login_page(BUSY, status=429, retry_after=True)
        except ThrottleClosed:
            return self._login_page(STOPPING, status=503)
        if right:
            response = web.HTTPSeeOther("/")
            self._set_cookie(response, request)
            return response
        return self._login_page("That token is not right.", status=401)

    @staticmethod
    def _client(request: web.Request) -> str:
        """Who is guessing: the peer's address, an IPv6 client's /64 (behind a proxy, all of its clients at once)."""
        return client_key(request.remote)

    def _set_cookie(self, response: web.StreamResponse, request: web.Request) -> None:
        assert self.token is not None
        response.set_cookie(
            COOKIE_NAME, session_value(self.token), max_age=COOKIE_MAX_AGE, path="/", httponly=True,
            samesite="Strict", secure=request.secure,
        )

    def _login_page(self, error: str | None, *, status: int, retry_after: bool = False) -> web.Response:
        page = (TEMPLATES / "login.html").read_text(encoding="utf-8")
        message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
        body = page.replace("{{ title }}", html.escape(TITLE)).replace("{{ error }}", message)
        headers = {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}
        if retry_after:
            headers["Retry-After"] = "60"
        return web.Response(status=status, text=body, content_type="text/html", headers=headers)

    # ------------------------------------------------------------------ page
    def _base_url(self, request: web.Request) -> str:
        """``scheme://host`` as the browser reached us (or ``--public-url`` behind a proxy)."""
        if self.fixed_public_url:
            return self.fixed_public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    def _full_page(self) -> web.Response:
        page = (TEMPLATES / "full.html").read_text(encoding="utf-8")
        body = page.replace("{{ title }}", html.escape(TITLE)).replace("{{ limit }}", str(self.max_apps))
        return web.Response(status=503, text=body, content_type="text/html",
                            headers={"Cache-Control": "no-store", "Retry-After": "30"})

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if self.apps >= self.max_apps:
            return self._full_page()
        return aiohttp_jinja2.render_template("app_index.html", request, self._index_context(request))

    def _index_context(self, request: web.Request) -> dict[str, Any]:
        base = self._base_url(request)
        scheme, _, rest = base.partition("://")
        websocket = ("wss" if scheme == "https" else "ws") + "://" + rest + str(request.app.router["websocket"].url_for())
        return {
            "font_size": min(max(to_int(request.query.get("fontsize", "16"), 16), 8), 40),
            "app_websocket_url": websocket,
            "static_url": base + str(request.app.router["static"].url_for(filename="/")).rstrip("/") + "/",
            "title": TITLE,
        }

    # ------------------------------------------------------------------ app processes
    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """One app process for this socket, if a place is free (else a 503 before anything
        starts); ended when the socket closes, however far it got."""
        if self.apps >= self.max_apps:
            return web.Response(status=503, text=f"The server is full: it runs {self.max_apps} apps at once.\n",
                                headers={"Retry-After": "30"})
        self.apps += 1  # (taken before any await: never more than max_apps)
        service: ConfinedAppService | None = None
        websocket = web.WebSocketResponse(heartbeat=15)
        try:
            width, height = terminal_size(request.query.get("width", "80"), request.query.get("height", "24"))
            await websocket.prepare(request)

            async def close() -> None:
                await websocket.close()

            service = ConfinedAppService(
                self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str, close=close,
                download_manager=self.download_manager, debug=self.debug,
            )
            self.services.add(service)
            await service.start(width, height)
            await self._relay(websocket, service)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await websocket.close()
        except Exception:
            log.exception("the app of a browser tab failed")
        finally:
            try:
                if service is not None:
                    await asyncio.shield(service.end())
            finally:
                if service is not None:
                    self.services.discard(service)
                self.apps -= 1
        return websocket

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops: every app ends with it (they run in process groups of their own,
        which a Ctrl+C in the server's terminal does not reach), and no token check keeps it waiting:
        aiohttp waits for every request in hand (up to 60 s), and a guesser's checks sleep up to 30 s each."""
        self.throttle.close()
        await asyncio.gather(*(service.end(grace=1.0) for service in list(self.services)), return_exceptions=True)

    async def _relay(self, websocket: web.WebSocketResponse, service: AppService) -> None:
        """The tab's messages to its app (textual-serve's protocol), sizes capped; a message
        that is not that protocol is skipped."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            except (ValueError, TypeError, IndexError, KeyError):
                continue
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await service.set_terminal_size(*terminal_size(data.get("width"), data.get("height")))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def on_startup(self, app: web.Application) -> None:
        where = self.fixed_public_url or f"http://{self._display_host()}:{self.port}"
        self.console.print(f"Instance AI in the browser: {where}/", markup=False, highlight=False)
        if self.token is not None:
            self.console.print("The page asks for the access token (or open it once with ?token=...).", markup=False, highlight=False)
        self.console.print("Each browser tab runs its own app. Press Ctrl+C to stop.", markup=False, highlight=False)

    def _display_host(self) -> str:
        host = self.host
        if host in ("0.0.0.0", "", "::"):
            return "<this machine's address>"
        return f"[{host}]" if ":" in host else host
