"""The orchestrator agent: instructions, tools, memory and limits.

The orchestrator has the orchestration tools (``plan``, ``delegate``, ``ask-user``) and every
domain tool (workspace files when a workspace root is set, n8n when a backend is configured,
the tools of the configured MCP servers). Sub-agents may be given domain tools only. One
orchestrator ``Agent`` serves every run of the service (runs are independent; per-run context
travels in ``ToolContext.extra``).

MCP servers start in the background, so their tools are not known when the orchestrator is
built: ``Orchestrator`` adds the tools of the servers ready at each model call (never waiting
for one still starting: its tools join a later step), to its tool table, to the tools
sub-agents may be given, and to the instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..runtime.agent import Agent, AgentStream
from ..runtime.events import AgentEvent
from ..runtime.memory import MemoryStorage, StoreMemory
from ..runtime.run import Run
from ..runtime.tools import Tool
from .context import Services
from .mcp.search import MAX_OFFERED, SEARCH_TOOL, ToolSearch
from .models import context_window
from .tools.ask_user import ask_user_tool
from .tools.delegate import delegate_tool
from .tools.files import file_tools
from .tools.n8n_api import n8n_tools
from .tools.plan import plan_tool

ORCHESTRATOR_NAME = "instance-ai"

INSTRUCTIONS = """You are Instance AI, an assistant that works on the user's n8n automation instance{n8n} \
{workspace}

