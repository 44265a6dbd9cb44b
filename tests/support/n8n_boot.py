"""Replay a real n8n's restart on a ``FakeN8n``: the boot window a client must ride through.

Measured on n8n 2.41.1 (issue 13): when n8n restarts, its HTTP server answers before the
Instance AI module is ready. ``GET /rest/instance-ai/events/:id`` first answers ``200 text/html``
(the editor's page), then ``404 text/html`` for about 6.5 s, then the event stream. The other
``/rest/instance-ai`` routes answer the same HTML 404 meanwhile. A run that was active when the
process died has no ``run-finish`` in the log (``crash=True``); the event log itself survives.

Usage::

    await restart(fake, html_answers=1, not_found_seconds=0.5)   # tests: a short window

The window is configurable so that no test has to sleep for the real 6.5 s.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from .fake_n8n import FakeN8n

#: what n8n 2.41.1's HTTP server answers before its modules are loaded
BOOT_HTML = b"<!DOCTYPE html><html><head><title>n8n.io - Workflow Automation</title></head><body></body></html>"
NOT_FOUND_HTML = b"<!DOCTYPE html><html><body><pre>Cannot GET</pre></body></html>"
#: the real window, for scripts that want to be faithful
REAL_NOT_FOUND_SECONDS = 6.5
MODULE_PREFIX = "/rest/instance-ai"


@dataclass
class BootWindow:
    """The gate installed on the fake while it "boots"."""

    html_answers: int
    not_found_until: float
    #: 404s served at least, however late the client comes back (a busy machine's client may retry
    #: only after the short window a test sets: then it would never see the 404s it must ride through)
    not_found_answers: int = 0
    html_served: int = 0
    not_found_served: int = 0

    @property
    def over(self) -> bool:
        return time.monotonic() >= self.not_found_until and self.not_found_served >= self.not_found_answers

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> bool:
        path: str = scope.get("path", "")
        if not path.startswith(MODULE_PREFIX) or self.over:
            return False
        if path.startswith(MODULE_PREFIX + "/events/") and self.html_served < self.html_answers:
            self.html_served += 1  # the first event-stream requests get the editor's page
            await _send(send, 200, BOOT_HTML)
        else:
            self.not_found_served += 1
            await _send(send, 404, NOT_FOUND_HTML)
        return True


async def _send(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def restart(
    fake: FakeN8n,
    *,
    html_answers: int = 1,
    not_found_seconds: float = REAL_NOT_FOUND_SECONDS,
    down_seconds: float = 0.2,
    not_found_answers: int = 0,
    crash: bool = True,
    gateway_disconnect: bool = True,
) -> BootWindow:
    """Stop ``fake`` and start it again on the same port, behind n8n's boot window.

    ``crash=True``: an active run ends without ``run-finish`` (the process died); otherwise it
    ends as a graceful shutdown ends it. ``down_seconds``: how long the port refuses connections.
    ``gateway_disconnect``: local gateways get ``{"type":"gateway-disconnect"}`` first (n8n sends
    it on shutdown). Either way the gateways' in-memory state (connections, pairing tokens,
    session keys) is gone after the restart: a gateway must pair again.
    Returns the window (its counters tell how many boot answers a client received).
    """
    port = fake.port
    if gateway_disconnect:
        for state in list(fake._gateways.values()):
            state.queue.put_nowait('data: {"type":"gateway-disconnect"}\n\n')
    if crash:
        fake._publish = lambda *args, **kwargs: None  # type: ignore[method-assign]  # dead process: nothing more is written
    try:
        await fake.stop()
    finally:
        if crash:
            del fake._publish
    fake._gateways.clear()
    fake._session_keys.clear()
    fake._pairing.clear()
    await asyncio.sleep(down_seconds)
    window = BootWindow(html_answers=html_answers, not_found_until=time.monotonic() + not_found_seconds,
                        not_found_answers=not_found_answers)
    fake.boot_gate = window
    await fake.start(port)
    return window
