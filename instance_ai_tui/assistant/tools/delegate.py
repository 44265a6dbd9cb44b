"""``delegate``: hand a focused task to a sub-agent with a role and a subset of the domain tools.

The sub-agent gets its own ``agentId`` (``agent-<role>-<random>``); its events are published
under that id, framed by ``agent-spawned`` (``parentId`` = the caller) and ``agent-completed``.
Its final text is the delegate call's result. At most ``Services.sub_agent_limit`` sub-agents
run at once; several ``delegate`` calls in one model response run in parallel.

When a sub-agent's tool needs the user (an approval), the sub-agent suspends (checkpointed)
and so does this call, with the sub-agent's card as its payload: the whole run is suspended,
survives a restart, and the confirm resumes the orchestrator, which resumes this call, which
resumes the sub-agent from its checkpoint.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...protocol.api import BackgroundTask
from ...protocol.events import AgentSpawnedEvent, AgentSpawnedPayload
from ...runtime.agent import Agent, AgentStream
from ...runtime.errors import RuntimeApiError
from ...runtime.model import ModelAdapter
from ...runtime.state import RunResult
from ...runtime.tools import Tool, ToolContext, ToolError
from ..confirmations import ConfirmationAnswer, approval_decision, card_fields
from ..context import AgentScope, RunContext, Services, scope_of
from ..emitter import agent_completed
from ..ids import new_task_id, sub_agent_id
from ..mapping import ChunkMapper
from ..mcp.search import MAX_OFFERED as MAX_LISTED
from ..mcp.search import SEARCH_TOOL

SUB_AGENT_INSTRUCTIONS = """You are a {role}, a focused sub-agent of Instance AI, an assistant that works on an \
n8n automation instance. Do exactly the task you are given with the tools you have; do not ask the user \
questions. When you are done, answer with a short summary of what you did, naming the ids of anything you \
created or changed."""


class DelegateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str = Field(min_length=1, max_length=60, description="The sub-agent's role, e.g. 'workflow builder'")
    instructions: str = Field(min_length=1, description="The task, with every detail the sub-agent needs")
    tools: list[str] = Field(default_factory=list, description="Names of the tools the sub-agent may use")


def build_sub_agent(services: Services, role: str, tool_names: list[str], model: ModelAdapter | None = None) -> Agent:
    """The sub-agent for ``role`` (rebuilt identically to resume it from its checkpoint), on the
    run's model (the thread's choice) or the service's."""
    tools = [services.sub_agent_tools[name] for name in tool_names if name in services.sub_agent_tools]
    return Agent(
        "sub-agent",
        SUB_AGENT_INSTRUCTIONS.format(role=role),
        model or services.model,
        tools,
        checkpoints=services.checkpoints,
        max_iterations=services.sub_agent_max_iterations,
    )


def _check_tools(services: Services, names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in services.sub_agent_tools]
    if unknown:
        tools = services.sub_agent_tools
        own = sorted(n for n, t in tools.items() if not t.metadata.get("mcp_server"))
        if len(tools) - len(own) > MAX_LISTED:  # an MCP server of 10,000 tools: never all their names
            own.append(f"{len(tools) - len(own)} MCP tools (find them with {SEARCH_TOOL})")
        else:
            own = sorted(tools)
        available = ", ".join(own) or "none"
        raise ToolError(f"unknown tool(s) for a sub-agent: {', '.join(unknown)}; available: {available}")
    return list(dict.fromkeys(names))


async def _drain(stream: AgentStream, mapper: ChunkMapper) -> RunResult:
    """Map the stream to the end. If this task is cancelled, abort the sub-agent and still map
    what it emits while stopping, then re-raise."""
    try:
        async for chunk in stream:
            mapper.handle(chunk)
    except asyncio.CancelledError:
        stream.abort()
        async for chunk in stream:
            mapper.handle(chunk)
        raise
    return await stream.result()


def _complete(run: RunContext, agent_id: str, role: str, status: str, result: str = "", error: str | None = None) -> None:
    run.emitter.emit(agent_completed(agent_id, role, status, result, error))
    task = run.background.get(agent_id)
    if task is not None:
        run.background[agent_id] = task.model_copy(update={
            "status": {"completed": "completed", "error": "failed", "cancelled": "cancelled"}.get(status, "failed")})


