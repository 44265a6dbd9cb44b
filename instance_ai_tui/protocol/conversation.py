"""One thread's conversation as the UI sees it (n8n's frontend wrapper, reference section 6.2).

``Conversation`` keeps the ordered messages of a thread: user messages and assistant
messages, each assistant message owning the ``RunReducer`` of its message group. Events
are routed by ``runId`` -> message group (``run-start``'s ``payload.messageGroupId``, or
the run id); follow-up runs of a group fold into the same message. ``run-sync`` frames
replace a group's tree, history loads adopt the stored trees, and live events keep
folding into them.

User text carried by ``run-start``: if the payload has ``userMessage`` (a string, or an
object with ``content`` or ``text`` and optionally ``id``) the conversation shows it as
the user message before the assistant message, unless the same text was already added
locally with ``add_user_message``. ``payload.userMessageId`` names it if present. Neither
field is part of n8n's protocol; our server may send them, n8n does not.

Text from outside is made visible here (``safe_text.visible``): every string of every event,
run-sync frame and history page is folded with its control characters and bidi overrides
shown, never raw (the boundary where such text enters a UI; ``export``, ``replay`` and ``run``
fold through here too). Streamed deltas are checked with one regular expression; other models
are walked only when their JSON holds such a character.

Events come in one way: ``fold(items)``, a batch of typed stream items (``protocol.ingest``: event
models, run-sync frames, runs of deltas). It drops every item whose id is ``<= cursor`` (already
seen) and advances ``cursor`` to the largest id seen; items without id always fold.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .delta_runs import DeltaRun
from .events import (
    AgentSpawnedEvent,
    Event,
    EventBase,
    ReasoningDeltaEvent,
    RunFinishEvent,
    RunStartEvent,
    StatusEvent,
    TaskList,
    TasksUpdateEvent,
    TextDeltaEvent,
    TextPayload,
    ThreadTitleUpdatedEvent,
    UnknownEvent,
)
from .ingest import Item, StreamItem
from .reducer import ReducerChanges, RunReducer
from .safe_text import UNSAFE, visible, visible_model
from .text_render import byte_size
from .tree import AgentNode, Confirmation, RunSyncPayload, ToolCallState

if TYPE_CHECKING:  # the messages endpoint's models: built only by ``to_message`` (a fold never needs them)
    from .api import InstanceAiMessage, ThreadMessages

__all__ = ["Conversation", "ConversationChanges", "ConversationMessage", "PendingConfirmation"]

#: event types that never touch a message's tree (no placeholder message for them)
_NO_TREE_TYPES = frozenset({"thread-title-updated", "filesystem-request", "preferences-applied"})
_CONFIRMATION_TYPES = frozenset(
    {"confirmation-request", "tool-result", "tool-error", "tool-interrupted", "agent-completed", "run-finish", "run-start"}
)


_unsafe = UNSAFE.search
_visible_model = visible_model


def _visible_hot(event: Event) -> Event:
    """A streamed delta or status with its text made visible (a copy only when needed). The
    hot path: a delta without a newline is checked with ``str.isprintable`` alone."""
    payload: Any = event.payload
    if type(payload) is TextPayload:
        text = payload.text
        if text.isprintable() or _unsafe(text) is None:
            return event
        new_payload: Any = payload.model_copy(update={"text": visible(text)})
    else:
        message = payload.message
        if message.isprintable() or _unsafe(message) is None:
            return event
        new_payload = payload.model_copy(update={"message": visible(message)})
    return _visible_model(event.model_copy(update={"payload": new_payload}))


def _visible_run(run: DeltaRun) -> DeltaRun:
    """A run of deltas with its texts made visible (itself when they need nothing: the usual)."""
    first, rest = run.first(), run.rest()
    if (first.isprintable() or _unsafe(first) is None) and (rest.isprintable() or _unsafe(rest) is None):
        return run
    return DeltaRun(run.type, run.run_id, run.agent_id, run.response_id, run.ids,
                    texts=[visible(text) for text in run.all_texts()])


def _now() -> datetime:
    return datetime.now(UTC)


def awaits_answer(reducer: RunReducer) -> bool:
    """A run still waiting for an answer: its root is active and a call of it waits on an unanswered
    confirmation that has not expired. After n8n restarts, a suspended run is such a tree in the
    history (no longer excluded, no ``run-sync``, its status says no run) and n8n still takes the
    answer from its checkpoint (``resolveConfirmation``'s last step): it is shown answerable."""
    if reducer.status != "active":
        return False
    for _agent, call in reducer.confirmation_calls():
        conf = call.confirmation
        if conf is not None and call.is_loading and not conf.expired \
                and call.confirmation_status not in ("approved", "denied"):
            return True
    return False


def _when(ts: float | None) -> datetime:
    if ts is not None:
        try:
            return datetime.fromtimestamp(float(ts) / 1000.0, tz=UTC)
        except (OverflowError, OSError, ValueError):
            pass
    return _now()


class ConversationMessage:
    """A user or assistant message. An assistant message's text is its root agent's."""

    __slots__ = (
        "_content",
        "_reasoning",
        "created_at",
        "dirty",
        "id",
        "is_streaming",
        "local",
        "message_group_id",
        "reducer",
        "role",
        "run_id",
        "run_ids",
    )

    def __init__(
        self,
        id: str,
        role: str,
        *,
        created_at: datetime | None = None,
        content: str = "",
        reducer: RunReducer | None = None,
        run_id: str | None = None,
        message_group_id: str | None = None,
    ) -> None:
        self.id = id
        self.role = role
        self.run_id = run_id
        self.message_group_id = message_group_id
        self.run_ids: list[str] = [run_id] if run_id else []
        self.created_at = created_at or _now()
        self.reducer = reducer
        self.is_streaming = False
        #: a user message typed here and not yet confirmed by the server
        self.local = False
        self._content = content
        self._reasoning = ""
        self.dirty = False

    @property
    def content(self) -> str:
        """The text: the root agent's ``textContent`` for assistant messages."""
        return self.reducer.text() if self.reducer is not None else self._content

    @property
    def reasoning(self) -> str:
        return self.reducer.reasoning() if self.reducer is not None else self._reasoning

    def tree(self) -> AgentNode | None:
        return self.reducer.tree() if self.reducer is not None else None

    def to_message(self) -> InstanceAiMessage:
        """As the messages endpoint returns it (``InstanceAiMessage``)."""
        from .api import InstanceAiMessage

        return InstanceAiMessage.model_validate(self.to_wire())

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.run_id:
            out["runId"] = self.run_id
        if self.message_group_id:
            out["messageGroupId"] = self.message_group_id
        if self.run_ids:
            out["runIds"] = list(self.run_ids)
        out["role"] = self.role
        out["createdAt"] = self.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out["content"] = self.content
        out["reasoning"] = self.reasoning
        out["isStreaming"] = self.is_streaming
        if self.reducer is not None:
            out["agentTree"] = self.reducer.tree_dict()
        return out


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A tool call waiting for the user's answer."""

    message_id: str
    run_id: str | None
    agent_id: str
    tool_call: ToolCallState
    confirmation: Confirmation

    @property
    def request_id(self) -> str:
        return self.confirmation.request_id

    @property
    def input_type(self) -> str:
        return self.confirmation.effective_input_type


def attachment_lines(attachments: Any) -> str:
    """The lines a user message shows for its ``@server:uri`` attachments (``run-start``'s
    ``attachments``: server, uri, mimeType, size, error), empty without any."""
    if not isinstance(attachments, list):
        return ""
    lines = []
    for item in attachments[:20]:
        if not isinstance(item, dict):
            continue
        where = f"@{item.get('server', '?')}:{item.get('uri', '?')}"
        if item.get("error"):
            lines.append(f"📎 {where} — not attached: {item['error']}")
            continue
        size = item["size"] if isinstance(item.get("size"), int) else 0
        lines.append(f"📎 {where} ({item.get('mimeType') or 'text'}, {byte_size(size)})")
    return "\n\n" + "\n".join(lines) if lines else ""


@dataclass(slots=True)
class ConversationChanges:
    """What changed since the last ``Conversation.drain_changes``.

    ``reset``: everything (history loaded); redraw all messages. ``added``: ids of new
    messages, in order. ``messages``: per existing message id, its reducer's changes
    (``ReducerChanges.reset`` when its tree was replaced, e.g. by ``run-sync``).
    """

    reset: bool = False
    added: list[str] = field(default_factory=list)
    messages: dict[str, ReducerChanges] = field(default_factory=dict)
    streaming: bool = False
    title: bool = False
    tasks: bool = False
    confirmations: bool = False
    #: user messages whose text changed after they were added (their ``@server:uri`` attachments listed)
    users: list[str] = field(default_factory=list)
    #: messages put above an existing one (another client's user message, read after its answer began):
    #: the view mounts each before its neighbour and keeps every other widget (a focused card keeps the keys)
    inserted: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.reset or self.added or self.messages or self.streaming or self.title or self.tasks or self.confirmations
            or self.users or self.inserted
        )


