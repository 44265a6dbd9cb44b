"""The pure event -> agent-tree reducer of one message group (n8n's shared run reducer).

``RunReducer`` folds protocol events into the agent activity tree following reference
section 6.1 (n8n ``agent-run-reducer.ts``) and the seed's streaming protocol:

* deltas append; a timeline text/reasoning entry is continued while the ``responseId``
  stays the same, otherwise a new entry starts;
* ``text-block`` / ``reasoning-block`` (n8n's coalesced replay segments) replace the
  text already streamed for the open segment, so replayed text never shows twice;
* tool results and errors find their call across every agent;
* ``agent-spawned`` attaches a child under ``payload.parentId`` (with a ``child``
  timeline entry); ``agent-completed`` settles the child;
* a confirmation attaches to its tool call by ``toolCallId``;
* a follow-up ``run-start`` of the same message group keeps the tree and registers the
  new orchestrator id as an alias of the root.

Seed dialect: the seed's listings send ``tool-call`` / ``tool-result`` without a
``toolCallId``. A call without id gets a deterministic synthetic id
(``<agentId>/call-<n>``); a result, error or confirmation without id settles the
agent's most recent call that is still loading.

Differences from n8n, on purpose:

* No wall clock: ``startedAt`` / ``completedAt`` come from the event's ``ts`` only, so
  folding is a pure function of the events.
* An ``error`` event also sets the agent's ``status``/``error``/``errorDetails``, and an
  errored ``run-finish`` sets ``root.error`` (n8n's frontend wrapper does both).
* ``run-finish`` as in n8n: a cancelled or failed run stops every loading call; a
  *completed* run leaves them as they are (``protocol.display_state`` shows such a call as
  not resolved).
* An empty ``responseId`` is treated as absent.

Performance: internal state is slotted objects, text is kept as lists of chunks and
joined lazily, hot event types given as raw dicts to ``apply_wire`` skip pydantic, and the pydantic tree is
only built by ``tree()``. ``drain_changes()`` reports what changed since the last call so
a UI can project only that.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .events import (
    AgentCompletedEvent,
    AgentSpawnedEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    EventBase,
    EventParseError,
    ReasoningBlockEvent,
    ReasoningDeltaEvent,
    RunFinishEvent,
    RunStartEvent,
    SetupItemsEvent,
    StatusEvent,
    TasksUpdateEvent,
    TextBlockEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolInputStartEvent,
    ToolInterruptedEvent,
    ToolResultEvent,
    WireEvent,
    parse_event,
)
from .tree import AgentNode, Confirmation, ToolCallState

__all__ = [
    "KNOWN_ERROR_CODES",
    "ReducerChanges",
    "RunReducer",
    "SegmentChange",
    "build_agent_tree",
    "build_agent_tree_wire",
    "render_hint",
]

#: Ids n8n refuses as object keys; ignored here too so both fold the same.
_UNSAFE_IDS = frozenset({"__proto__", "constructor", "prototype"})
#: Error codes the UI renders specially; their text is not inlined (n8n does the same).
KNOWN_ERROR_CODES = frozenset({"quota_exhausted"})
_AGENT_STATUSES = frozenset({"active", "completed", "cancelled", "error"})
_CANCELLATION = {
    "user_cancelled": "user",
    "timeout": "timeout",
    "service_shutdown": "shutdown",
    "crash_interrupted": "interrupted",
}
_MAX_DIAGNOSTICS = 100

_RENDER_HINTS = {
    "task-control": "tasks",
    "delegate": "delegate",
    "build-workflow": "builder",
    "build-workflow-with-agent": "builder",
    "workflow-build-flow": "builder",
    "manage-data-tables-with-agent": "data-table",
    "agent-data-table-manager": "data-table",
    "research-with-agent": "researcher",
    "create-tasks": "planner",
    "plan": "planner",
    "eval-setup-with-agent": "eval-setup",
    "list_skills": "skill",
    "load_skill": "skill",
}


def render_hint(tool_name: str) -> str:
    """n8n's ``getRenderHint``: how the UI should draw a tool call."""
    return _RENDER_HINTS.get(tool_name, "default")


def _ok(value: Any) -> bool:
    return type(value) is str and value not in _UNSAFE_IDS


