"""The MCP servers of an assistant as the app sees them (``GET /instance-ai/mcp``, ``/mcp``).

One ``McpServerInfo`` per configured server: its state, the tools it offers (the names the
model calls them by), the last error and the tail of its stderr. Our own API only (n8n has no
such route): a client without it says so in the view.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import WireModel

#: ``starting``: being launched or listing its tools; ``ready``: its tools run; ``failed``: it
#: did not start or it died (it is started again at its next use); ``stopped``: not started yet
#: or shut down; ``disabled``: ``enabled = false`` in the config; ``unapproved``: a project's server
#: (``.mcp.json``) the person has not approved yet
McpState = Literal["starting", "ready", "failed", "stopped", "disabled", "unapproved"]


class McpToolInfo(WireModel):
    #: the name the model calls it by (``mcp__<server>__<tool>``)
    name: str
    #: the name on the MCP server
    mcp_name: str
    description: str = ""
    read_only: bool = False
    #: True when a call asks the user first (before any "always allow")
    asks: bool = True


class McpPromptArgument(WireModel):
    name: str
    description: str = ""
    required: bool = False


class McpPromptInfo(WireModel):
    """A prompt of a server: ``/mcp__<server>__<name>`` in the app."""

    name: str
    description: str = ""
    arguments: list[McpPromptArgument] = Field(default_factory=list)


class McpServerInfo(WireModel):
    name: str
    #: ``http``: Streamable HTTP; ``sse``: the legacy HTTP+SSE transport
    transport: Literal["stdio", "http", "sse"] = "stdio"
    #: the command line or the URL (never the env values or headers: those are secrets)
    target: str = ""
    state: McpState = "stopped"
    tools: list[McpToolInfo] = Field(default_factory=list)
    error: str | None = None
    #: what to know besides an error: tools left out, a start in progress whose tools join later
    note: str | None = None
    #: the last lines the server wrote to stderr (stdio servers)
    stderr: str = ""
    #: how many times it was started
    starts: int = 0
    #: its last log lines (``notifications/message``, at most 200), and the level it was asked to send
    log: list[str] = Field(default_factory=list)
    log_level: str | None = None
    #: a sign-in in progress: the URL the person is asked to open (a browser was opened where one could be)
    sign_in_url: str | None = None
    #: tokens of a sign-in are kept for it (``/mcp`` can sign out)
    signed_in: bool = False
    #: the project file it comes from (``.mcp.json``); None: the person's own config
    origin: str | None = None
    #: what it offers besides tools: resources and templates (URIs), prompts (names)
    resources: list[str] = Field(default_factory=list)
    prompts: list[McpPromptInfo] = Field(default_factory=list)


class McpStatus(WireModel):
    servers: list[McpServerInfo] = Field(default_factory=list)


class McpPromptRequest(WireModel):
    """``POST /instance-ai/mcp/{server}/prompts/{name}``: the arguments the person gave."""

    arguments: dict[str, str] = Field(default_factory=dict)


class McpPromptText(WireModel):
    """A server's prompt made text: what the person sends as their message."""

    text: str
    description: str = ""


class McpLogLevelRequest(WireModel):
    """``POST /instance-ai/mcp/{server}/log-level``: what the server should send from now on."""

    level: Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