How you work:
- Simple questions: answer directly and briefly.
- Multi-step work: first call `plan` with the tasks (set review=true when the plan is large or risky), \
then do the work, updating task statuses with `plan` (action "update") as you go.
- Delegate focused work (building a workflow, debugging an execution) with `delegate`: give the sub-agent \
a role, complete instructions and only the tools it needs ({sub_tools}).
- When the request is ambiguous, call `ask-user` with short structured questions instead of guessing.
- Tools that change things (activating, updating or deleting workflows, writing files) ask the user first; \
if the user denies one, do not retry it: say what you did not do.
- Finish with a short markdown summary of what you did and anything the user must do next."""


def domain_tools(services: Services) -> list[Tool]:
    tools: list[Tool] = []
    if services.workspace is not None:
        tools += file_tools(services.workspace)
    if services.n8n is not None:
        tools += n8n_tools(services.n8n)
    return tools


def instructions_for(services: Services, own_tools: Callable[[], list[str]] | None = None) -> str:
    """The orchestrator's instructions; ``own_tools``: the sub-agents' tools that are no MCP tool's,
    sorted (the orchestrator keeps them per MCP version: a turn never walks thousands of tools)."""
    n8n = f" ({services.n8n.label})." if services.n8n is not None else ". No n8n instance is connected."
    workspace = (f"You can read and (with approval) change files in the workspace folder {services.workspace.root}."
                 if services.workspace is not None else "")
    sub = services.sub_agent_tools
    own = list(own_tools()) if own_tools is not None else own_sub_tools(sub)  # (a copy: appended to below)
    mcp_count = len(sub) - len(own)
    if mcp_count > MAX_OFFERED:  # thousands of names would crowd the instructions
        own.append(f"and {mcp_count} MCP tools (find them with {SEARCH_TOOL})")
    else:
        own = sorted(services.sub_agent_tools)
    sub_tools = ", ".join(own) or "none available"
    text = INSTRUCTIONS.format(n8n=n8n, workspace=workspace, sub_tools=sub_tools)
    mcp = services.mcp.instructions() if services.mcp is not None else ""
    return f"{text}\n\n{mcp}" if mcp else text


#: set while ``Orchestrator.compact`` runs (in its task only): ``_tool_table`` is what a step offers
_AS_OFFERED: ContextVar[bool] = ContextVar("orchestrator_tools_as_offered", default=False)


def own_sub_tools(sub: dict[str, Tool]) -> list[str]:
    """The names of the sub-agents' tools that are no MCP server's, sorted."""
    return sorted(n for n, t in sub.items() if not t.metadata.get("mcp_server"))


class Orchestrator(Agent):
    """The orchestrator ``Agent`` with the MCP servers' tools of the moment (or, when there are too
    many, ``search-tools`` and what the run found with it: ``assistant.mcp.search``)."""

    def __init__(self, services: Services, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.services = services
        self.tool_search = ToolSearch()
        self._search_tool = self.tool_search.tool(self._mcp_now)
        self._synced = -1
        self._own_sub: list[str] = []
        #: ``_tool_table``'s merge of our own tools and every MCP tool, for (MCP version, own names)
        self._merged: tuple[tuple[int, tuple[str, ...]], dict[str, Tool]] | None = None

    def _mcp_now(self) -> tuple[list[Tool], int]:
        mcp = self.services.mcp
        return (mcp.tools(), mcp.version) if mcp is not None else ([], 0)

    def _mcp_tools(self) -> list[Tool]:
        """The MCP tools of the moment; the tools sub-agents may be given follow them (once per change)."""
        tools, version = self._mcp_now()
        if version != self._synced:
            sub = self.services.sub_agent_tools
            names = {t.name for t in tools}
            for name in [n for n, t in sub.items() if t.metadata.get("mcp_server") and n not in names]:
                del sub[name]
            for tool in tools:
                sub.setdefault(tool.name, tool)
            self._own_sub = own_sub_tools(sub)
            self._synced = version
        return tools

    def _offered(self, run_id: str) -> list[Tool]:
        """What a model call of ``run_id`` is offered of MCP: every tool, or the search and its finds."""
        tools, version = self._mcp_now()
        window = context_window(getattr(self.services.model, "name", "") or "")
        if self.tool_search.defers(tools, version, window):
            return [self._search_tool, *self.tool_search.offered(run_id)]
        return tools

    @property
    def tools(self) -> list[Tool]:
        own = super().tools
        names = {t.name for t in own}
        return own + [t for t in self._mcp_tools() if t.name not in names]

    def _tool_table(self, thread_id: str | None) -> dict[str, Tool]:
        table = super()._tool_table(thread_id)
        self._mcp_tools()
        if self.services.mcp is None:
            return table
        if _AS_OFFERED.get():  # what a step offers (``compact`` counts the request's tools)
            for tool in self._offered(""):
                table.setdefault(tool.name, tool)
            return table
        # all of them (a suspended call resumes with its own tool), merged as dicts (10,000 tools: no
        # loop in Python); our own tools keep their names and their places first
        key = (self.services.mcp.version, tuple(table))
        if self._merged is None or self._merged[0] != key:
            self._merged = (key, {**table, **self.services.mcp.by_name()})
        merged = dict(self._merged[1])  # a copy: a run changes its own
        merged.update(table)
        return merged

    def own_sub_tools(self) -> list[str]:
        """``own_sub_tools`` of the sub-agents' tools as synced with the MCP tools of the moment."""
        self._mcp_tools()
        return self._own_sub

    async def _event(self, run: Run, kind: AgentEvent, **data: Any) -> None:
        if kind is AgentEvent.TURN_START and self.services.mcp is not None:
            mcp = self.services.mcp
            mcp.retry_unknown()
            await mcp.wait_relisted()  # never for a server still starting: its tools join a later step
            self._mcp_tools()
            offered = {t.name: t for t in self._offered(run.run_id)}
            # the run's tools: our own, then what is offered of MCP now (a run starts with every MCP
            # tool, `_tool_table`, so that a suspended call resumes with its own tool): built anew
            # from the few, never by walking thousands of tools a step
            table = super()._tool_table(run.thread_id)
            for name, tool in offered.items():
                table.setdefault(name, tool)
            run.tools = table
        elif kind is AgentEvent.AGENT_END:
            self.tool_search.forget(run.run_id)
        await super()._event(run, kind, **data)

    async def compact(self, *args: Any, **kwargs: Any) -> Any:
        """``Agent.compact``, its tokens counted with the tools a step offers: with 10,000 MCP tools
        behind ``search-tools``, never all their schemas (a 2-message thread read 345,224 tokens)."""
        token = _AS_OFFERED.set(True)  # this task only: a run starting meanwhile gets every tool
        try:
            return await super().compact(*args, **kwargs)
        finally:
            _AS_OFFERED.reset(token)

    async def resume(self, *args: Any, **kwargs: Any) -> AgentStream:
        if self.services.mcp is not None:
            await self.services.mcp.wait_starting(30.0)  # a suspended call of an MCP tool needs its tool
        return await super().resume(*args, **kwargs)


def build_orchestrator(services: Services, store: MemoryStorage, *, max_iterations: int = 30,
                       history_messages: int = 200, context_threshold: float = 0.7) -> Agent:
    """The orchestrator; also fills ``services.sub_agent_tools``."""
    domain = domain_tools(services)
    services.sub_agent_tools = {t.name: t for t in domain}
    tools = [plan_tool(), delegate_tool(), ask_user_tool(), *domain]
    orchestrator: Orchestrator

    def instructions() -> str:
        return instructions_for(services, orchestrator.own_sub_tools)

    orchestrator = Orchestrator(
        services,
        ORCHESTRATOR_NAME,
        instructions,
        services.model,
        tools,
        memory=StoreMemory(store, last_messages=history_messages),
        checkpoints=services.checkpoints,
        max_iterations=max_iterations,
        tool_call_concurrency=3,
        stop_on_limit=True,
        context_threshold=context_threshold,
    )
    return orchestrator
