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
joined lazily, a run of deltas (``DeltaRun``) folds without a pydantic model per delta, and the pydantic tree is
only built by ``tree()``. ``drain_changes()`` reports what changed since the last call so
a UI can project only that.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .delta_runs import DeltaRun
from .events import (
    AgentCompletedEvent,
    AgentSpawnedEvent,
    ConfirmationRequestEvent,
    ContextCompactedEvent,
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
)
from .ingest import Item, decode, decode_lines
from .reducer_changes import ReducerChanges, SegmentChange
from .reducer_reads import ReducerReads
from .reducer_state import (
    AGENT_STATUSES,
    CANCELLATION,
    KNOWN_ERROR_CODES,
    MAX_AGENT_DEPTH,
    MAX_DIAGNOSTICS,
    AgentRecord,
    Call,
    Raw,
    Ref,
    Seg,
    id_ok,
    iso,
    render_hint,
)
from .tree import AgentNode, Confirmation

__all__ = [
    "KNOWN_ERROR_CODES",
    "ReducerChanges",
    "RunReducer",
    "SegmentChange",
    "build_agent_tree",
    "build_agent_tree_wire",
    "fold_json",
    "render_hint",
]


# --------------------------------------------------------------------------- the reducer


class RunReducer(ReducerReads):
    """Folds the events of one message group into its agent tree. Never raises in ``apply``."""

    def __init__(self, root_id: str = "agent-001") -> None:
        if not id_ok(root_id):
            root_id = "agent-001"
        self._root = AgentRecord(root_id, "orchestrator")
        #: agent id (and root aliases) -> node
        self._agents: dict[str, AgentRecord] = {root_id: self._root}
        self._calls: dict[str, Call] = {}
        #: ids of calls that carry a confirmation, in arrival order
        self._confirm_ids: dict[str, None] = {}
        #: run status: active / completed / cancelled / error
        self.status = "active"
        self.archived_workflow_ids: list[str] = []
        self.diagnostics: deque[str] = deque(maxlen=MAX_DIAGNOSTICS)
        self.diagnostic_count = 0
        self._dirty_agents: list[AgentRecord] = []
        self._dirty_calls: list[Call] = []
        self._dirty_segs: list[tuple[AgentRecord, Seg, int]] = []
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
            ContextCompactedEvent: self._on_context_compacted,
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
            if id_ok(alias) and alias not in reducer._agents:
                reducer._agents[alias] = reducer._root
        run_status = status if status is not None else reducer._root.status
        reducer.status = run_status if run_status in AGENT_STATUSES else "active"
        return reducer

    def _adopt(self, data: dict[str, Any], depth: int = 0) -> AgentRecord:
        agent = AgentRecord(data["agentId"], str(data.get("role", "orchestrator")))
        agent.depth = depth
        status = data.get("status")
        agent.status = status if status in AGENT_STATUSES else "active"
        agent.status_message = data.get("statusMessage") or None
        self._agents.setdefault(agent.id, agent)
        for raw in data.get("timeline") or ():
            kind = raw.get("type")
            rid = raw.get("responseId") or None
            if kind == "text" or kind == "reasoning":
                agent.timeline.append(Seg(kind, str(raw.get("content", "")), rid, dirty=False))
            elif kind == "tool-call" and id_ok(raw.get("toolCallId")):
                agent.timeline.append(Ref(kind, raw["toolCallId"], rid))
            elif kind == "child" and id_ok(raw.get("agentId")):
                agent.timeline.append(Ref(kind, raw["agentId"], rid))
            elif kind not in ("tool-call", "child"):
                agent.timeline.append(Raw(dict(raw)))
        text = str(data.get("textContent") or "")
        reasoning = str(data.get("reasoning") or "")
        if reasoning and not any(type(e) is Seg and e.kind == "reasoning" for e in agent.timeline):
            agent.timeline.insert(0, Seg("reasoning", reasoning, None, dirty=False))
        for kind, whole in (("text", text), ("reasoning", reasoning)):
            segs = [e for e in agent.timeline if type(e) is Seg and e.kind == kind]
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
            if not id_ok(raw.get("toolCallId")):
                continue
            call = Call(
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
            if id_ok(raw_child.get("agentId")) and raw_child["agentId"] not in self._agents:
                agent.children.append(self._adopt(raw_child, depth + 1))
        core = {
            "agentId", "role", "status", "statusMessage", "textContent", "reasoning", "toolCalls", "children",
            "timeline",
        }  # fmt: skip
        agent.fields = {k: v for k, v in data.items() if k not in core}
        agent.tl_mark = len(agent.timeline)
        return agent

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
                    if type(entry) is Seg:
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
                    if type(entry) is Seg:
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
                changes.segments.append(SegmentChange(agent.id, index, seg.kind, content, True, len(content)))
            elif len(content) > seg.sent:
                changes.segments.append(SegmentChange(agent.id, index, seg.kind, content[seg.sent :], False, len(content)))
            seg.replaced = False
            seg.sent = len(content)
        self._dirty_segs.clear()
        return changes

    def _unique_agents(self) -> Iterator[AgentRecord]:
        seen: set[int] = set()
        for agent in self._agents.values():
            if id(agent) not in seen:
                seen.add(id(agent))
                yield agent

    def _touch(self, agent: AgentRecord) -> None:
        if not agent.dirty:
            agent.dirty = True
            self._dirty_agents.append(agent)

    def _touch_call(self, call: Call) -> None:
        if not call.dirty:
            call.dirty = True
            self._dirty_calls.append(call)

    # ----------------------------------------------------------------- diagnostics
    def _diag(self, message: str) -> None:
        self.diagnostic_count += 1
        self.diagnostics.append(message)

    # ----------------------------------------------------------------- applying
    def apply(self, event: Event | DeltaRun) -> None:
        """Fold one typed event: an event model, or a run of deltas (``DeltaRun``: into the same
        tree as its deltas one by one). Never raises: an event that cannot apply (or something
        that is not an event) is recorded in ``diagnostics``. JSON is decoded first
        (``protocol.ingest.decode``)."""
        try:
            kind = type(event)
            if kind is DeltaRun:
                self._run(event)  # type: ignore[arg-type]
                return
            if kind is TextDeltaEvent:
                # the bulk of every stream, already validated: straight to the fold
                self._delta(True, event.agent_id, event.payload.text, event.response_id or None)  # type: ignore[union-attr]
                return
            if kind is ReasoningDeltaEvent:
                self._delta(False, event.agent_id, event.payload.text, event.response_id or None)  # type: ignore[union-attr]
                return
            handler = self._handlers.get(kind)  # type: ignore[arg-type]
            if handler is not None:
                handler(event)
            elif not isinstance(event, EventBase):
                self._diag(f"not an event: {kind.__name__} (JSON goes through protocol.ingest.decode)")
        except Exception as exc:  # noqa: BLE001 - the reducer must never raise
            self._diag(f"could not apply event: {type(exc).__name__}: {exc}")

    def _run(self, run: DeltaRun) -> None:
        """A run of deltas: the first alone, then, when it folded cleanly (nothing noted), the rest
        as one delta of their joined text (a delta appends to its agent's last segment of the same
        kind and response: the same tree); else each on its own (a delta for an unknown agent is
        noted once per delta, as one by one)."""
        is_text = run.type == "text-delta"
        agent_id = run.agent_id
        rid = run.response_id or None
        noted = self.diagnostic_count
        self._delta(is_text, agent_id, run.first(), rid)
        if run.count == 1:
            return
        if self.diagnostic_count == noted:
            self._delta(is_text, agent_id, run.rest(), rid)
            return
        for text in run.all_texts()[1:]:
            self._delta(is_text, agent_id, text, rid)

    def apply_all(self, events: Iterable[Event | DeltaRun]) -> RunReducer:
        for event in events:
            self.apply(event)
        return self

    # ----------------------------------------------------------------- text
    def _delta(self, is_text: bool, agent_id: str, text: str, rid: str | None) -> None:
        agent = self._agents.get(agent_id)
        if agent is None:
            self._diag(f"{'text' if is_text else 'reasoning'} for unknown agent {agent_id!r}")
            return
        self._append(agent, "text" if is_text else "reasoning", text, rid)

    def _append(self, agent: AgentRecord, kind: str, text: str, rid: str | None) -> None:
        timeline = agent.timeline
        if timeline:
            last = timeline[-1]
            if type(last) is Seg and last.kind == kind and last.rid == rid:
                last.parts.append(text)
                if not last.in_agg:
                    (agent.text_pre if kind == "text" else agent.reasoning_pre).append(text)
                if not last.dirty:
                    last.dirty = True
                    self._dirty_segs.append((agent, last, len(timeline) - 1))
                return
        timeline.append(Seg(kind, text, rid))
        if not agent.dirty:
            agent.dirty = True
            self._dirty_agents.append(agent)

    def _on_text_block(self, event: TextBlockEvent) -> None:
        self._block("text", event.agent_id, event.payload.text, event.response_id or None)

    def _on_reasoning_block(self, event: ReasoningBlockEvent) -> None:
        self._block("reasoning", event.agent_id, event.payload.text, event.response_id or None)

    def _block(self, kind: str, agent_id: str, text: str, rid: str | None) -> None:
        agent = self._agents.get(agent_id) if id_ok(agent_id) else None
        if agent is None:
            self._diag(f"{kind}-block for unknown agent {agent_id!r}")
            return
        timeline = agent.timeline
        last = timeline[-1] if timeline else None
        if type(last) is Seg and last.kind == kind and rid is not None and last.rid == rid:
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
                        if type(entry) is Seg and entry.kind == kind:
                            entry.in_agg = False
                    last.in_agg = True
                    self._replace(agent, last, text, len(timeline) - 1)
                    return
        self._append(agent, kind, text, rid)

    def _replace(self, agent: AgentRecord, seg: Seg, text: str, index: int) -> None:
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

    def _on_context_compacted(self, event: ContextCompactedEvent) -> None:
        """A one-line entry of the agent's timeline (``context-compacted`` with the payload): drawn as a
        row, kept in snapshots, read the same live and restored."""
        agent = self._agents.get(event.agent_id) or self._root
        agent.timeline.append(Raw({"type": "context-compacted", **event.payload.to_wire()}))
        self._touch(agent)

    # ----------------------------------------------------------------- run lifecycle
    def _on_run_start(self, event: RunStartEvent) -> None:
        root_id = event.agent_id
        if not id_ok(root_id):
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
            self._root = AgentRecord(root_id, "orchestrator")
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
        root = self._root
        reason = event.payload.reason
        if (status == "cancelled" and self.status == "cancelled" and reason == "user_cancelled"
                and root.fields.get("cancellationReason") not in (None, "user")):
            # n8n 2.41.1's shutdown ends a run 'service_shutdown', then the run's own aborted path
            # ends it again 'user_cancelled': the first says why (live and in its log alike)
            return
        self._set_status(status)
        root.status = status
        self._touch(root)
        if status == "cancelled":
            cause = CANCELLATION.get(reason or "")
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
    def _new_call(self, agent: AgentRecord, call_id: str, name: str, args: dict[str, Any], event: Event) -> None:
        call = Call(call_id, name, args, agent, iso(event.ts))
        self._calls[call_id] = call
        agent.calls.append(call)
        agent.timeline.append(Ref("tool-call", call_id, event.response_id or None))
        self._touch(agent)
        self._touch_call(call)

    def _synthetic_call_id(self, agent: AgentRecord) -> str:
        number = len(agent.calls) + 1
        while f"{agent.id}/call-{number}" in self._calls:
            number += 1
        return f"{agent.id}/call-{number}"

    def _latest_loading(self, agent_id: str, tool_name: str = "") -> Call | None:
        agent = self._agents.get(agent_id)
        if agent is None:
            return None
        for call in reversed(agent.calls):
            if call.loading and (not tool_name or call.name == tool_name):
                return call
        return None

    def _on_tool_input_start(self, event: ToolInputStartEvent) -> None:
        call_id = event.payload.tool_call_id
        if not id_ok(call_id) or not call_id or call_id in self._calls:
            return
        agent = self._agents.get(event.agent_id)
        if agent is None:
            self._diag(f"tool-input-start for unknown agent {event.agent_id!r}")
            return
        self._new_call(agent, call_id, event.payload.tool_name, {}, event)

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        call_id = event.payload.tool_call_id
        if not id_ok(call_id):
            return
        if call_id:
            announced = self._calls.get(call_id)
            if announced is not None and (event.payload.model_extra or {}).get("autoApproved") is True:
                # our assistant's mark for a call run without asking ("always allow"): kept on
                # the call, the arguments stay as announced (protocol.display_state shows it)
                announced.extra = {**(announced.extra or {}), "autoApproved": True}
                self._touch_call(announced)
                return
            if announced is not None and (event.payload.model_extra or {}).get("answered") is True:
                # ours: the person answered the call's confirmation (the run resumes): the time
                # waited for them is not the tool's running time (tool_card.duration says both)
                announced.extra = {**(announced.extra or {}), "answeredAt": iso(event.ts)}
                self._touch_call(announced)
                return
            progress = (event.payload.model_extra or {}).get("progress")
            if announced is not None and isinstance(progress, str):
                # ours: the progress an MCP tool reports while it runs, shown on its card
                announced.extra = {**(announced.extra or {}), "progress": progress[:200]}
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

    def _find_call(self, call_id: str, agent_id: str, what: str) -> Call | None:
        if call_id:
            call = self._calls.get(call_id) if id_ok(call_id) else None
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
        call.completed = iso(event.ts)
        self._touch_call(call)

    def _on_tool_error(self, event: ToolErrorEvent | ToolInterruptedEvent) -> None:
        call = self._find_call(event.payload.tool_call_id, event.agent_id, event.type)
        if call is None:
            return
        call.error = event.payload.error
        if event.type == "tool-interrupted":
            call.interrupted = True
        call.loading = False
        call.completed = iso(event.ts)
        self._touch_call(call)

    def _on_confirmation(self, event: ConfirmationRequestEvent) -> None:
        payload = event.payload
        call_id = payload.tool_call_id
        if call_id:
            call = self._calls.get(call_id) if id_ok(call_id) else None
        else:
            call = self._latest_loading(event.agent_id, payload.tool_name)
        if call is None:
            self._diag(f"confirmation-request {payload.request_id!r} for unknown tool call {call_id!r}")
            return
        data = payload.to_wire()
        for key in ("toolCallId", "toolName", "args"):
            data.pop(key, None)
        previous = call.confirmation
        call.confirmation = Confirmation.model_validate(data)
        if previous is None and event.ts is not None:  # when the waiting for the person began
            call.extra = {**(call.extra or {}), "askedAt": iso(event.ts)}
        if previous is not None and previous.request_id != call.confirmation.request_id:
            # a new question on the same call (n8n's setup after its credential-destination answer):
            # the earlier answer's status is not this one's
            call.conf_status = None
        self._confirm_ids[call.id] = None
        self._touch_call(call)

    # ----------------------------------------------------------------- agents
    def _on_agent_spawned(self, event: AgentSpawnedEvent) -> None:
        payload = event.payload
        agent_id, parent_id = event.agent_id, payload.parent_id
        if not id_ok(agent_id) or not id_ok(parent_id):
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
        child = AgentRecord(agent_id, payload.role)
        child.depth = parent.depth + 1
        wire = payload.to_wire()
        for key in ("tools", "taskId", "kind", "activity", "title", "subtitle", "goal", "targetResource"):
            if key in wire:
                child.fields[key] = wire[key]
        self._agents[agent_id] = child
        parent.children.append(child)
        rid = event.response_id or (parent.timeline[-1].rid if parent.timeline else None)
        parent.timeline.append(Ref("child", agent_id, rid))
        self._touch(parent)
        self._touch(child)

    def _on_agent_completed(self, event: AgentCompletedEvent) -> None:
        agent = self._agents.get(event.agent_id) if id_ok(event.agent_id) else None
        if agent is None:
            self._diag(f"agent-completed for unknown agent {event.agent_id!r}")
            return
        payload = event.payload
        status = payload.status
        if status == "interrupted":
            status = "cancelled"
        if status not in AGENT_STATUSES:
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
        agent = self._agents.get(event.agent_id) if id_ok(event.agent_id) else None
        if agent is None:
            self._diag(f"tasks-update for unknown agent {event.agent_id!r}")
            return
        agent.fields["tasks"] = event.payload.tasks.to_wire()
        if event.payload.plan_items is not None:
            agent.fields["planItems"] = [item.to_wire() for item in event.payload.plan_items]
        self._touch(agent)

    def _on_setup_items(self, event: SetupItemsEvent) -> None:
        workflow_id = event.payload.workflow_id
        if not id_ok(workflow_id):
            return
        root = self._root
        source = self._agents.get(event.agent_id)
        announcement: dict[str, Any] = {
            "workflowId": workflow_id,
            "agentId": source.id if source is not None else event.agent_id,
        }
        stamp = iso(event.ts)
        if stamp is not None:
            announcement["timestamp"] = stamp
        root.fields["latestSetupAnnouncement"] = announcement
        by_workflow = dict(root.fields.get("setupItemsByWorkflowId") or {})
        by_workflow[workflow_id] = event.payload.items
        root.fields["setupItemsByWorkflowId"] = by_workflow
        self._touch(root)

    def _on_error(self, event: ErrorEvent) -> None:
        payload = event.payload
        agent = self._agents.get(event.agent_id) if id_ok(event.agent_id) else None
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



def build_agent_tree(events: Iterable[Event]) -> AgentNode:
    """Fold ``events`` from scratch (n8n's ``buildAgentTreeFromEvents``)."""
    return RunReducer().apply_all(events).tree()


def fold_json(reducer: RunReducer, items: Iterable[WireEvent]) -> RunReducer:
    """Fold stored/wire events (decoded JSON objects or their text) into ``reducer``: each decoded
    to its typed event (``protocol.ingest.decode``) and applied; one that is not an event is noted
    in ``diagnostics`` (a ``run-sync`` frame has no place in one run's tree: left out)."""
    items = list(items)
    decoded: list[Item]
    if all(type(data) is str for data in items):  # (our log's rows: their runs of deltas read in bulk)
        decoded = decode_lines(None, items, lambda _id, _line, exc: reducer._diag(str(exc)))  # type: ignore[arg-type]
    else:
        decoded = []
        for data in items:
            try:
                decoded.append(decode(None, data))
            except EventParseError as exc:
                reducer._diag(str(exc))
    for item in decoded:
        if type(item) is DeltaRun:
            reducer.apply(item)
        elif isinstance(item.event, EventBase):  # type: ignore[union-attr]
            reducer.apply(item.event)  # type: ignore[arg-type,union-attr]
    return reducer


def build_agent_tree_wire(items: Iterable[WireEvent]) -> AgentNode:
    """``build_agent_tree`` of stored/wire events (dicts or JSON text)."""
    return fold_json(RunReducer(), items).tree()
