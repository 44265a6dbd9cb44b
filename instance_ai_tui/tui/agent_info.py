"""Cheap reads of one agent's own fields from a ``RunReducer``.

``RunReducer.agent(id)`` builds the agent's whole sub-tree as pydantic models, which is
too slow to call on every frame for a busy agent. The header of a sub-agent section and
the status line only need the agent's own fields, so ``agent_info`` reads them from the
reducer's index when it can and falls back to ``RunReducer.agent`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol.reducer import RunReducer


@dataclass(frozen=True, slots=True)
class AgentInfo:
    agent_id: str
    role: str = "orchestrator"
    status: str = "active"
    status_message: str | None = None
    result: str | None = None
    error: str | None = None
    title: str | None = None
    subtitle: str | None = None
    goal: str | None = None
    cancellation_reason: str | None = None

    @property
    def label(self) -> str:
        return self.title or self.role or self.agent_id


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def agent_info(reducer: RunReducer, agent_id: str) -> AgentInfo | None:
    """The agent's own fields (no children, timeline or tool calls), or ``None``."""
    agents = getattr(reducer, "_agents", None)
    node = agents.get(agent_id) if isinstance(agents, dict) else None
    fields = getattr(node, "fields", None)
    if node is not None and isinstance(fields, dict):
        return AgentInfo(
            agent_id=node.id,
            role=node.role,
            status=node.status,
            status_message=node.status_message,
            result=_text(fields.get("result")),
            error=_text(fields.get("error")),
            title=_text(fields.get("title")),
            subtitle=_text(fields.get("subtitle")),
            goal=_text(fields.get("goal")),
            cancellation_reason=_text(fields.get("cancellationReason")),
        )
    tree = reducer.agent(agent_id)
    if tree is None:
        return None
    return AgentInfo(
        agent_id=tree.agent_id,
        role=tree.role,
        status=tree.status,
        status_message=tree.status_message,
        result=tree.result,
        error=tree.error,
        title=tree.title,
        subtitle=tree.subtitle,
        goal=tree.goal,
        cancellation_reason=tree.cancellation_reason,
    )


def reducer_root_field(reducer: RunReducer, name: str) -> Any:
    """One wire-form field of the root agent (e.g. ``tasks``), or ``None``."""
    agents = getattr(reducer, "_agents", None)
    node = agents.get(reducer.root_id) if isinstance(agents, dict) else None
    fields = getattr(node, "fields", None)
    if isinstance(fields, dict):
        return fields.get(name)
    value: Any = getattr(reducer.tree(), name, None)
    return value.to_wire() if value is not None and hasattr(value, "to_wire") else value
