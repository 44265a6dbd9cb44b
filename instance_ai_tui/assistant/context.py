"""What the assistant's tools see of their run, through ``ToolContext.extra["assistant"]``.

``Services`` is shared by every run of one ``InstanceAI`` (model, workspace, n8n backend, the
sub-agent tool registry, limits). ``RunContext`` is one run (thread, ids, event emitter, the
thread's always-allowed tools, background sub-agents, the current checklist). ``AgentScope``
is one agent of that run (its id and chunk mapper), so a tool publishes under the agent that
called it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.api import BackgroundTask
from ..runtime.checkpoints import CheckpointStore
from ..runtime.model import ModelAdapter
from ..runtime.tools import Tool, ToolContext
from .emitter import RunEmitter
from .mapping import ChunkMapper

if TYPE_CHECKING:
    from .n8n_client import N8nBackend
    from .workspace import Workspace

EXTRA_KEY = "assistant"


class McpTools(Protocol):
    """The configured MCP servers as the agent uses them (``assistant.mcp.manager.McpServers``):
    typed here by what is used, so this module imports nothing of MCP (no import cycle)."""

    def tools(self) -> list[Tool]: ...

    def by_name(self) -> Mapping[str, Tool]:
        """``tools()`` by name (cached with it: a turn never walks thousands of tools to find a few)."""
        ...

    @property
    def version(self) -> int:
        """Changes whenever a server's lists or state change (``tools()`` is cached by it)."""
        ...

    def instructions(self) -> str: ...

    def retry_unknown(self) -> None: ...

    async def wait_relisted(self, timeout: float = ...) -> None: ...

    async def wait_starting(self, timeout: float) -> None: ...


@dataclass
class Services:
    """Shared by every run of one assistant service."""

    model: ModelAdapter
    checkpoints: CheckpointStore
    workspace: Workspace | None = None
    n8n: N8nBackend | None = None
    #: tools a sub-agent may be given, by name (the domain tools, never orchestration tools)
    sub_agent_tools: dict[str, Tool] = field(default_factory=dict)
    #: at most this many sub-agents run at the same time (per service)
    sub_agent_limit: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(3))
    sub_agent_max_iterations: int = 12
    #: the models a thread may switch to (``assistant.models.ModelCatalog``); None: only ``model``
    catalog: Any = None
    #: the configured MCP servers (``assistant.mcp``); their tools join the domain tools
    mcp: McpTools | None = None


@dataclass
class RunContext:
    """One run of one thread, as its tools see it."""

    thread_id: str
    run_id: str
    message_group_id: str
    orchestrator_id: str
    emitter: RunEmitter
    services: Services
    #: tools the user allowed "always" in this thread (shared with the run manager)
    allowances: set[str] = field(default_factory=set)
    #: sub-agents of this run, for the status endpoint
    background: dict[str, BackgroundTask] = field(default_factory=dict)
    #: the latest checklist (flat seed form) published by ``plan``
    tasks: list[dict[str, Any]] = field(default_factory=list)
    #: the model of this run (the thread's choice, ``/model``); None: ``services.model``
    model: ModelAdapter | None = None

    def allows(self, tool_name: str) -> bool:
        return tool_name in self.allowances


@dataclass
class AgentScope:
    """One agent of a run: the orchestrator or a sub-agent."""

    run: RunContext
    agent_id: str
    role: str
    mapper: ChunkMapper

    def extra(self) -> dict[str, Any]:
        return {EXTRA_KEY: self}


def scope_of(ctx: ToolContext) -> AgentScope:
    """The assistant scope of a tool call (a clear error if a tool runs outside the assistant)."""
    scope = ctx.extra.get(EXTRA_KEY)
    if not isinstance(scope, AgentScope):
        raise RuntimeError(f"tool {ctx.tool_name!r} needs the assistant context (run it through InstanceAI)")
    return scope