class Conversation:
    """The messages of one thread, folded from history, events and run-sync frames."""

    def __init__(self, thread_id: str = "") -> None:
        self.thread_id = thread_id
        self.messages: list[ConversationMessage] = []
        #: largest event id seen; events with an id <= cursor are dropped
        self.cursor = 0
        self.active_run_id: str | None = None
        self._title: str | None = None
        self.latest_tasks: TaskList | None = None
        self.archived_workflow_ids: list[str] = []
        self.diagnostics: deque[str] = deque(maxlen=100)
        self._by_group: dict[str, ConversationMessage] = {}
        self._group_of_run: dict[str, str] = {}
        self._resolved: set[str] = set()
        self._local_seq = 0
        self._hot_run: str | None = None
        self._hot_msg: ConversationMessage | None = None
        self._dirty: list[ConversationMessage] = []
        self._added: list[str] = []
        self._inserted: list[str] = []
        self._reset = False
        self._streaming_changed = False
        self._title_changed = False
        self._tasks_changed = False
        self._confirmations_changed = False

    # ----------------------------------------------------------------- reading
    @property
    def title(self) -> str | None:
        """The thread's title (from ``thread-title-updated``, or set by who opened it), made
        visible (``safe_text.visible``)."""
        return self._title

    @title.setter
    def title(self, value: str | None) -> None:
        self._title = visible(value) if value is not None else None

    @property
    def has_changes(self) -> bool:
        """Something was folded since the last ``drain_changes`` (a UI has work to do)."""
        return bool(
            self._dirty
            or self._added
            or self._inserted
            or self._reset
            or self._streaming_changed
            or self._title_changed
            or self._tasks_changed
            or self._confirmations_changed
        )

    @property
    def is_streaming(self) -> bool:
        """A run of this thread is active (between its ``run-start`` and ``run-finish``)."""
        return self.active_run_id is not None

    def message(self, message_id: str) -> ConversationMessage | None:
        for msg in self.messages:
            if msg.id == message_id:
                return msg
        return None

    def message_for_run(self, run_id: str) -> ConversationMessage | None:
        return self._by_group.get(self._group_of_run.get(run_id, run_id))

    def to_messages(self) -> list[InstanceAiMessage]:
        return [msg.to_message() for msg in self.messages]

    def pending_confirmations(self, *, include_expired: bool = False) -> list[PendingConfirmation]:
        """Tool calls with a confirmation that are still loading, not answered
        (``confirmationStatus`` not approved/denied) and not resolved locally."""
        pending: list[PendingConfirmation] = []
        for msg in self.messages:
            if msg.reducer is None or not msg.is_streaming:
                # a finished run cannot take an answer: n8n's tree leaves a completed run's
                # calls loading (reference §6.1); display_state shows them "not answered"
                continue
            for agent_id, call in msg.reducer.confirmation_calls():
                conf = call.confirmation
                if conf is None or not call.is_loading or call.confirmation_status in ("approved", "denied"):
                    continue
                if conf.request_id in self._resolved or (conf.expired and not include_expired):
                    continue
                pending.append(PendingConfirmation(msg.id, msg.run_id, agent_id, call, conf))
        return pending

    def resume_waiting(self) -> list[str]:
        """History messages whose run still waits for an answer (``awaits_answer``) while the server
        says no run is active or suspended: n8n after a restart, which still takes the answer from its
        checkpoint. They wait again (their cards answerable). Only on the server's word: a suspended run
        it still holds comes back by its ``run-sync`` instead (a card drawn from the history would be
        rebuilt under the keys). Returns their run ids."""
        revived: list[str] = []
        for msg in self.messages:
            if msg.reducer is None or msg.is_streaming or not msg.run_id or not awaits_answer(msg.reducer):
                continue
            msg.is_streaming = True
            self.active_run_id = msg.run_id
            self._mark(msg)
            revived.append(msg.run_id)
        if revived:
            self._streaming_changed = True
            self._confirmations_changed = True
        return revived

    def mark_confirmation_resolved(self, request_id: str, approved: bool | str | None = None) -> bool:
        """Record that the user answered ``request_id`` here (it leaves
        ``pending_confirmations``). With ``approved``, also set the call's
        ``confirmationStatus`` (a string is n8n's own word: ``deferred`` for a skip,
        ``changes-requested`` for a plan review sent back). Returns whether a call with that
        request was found."""
        self._resolved.add(request_id)
        self._confirmations_changed = True
        for msg in self.messages:
            if msg.reducer is None:
                continue
            for _agent_id, call in msg.reducer.confirmation_calls():
                if call.confirmation is not None and call.confirmation.request_id == request_id:
                    if approved is not None:
                        status = approved if isinstance(approved, str) else "approved" if approved else "denied"
                        msg.reducer.set_confirmation_status(call.tool_call_id, status)
                        self._mark(msg)
                    return True
        return False

    # ----------------------------------------------------------------- local input
    def add_user_message(self, text: str) -> ConversationMessage:
        """Show the user's message at once, before the server confirms the run."""
        self._local_seq += 1
        msg = ConversationMessage(f"local-{self._local_seq}", "user", content=visible(text))
        msg.local = True
        self._append(msg)
        return msg

    def insert_user_message(self, before_id: str, message_id: str, text: str) -> bool:
        """Show a user message another client sent, right above the answer ``before_id``
        (n8n's ``run-start`` does not carry the text; the app reads it from the history).
        Returns ``False`` if ``before_id`` is unknown or the message is already shown."""
        if any(m.id == message_id for m in self.messages):
            return False
        text = visible(text)
        for index, msg in enumerate(self.messages):
            if msg.id == before_id:
                self.messages.insert(index, ConversationMessage(message_id, "user", created_at=msg.created_at,
                                                                content=text))
                self._inserted.append(message_id)  # not an append: the view mounts it above its answer
                return True
        return False

    # ----------------------------------------------------------------- history
    def load_history(self, history: ThreadMessages) -> None:
        """Replace the messages with a history page; the cursor becomes ``nextEventId - 1``."""
        history = _visible_model(history)
        self.messages = []
        self._by_group = {}
        self._group_of_run = {}
        self._invalidate_hot()
        self.active_run_id = None
        for item in history.messages:
            if item.superseded:
                continue
            if item.role == "assistant":
                self._adopt_history_message(item)
            else:
                msg = ConversationMessage(item.id, "user", created_at=item.created_at, content=item.content)
                self.messages.append(msg)
        self.cursor = max(0, history.next_event_id - 1)
        self._reset = True
        self._added.clear()
        self._inserted.clear()
        self._dirty.clear()
        self._confirmations_changed = True
        self._streaming_changed = True

    def _adopt_history_message(self, item: InstanceAiMessage) -> None:
        group = item.message_group_id or item.run_id or item.id
        run_ids = list(item.run_ids or ([item.run_id] if item.run_id else []))
        tree = item.agent_tree
        if tree is None:
            root_id = f"orchestrator-{item.run_id}" if item.run_id else "agent-001"
            tree = AgentNode(agent_id=root_id, text_content=item.content, reasoning=item.reasoning, status="completed")
        reducer = RunReducer.from_tree(tree, aliases=[f"orchestrator-{r}" for r in run_ids])
        reducer.drain_changes()
        msg = ConversationMessage(
            item.id,
            "assistant",
            created_at=item.created_at,
            reducer=reducer,
            run_id=item.run_id,
            message_group_id=group,
        )
        msg.run_ids = run_ids
        msg.is_streaming = item.is_streaming
        if item.is_streaming and item.run_id:  # a run still going (waiting for an answer): the thread's active run
            self.active_run_id = item.run_id
        self.messages.append(msg)
        self._by_group[group] = msg
        for run_id in run_ids:
            self._group_of_run[run_id] = group

    # ----------------------------------------------------------------- events
    def _hot_message(self, run_id: Any) -> ConversationMessage | None:
        """The message a hot event of ``run_id`` folds into (cached for the next one)."""
        hot = self._hot_msg
        if run_id == self._hot_run and hot is not None:
            return hot
        if type(run_id) is not str:
            return None
        msg = self._by_group.get(self._group_of_run.get(run_id, run_id))
        if msg is None or msg.reducer is None:
            return None
        self._hot_run, self._hot_msg = run_id, msg
        return msg

    def fold(self, items: Iterable[Item]) -> list[StreamItem]:
        """Fold a batch of stream items (``protocol.ingest``: the one way in). Returns the items
        other than deltas and statuses, made visible, for a reader that reacts to them too (the
        app's projection: run start and finish, the n8n panel).

        An item whose id is ``<= cursor`` was seen already and is dropped; the cursor moves to the
        largest id seen; items without an id always fold. Never raises: what cannot fold is noted
        in ``diagnostics``."""
        notable: list[StreamItem] = []
        for item in items:
            if type(item) is DeltaRun:
                self._fold_run(item)
                continue
            event_id, event = item.id, item.model  # type: ignore[union-attr]
            if event_id is not None:
                if event_id <= self.cursor:
                    continue
                self.cursor = event_id
            kind = type(event)
            if kind is TextDeltaEvent or kind is ReasoningDeltaEvent or kind is StatusEvent:
                self._fold_hot(event)  # type: ignore[arg-type]
                continue
            try:
                if kind is RunSyncPayload:
                    visible_sync = _visible_model(event)
                    self.apply_run_sync(visible_sync)  # type: ignore[arg-type]
                    notable.append(item if visible_sync is event else StreamItem(event_id, visible_sync))  # type: ignore[arg-type]
                elif isinstance(event, EventBase):
                    visible_event = _visible_model(event)
                    self._apply_event(visible_event)  # type: ignore[arg-type]
                    notable.append(item if visible_event is event else StreamItem(event_id, visible_event))  # type: ignore[arg-type]
                else:
                    self.diagnostics.append(f"not an event model: {type(event).__name__} (JSON goes through "
                                            "protocol.ingest.decode)")
            except Exception as exc:  # noqa: BLE001 - folding must never raise
                self.diagnostics.append(f"could not apply frame: {type(exc).__name__}: {exc}")
        return notable

    def _fold_hot(self, event: Event) -> None:
        """A streamed delta or status model: straight to its message's reducer (which never raises),
        its text made visible (most pass ``isprintable``; a newline costs a search)."""
        payload: Any = event.payload
        text = payload.text if type(payload) is TextPayload else payload.message
        if not text.isprintable() and _unsafe(text) is not None:
            event = _visible_hot(event)
        hot = self._hot_msg
        if event.run_id != self._hot_run or hot is None:
            hot = self._hot_message(event.run_id)
        if hot is not None and hot.reducer is not None:
            hot.reducer.apply(event)
            if not hot.dirty:
                self._mark(hot)
            return
        try:
            self._apply_event(_visible_model(event))  # (a run without its run-start: a placeholder)
        except Exception as exc:  # noqa: BLE001 - folding must never raise
            self.diagnostics.append(f"could not apply frame: {type(exc).__name__}: {exc}")

    def _fold_run(self, run: DeltaRun) -> None:
        """A run of deltas (``DeltaRun``): into the same conversation as its deltas one by one. The
        ones at or below the cursor are dropped; a run whose message is missing (no run-start seen)
        folds its first delta as a model (which makes the placeholder message), then the rest."""
        ids = run.ids
        if ids is not None:
            cursor = self.cursor
            if ids[-1] <= cursor:
                return
            if ids[0] <= cursor:
                run = run.after(cursor)
            self.cursor = ids[-1]
        hot = self._hot_msg
        if run.run_id != self._hot_run or hot is None:
            hot = self._hot_message(run.run_id)
        while hot is None or hot.reducer is None:  # (one at a time until one made the placeholder)
            from .events import parse_event

            self._fold_hot(parse_event(run.wire(0)))
            if run.count == 1:
                return
            run = run.tail(1)
            hot = self._hot_message(run.run_id)
        hot.reducer.apply(_visible_run(run))
        if not hot.dirty:
            self._mark(hot)

    def _apply_event(self, event: Event) -> None:
        kind = event.type
        if kind == "run-start":
            self._on_run_start(event)  # type: ignore[arg-type]
            return
        if kind == "thread-title-updated":
            assert isinstance(event, ThreadTitleUpdatedEvent)
            self.title = event.payload.title
            self._title_changed = True
            return
        if kind in _NO_TREE_TYPES or isinstance(event, UnknownEvent):
            return
        msg = self.message_for_run(event.run_id)
        if msg is None or msg.reducer is None:
            msg = self._placeholder(event)
        msg.reducer.apply(event)  # type: ignore[union-attr]
        self._mark(msg)
        if kind in _CONFIRMATION_TYPES:
            self._confirmations_changed = True
        if kind == "tasks-update":
            assert isinstance(event, TasksUpdateEvent)
            self.latest_tasks = event.payload.tasks
            self._tasks_changed = True
        elif kind == "run-finish":
            assert isinstance(event, RunFinishEvent)
            self._on_run_finish(event, msg)

    def _on_run_start(self, event: RunStartEvent) -> None:
        run_id = event.run_id
        group = event.payload.message_group_id or run_id
        self._group_of_run[run_id] = group
        self._invalidate_hot()
        msg = self._by_group.get(group)
        if msg is not None and msg.reducer is not None:
            msg.reducer.apply(event)
            msg.run_id = run_id
            if run_id not in msg.run_ids:
                msg.run_ids.append(run_id)
            self._mark(msg)
        else:
            self._user_message_from(event)
            reducer = RunReducer(event.agent_id)
            reducer.apply(event)
            msg = ConversationMessage(
                run_id,
                "assistant",
                created_at=_when(event.ts),
                reducer=reducer,
                run_id=run_id,
                message_group_id=group,
            )
            self._by_group[group] = msg
            self._append(msg)
        msg.is_streaming = True
        self.active_run_id = run_id
        self._streaming_changed = True
        self._confirmations_changed = True

    def _user_message_from(self, event: RunStartEvent) -> None:
        extra = event.payload.model_extra or {}
        raw = extra.get("userMessage")
        message_id = extra.get("userMessageId")
        if isinstance(raw, dict):
            message_id = raw.get("id", message_id)
            raw = raw.get("content", raw.get("text"))
        if not isinstance(raw, str) or not raw:
            return
        shown = raw + attachment_lines(extra.get("attachments"))
        for msg in reversed(self.messages):
            if msg.role == "assistant":
                break
            if msg.local and msg.content == raw:
                msg.local = False
                if shown != raw:  # the attachments read by the server: shown under the words typed
                    msg._content = shown
                    self._mark(msg)
                return
        msg = ConversationMessage(
            str(message_id) if message_id else f"user-{event.run_id}", "user", created_at=_when(event.ts), content=shown
        )
        self._append(msg)

    def _placeholder(self, event: Event) -> ConversationMessage:
        """A message for events of a run whose ``run-start`` was missed (e.g. reconnect)."""
        run_id = event.run_id
        group = self._group_of_run.get(run_id, run_id)
        self._group_of_run[run_id] = group
        self._invalidate_hot()
        root_id = event.payload.parent_id if isinstance(event, AgentSpawnedEvent) else event.agent_id
        msg = ConversationMessage(
            group,
            "assistant",
            created_at=_when(event.ts),
            reducer=RunReducer(root_id or "agent-001"),
            run_id=run_id,
            message_group_id=group,
        )
        msg.is_streaming = True
        self._by_group[group] = msg
        self._append(msg)
        self.diagnostics.append(f"{event.type} for run {run_id!r} without run-start: placeholder message")
        return msg

    def _on_run_finish(self, event: RunFinishEvent, msg: ConversationMessage) -> None:
        for workflow_id in event.payload.archived_workflow_ids or ():
            if workflow_id not in self.archived_workflow_ids:
                self.archived_workflow_ids.append(workflow_id)
        run_id = event.run_id
        if run_id == self.active_run_id or run_id == msg.run_id:
            msg.is_streaming = False
            self._streaming_changed = True
        if run_id == self.active_run_id:
            self.active_run_id = None

    # ----------------------------------------------------------------- run-sync
    def apply_run_sync(self, sync: RunSyncPayload | dict[str, Any]) -> None:
        """Replace the tree of a live message group with the server's snapshot."""
        if not isinstance(sync, RunSyncPayload):
            sync = RunSyncPayload.model_validate(sync)
        sync = _visible_model(sync)
        run_id = sync.run_id
        group = sync.message_group_id or self._group_of_run.get(run_id, run_id)
        msg = self._by_group.get(group) or self.message_for_run(run_id)
        run_ids = list(dict.fromkeys([*sync.run_ids, run_id] if run_id else sync.run_ids))
        aliases = [f"orchestrator-{r}" for r in run_ids]
        if msg is None:
            msg = ConversationMessage(group, "assistant", run_id=run_id, message_group_id=group)
            self._append(msg)
        else:
            self._mark(msg)
        if sync.agent_tree is not None:
            msg.reducer = RunReducer.from_tree(sync.agent_tree, aliases=aliases)
        elif msg.reducer is None:
            msg.reducer = RunReducer(aliases[0] if aliases else "agent-001")
        msg.run_id = run_id or msg.run_id
        msg.message_group_id = group
        msg.run_ids = run_ids or msg.run_ids
        self._by_group[group] = msg
        for rid in run_ids:
            self._group_of_run[rid] = group
        self._invalidate_hot()
        msg.is_streaming = sync.status in ("active", "suspended")
        if msg.is_streaming and run_id:
            self.active_run_id = run_id
        elif self.active_run_id is not None and self.active_run_id in run_ids:
            self.active_run_id = None  # the frame says the run has ended
        self._streaming_changed = True
        self._confirmations_changed = True

    # ----------------------------------------------------------------- change tracking
    def drain_changes(self) -> ConversationChanges:
        changes = ConversationChanges(
            reset=self._reset,
            added=self._added,
            streaming=self._streaming_changed,
            title=self._title_changed,
            tasks=self._tasks_changed,
            confirmations=self._confirmations_changed,
            inserted=[] if self._reset else self._inserted,
        )
        self._added = []
        self._inserted = []
        self._reset = self._streaming_changed = self._title_changed = False
        self._tasks_changed = self._confirmations_changed = False
        added = set(changes.added)
        for msg in self._dirty:
            msg.dirty = False
            if msg.reducer is None:
                if msg.role == "user" and msg.id not in added and not changes.reset:
                    changes.users.append(msg.id)
                continue
            reducer_changes = msg.reducer.drain_changes()
            if msg.id not in added and not changes.reset and not reducer_changes.empty:
                changes.messages[msg.id] = reducer_changes
        self._dirty.clear()
        if changes.reset:
            for msg in self.messages:
                if msg.reducer is not None:
                    msg.reducer.drain_changes()
        return changes

    def _mark(self, msg: ConversationMessage) -> None:
        if not msg.dirty:
            msg.dirty = True
            self._dirty.append(msg)

    def _append(self, msg: ConversationMessage) -> None:
        self.messages.append(msg)
        self._added.append(msg.id)
        self._mark(msg)

    def _invalidate_hot(self) -> None:
        self._hot_run = None
        self._hot_msg = None
