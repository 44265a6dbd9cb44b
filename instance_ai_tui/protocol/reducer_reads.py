"""Reading the reducer's tree: the pydantic tree, wire dicts, agents, calls, timeline entries and text.
Mixed into ``RunReducer``; nothing here changes the tree but a call's UI-side confirmation status."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .reducer_state import (
    AgentRecord,
    Call,
    Seg,
    entry_dict,
)
from .tree import AgentNode, ToolCallState


class ReducerReads:
    """The read side of ``RunReducer``."""

    _root: AgentRecord
    _agents: dict[str, AgentRecord]
    _calls: dict[str, Call]
    _confirm_ids: dict[str, None]

    def _touch_call(self, call: Call) -> None:
        raise NotImplementedError

    # ----------------------------------------------------------------- reading
    @property
    def root_id(self) -> str:
        return self._root.id

    @property
    def aliases(self) -> list[str]:
        """Agent ids other than the root's own that resolve to the root."""
        root = self._root
        return [key for key, agent in self._agents.items() if agent is root and key != root.id]

    def tree(self) -> AgentNode:
        """The agent tree as the pydantic model (built fresh on every call)."""
        return AgentNode.model_validate(self.tree_dict())

    def tree_dict(self) -> dict[str, Any]:
        """The agent tree in wire form (camelCase, JSON-ready; the messages endpoint's
        ``agentTree``). Values such as tool args are shared with the state: read only."""
        return self._agent_dict(self._root)

    def _agent_dict(self, agent: AgentRecord) -> dict[str, Any]:
        out: dict[str, Any] = {"agentId": agent.id, "role": agent.role}
        out.update(agent.fields)
        out["status"] = agent.status
        if agent.status_message:
            out["statusMessage"] = agent.status_message
        out["textContent"] = agent.aggregate("text")
        out["reasoning"] = agent.aggregate("reasoning")
        out["toolCalls"] = [call.to_dict() for call in agent.calls]
        out["children"] = [self._agent_dict(child) for child in agent.children]
        out["timeline"] = [entry_dict(entry) for entry in agent.timeline]
        return out

    def agent_fields(self, agent_id: str) -> dict[str, Any] | None:
        """An agent's own fields in wire form (``agentId``, ``role``, ``status``,
        ``statusMessage``, ``title``, ``result``, ``error``, ``tasks``, ...) without its
        text, tool calls, children or timeline. Cheap: meant for every UI frame."""
        node = self._agents.get(agent_id)
        if node is None:
            return None
        out: dict[str, Any] = {"agentId": node.id, "role": node.role}
        out.update(node.fields)
        out["status"] = node.status
        if node.status_message:
            out["statusMessage"] = node.status_message
        return out

    def tool_call(self, tool_call_id: str) -> ToolCallState | None:
        call = self._calls.get(tool_call_id)
        return ToolCallState.model_validate(call.to_dict()) if call is not None else None

    def calls(self) -> Iterator[Call]:
        """Every tool call's record in the order the calls started, without building models (the
        workflow canvas looks at them a few times a second). Read only: the reducer's own state."""
        return iter(self._calls.values())

    def timeline_length(self, agent_id: str) -> int:
        node = self._agents.get(agent_id)
        return len(node.timeline) if node is not None else 0

    def timeline_entry(self, agent_id: str, index: int) -> dict[str, Any] | None:
        """One timeline entry in wire form, or ``None``."""
        node = self._agents.get(agent_id)
        if node is None or not -len(node.timeline) <= index < len(node.timeline):
            return None
        return entry_dict(node.timeline[index])

    def segment_text(self, agent_id: str, index: int) -> str:
        """The content of a text/reasoning timeline entry ('' if it is not one)."""
        node = self._agents.get(agent_id)
        if node is None or not -len(node.timeline) <= index < len(node.timeline):
            return ""
        entry = node.timeline[index]
        return entry.text() if type(entry) is Seg else ""

    def text(self, agent_id: str | None = None) -> str:
        """An agent's aggregate ``textContent`` (the root's by default)."""
        node = self._root if agent_id is None else self._agents.get(agent_id)
        return node.aggregate("text") if node is not None else ""

    def reasoning(self, agent_id: str | None = None) -> str:
        node = self._root if agent_id is None else self._agents.get(agent_id)
        return node.aggregate("reasoning") if node is not None else ""

    def confirmation_calls(self) -> Iterator[tuple[str, ToolCallState]]:
        """(agent id, call) for every call that carries a confirmation, in arrival order."""
        for call_id in list(self._confirm_ids):
            call = self._calls.get(call_id)
            if call is not None and call.confirmation is not None:
                yield call.agent.id, ToolCallState.model_validate(call.to_dict())

    def set_confirmation_status(self, tool_call_id: str, status: str | None) -> bool:
        """Set the UI-side ``confirmationStatus`` of a call: pending/approved/denied, or n8n's
        ``changes-requested`` (a plan review sent back) and ``deferred`` (skipped for later)."""
        call = self._calls.get(tool_call_id)
        if call is None or status not in (None, "pending", "approved", "denied", "changes-requested", "deferred"):
            return False
        call.conf_status = status
        self._touch_call(call)
        return True

