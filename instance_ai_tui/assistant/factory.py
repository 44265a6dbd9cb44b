"""The assistant's composition root: ``build_service`` wires ``InstanceAI`` to its storage.

The server (``instance-ai serve``) and the embedded client both start their assistant here:
``InstanceAI`` on the SQLite store (``settings.resolved_db_path``) and the in-process bus.
Heavy modules (the assistant service, the runtime, its model adapter for a real model) are imported
when a service is built, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import McpRequestFailed, UnknownMcpServer

if TYPE_CHECKING:
    from ..config import Settings
    from ..protocol.mcp import McpPromptText, McpStatus
    from .mcp.manager import McpServers
    from .service import InstanceAI


def _mcp_of(service: Any) -> McpServers | None:
    return getattr(getattr(service, "services", None), "mcp", None)


def mcp_status(service: Any) -> McpStatus:
    """The MCP servers of ``service`` (``/mcp``, ``GET /instance-ai/mcp``): none when it has none."""
    from ..protocol.mcp import McpStatus

    servers = _mcp_of(service)
    return servers.status() if servers is not None else McpStatus()


async def restart_mcp_server(service: Any, name: str) -> McpStatus:
    """Stop and start the MCP server ``name`` (``UnknownMcpServer``); the status after its start."""
    servers = _mcp_of(service)
    if servers is None or not await servers.restart(name):
        raise UnknownMcpServer(f"no MCP server named {name!r} is configured")
    return servers.status()


def _server(service: Any, name: str) -> Any:
    servers = _mcp_of(service)
    conn = servers.connections.get(name) if servers is not None else None
    if conn is None:
        raise UnknownMcpServer(f"no MCP server named {name!r} is configured")
    return conn


async def mcp_prompt(service: Any, server: str, name: str, arguments: dict[str, str]) -> McpPromptText:
    """Prompt ``name`` of MCP server ``server`` as the text of a message (``/mcp__server__name``)."""
    from .mcp.connection import McpCallError
    from .mcp.prompts import prompt_text

    try:
        return await prompt_text(_server(service, server), name, arguments)
    except McpCallError as exc:
        raise McpRequestFailed(str(exc)) from None


async def set_mcp_log_level(service: Any, server: str, level: str) -> McpStatus:
    """Ask MCP server ``server`` to send its log lines from ``level`` up; the status after."""
    from .mcp.connection import McpCallError

    try:
        await _server(service, server).set_log_level(level)
    except McpCallError as exc:
        raise McpRequestFailed(str(exc)) from None
    return mcp_status(service)


async def sign_out_mcp_server(service: Any, server: str) -> McpStatus:
    """Forget MCP server ``server``'s sign-in (its tokens) and stop it: its next use signs in again."""
    conn = _server(service, server)
    if not conn.sign_out():
        raise McpRequestFailed(f"MCP server {server!r} has no sign-in to forget", 409)
    await conn.stop()
    return mcp_status(service)


def approve_mcp_server(service: Any, server: str) -> McpStatus:
    """The person approves the project's (``.mcp.json``) server ``server``: it starts, now and later."""
    servers = _mcp_of(service)
    _server(service, server)
    assert servers is not None
    if not servers.approve(server):
        raise McpRequestFailed(f"MCP server {server!r} is not a project server waiting for your approval", 409)
    return mcp_status(service)


def build_service(settings: Settings, *, demo_delay: float | None = None,
                  generate_titles: bool | None = None) -> InstanceAI:
    """An ``InstanceAI`` for ``settings`` (not started: call ``await service.start()``).

    ``demo_delay``: seconds between the demo model's streamed pieces (a lifelike pace);
    ``generate_titles``: let the model title new threads (default: on).
    Raises ``ValueError`` with a readable message when the configured model cannot be built.
    """
    from ..bus.memory import InProcessBus
    from ..store.sqlite import SqliteStore
    from .service import AssistantOptions, InstanceAI

    options = AssistantOptions()
    if demo_delay is not None:
        options.demo_delay = demo_delay
    if generate_titles is not None:
        options.generate_titles = generate_titles
    path = settings.resolved_db_path
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data folder: private (issue 15)
    except OSError as exc:  # a read-only parent, a file in the way: the storage's words, not a traceback
        from ..store.errors import sqlite_error

        raise sqlite_error(path, exc, f"create the folder {path.parent} of") from None
    store = SqliteStore(path)
    bus = InProcessBus(store)
    return InstanceAI(store, bus, model=settings.model.name, settings=settings, options=options)
