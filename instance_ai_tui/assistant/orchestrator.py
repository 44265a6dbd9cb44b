"""The orchestrator agent: instructions, tools, memory and limits.

The orchestrator has the orchestration tools (``plan``, ``delegate``, ``ask-user``) and every
domain tool (workspace files when a workspace root is set, n8n when a backend is configured).
Sub-agents may be given domain tools only. One orchestrator ``Agent`` serves every run of the
service (runs are independent; per-run context travels in ``ToolContext.extra``).
"""

from __future__ import annotations

from ..runtime.agent import Agent
from ..runtime.memory import MemoryStorage, StoreMemory
from ..runtime.tools import Tool
from .context import Services
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


def instructions_for(services: Services) -> str:
    n8n = f" ({services.n8n.label})." if services.n8n is not None else ". No n8n instance is connected."
    workspace = (f"You can read and (with approval) change files in the workspace folder {services.workspace.root}."
                 if services.workspace is not None else "")
    sub_tools = ", ".join(sorted(services.sub_agent_tools)) or "none available"
    return INSTRUCTIONS.format(n8n=n8n, workspace=workspace, sub_tools=sub_tools)


def build_orchestrator(services: Services, store: MemoryStorage, *, max_iterations: int = 30,
                       history_messages: int = 40) -> Agent:
    """The orchestrator; also fills ``services.sub_agent_tools`` and ``services.severities``."""
    domain = domain_tools(services)
    services.sub_agent_tools = {t.name: t for t in domain}
    services.severities = {t.name: str(t.metadata.get("severity")) for t in domain if t.metadata.get("severity")}
    tools = [plan_tool(), delegate_tool(), ask_user_tool(), *domain]
    return Agent(
        ORCHESTRATOR_NAME,
        instructions_for(services),
        services.model,
        tools,
        memory=StoreMemory(store, last_messages=history_messages),
        checkpoints=services.checkpoints,
        max_iterations=max_iterations,
        tool_call_concurrency=3,
        stop_on_limit=True,
    )
