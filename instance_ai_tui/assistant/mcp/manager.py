"""The assistant's MCP servers: started in the background with the service, their tools offered
to the orchestrator (and to sub-agents given them), stopped with the service.

``McpServers.start()`` launches every enabled server and returns at once (start-up is not
slower). No model call waits for a server still starting: each step takes the tools of the
servers that are ready then (``tools()``), so a slow server's tools join a later step (``/mcp``
and the agent's instructions say which servers are still starting). A server that failed is
started again by the next call of one of its tools, or (when its tools are not known yet)
before a run's next model call at most every ``RETRY_INTERVAL`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .connection import ServerConnection
from .hooks import McpHooks
from .tools import McpTool, asks_first, is_read_only

if TYPE_CHECKING:
    from ...config import McpServerSettings
    from ...protocol.mcp import McpStatus

log = logging.getLogger(__name__)

#: a server whose tools are unknown (it never started) is tried again at most this often
RETRY_INTERVAL = 30.0
#: what ``/mcp`` says of a server still starting
STARTING_NOTE = "still starting: messages go without its tools meanwhile; they join at the next step once it is ready"
#: a model call waits at most this long for a ready server to list the tools it said changed
RELIST_WAIT = 5.0


class McpServers:
    """Every configured MCP server of one assistant service."""

    def __init__(self, servers: Mapping[str, McpServerSettings]) -> None:
        from ... import log_secrets

        log_secrets.install()  # the SDK's and httpx's log lines carry the servers' URLs
        for settings in servers.values():
            log_secrets.register(*(v.get_secret_value() for v in [*settings.env.values(), *settings.headers.values()]))
        #: what a server may ask of the app (roots, a form to fill): shared by every server
        self.hooks = McpHooks()
        self.connections: dict[str, ServerConnection] = {
            name: ServerConnection(name, s, self.hooks) for name, s in servers.items()}
        self._tools: dict[str, McpTool] = {}
        self._version = 0
        self._built_version = -1
        for conn in self.connections.values():
            conn.on_change = self._changed
        self._started = False

    def __bool__(self) -> bool:
        return bool(self.connections)

    def _changed(self) -> None:
        self._version += 1

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Launch every enabled server in the background (returns at once)."""
        self._started = True
        for conn in self.connections.values():
            conn.start()

    async def wait_relisted(self, timeout: float = RELIST_WAIT) -> None:
        """Until the tools a ready server said changed are listed again (at most ``timeout``).
        Servers still starting are never waited for: their tools join a later step."""
        waits = [conn.wait_relisted(timeout) for conn in self.connections.values() if conn.state == "ready"]
        if waits:
            await asyncio.gather(*waits)

    async def wait_starting(self, timeout: float) -> None:
        """Until the servers starting now have started or failed (at most ``timeout``): for a
        suspended call of an MCP tool resumed after a restart, which needs its tool back."""
        waits = [conn.wait_settled(min(timeout, conn.settings.startup_timeout))
                 for conn in self.connections.values() if conn.state == "starting"]
        if waits:
            await asyncio.gather(*waits)

    def instructions(self) -> str:
        """What the agent's instructions say of the servers: those still starting (their tools
        are not offered yet: the agent can tell the person instead of guessing)."""
        starting = self.starting()
        if not starting:
            return ""
        names = ", ".join(starting)
        return (f"MCP servers still starting (their tools are not offered yet and join at a later step): {names}. "
                "If the request needs one of them, say so rather than guessing.")

    def starting(self) -> list[str]:
        """The servers whose start is in progress (their tools are not offered yet)."""
        return [conn.name for conn in self.connections.values() if conn.state == "starting"]

    async def set_roots(self, paths: list[Path]) -> None:
        """Offer ``paths`` as the roots from now on and tell every ready server they changed."""
        if [p.resolve() for p in paths] == [p.resolve() for p in self.hooks.roots()]:
            return
        self.hooks.root_paths = list(paths)
        await asyncio.gather(*(conn.roots_changed() for conn in self.connections.values()))

    def retry_unknown(self) -> None:
        """Start again the failed servers whose tools were never listed (the next run may use them)."""
        if not self._started:
            return
        now = time.monotonic()
        for conn in self.connections.values():
            if conn.state == "failed" and not conn.tools and now - conn.last_failure >= RETRY_INTERVAL:
                conn.start()

    async def aclose(self) -> None:
        """Stop every server and wait until their processes are gone."""
        for conn in self.connections.values():
            conn.closed = True
        await asyncio.gather(*(conn.stop() for conn in self.connections.values()), return_exceptions=True)
        self._started = False

    async def restart(self, name: str) -> bool:
        conn = self.connections.get(name)
        if conn is None:
            return False
        await conn.restart()
        return True

    # ----------------------------------------------------------------- tools
    def tools(self) -> list[McpTool]:
        """The tools of every server whose tools are known (a failed server's too: their calls
        restart it, or fail with its reason)."""
        if self._built_version != self._version:
            self._rebuild()
        return list(self._tools.values())

    def _rebuild(self) -> None:
        version = self._version
        built: dict[str, McpTool] = {}
        for conn in self.connections.values():
            if not conn.settings.enabled:
                continue
            for spec in conn.tools:
                current = self._tools.get(_key(conn.name, spec.name))
                tool = current if current is not None and current.mcp_tool is spec else McpTool(conn, spec)
                if tool.name in {t.name for t in built.values()}:
                    log.warning("MCP: two tools of %s are both named %s; the second is left out", conn.name, tool.name)
                    continue
                built[_key(conn.name, spec.name)] = tool
        self._tools = built
        self._built_version = version

    # ----------------------------------------------------------------- status
    def status(self) -> McpStatus:
        from ...protocol.mcp import McpServerInfo, McpStatus, McpToolInfo

        tools = self.tools()
        servers = []
        for conn in self.connections.values():
            infos = [McpToolInfo(name=t.name, mcp_name=t.mcp_name, description=t.mcp_tool.description or "",
                                 read_only=is_read_only(t.mcp_tool), asks=asks_first(conn, t.mcp_tool))
                     for t in tools if t.conn is conn]
            notes = [STARTING_NOTE] if conn.state == "starting" else []
            notes += [conn.note] if conn.note else []
            servers.append(McpServerInfo(name=conn.name, transport=conn.transport,  # type: ignore[arg-type]
                                         target=conn.target, state=conn.state,  # type: ignore[arg-type]
                                         tools=infos, error=conn.error, note="; ".join(notes) or None,
                                         stderr=conn.stderr[-4000:], starts=conn.starts))
        return McpStatus(servers=servers)


def _key(server: str, tool: str) -> str:
    return f"{server}\x00{tool}"
