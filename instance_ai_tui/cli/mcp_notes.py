"""What headless ``run`` says about the embedded agent's MCP servers, on stderr.

Before the message goes, ``run`` gives servers still starting ``--mcp-wait`` seconds (default
``DEFAULT_WAIT``: a one-shot question should get the tools of a server that starts in a second
or two, and a slow or broken one never holds the answer longer); then, and for as long as the run
goes, one line per server that failed (its name, the reason, the last lines of its stderr, as
``/mcp`` shows them) and one per server still starting (its tools join a later step).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.safe_text import visible

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.mcp import McpServerInfo, McpStatus

#: seconds ``run`` waits for servers still starting before it sends (``--mcp-wait``)
DEFAULT_WAIT = 2.0
#: how often the servers' states are read while the run goes
POLL_INTERVAL = 0.25
#: characters of a server's stderr shown on its line
STDERR_CHARS = 300


def add_argument(parser: Any) -> None:
    parser.add_argument("--mcp-wait", type=float, default=DEFAULT_WAIT, metavar="SECONDS",
                        help="embedded mode: wait this long at most for MCP servers still starting before sending "
                             f"(default: {DEFAULT_WAIT:g}; a slower server's tools join a later step)")


def for_run(settings: Any, client: Client) -> McpNotes:
    """The notes of a run: about the servers in embedded mode with MCP servers, else none at all."""
    active = settings is not None and not settings.remote.url
    return McpNotes(client, lambda text: print(visible(text), file=sys.stderr, flush=True), active=active)


def failure_line(server: McpServerInfo) -> str:
    """``MCP server 'NAME' failed: REASON — stderr: LAST LINES`` (outside text made visible)."""
    lines = [line.strip() for line in server.stderr.splitlines() if line.strip()]
    tail = " | ".join(lines[-3:])
    if len(tail) > STDERR_CHARS:
        tail = "…" + tail[-STDERR_CHARS:]
    reason = server.error or "it failed"
    text = f"MCP server {server.name!r} failed: {reason}" + (f" — stderr: {tail}" if tail else "")
    return visible(" ".join(text.split("\n")))


class McpNotes:
    """Watches the servers of an embedded client and prints what a person needs to know."""

    def __init__(self, client: Client, note: Callable[[str], None], *, active: bool = True) -> None:
        #: False: there is nothing to watch (``run --url``, no servers): every method does nothing
        self.active = active
        self.client = client
        self.note = note
        #: (name, starts) of each failure told (a server started again and failing again is told again)
        self._told: set[tuple[str, int]] = set()
        self._urls: set[str] = set()
        self._unapproved: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def _status(self) -> McpStatus | None:
        from ..client.base import ClientError

        if not self.active:
            return None

        try:
            return await self.client.mcp_status()
        except ClientError:
            return None

    def _tell(self, status: McpStatus) -> None:
        for server in status.servers:
            if server.sign_in_url and server.sign_in_url not in self._urls:
                self._urls.add(server.sign_in_url)
                self.note(f"instance-ai run: MCP server {server.name!r} wants you to sign in: open "
                          f"{server.sign_in_url} (a browser was opened where one could be)")
            if server.state == "unapproved" and server.name not in self._unapproved:
                self._unapproved.add(server.name)
                self.note(f"instance-ai run: MCP server {server.name!r} of {server.origin} is not started: approve it "
                          "once in the app's /mcp (a project file is someone else's command line)")
            key = (server.name, server.starts)
            if server.state == "failed" and key not in self._told:
                self._told.add(key)
                self.note(f"instance-ai run: {failure_line(server)}")

    async def settle(self, wait: float) -> None:
        """Wait up to ``wait`` seconds for servers still starting; say which failed or still start."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(wait, 0.0)
        while True:
            status = await self._status()
            if status is None:
                return
            self._tell(status)
            starting = [s.name for s in status.servers if s.state == "starting"]
            if not starting:
                return
            if loop.time() >= deadline:
                for name in starting:
                    self.note(f"instance-ai run: MCP server {name!r} is still starting after {wait:g} s "
                              "(--mcp-wait): the message goes without its tools; they join a later step once it "
                              "is ready")
                return
            await asyncio.sleep(0.05)

    async def begin(self, wait: float) -> None:
        """``settle`` then ``start``."""
        if self.active:
            await self.settle(wait)
            self.start()

    def start(self) -> None:
        """Keep telling failures while the run goes (``stop`` ends it)."""
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(POLL_INTERVAL)
            status = await self._status()
            if status is None:
                return
            self._tell(status)

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        status = await self._status()
        if status is not None:
            self._tell(status)
