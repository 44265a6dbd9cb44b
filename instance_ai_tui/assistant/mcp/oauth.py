"""Sign-in to a hosted MCP server: OAuth 2.1 with the SDK's client (``mcp.client.auth``).

A URL server with no ``Authorization`` header of its own gets the SDK's ``OAuthClientProvider`` as
its HTTP auth (``oauth = "auto"``, the default; ``"off"`` never signs in). Nothing happens until the
server answers 401 with a ``WWW-Authenticate`` challenge; then the SDK discovers the authorization
server (protected resource and authorization server metadata), registers this client dynamically
(RFC 7591), and sends the person to the authorization URL with PKCE (S256) and a ``state``:

- the redirect comes back to a loopback listener on 127.0.0.1 (``LoopbackRedirect``: one request,
  its ``code`` and ``state``, nothing else read; its port is kept with the registration, as the
  authorization server knows the redirect URI by it);
- the browser is opened (``webbrowser``); where none can be, the URL is told (``/mcp`` shows it,
  ``run`` prints it) and the person has ``SIGN_IN_SECONDS`` to finish;
- tokens and the registration are kept in the data folder (``mcp-oauth/<server>.json``, the folder
  0700, the file 0600, written whole or not at all), bound to the server's URL (another URL: a new
  sign-in); the SDK refreshes an expired access token with its refresh token; ``forget`` removes
  them (``/mcp``'s sign-out).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from mcp.client.auth import AuthorizationCodeResult
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

log = logging.getLogger(__name__)

#: how long the person has to finish signing in
SIGN_IN_SECONDS = 300.0
#: an access token this close to its end is refreshed rather than sent
EXPIRY_MARGIN = 30.0
#: the most of the redirect request read (its request line and headers)
MAX_REQUEST_BYTES = 16 * 1024
DONE_PAGE = (b"<!doctype html><meta charset=utf-8><title>instance-ai</title>"
             b"<p>Signed in. You can close this tab and go back to instance-ai.</p>")
FAILED_PAGE = (b"<!doctype html><meta charset=utf-8><title>instance-ai</title>"
               b"<p>The sign-in did not complete: %s. Go back to instance-ai and try again.</p>")


def token_folder(data_dir: Path) -> Path:
    return data_dir / "mcp-oauth"


class TokenFile:
    """The SDK's ``TokenStorage`` in one private JSON file per server, bound to its URL."""

    def __init__(self, path: Path, server_url: str) -> None:
        self.path = path
        self.server_url = server_url
        #: tokens are kept (read once here, then kept up to date: ``/mcp`` asks often)
        self.has_tokens = bool(self._read().get("tokens"))

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("serverUrl") != self.server_url:
            return {}  # signed in to another URL (or not at all): nothing of it is used
        return data

    def _write(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            folder.chmod(0o700)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({**data, "serverUrl": self.server_url}, fh)
        os.chmod(temporary, 0o600)
        os.replace(temporary, self.path)

    def value(self, key: str) -> Any:
        return self._read().get(key)

    def put(self, key: str, value: Any) -> None:
        data = self._read()
        data[key] = value
        self._write(data)

    async def get_tokens(self) -> OAuthToken | None:
        """The kept tokens; an access token past its time is left out (the SDK then refreshes it
        with the refresh token instead of sending it and being asked to sign in again)."""
        from mcp.shared.auth import OAuthToken

        raw = self.value("tokens")
        try:
            tokens = OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None
        expires_at = self.value("expiresAt")
        if tokens is not None and isinstance(expires_at, int | float) and time.time() >= expires_at - EXPIRY_MARGIN:
            tokens = tokens.model_copy(update={"access_token": "", "expires_in": None})
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        def write() -> None:
            data = self._read()
            data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
            if tokens.expires_in is not None:
                data["expiresAt"] = time.time() + int(tokens.expires_in)
            else:
                data.pop("expiresAt", None)
            self._write(data)

        await asyncio.to_thread(write)
        self.has_tokens = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self.value("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await asyncio.to_thread(self.put, "client", client_info.model_dump(mode="json", exclude_none=True))

    def forget(self) -> bool:
        """Remove the tokens and the registration (sign out); whether there were any."""
        self.has_tokens = False
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LoopbackRedirect:
    """The redirect URI of the sign-in: ``http://127.0.0.1:PORT/callback``, listened on only while
    a sign-in waits; it reads the one request that carries the authorization's answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._server: asyncio.Server | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def listen(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        except OSError as exc:
            raise OSError(f"the sign-in's loopback port {self.port} cannot be used ({exc.strerror}); "
                          "restart the server from /mcp to sign in on another port") from None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from mcp.client.auth import AuthorizationCodeResult

        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        line = head[:MAX_REQUEST_BYTES].split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        target = urlsplit(parts[1]) if len(parts) >= 2 else urlsplit("")
        query = parse_qs(target.query)
        code = (query.get("code") or [""])[0]
        error = (query.get("error") or [""])[0]
        ok = parts[0] == "GET" and target.path == "/callback" and bool(code)
        body = DONE_PAGE if ok else FAILED_PAGE % (error or "no code came back").encode("ascii", "replace")[:200]
        status = b"200 OK" if ok else b"400 Bad Request"
        writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()
        if target.path != "/callback" or self._result is None or self._result.done():
            return
        if ok:
            state, iss = query.get("state"), query.get("iss")
            self._result.set_result(AuthorizationCodeResult(
                code=code, state=state[0] if state else None, iss=iss[0] if iss else None))
        elif error:
            self._result.set_exception(RuntimeError(f"the authorization server said: {error[:200]}"))

    async def wait(self, timeout: float = SIGN_IN_SECONDS) -> AuthorizationCodeResult:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise TimeoutError(f"nobody signed in within {timeout:g} s") from None
        finally:
            self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


def open_in_browser(url: str) -> bool:
    """Open ``url`` in the person's browser; False where none can be opened (no display)."""
    import webbrowser

    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("BROWSER")
            or os.uname().sysname == "Darwin"):
        return False
    try:
        return bool(webbrowser.open(url, new=2))
    except webbrowser.Error:
        return False


def provider(name: str, server_url: str, data_dir: Path, *,
             on_url: Callable[[str], Awaitable[None]]) -> tuple[Any, TokenFile]:
    """The SDK's ``OAuthClientProvider`` for server ``name`` at ``server_url`` (see the module
    docstring) and its token file; ``on_url(url)`` is awaited with the authorization URL."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    storage = TokenFile(token_folder(data_dir) / f"{name}.json", server_url)
    port = storage.value("redirectPort")
    if not isinstance(port, int):
        port = _free_port()
        storage.put("redirectPort", port)
    redirect = LoopbackRedirect(port)

    async def redirect_handler(url: str) -> None:
        await redirect.listen()
        await on_url(url)

    async def callback_handler() -> Any:
        return await redirect.wait()

    metadata = OAuthClientMetadata.model_validate({
        "client_name": "instance-ai", "redirect_uris": [redirect.uri], "grant_types": [
            "authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none"})
    return OAuthClientProvider(server_url, metadata, storage, redirect_handler=redirect_handler,
                               callback_handler=callback_handler), storage
