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
- ``clean_token(raw)``: a token as given, stripped; fewer than 8 non-space characters is refused
  (a whitespace-only token protected nothing).
- ``WrongTokenThrottle``: token checks from one client (an address; an IPv6 /64) are made one
  after another, each wrong one answered later than the last (0.5 s, 1 s, 2 s, ... 30 s), and all
  clients together get at most 5 checks a second, so parallel guesses gain nothing, from one
  address or from 600.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
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


def clean_token(raw: str | None) -> str | None:
    """The token as given (``--token`` or the environment), without surrounding spaces;
    ``None`` when none was given. Fewer than ``MIN_TOKEN_LENGTH`` characters that are not
    spaces (a blank or whitespace-only token included) is an ``AccessError``."""
    if raw is None:
        return None
    token = raw.strip()
    if sum(1 for ch in token if not ch.isspace()) < MIN_TOKEN_LENGTH:
        raise AccessError(f"the web token must have at least {MIN_TOKEN_LENGTH} characters that are not spaces")
    if not token.replace(" ", "").isprintable():  # (as serve's token: what a browser's form cannot send)
        raise AccessError("the web token must not contain control characters or invisible format characters "
                          "(escape sequences, tabs, newlines, bidi controls)")
    return token


def check_settings(host: str, token: str | None) -> None:
    """Refuse a bind that would serve the app to the network without a token, and a token too
    short to protect anything."""
    if token is not None:
        clean_token(token)
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


def client_key(address: str | None) -> str:
    """Who is guessing, for the throttle: an IPv4 address; for IPv6 its /64 network (one client
    has a whole /64 to pick addresses from); an IPv4-mapped IPv6 address is its IPv4 address."""
    if not address:
        return "unknown"
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class TooManyGuesses(Exception):
    """Too many token checks are waiting already: this one is answered without being checked."""


class ThrottleClosed(Exception):
    """The server is stopping (``WrongTokenThrottle.close``): this check was not made."""


@dataclass
class _Guesses:
    failures: int = 0
    last: float = 0.0
    waiting: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class WrongTokenThrottle:
    """Slows down token guesses, per client and for all clients together.

    Per client (``client_key``: an address, an IPv6 /64): its token checks are made one after
    another, and each wrong one is answered after ``base * 2 ** (n - 1)`` seconds (at most
    ``cap``) with the next check waiting for that answer, so 200 parallel guesses take as long
    as 200 in a row. A client forgotten after ``forget_after`` seconds without a wrong token
    starts again at ``base``; at most ``max_clients`` are remembered (the least recent go first).

    For all clients: at most ``per_second`` token checks a second (a burst of ``burst``), so
    guesses from many addresses (600 from 600 loopback addresses, a botnet) are checked at that
    rate whatever their number; a check waits for its turn *before* the token is compared, so a
    right guess among many is not found faster. Past ``max_waiting`` checks waiting, a check is
    not made at all, nor past ``max_waiting_per_client`` of one client (``TooManyGuesses``: the
    page says to try again later). One sign-in by a
    person is one check: it waits only while someone is guessing.

    ``close()`` (the server stops) ends every wait at once: a wrong token already compared is
    answered now, a check still waiting for its turn raises ``ThrottleClosed`` unmade, and so
    does any check after it. A SIGTERM never waits for the guessers' delays."""

    def __init__(self, base: float = 0.5, cap: float = 30.0, forget_after: float = 600.0,
                 max_clients: int = 10_000, per_second: float = 5.0, burst: int = 5, max_waiting: int = 50,
                 max_waiting_per_client: int = 10) -> None:
        self.base = base
        self.cap = cap
        self.forget_after = forget_after
        self.max_clients = max_clients
        self.per_second = per_second
        self.burst = burst
        self.max_waiting = max_waiting
        self.max_waiting_per_client = max_waiting_per_client
        self._clients: OrderedDict[str, _Guesses] = OrderedDict()
        #: the global bucket: when the next check may be made, and how many wait for theirs
        self._next_slot = 0.0
        self.waiting = 0
        #: set by ``close``: every sleep ends, no check is made any more
        self._closed = asyncio.Event()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """The server stops: wake every waiting check (see the class's docstring)."""
        self._closed.set()

    async def _sleep(self, seconds: float) -> None:
        """``seconds`` of waiting, or less: until ``close``."""
        if seconds > 0 and not self.closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), seconds)

    def delay(self, failures: int) -> float:
        return min(self.cap, self.base * 2 ** max(0, failures - 1))

    def _entry(self, client: str) -> _Guesses:
        now = time.monotonic()
        entry = self._clients.get(client)
        if entry is None or (now - entry.last > self.forget_after and not entry.lock.locked()):
            entry = _Guesses(last=now)
        self._clients[client] = entry
        self._clients.move_to_end(client)
        while len(self._clients) > self.max_clients:
            self._clients.popitem(last=False)
        return entry

    async def _global_turn(self) -> None:
        """Wait for a place in the global rate (a token bucket of ``per_second`` and ``burst``)."""
        if self.per_second <= 0:
            return
        interval = 1.0 / self.per_second
        now = time.monotonic()
        slot = max(self._next_slot, now - (self.burst - 1) * interval)
        self._next_slot = slot + interval
        if slot > now:
            await self._sleep(slot - now)

    async def check(self, client: str, right: Callable[[], bool]) -> bool:
        """Make one token check of ``client`` (``right()`` compares the token) when its turn has
        come; a wrong one returns after its delay. Raises ``TooManyGuesses`` when ``max_waiting``
        checks (or ``max_waiting_per_client`` of this client) wait already, ``ThrottleClosed``
        once ``close`` was called (the check is not made)."""
        if self.closed:
            raise ThrottleClosed
        entry = self._entry(client)
        if self.waiting >= self.max_waiting or entry.waiting >= self.max_waiting_per_client:
            raise TooManyGuesses
        self.waiting += 1
        entry.waiting += 1
        counted = True
        try:
            async with entry.lock:  # one check at a time per client
                await self._global_turn()
                self.waiting -= 1
                entry.waiting -= 1
                counted = False
                if self.closed:
                    raise ThrottleClosed
                if right():
                    self._clients.pop(client, None)  # its wrong ones are forgiven
                    return True
                entry.failures += 1
                entry.last = time.monotonic()
                await self._sleep(self.delay(entry.failures))
                entry.last = time.monotonic()
                return False
        finally:
            if counted:
                self.waiting -= 1
                entry.waiting -= 1
