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
    """The MCP servers ``settings`` configure, and those of the project's ``.mcp.json`` (in the
    workspace folder, else the current directory; they start once approved): None without any."""
    from pathlib import Path

    from .project import find, read

    folder = settings.workspace_root.expanduser() if settings.workspace_root is not None else Path.cwd()
    found = find(folder)
    project = read(found) if found is not None else None
    if not settings.mcp.servers and (project is None or not project.servers):
        return None
    from .manager import McpServers

    servers = McpServers(settings.mcp.servers, project)
    if settings.workspace_root is not None:  # the roots offered: the workspace folder, else the current directory
        servers.hooks.root_paths = [settings.workspace_root.expanduser()]
    return servers
