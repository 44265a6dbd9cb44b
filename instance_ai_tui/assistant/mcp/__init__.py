"""MCP servers as tools of the embedded agent (issue 28), on the official ``mcp`` SDK.

``manager.McpServers`` (every configured server of a service), ``connection.ServerConnection``
(one server: start, call, stop, restart, its stderr), ``tools.McpTool`` (an MCP tool as a
runtime ``Tool``: schema, approval from its hints, results within a size limit).
The SDK is imported only when a server starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config import Settings
    from .manager import McpServers

__all__ = ["servers_for"]


def servers_for(settings: Settings) -> McpServers | None:
    """The MCP servers ``settings`` configure (None without any)."""
    if not settings.mcp.servers:
        return None
    from .manager import McpServers

    servers = McpServers(settings.mcp.servers)
    if settings.workspace_root is not None:  # the roots offered: the workspace folder, else the current directory
        servers.hooks.root_paths = [settings.workspace_root.expanduser()]
    return servers