def _iso(ts: float | None) -> str | None:
    """Epoch milliseconds -> ISO 8601 like JavaScript's ``toISOString()``."""
    if ts is None:
        return None
    try:
        moment = datetime.fromtimestamp(float(ts) / 1000.0, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- internal state


class _Seg:
    """A text or reasoning timeline entry; its content is a list of chunks."""

    __slots__ = ("dirty", "in_agg", "kind", "parts", "replaced", "rid", "sent")

    def __init__(self, kind: str, text: str, rid: str | None, dirty: bool = True) -> None:
        self.kind = kind
        self.parts = [text]
        self.rid = rid
        #: whether this segment's content is part of the agent's aggregate text
        #: (false only for segments adopted from an inconsistent snapshot)
        self.in_agg = True
        #: reported (or new) since the last ``drain_changes``
        self.dirty = dirty
        #: characters already reported by ``drain_changes``
        self.sent = 0
        self.replaced = False

    def text(self) -> str:
        parts = self.parts
        if len(parts) == 1:
            return parts[0]
        joined = "".join(parts)
        self.parts = [joined]
        return joined


class _Ref:
    """A ``tool-call`` or ``child`` timeline entry (points at a call or agent by id)."""

    __slots__ = ("kind", "ref", "rid")

    def __init__(self, kind: str, ref: str, rid: str | None) -> None:
        self.kind = kind
        self.ref = ref
        self.rid = rid


class _Raw:
    """A timeline entry of an unknown type adopted from a snapshot, kept as is."""

    __slots__ = ("data", "kind", "rid")

    def __init__(self, data: dict[str, Any]) -> None:
        self.kind = str(data.get("type"))
        self.data = data
        rid = data.get("responseId")
        self.rid = rid if type(rid) is str and rid else None


_Entry = _Seg | _Ref | _Raw


class _Call:
    __slots__ = (
        "agent",
        "args",
        "completed",
        "conf_status",
        "confirmation",
        "dirty",
        "error",
        "extra",
        "hint",
        "id",
        "interrupted",
        "loading",
        "name",
        "result",
        "started",
    )

    def __init__(self, call_id: str, name: str, args: dict[str, Any], agent: _Agent, started: str | None) -> None:
        self.id = call_id
        self.name = name
        self.args = args
        self.result: Any = None
        self.error: str | None = None
        self.loading = True
        self.hint: str | None = render_hint(name)
        self.confirmation: Confirmation | None = None
        self.conf_status: str | None = None
        self.interrupted: bool | None = None
        self.started = started
        self.completed: str | None = None
        self.extra: dict[str, Any] | None = None
        self.agent = agent
        self.dirty = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"toolCallId": self.id, "toolName": self.name, "args": self.args}
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error
        out["isLoading"] = self.loading
        if self.hint is not None:
            out["renderHint"] = self.hint
        if self.confirmation is not None:
            out["confirmation"] = self.confirmation.to_wire()
        if self.conf_status is not None:
            out["confirmationStatus"] = self.conf_status
        if self.interrupted is not None:
            out["interrupted"] = self.interrupted
        if self.started is not None:
            out["startedAt"] = self.started
        if self.completed is not None:
            out["completedAt"] = self.completed
        if self.extra:
            for key, value in self.extra.items():
                out.setdefault(key, value)
        return out


#: sub-agents nest at most this deep; a deeper spawn is folded into its parent (a hostile or
#: broken stream of 500 nested agents made every tree walk a RecursionError)
MAX_AGENT_DEPTH = 64


class _Agent:
    __slots__ = (
        "calls",
        "children",
        "depth",
        "dirty",
        "fields",
        "id",
        "reasoning_pre",
        "role",
        "status",
        "status_message",
        "text_pre",
        "timeline",
        "tl_mark",
    )

    def __init__(self, agent_id: str, role: str) -> None:
        self.id = agent_id
        self.role = role
        self.status = "active"
        self.status_message: str | None = None
        self.timeline: list[_Entry] = []
        self.calls: list[_Call] = []
        self.children: list[_Agent] = []
        self.depth = 0
        #: aggregate text not covered by in-aggregate segments (adopted snapshots only)
        self.text_pre: list[str] = []
        self.reasoning_pre: list[str] = []
        #: every other node field, in wire (camelCase, JSON-ready) form
        self.fields: dict[str, Any] = {}
        self.dirty = False
        #: timeline length at the last ``drain_changes``
        self.tl_mark = 0

    def aggregate(self, kind: str) -> str:
        pre = self.text_pre if kind == "text" else self.reasoning_pre
        chunks = list(pre)
        for entry in self.timeline:
            if type(entry) is _Seg and entry.kind == kind and entry.in_agg:
                chunks.append(entry.text())
        return "".join(chunks)

    def has_content(self) -> bool:
        f = self.fields
        return bool(
            self.timeline
            or self.calls
            or self.children
            or self.status_message
            or "".join(self.text_pre)
            or "".join(self.reasoning_pre)
            or f.get("planItems")
            or f.get("result")
            or f.get("error")
            or f.get("tasks") is not None
            or f.get("setupItemsByWorkflowId") is not None
        )


# --------------------------------------------------------------------------- change tracking


@dataclass(slots=True)
class SegmentChange:
    """New text in an existing timeline segment since the last ``drain_changes``.

    ``text`` is what was appended, or the whole new content when ``replaced`` (a
    ``text-block``/``reasoning-block`` replaced streamed text).
    """

    agent_id: str
    index: int
    kind: str
    text: str
    replaced: bool = False


@dataclass(slots=True)
class ReducerChanges:
    """What changed since the last ``drain_changes``.

    ``reset``: the whole tree is new (first ``run-start``, ``from_tree``); redraw from
    ``tree()`` and ignore the other fields. ``agents``: agents whose own fields,
    children or timeline changed. ``timeline_appends``: agent id -> index of its first
    new timeline entry (new entries are reported only here, with their full content).
    ``tool_calls``: calls whose state changed. ``segments``: appended/replaced text of
    entries that already existed at the previous drain.
    """

    reset: bool = False
    run_status: bool = False
    agents: list[str] = field(default_factory=list)
    timeline_appends: dict[str, int] = field(default_factory=dict)
    tool_calls: list[str] = field(default_factory=list)
    segments: list[SegmentChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.reset or self.run_status or self.agents or self.timeline_appends or self.tool_calls or self.segments
        )


