"""Run the app on uvicorn with a graceful shutdown that flushes the SSE streams first.

uvicorn waits for open connections before the lifespan shutdown, and SSE connections never
end by themselves, so ``InstanceAIServer`` ends the runs and the streams *before* uvicorn
starts waiting: every subscriber gets the final ``run-finish {cancelled, service_shutdown}``.

Limits against slow or many clients (uvicorn has none of the first kind):

* a **header timeout**: a connection that has not sent a complete request head within
  ``header_timeout`` seconds of opening (or of its previous response) is closed — a
  slow-header client cannot hold a descriptor for ever;
* a **connection cap** (``max_connections``, below the process's descriptor limit, which is
  raised to its hard maximum first), so the server keeps a reserve of descriptors for its
  database, its log and the clients it serves. A connection over the cap takes the place of
  the oldest one still waiting for its request head (a slow-header client, or an idle
  keep-alive one): a flood of slow connections cannot lock out a prompt client such as a
  health probe. Only when every connection is busy with a request is the new one closed;
* log **rate limiting**: the same message from asyncio/uvicorn at most a few times per
  window (then one summary line), so a flood cannot write megabytes of tracebacks.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("instance_ai_tui.server")

DEFAULT_HEADER_TIMEOUT = 10.0


def raise_descriptor_limit() -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit (capped at 65,536); the resulting soft limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 65_536


def default_max_connections() -> int:
    """Connections the server accepts at once: its descriptor limit minus a reserve of 64."""
    return max(16, raise_descriptor_limit() - 64)


def protocol_class(header_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a header timeout and a connection cap (see the module docstring)."""

    #: connections waiting for a request head, oldest first (a dict keeps the order)
    waiting: dict[H11Protocol, None] = {}

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                oldest = next(iter(waiting), None)
                if oldest is None:
                    _limited_log.warning("refusing a connection: %d open and busy (the limit is %d)",
                                         len(self.connections), max_connections)
                    transport.abort()
                    return
                _limited_log.warning("closing the oldest connection without a request: %d open (the limit is %d)",
                                     len(self.connections), max_connections)
                waiting.pop(oldest, None)
                oldest.transport.abort()  # (its connection_lost leaves self.connections)
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._header_timer = self.loop.call_later(header_timeout, self._header_timed_out)
            waiting[self] = None

        def _cancel_header_timer(self) -> None:
            waiting.pop(self, None)
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            waiting.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a complete request head arrived
                self._cancel_header_timer()

        def on_response_complete(self) -> None:
            cycle = self.cycle
            super().on_response_complete()
            if self.cycle is cycle and not self.transport.is_closing():
                self._arm_header_timer()  # waiting for the next request head

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_header_timer()
            super().connection_lost(exc)

    return GuardedH11Protocol


class RateLimitFilter(logging.Filter):
    """Pass each distinct message at most ``burst`` times per ``window`` seconds; then one summary line."""

    def __init__(self, burst: int = 5, window: float = 10.0) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg)[:200])
        now = time.monotonic()
        started, count = self._seen.get(key, (now, 0))
        if now - started > self.window:
            if count > self.burst:
                record.msg = f"{record.msg} (and {count - self.burst} more like it in {self.window:g} s)"
            started, count = now, 0
        count += 1
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = (started, count)
        if count > self.burst:
            return False
        if count == self.burst:
            record.exc_info = None  # the traceback once is enough
            record.msg = f"{record.msg} (repeating; further copies are suppressed for {self.window:g} s)"
        return True


_limited_log = logging.getLogger("instance_ai_tui.server.limits")
_FILTER = RateLimitFilter()
for _name in ("asyncio", "uvicorn.error", "instance_ai_tui.server", "instance_ai_tui.server.limits",
              "instance_ai_tui.server.sse", "instance_ai_tui.assistant.emitter"):
    if not any(isinstance(f, RateLimitFilter) for f in logging.getLogger(_name).filters):
        logging.getLogger(_name).addFilter(_FILTER)


class InstanceAIServer(uvicorn.Server):
    """``uvicorn.Server`` that calls ``app.state.shutdown_gracefully()`` before closing."""

    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self._instance_app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await self._instance_app.state.shutdown_gracefully()
        except Exception:  # never block the shutdown itself
            log.exception("graceful shutdown of the service failed")
        await super().shutdown(sockets)


def make_server(
    app: Starlette,
    host: str,
    port: int,
    *,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    max_connections: int | None = None,
    **config: Any,
) -> InstanceAIServer:
    """A server for ``app``. uvicorn's access log is off: ours never prints query strings."""
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "access_log": False,
        "log_level": "warning",
        "timeout_graceful_shutdown": 5,
        "timeout_keep_alive": 5,
        "lifespan": "on",
        # uvicorn's own handlers would write its lines raw: they go to the root's (``cli.logs``)
        "log_config": None,
        "http": protocol_class(header_timeout, max_connections or default_max_connections()),
        "h11_max_incomplete_event_size": 16 * 1024,
    }
    options.update(config)
    return InstanceAIServer(uvicorn.Config(app, **options), app)
