"""Cheap reads of one agent's own fields from a ``RunReducer``.

Building the agent's whole sub-tree as pydantic models (``RunReducer.tree``) is too slow
to do on every frame for a busy agent. The header of a sub-agent section, the
turn footer and the status line only need the agent's own fields: ``agent_info`` reads
them through the reducer's per-frame accessor ``agent_fields``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...protocol.reducer import RunReducer


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
    """The agent's own fields (no children, timeline or tool calls), or ``None`` if the
    reducer has no such agent."""
    fields = reducer.agent_fields(agent_id)
    if fields is None:
        return None
    return AgentInfo(
        agent_id=str(fields.get("agentId", agent_id)),
        role=str(fields.get("role") or "orchestrator"),
        status=str(fields.get("status") or "active"),
        status_message=_text(fields.get("statusMessage")),
        result=_text(fields.get("result")),
        error=_text(fields.get("error")),
        title=_text(fields.get("title")),
        subtitle=_text(fields.get("subtitle")),
        goal=_text(fields.get("goal")),
        cancellation_reason=_text(fields.get("cancellationReason")),
    )


def reducer_root_field(reducer: RunReducer, name: str) -> Any:
    """One wire-form field of the root agent (e.g. ``tasks``), or ``None``."""
    fields = reducer.agent_fields(reducer.root_id)
    return fields.get(name) if fields is not None else None