async def delegate_handler(args: DelegateArgs, ctx: ToolContext) -> str:
    scope = scope_of(ctx)
    run, services = scope.run, scope.run.services
    tool_names = _check_tools(services, args.tools)
    agent = build_sub_agent(services, args.role, tool_names, scope.run.model)
    if ctx.resumed:
        info = dict((ctx.suspend_payload or {}).get("delegate") or {})
        agent_id = info.get("agentId") or sub_agent_id(args.role)
        sub_run_id = info.get("subRunId", "")
        inner_call = info.get("innerToolCallId", "")
        answer: ConfirmationAnswer = ctx.resume_data
        data = answer.model_dump(by_alias=True, exclude_none=True)
        mapper = ChunkMapper(run.emitter, agent_id)
        sub_scope = AgentScope(run, agent_id, args.role, mapper)
        if agent_id not in run.background:
            run.background[agent_id] = BackgroundTask(task_id=new_task_id(), role=args.role, agent_id=agent_id,
                                                      started_at=time.time() * 1000, run_id=run.run_id,
                                                      message_group_id=run.message_group_id)
        async with services.sub_agent_limit:
            resume_with: Any = approval_decision(data) if info.get("innerKind") == "approval" else data
            try:
                stream = await agent.resume(sub_run_id, inner_call, resume_with, cancel=ctx.cancel,
                                            extra=sub_scope.extra())
            except RuntimeApiError as exc:
                _complete(run, agent_id, args.role, "error", error=str(exc))
                raise ToolError(f"the {args.role} could not be resumed: {exc}") from None
            return await _follow(ctx, run, sub_scope, stream, args, tool_names, agent)
    agent_id = sub_agent_id(args.role)
    mapper = ChunkMapper(run.emitter, agent_id)
    sub_scope = AgentScope(run, agent_id, args.role, mapper)
    await scope.mapper.announced(ctx.tool_call_id)
    task_id = new_task_id()
    run.emitter.emit(AgentSpawnedEvent(agent_id=agent_id, payload=AgentSpawnedPayload(
        parent_id=scope.agent_id, role=args.role, tools=tool_names, task_id=task_id, goal=args.instructions[:300],
    )))
    run.background[agent_id] = BackgroundTask(task_id=task_id, role=args.role, agent_id=agent_id,
                                              started_at=time.time() * 1000, run_id=run.run_id,
                                              message_group_id=run.message_group_id)
    async with services.sub_agent_limit:
        stream = agent.stream(args.instructions, thread_id=run.thread_id, run_id=f"{run.run_id}-{agent_id}",
                              cancel=ctx.cancel, extra=sub_scope.extra())
        return await _follow(ctx, run, sub_scope, stream, args, tool_names, agent)


async def _follow(ctx: ToolContext, run: RunContext, sub: AgentScope, stream: AgentStream, args: DelegateArgs,
                  tool_names: list[str], agent: Agent) -> str:
    try:
        result = await _drain(stream, sub.mapper)
    except asyncio.CancelledError:
        stopped = stream.final  # set once the aborted sub-agent has stopped: its tokens still count
        if stopped is not None:
            ctx.report_usage(f"sub-agent:{args.role}", stopped.total_usage, run_id=stopped.run_id)
        _complete(run, sub.agent_id, args.role, "cancelled", error="cancelled")
        raise
    # cumulative over the sub-run's suspensions; the runtime keeps the latest report per sub-run
    ctx.report_usage(f"sub-agent:{args.role}", result.total_usage, run_id=result.run_id)
    if result.status == "suspended" and sub.mapper.suspensions:
        suspension = sub.mapper.suspensions[0]
        ctx.suspend({
            "confirmation": card_fields(suspension, {t.name: t for t in agent.tools}),
            "target": {"agentId": sub.agent_id, "toolCallId": suspension.tool_call_id,
                       "toolName": suspension.tool_name, "args": suspension.args},
            "delegate": {"agentId": sub.agent_id, "subRunId": result.run_id, "role": args.role,
                         "innerToolCallId": suspension.tool_call_id, "innerKind": suspension.kind},
        })
    if result.status == "success":
        _complete(run, sub.agent_id, args.role, "completed", result.text)
        return result.text or f"The {args.role} finished without a summary."
    if result.status == "cancelled":
        _complete(run, sub.agent_id, args.role, "cancelled", error="cancelled")
        raise ToolError(f"the {args.role} was cancelled")
    error = result.error or result.status
    _complete(run, sub.agent_id, args.role, "error", error=error)
    raise ToolError(f"the {args.role} failed: {error}")


def delegate_tool() -> Tool:
    return Tool(
        "delegate",
        "Hand a focused task to a sub-agent with a role (e.g. 'workflow builder', 'execution debugger') and "
        "the tools it needs. Returns its summary. Several delegate calls in one response run in parallel.",
        DelegateArgs, delegate_handler, resume_schema=ConfirmationAnswer,
    )