# --------------------------------------------------------------------------- the reducer


class RunReducer:
    """Folds the events of one message group into its agent tree. Never raises in ``apply``."""

    def __init__(self, root_id: str = "agent-001") -> None:
        if not _ok(root_id):
            root_id = "agent-001"
        self._root = _Agent(root_id, "orchestrator")
        #: agent id (and root aliases) -> node
        self._agents: dict[str, _Agent] = {root_id: self._root}
        self._calls: dict[str, _Call] = {}
        #: ids of calls that carry a confirmation, in arrival order
        self._confirm_ids: dict[str, None] = {}
        #: run status: active / completed / cancelled / error
        self.status = "active"
        self.archived_workflow_ids: list[str] = []
        self.diagnostics: deque[str] = deque(maxlen=_MAX_DIAGNOSTICS)
        self.diagnostic_count = 0
        self._dirty_agents: list[_Agent] = []
        self._dirty_calls: list[_Call] = []
        self._dirty_segs: list[tuple[_Agent, _Seg, int]] = []
        self._reset = True
        self._run_status_changed = False
        #: event class -> fold (text and reasoning deltas are folded inline by ``apply``);
        #: classes absent here (preferences, filesystem, title, unknown) do not touch the tree
        self._handlers: dict[type[EventBase], Callable[[Any], None]] = {
            RunStartEvent: self._on_run_start,
            RunFinishEvent: self._on_run_finish,
            TextBlockEvent: self._on_text_block,
            ReasoningBlockEvent: self._on_reasoning_block,
            ToolInputStartEvent: self._on_tool_input_start,
            ToolCallEvent: self._on_tool_call,
            ToolResultEvent: self._on_tool_result,
            ToolErrorEvent: self._on_tool_error,
            ToolInterruptedEvent: self._on_tool_error,
            AgentSpawnedEvent: self._on_agent_spawned,
            AgentCompletedEvent: self._on_agent_completed,
            ConfirmationRequestEvent: self._on_confirmation,
            TasksUpdateEvent: self._on_tasks_update,
            SetupItemsEvent: self._on_setup_items,
            StatusEvent: self._on_status,
            ErrorEvent: self._on_error,
        }

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_tree(
        cls,
        tree: AgentNode | dict[str, Any],
        *,
        aliases: Iterable[str] = (),
        status: str | None = None,
    ) -> RunReducer:
        """Adopt a snapshot (run-sync or history) so that live events keep folding into it.

        ``aliases`` are extra agent ids that mean the root (the orchestrator ids of the
        group's other runs, e.g. ``orchestrator-<runId>``). ``status`` is the run status;
        by default the root's. A dict is validated as an ``AgentNode`` first
        (``pydantic.ValidationError`` if it is not one).
        """
        node = tree if isinstance(tree, AgentNode) else AgentNode.model_validate(tree)
        data = node.to_wire()
        reducer = cls(data["agentId"])
        reducer._agents = {}
        reducer._root = reducer._adopt(data)
        for alias in aliases:
            if _ok(alias) and alias not in reducer._agents:
                reducer._agents[alias] = reducer._root
        run_status = status if status is not None else reducer._root.status
        reducer.status = run_status if run_status in _AGENT_STATUSES else "active"
        return reducer

    def _adopt(self, data: dict[str, Any], depth: int = 0) -> _Agent:
        agent = _Agent(data["agentId"], str(data.get("role", "orchestrator")))
        agent.depth = depth
        status = data.get("status")
        agent.status = status if status in _AGENT_STATUSES else "active"
        agent.status_message = data.get("statusMessage") or None
        self._agents.setdefault(agent.id, agent)
        for raw in data.get("timeline") or ():
            kind = raw.get("type")
            rid = raw.get("responseId") or None
            if kind == "text" or kind == "reasoning":
                agent.timeline.append(_Seg(kind, str(raw.get("content", "")), rid, dirty=False))
            elif kind == "tool-call" and _ok(raw.get("toolCallId")):
                agent.timeline.append(_Ref(kind, raw["toolCallId"], rid))
            elif kind == "child" and _ok(raw.get("agentId")):
                agent.timeline.append(_Ref(kind, raw["agentId"], rid))
            elif kind not in ("tool-call", "child"):
                agent.timeline.append(_Raw(dict(raw)))
        text = str(data.get("textContent") or "")
        reasoning = str(data.get("reasoning") or "")
        if reasoning and not any(type(e) is _Seg and e.kind == "reasoning" for e in agent.timeline):
            agent.timeline.insert(0, _Seg("reasoning", reasoning, None, dirty=False))
        for kind, whole in (("text", text), ("reasoning", reasoning)):
            segs = [e for e in agent.timeline if type(e) is _Seg and e.kind == kind]
            covered = "".join(s.text() for s in segs)
            pre = agent.text_pre if kind == "text" else agent.reasoning_pre
            if whole.endswith(covered):
                if len(whole) > len(covered):
                    pre.append(whole[: len(whole) - len(covered)])
            else:
                pre.append(whole)
                for seg in segs:
                    seg.in_agg = False
        for raw in data.get("toolCalls") or ():
            if not _ok(raw.get("toolCallId")):
                continue
            call = _Call(
                raw["toolCallId"], str(raw.get("toolName", "")), dict(raw.get("args") or {}), agent, raw.get("startedAt")
            )
            call.result = raw.get("result")
            call.error = raw.get("error")
            call.loading = bool(raw.get("isLoading", True))
            call.hint = raw.get("renderHint")
            if raw.get("confirmation") is not None:
                call.confirmation = Confirmation.model_validate(raw["confirmation"])
                self._confirm_ids[call.id] = None
            call.conf_status = raw.get("confirmationStatus")
            call.interrupted = raw.get("interrupted")
            call.completed = raw.get("completedAt")
            known = {
                "toolCallId", "toolName", "args", "result", "error", "isLoading", "renderHint", "confirmation",
                "confirmationStatus", "interrupted", "startedAt", "completedAt",
            }  # fmt: skip
            extra = {k: v for k, v in raw.items() if k not in known}
            call.extra = extra or None
            agent.calls.append(call)
            self._calls[call.id] = call
        for raw_child in data.get("children") or ():
            if depth + 1 >= MAX_AGENT_DEPTH:
                self._diag(f"agents nested deeper than {MAX_AGENT_DEPTH} levels under {agent.id!r} were left out")
                break
            if _ok(raw_child.get("agentId")) and raw_child["agentId"] not in self._agents:
                agent.children.append(self._adopt(raw_child, depth + 1))
        core = {
            "agentId", "role", "status", "statusMessage", "textContent", "reasoning", "toolCalls", "children",
            "timeline",
        }  # fmt: skip
        agent.fields = {k: v for k, v in data.items() if k not in core}
        agent.tl_mark = len(agent.timeline)
        return agent

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

    def _agent_dict(self, agent: _Agent) -> dict[str, Any]:
        out: dict[str, Any] = {"agentId": agent.id, "role": agent.role}
        out.update(agent.fields)
        out["status"] = agent.status
        if agent.status_message:
            out["statusMessage"] = agent.status_message
        out["textContent"] = agent.aggregate("text")
        out["reasoning"] = agent.aggregate("reasoning")
        out["toolCalls"] = [call.to_dict() for call in agent.calls]
        out["children"] = [self._agent_dict(child) for child in agent.children]
        out["timeline"] = [_entry_dict(entry) for entry in agent.timeline]
        return out

    def agent(self, agent_id: str) -> AgentNode | None:
        """One agent's node (with its sub-tree), or ``None`` if unknown."""
        node = self._agents.get(agent_id)
        return AgentNode.model_validate(self._agent_dict(node)) if node is not None else None

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

    def child_ids(self, agent_id: str) -> list[str]:
        """Ids of an agent's direct sub-agents, in spawn order."""
        node = self._agents.get(agent_id)
        return [child.id for child in node.children] if node is not None else []

    def has_agent(self, agent_id: str) -> bool:
        return agent_id in self._agents

    def resolve_agent_id(self, agent_id: str) -> str | None:
        """The canonical id of an agent (an alias resolves to the root's id)."""
        node = self._agents.get(agent_id)
        return node.id if node is not None else None

    def tool_call(self, tool_call_id: str) -> ToolCallState | None:
        call = self._calls.get(tool_call_id)
        return ToolCallState.model_validate(call.to_dict()) if call is not None else None

    def tool_call_agent_id(self, tool_call_id: str) -> str | None:
        call = self._calls.get(tool_call_id)
        return call.agent.id if call is not None else None

    def timeline_length(self, agent_id: str) -> int:
        node = self._agents.get(agent_id)
        return len(node.timeline) if node is not None else 0

    def timeline_entry(self, agent_id: str, index: int) -> dict[str, Any] | None:
        """One timeline entry in wire form, or ``None``."""
        node = self._agents.get(agent_id)
        if node is None or not -len(node.timeline) <= index < len(node.timeline):
            return None
        return _entry_dict(node.timeline[index])

    def segment_text(self, agent_id: str, index: int) -> str:
        """The content of a text/reasoning timeline entry ('' if it is not one)."""
        node = self._agents.get(agent_id)
        if node is None or not -len(node.timeline) <= index < len(node.timeline):
            return ""
        entry = node.timeline[index]
        return entry.text() if type(entry) is _Seg else ""

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
        """Set the UI-side ``confirmationStatus`` (pending/approved/denied) of a call."""
        call = self._calls.get(tool_call_id)
        if call is None or status not in (None, "pending", "approved", "denied"):
            return False
        call.conf_status = status
        self._touch_call(call)
        return True

    # ----------------------------------------------------------------- change tracking
    def drain_changes(self) -> ReducerChanges:
        """What changed since the previous call (see ``ReducerChanges``)."""
        changes = ReducerChanges(run_status=self._run_status_changed)
        self._run_status_changed = False
        if self._reset:
            self._reset = False
            changes.reset = True
            for agent in self._unique_agents():
                agent.dirty = False
                agent.tl_mark = len(agent.timeline)
                for entry in agent.timeline:
                    if type(entry) is _Seg:
                        entry.dirty = False
                        entry.replaced = False
                        entry.sent = len(entry.text())
                for call in agent.calls:
                    call.dirty = False
            self._dirty_agents.clear()
            self._dirty_calls.clear()
            self._dirty_segs.clear()
            return changes
        for agent in self._dirty_agents:
            agent.dirty = False
            changes.agents.append(agent.id)
            timeline = agent.timeline
            if len(timeline) > agent.tl_mark:
                changes.timeline_appends[agent.id] = agent.tl_mark
                for entry in timeline[agent.tl_mark :]:
                    if type(entry) is _Seg:
                        entry.dirty = False
                        entry.replaced = False
                        entry.sent = len(entry.text())
                agent.tl_mark = len(timeline)
        self._dirty_agents.clear()
        for call in self._dirty_calls:
            call.dirty = False
            changes.tool_calls.append(call.id)
        self._dirty_calls.clear()
        for agent, seg, index in self._dirty_segs:
            if not seg.dirty:
                continue  # reported as a new entry above
            seg.dirty = False
            content = seg.text()
            if seg.replaced:
                changes.segments.append(SegmentChange(agent.id, index, seg.kind, content, True))
            elif len(content) > seg.sent:
                changes.segments.append(SegmentChange(agent.id, index, seg.kind, content[seg.sent :], False))
            seg.replaced = False
            seg.sent = len(content)
        self._dirty_segs.clear()
        return changes

    def _unique_agents(self) -> Iterator[_Agent]:
        seen: set[int] = set()
        for agent in self._agents.values():
            if id(agent) not in seen:
                seen.add(id(agent))
                yield agent

    def _touch(self, agent: _Agent) -> None:
        if not agent.dirty:
            agent.dirty = True
            self._dirty_agents.append(agent)

    def _touch_call(self, call: _Call) -> None:
        if not call.dirty:
            call.dirty = True
            self._dirty_calls.append(call)

    # ----------------------------------------------------------------- diagnostics
    def _diag(self, message: str) -> None:
        self.diagnostic_count += 1
        self.diagnostics.append(message)

    # ----------------------------------------------------------------- applying
    def apply(self, event: Event) -> None:
        """Fold one event model. Never raises: an event that cannot apply (or something
        that is not an event model) is recorded in ``diagnostics``. Stored or wire JSON
        goes through ``apply_wire``."""
        try:
            if type(event) is TextDeltaEvent:
                # the bulk of every stream, already validated: straight to the fold
                self._delta(True, event.agent_id, event.payload.text, event.response_id or None)
                return
            if type(event) is ReasoningDeltaEvent:
                self._delta(False, event.agent_id, event.payload.text, event.response_id or None)
                return
            handler = self._handlers.get(type(event))
            if handler is not None:
                handler(event)
            elif not isinstance(event, EventBase):
                self._diag(f"not an event model: {type(event).__name__} (wire data goes through apply_wire)")
        except Exception as exc:  # noqa: BLE001 - the reducer must never raise
            self._diag(f"could not apply event: {type(exc).__name__}: {exc}")

    def apply_wire(self, data: WireEvent) -> None:
        """Fold one event in stored/wire form: a decoded JSON object or its JSON text.

        The one entry point for untyped input. Text deltas, reasoning deltas and status
        events given as well-formed dicts (the bulk of every stored stream) are folded
        without building a model; everything else is parsed with ``parse_event`` first.
        Never raises: input that is not an event is recorded in ``diagnostics``.
        """
        try:
            if type(data) is dict:
                kind = data.get("type")
                if kind == "text-delta" or kind == "reasoning-delta" or kind == "status":
                    payload = data.get("payload")
                    agent_id = data.get("agentId")
                    rid = data.get("responseId")
                    if (
                        type(payload) is dict
                        and type(agent_id) is str
                        and (rid is None or type(rid) is str)
                        and type(data.get("runId", "")) is str
                        and _ts_ok(data.get("ts"))
                        and _user_ok(data.get("userId"))
                    ):
                        if kind == "status":
                            message = payload.get("message", "")
                            if type(message) is str:
                                self._status(agent_id, message)
                                return
                        else:
                            text = payload.get("text", "")
                            if type(text) is str:
                                self._delta(kind == "text-delta", agent_id, text, rid or None)
                                return
            event = parse_event(data)
        except EventParseError as exc:
            self._diag(str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - the reducer must never raise
            self._diag(f"could not apply event: {type(exc).__name__}: {exc}")
            return
        self.apply(event)

    def apply_all(self, events: Iterable[Event]) -> RunReducer:
        for event in events:
            self.apply(event)
        return self

    def apply_all_wire(self, items: Iterable[WireEvent]) -> RunReducer:
        for item in items:
            self.apply_wire(item)
        return self

    # ----------------------------------------------------------------- text
    def _delta(self, is_text: bool, agent_id: str, text: str, rid: str | None) -> None:
        agent = self._agents.get(agent_id)
        if agent is None:
            self._diag(f"{'text' if is_text else 'reasoning'} for unknown agent {agent_id!r}")
            return
        self._append(agent, "text" if is_text else "reasoning", text, rid)

    def _append(self, agent: _Agent, kind: str, text: str, rid: str | None) -> None:
        timeline = agent.timeline
        if timeline:
            last = timeline[-1]
            if type(last) is _Seg and last.kind == kind and last.rid == rid:
                last.parts.append(text)
                if not last.in_agg:
                    (agent.text_pre if kind == "text" else agent.reasoning_pre).append(text)
                if not last.dirty:
                    last.dirty = True
                    self._dirty_segs.append((agent, last, len(timeline) - 1))
                return
        timeline.append(_Seg(kind, text, rid))
        if not agent.dirty:
            agent.dirty = True
            self._dirty_agents.append(agent)

    def _on_text_block(self, event: TextBlockEvent) -> None:
        self._block("text", event.agent_id, event.payload.text, event.response_id or None)

    def _on_reasoning_block(self, event: ReasoningBlockEvent) -> None:
        self._block("reasoning", event.agent_id, event.payload.text, event.response_id or None)

    def _block(self, kind: str, agent_id: str, text: str, rid: str | None) -> None:
        agent = self._agents.get(agent_id) if _ok(agent_id) else None
        if agent is None:
            self._diag(f"{kind}-block for unknown agent {agent_id!r}")
            return
        timeline = agent.timeline
        last = timeline[-1] if timeline else None
        if type(last) is _Seg and last.kind == kind and rid is not None and last.rid == rid:
            streamed = last.text()
            if text.startswith(streamed) or text.endswith(streamed):
                if last.in_agg:
                    self._replace(agent, last, text, len(timeline) - 1)
                    return
                whole = agent.aggregate(kind)
                if whole.endswith(streamed):
                    pre = agent.text_pre if kind == "text" else agent.reasoning_pre
                    pre[:] = [whole[: len(whole) - len(streamed)]]
                    for entry in timeline:
                        if type(entry) is _Seg and entry.kind == kind:
                            entry.in_agg = False
                    last.in_agg = True
                    self._replace(agent, last, text, len(timeline) - 1)
                    return
        self._append(agent, kind, text, rid)

    def _replace(self, agent: _Agent, seg: _Seg, text: str, index: int) -> None:
        seg.parts = [text]
        seg.replaced = True
        if not seg.dirty:
            seg.dirty = True
            self._dirty_segs.append((agent, seg, index))

    def _status(self, agent_id: str, message: str) -> None:
        agent = self._agents.get(agent_id)
        if agent is None:
            self._diag(f"status for unknown agent {agent_id!r}")
            return
        value = message or None
        if agent.status_message != value:
            agent.status_message = value
            self._touch(agent)

    def _on_status(self, event: StatusEvent) -> None:
        self._status(event.agent_id, event.payload.message)

    # ----------------------------------------------------------------- run lifecycle
    def _on_run_start(self, event: RunStartEvent) -> None:
        root_id = event.agent_id
        if not _ok(root_id):
            self._diag(f"run-start with unusable agentId {root_id!r}")
            return
        root = self._root
        if len(self._agents) > 1 or root.has_content():
            self._set_status("active")
            root.status = "active"
            self._touch(root)
            if root_id not in self._agents:
                self._agents[root_id] = root
            elif self._agents[root_id] is not root:
                self._diag(f"run-start agentId {root_id!r} is already a sub-agent")
        else:
            self._root = _Agent(root_id, "orchestrator")
            self._agents = {root_id: self._root}
            self._calls = {}
            self._confirm_ids = {}
            self._set_status("active")
            self._reset = True

    def _set_status(self, status: str) -> None:
        if self.status != status:
            self.status = status
            self._run_status_changed = True

    def _on_run_finish(self, event: RunFinishEvent) -> None:
        raw = event.payload.status
        status = "completed" if raw == "completed" else "cancelled" if raw in ("cancelled", "interrupted") else "error"
        self._set_status(status)
        root = self._root
        root.status = status
        self._touch(root)
        reason = event.payload.reason
        if status == "cancelled":
            cause = _CANCELLATION.get(reason or "")
            if cause is None:
                root.fields.pop("cancellationReason", None)
            else:
                root.fields["cancellationReason"] = cause
        elif status == "error" and reason and not root.fields.get("error"):
            root.fields["error"] = reason
        for workflow_id in event.payload.archived_workflow_ids or ():
            if workflow_id not in self.archived_workflow_ids:
                self.archived_workflow_ids.append(workflow_id)
        if status == "completed":
            return  # n8n's rule: a completed run leaves its calls as they are (display_state
            # says "not resolved" for one still loading; e.g. create-tasks after a plan review)
        for call in self._calls.values():
            if call.loading:
                call.loading = False
                self._touch_call(call)

    # ----------------------------------------------------------------- tool calls
    def _new_call(self, agent: _Agent, call_id: str, name: str, args: dict[str, Any], event: Event) -> None:
        call = _Call(call_id, name, args, agent, _iso(event.ts))
        self._calls[call_id] = call
        agent.calls.append(call)
        agent.timeline.append(_Ref("tool-call", call_id, event.response_id or None))
        self._touch(agent)
        self._touch_call(call)

    def _synthetic_call_id(self, agent: _Agent) -> str:
        number = len(agent.calls) + 1
        while f"{agent.id}/call-{number}" in self._calls:
            number += 1
        return f"{agent.id}/call-{number}"

    def _latest_loading(self, agent_id: str, tool_name: str = "") -> _Call | None:
        agent = self._agents.get(agent_id)
        if agent is None:
            return None
        for call in reversed(agent.calls):
            if call.loading and (not tool_name or call.name == tool_name):
                return call
        return None

    def _on_tool_input_start(self, event: ToolInputStartEvent) -> None:
        call_id = event.payload.tool_call_id
        if not _ok(call_id) or not call_id or call_id in self._calls:
            return
        agent = self._agents.get(event.agent_id)
        if agent is None:
            self._diag(f"tool-input-start for unknown agent {event.agent_id!r}")
            return
        self._new_call(agent, call_id, event.payload.tool_name, {}, event)

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        call_id = event.payload.tool_call_id
        if not _ok(call_id):
            return
        if call_id:
            announced = self._calls.get(call_id)
            if announced is not None and (event.payload.model_extra or {}).get("autoApproved") is True:
                # our assistant's mark for a call run without asking ("always allow"): kept on
                # the call, the arguments stay as announced (protocol.display_state shows it)
                announced.extra = {**(announced.extra or {}), "autoApproved": True}
                self._touch_call(announced)
                return
            if announced is not None:
                announced.args = event.payload.args
                if event.payload.tool_name and not announced.name:
                    announced.name = event.payload.tool_name
                    announced.hint = render_hint(announced.name)
                self._touch_call(announced)
                return
        agent = self._agents.get(event.agent_id)
        if agent is None:
            self._diag(f"tool-call for unknown agent {event.agent_id!r}")
            return
        self._new_call(agent, call_id or self._synthetic_call_id(agent), event.payload.tool_name, event.payload.args, event)

    def _find_call(self, call_id: str, agent_id: str, what: str) -> _Call | None:
        if call_id:
            call = self._calls.get(call_id) if _ok(call_id) else None
            if call is None:
                self._diag(f"{what} for unknown tool call {call_id!r}")
            return call
        call = self._latest_loading(agent_id)
        if call is None:
            self._diag(f"{what} without toolCallId and no loading call of agent {agent_id!r}")
        return call

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        call = self._find_call(event.payload.tool_call_id, event.agent_id, "tool-result")
        if call is None:
            return
        call.result = event.payload.result
        call.loading = False
        call.completed = _iso(event.ts)
        self._touch_call(call)

    def _on_tool_error(self, event: ToolErrorEvent | ToolInterruptedEvent) -> None:
        call = self._find_call(event.payload.tool_call_id, event.agent_id, event.type)
        if call is None:
            return
        call.error = event.payload.error
        if event.type == "tool-interrupted":
            call.interrupted = True
        call.loading = False
        call.completed = _iso(event.ts)
        self._touch_call(call)

    def _on_confirmation(self, event: ConfirmationRequestEvent) -> None:
        payload = event.payload
        call_id = payload.tool_call_id
        if call_id:
            call = self._calls.get(call_id) if _ok(call_id) else None
        else:
            call = self._latest_loading(event.agent_id, payload.tool_name)
        if call is None:
            self._diag(f"confirmation-request {payload.request_id!r} for unknown tool call {call_id!r}")
            return
        data = payload.to_wire()
        for key in ("toolCallId", "toolName", "args"):
            data.pop(key, None)
        call.confirmation = Confirmation.model_validate(data)
        self._confirm_ids[call.id] = None
        self._touch_call(call)

    # ----------------------------------------------------------------- agents
    def _on_agent_spawned(self, event: AgentSpawnedEvent) -> None:
        payload = event.payload
        agent_id, parent_id = event.agent_id, payload.parent_id
        if not _ok(agent_id) or not _ok(parent_id):
            return
        extra = payload.model_extra or {}
        existing = self._agents.get(agent_id)
        if existing is not None:
            for key, value in (("activity", extra.get("activity")), ("title", payload.title)):
                if value is not None:
                    existing.fields[key] = value
            incoming = payload.target_resource
            current = existing.fields.get("targetResource")
            current_id = current.get("id") if isinstance(current, dict) else None
            if incoming is not None and incoming.id == current_id:
                merged = incoming.to_wire()
                if incoming.name is None and isinstance(current, dict) and current.get("name") is not None:
                    merged["name"] = current["name"]
                existing.fields["targetResource"] = merged
            self._touch(existing)
            return
        parent = self._agents.get(parent_id)
        if parent is None:
            self._diag(f"agent-spawned {agent_id!r} under unknown parent {parent_id!r}")
            return
        if parent.depth + 1 >= MAX_AGENT_DEPTH:
            self._diag(f"agent-spawned {agent_id!r} nests deeper than {MAX_AGENT_DEPTH} levels; folded into its parent")
            self._agents[agent_id] = parent  # its events land in the parent: nothing is lost
            return
        child = _Agent(agent_id, payload.role)
        child.depth = parent.depth + 1
        wire = payload.to_wire()
        for key in ("tools", "taskId", "kind", "activity", "title", "subtitle", "goal", "targetResource"):
            if key in wire:
                child.fields[key] = wire[key]
        self._agents[agent_id] = child
        parent.children.append(child)
        rid = event.response_id or (parent.timeline[-1].rid if parent.timeline else None)
        parent.timeline.append(_Ref("child", agent_id, rid))
        self._touch(parent)
        self._touch(child)

    def _on_agent_completed(self, event: AgentCompletedEvent) -> None:
        agent = self._agents.get(event.agent_id) if _ok(event.agent_id) else None
        if agent is None:
            self._diag(f"agent-completed for unknown agent {event.agent_id!r}")
            return
        payload = event.payload
        status = payload.status
        if status == "interrupted":
            status = "cancelled"
        if status not in _AGENT_STATUSES:
            status = "error" if payload.error else "completed"
        agent.status = status
        if "result" in payload.model_fields_set:
            agent.fields["result"] = payload.result
        else:
            agent.fields.pop("result", None)
        if payload.error is not None:
            agent.fields["error"] = payload.error
        else:
            agent.fields.pop("error", None)
        agent_change = (payload.model_extra or {}).get("agentChange")
        if agent_change is not None:
            agent.fields["agentChange"] = agent_change
        self._touch(agent)
        for call in agent.calls:
            if call.loading:
                call.loading = False
                self._touch_call(call)

    # ----------------------------------------------------------------- plan, setup, errors
    def _on_tasks_update(self, event: TasksUpdateEvent) -> None:
        agent = self._agents.get(event.agent_id) if _ok(event.agent_id) else None
        if agent is None:
            self._diag(f"tasks-update for unknown agent {event.agent_id!r}")
            return
        agent.fields["tasks"] = event.payload.tasks.to_wire()
        if event.payload.plan_items is not None:
            agent.fields["planItems"] = [item.to_wire() for item in event.payload.plan_items]
        self._touch(agent)

    def _on_setup_items(self, event: SetupItemsEvent) -> None:
        workflow_id = event.payload.workflow_id
        if not _ok(workflow_id):
            return
        root = self._root
        source = self._agents.get(event.agent_id)
        announcement: dict[str, Any] = {
            "workflowId": workflow_id,
            "agentId": source.id if source is not None else event.agent_id,
        }
        stamp = _iso(event.ts)
        if stamp is not None:
            announcement["timestamp"] = stamp
        root.fields["latestSetupAnnouncement"] = announcement
        by_workflow = dict(root.fields.get("setupItemsByWorkflowId") or {})
        by_workflow[workflow_id] = event.payload.items
        root.fields["setupItemsByWorkflowId"] = by_workflow
        self._touch(root)

    def _on_error(self, event: ErrorEvent) -> None:
        payload = event.payload
        agent = self._agents.get(event.agent_id) if _ok(event.agent_id) else None
        if agent is None:
            agent = self._root
        if payload.code not in KNOWN_ERROR_CODES:
            self._append(agent, "text", f"\n\n*Error: {payload.content}*", event.response_id or None)
        agent.status = "error"
        agent.fields["error"] = payload.content
        details = {
            key: value
            for key, value in (
                ("statusCode", payload.status_code),
                ("code", payload.code),
                ("provider", payload.provider),
                ("technicalDetails", payload.technical_details),
            )
            if value is not None and value != ""
        }
        agent.fields["errorDetails"] = details
        self._touch(agent)


def _ts_ok(value: Any) -> bool:
    return value is None or (type(value) in (int, float))


def _user_ok(value: Any) -> bool:
    return value is None or type(value) is str


def _entry_dict(entry: _Entry) -> dict[str, Any]:
    if type(entry) is _Seg:
        out: dict[str, Any] = {"type": entry.kind, "content": entry.text()}
    elif type(entry) is _Ref:
        out = {"type": entry.kind, ("toolCallId" if entry.kind == "tool-call" else "agentId"): entry.ref}
    else:
        return dict(entry.data)  # type: ignore[union-attr]
    if entry.rid is not None:
        out["responseId"] = entry.rid
    return out


def build_agent_tree(events: Iterable[Event]) -> AgentNode:
    """Fold ``events`` from scratch (n8n's ``buildAgentTreeFromEvents``)."""
    return RunReducer().apply_all(events).tree()


def build_agent_tree_wire(items: Iterable[WireEvent]) -> AgentNode:
    """``build_agent_tree`` of stored/wire events (dicts or JSON text)."""
    return RunReducer().apply_all_wire(items).tree()


def tree_json(tree: AgentNode) -> str:
    """Compact JSON of a tree, as the messages endpoint sends ``agentTree``."""
    return json.dumps(tree.to_wire(), separators=(",", ":"), ensure_ascii=False)
