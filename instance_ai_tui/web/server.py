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
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

from .access import COOKIE_NAME, TOKEN_PARAM, cookie_matches, host_allowed, same_origin, session_value, token_matches

TEMPLATES = Path(__file__).parent / "templates"
TITLE = "Instance AI"
#: how long a browser stays signed in
COOKIE_MAX_AGE = 30 * 24 * 3600
#: seconds a wrong token waits for its answer (slows guessing)
WRONG_TOKEN_DELAY = 0.5

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebServer(Server):
    """textual-serve's server for ``command``, guarded by ``token`` (``None``: loopback only)."""

    def __init__(self, command: str, *, host: str, port: int, token: str | None, public_url: str | None = None) -> None:
        super().__init__(command, host=host, port=port, title=TITLE, public_url=public_url, templates_path=TEMPLATES)
        self.token = token
        self.fixed_public_url = public_url

    def initialize_logging(self) -> None:
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
            if token_matches(given, token):  # once from the URL: into the cookie, out of the address bar
                query = {k: v for k, v in request.query.items() if k != TOKEN_PARAM}
                response = web.HTTPSeeOther(str(request.rel_url.with_query(query)))
                self._set_cookie(response, request)
                return response
            await asyncio.sleep(WRONG_TOKEN_DELAY)
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
        if isinstance(given, str) and token_matches(given.strip(), self.token):
            response = web.HTTPSeeOther("/")
            self._set_cookie(response, request)
            return response
        await asyncio.sleep(WRONG_TOKEN_DELAY)
        return self._login_page("That token is not right.", status=401)

    def _set_cookie(self, response: web.StreamResponse, request: web.Request) -> None:
        assert self.token is not None
        response.set_cookie(
            COOKIE_NAME, session_value(self.token), max_age=COOKIE_MAX_AGE, path="/", httponly=True,
            samesite="Strict", secure=request.secure,
        )

    def _login_page(self, error: str | None, *, status: int) -> web.Response:
        page = (TEMPLATES / "login.html").read_text(encoding="utf-8")
        message = f'<p class="error" role="alert">{html.escape(error)}</p>' if error else ""
        body = page.replace("{{ title }}", html.escape(TITLE)).replace("{{ error }}", message)
        return web.Response(status=status, text=body, content_type="text/html",
                            headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})

    # ------------------------------------------------------------------ page
    def _base_url(self, request: web.Request) -> str:
        """``scheme://host`` as the browser reached us (or ``--public-url`` behind a proxy)."""
        if self.fixed_public_url:
            return self.fixed_public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = self._base_url(request)
        scheme, _, rest = base.partition("://")
        websocket = ("wss" if scheme == "https" else "ws") + "://" + rest + str(request.app.router["websocket"].url_for())
        return {
            "font_size": min(max(to_int(request.query.get("fontsize", "16"), 16), 8), 40),
            "app_websocket_url": websocket,
            "static_url": base + str(request.app.router["static"].url_for(filename="/")).rstrip("/") + "/",
            "title": TITLE,
        }

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
