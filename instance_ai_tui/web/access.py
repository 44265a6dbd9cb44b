"""Who may open the app: the access token, its cookie, and the host/origin checks.

Pure functions (no aiohttp), so the rules are tested on their own:

- ``is_loopback(host)``: whether binding ``host`` only listens on this machine. Any other bind
  needs a token: nobody on the network may get a shell-like app without one.
- The browser keeps ``session_value(token)`` in a cookie, not the token itself, so the cookie
  does not reveal the token.
- ``same_origin(origin, host)``: a page of another site must not drive the app (a WebSocket is
  not bound by the same-origin policy; the browser only tells us its ``Origin``).
- ``host_allowed(host, bound)``: on a loopback bind without a token, only loopback names are
  served, so a DNS-rebinding page cannot reach the app through a name of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
from urllib.parse import urlsplit

#: the environment variable that may hold the access token (instead of ``--token``)
TOKEN_ENV = "INSTANCE_AI_WEB_TOKEN"
#: the cookie that keeps a browser signed in
COOKIE_NAME = "instance_ai_web"
#: the query parameter that may carry the token once (then it moves to the cookie)
TOKEN_PARAM = "token"
#: the shortest token accepted
MIN_TOKEN_LENGTH = 8
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


class AccessError(ValueError):
    """The access settings cannot be served (a message for the user)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only reaches this machine; an empty host or a
    wildcard (``0.0.0.0``, ``::``) listens everywhere, so it is not loopback."""
    name = host.strip().strip("[]").lower()
    if not name:
        return False
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses)


def check_settings(host: str, token: str | None) -> None:
    """Refuse a bind that would serve the app to the network without a token, and a token too
    short to protect anything."""
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise AccessError(f"the web token must have at least {MIN_TOKEN_LENGTH} characters")
    if token is None and not is_loopback(host):
        raise AccessError(
            f"--host {host} serves the app to the network: give an access token with --token or "
            f"{TOKEN_ENV} (the page asks for it), or bind 127.0.0.1"
        )


def session_value(token: str) -> str:
    """The cookie value that proves a browser gave ``token`` (derived, not the token)."""
    return hmac.new(token.encode("utf-8"), b"instance-ai-web session", hashlib.sha256).hexdigest()


def token_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def cookie_matches(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8"), session_value(token).encode("utf-8"))


def _host_name(host: str) -> str:
    """``host`` of a ``Host`` header or netloc without the port (IPv6 brackets removed)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def same_origin(origin: str, host: str) -> bool:
    """Whether the ``Origin`` header names the page's own host (``host``: the request's Host)."""
    if origin == "null":
        return False
    netloc = urlsplit(origin).netloc.lower()
    return bool(netloc) and netloc == host.strip().lower()


def host_allowed(host: str, bound: str) -> bool:
    """Whether a request's ``Host`` may be served when only loopback is protected (no token)."""
    name = _host_name(host)
    if name == _host_name(bound):
        return True
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
