"""The reducer's internal state: slotted records of agents, tool calls and timeline entries, and the
small checks and constants the folding uses. Internal to ``reducer``; read through ``RunReducer``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .hot_events import UNSAFE_IDS
from .tree import Confirmation

#: Ids n8n refuses as object keys; ignored here too so both fold the same.
#: Error codes the UI renders specially; their text is not inlined (n8n does the same).
KNOWN_ERROR_CODES = frozenset({"quota_exhausted"})
AGENT_STATUSES = frozenset({"active", "completed", "cancelled", "error"})
CANCELLATION = {
    "user_cancelled": "user",
    "timeout": "timeout",
    "service_shutdown": "shutdown",
    "crash_interrupted": "interrupted",
}
MAX_DIAGNOSTICS = 100

RENDER_HINTS = {
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
    return RENDER_HINTS.get(tool_name, "default")


def id_ok(value: Any) -> bool:
    return type(value) is str and value not in UNSAFE_IDS


def iso(ts: float | None) -> str | None:
    """Epoch milliseconds -> ISO 8601 like JavaScript's ``toISOString()``."""
    if ts is None:
        return None
    try:
        moment = datetime.fromtimestamp(float(ts) / 1000.0, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- internal state


class Seg:
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


class Ref:
    """A ``tool-call`` or ``child`` timeline entry (points at a call or agent by id)."""

    __slots__ = ("kind", "ref", "rid")

    def __init__(self, kind: str, ref: str, rid: str | None) -> None:
        self.kind = kind
        self.ref = ref
        self.rid = rid


class Raw:
    """A timeline entry of an unknown type adopted from a snapshot, kept as is."""

    __slots__ = ("data", "kind", "rid")

    def __init__(self, data: dict[str, Any]) -> None:
        self.kind = str(data.get("type"))
        self.data = data
        rid = data.get("responseId")
        self.rid = rid if type(rid) is str and rid else None


Entry = Seg | Ref | Raw


class Call:
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

    def __init__(self, call_id: str, name: str, args: dict[str, Any], agent: AgentRecord, started: str | None) -> None:
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


class AgentRecord:
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
        self.timeline: list[Entry] = []
        self.calls: list[Call] = []
        self.children: list[AgentRecord] = []
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
            if type(entry) is Seg and entry.kind == kind and entry.in_agg:
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




def entry_dict(entry: Entry) -> dict[str, Any]:
    if type(entry) is Seg:
        out: dict[str, Any] = {"type": entry.kind, "content": entry.text()}
    elif type(entry) is Ref:
        out = {"type": entry.kind, ("toolCallId" if entry.kind == "tool-call" else "agentId"): entry.ref}
    else:
        return dict(entry.data)  # type: ignore[union-attr]
    if entry.rid is not None:
        out["responseId"] = entry.rid
    return out


