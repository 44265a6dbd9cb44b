"""The messages endpoint: a thread's conversation as ``InstanceAiMessage`` objects with agent trees.

Every run gives a user message (the text it was started with) and an assistant message whose
``content``/``reasoning`` are the root agent's and whose ``agentTree`` is the run's snapshot
(finished runs) or its events folded now (active or suspended runs, ``isStreaming`` true).

``nextEventId`` is consistent with the trees: snapshots are read first, then the last event id
``L``, then unfinished runs are folded from their events up to ``L``. A client that sets its
cursor to ``nextEventId - 1 = L`` receives exactly the events the trees do not contain.
The thread's ``metadata`` (with its token/cost total, ``assistant.usage``) is read after ``L``:
it counts every run whose ``run-finish`` is at or before ``L`` (a run's usage is added before
its ``run-finish`` is stored), and at most the next one, named by ``usage.lastRunId``.
Pending confirmations that expired are marked ``expired`` on their tool call.

Paging (n8n's ``?limit=&page=``): a page holds the runs of the newest ``limit`` messages (two
per run: the user's and the answer), page 0 the newest; only those runs' snapshots are read
and validated, so opening a 1,000-run thread costs a page, not the thread. ``hasMore`` says
whether older runs exist.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

from ..protocol.api import InstanceAiMessage, ThreadMessages
from ..protocol.conversation import attachment_lines
from ..protocol.reducer import build_agent_tree_wire
from ..protocol.tree import AgentNode
from ..store.base import EventLog, RunRecord, RunRecords, SnapshotStore, ThreadStore
from .confirmations import PendingConfirmation
from .run_manager import RunManager


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _mark_expired(tree: AgentNode, expired_calls: set[str]) -> None:
    if not expired_calls:
        return
    stack = [tree]
    while stack:
        node = stack.pop()
        for call in node.tool_calls:
            if call.tool_call_id in expired_calls and call.confirmation is not None:
                call.confirmation.expired = True
        stack.extend(node.children)


def _expired_calls(record: RunRecord, now: float) -> set[str]:
    out: set[str] = set()
    for raw in (record.data.get("confirmations") or {}).values():
        try:
            pending = PendingConfirmation.model_validate(raw)
        except ValueError:
            continue
        if pending.expired(now):
            out.add(pending.tool_call_id)
    return out



#: runs listed beyond a page when it is listed again (the runs that started or finished meanwhile)
_SLACK = 8


class HistoryStorage(ThreadStore, EventLog, RunRecords, SnapshotStore, Protocol):
    """What the history of a thread reads: the thread, its runs, their snapshots, the event log's end."""

async def thread_messages(
    store: HistoryStorage, manager: RunManager, thread_id: str, *, limit: int | None = None, page: int = 0
) -> ThreadMessages:
    """The thread's messages; with ``limit``, page ``page`` of them (see the module docstring)."""
    has_more: bool | None = None
    if limit is None:
        snapshots = await store.get_snapshots(thread_id)
        last_id = await store.last_event_id(thread_id)
        runs = await store.list_runs(thread_id=thread_id)
    else:
        # only the page's runs are read (and one more: whether older ones exist), not the thread's
        per_page = max(1, (limit + 1) // 2)
        listed = await store.list_runs(thread_id=thread_id, limit=per_page + 1, skip_newest=page * per_page)
        has_more = len(listed) > per_page
        listed = listed[-per_page:] if listed else []
        page_ids = {record.run_id for record in listed}
        snapshots = await store.get_snapshots(thread_id, [record.run_id for record in listed])
        last_id = await store.last_event_id(thread_id)
        # listed again after L, as without paging: a run that started meanwhile is on page 0
        # (folded up to L), and one that finished meanwhile is folded from its events (a thread
        # runs one run at a time: a few more than the page cover what started since)
        again = await store.list_runs(thread_id=thread_id, limit=per_page + _SLACK,
                                      skip_newest=max(0, page * per_page - _SLACK))
        if page == 0:
            first = next((index for index, record in enumerate(again) if record.run_id in page_ids), len(again))
            runs = again[first:] if page_ids else again
        else:
            runs = [record for record in again if record.run_id in page_ids]
    now = time.time()
    messages: list[InstanceAiMessage] = []
    for record in runs:
        data = record.data
        if data.get("neverStarted"):
            continue  # a crash stopped POST chat before run-start: the sender got an error, not a run
        started = _aware(record.started_at)
        messages.append(InstanceAiMessage(
            id=str(data.get("messageId") or f"{record.run_id}-user"), run_id=record.run_id,
            message_group_id=record.message_group_id, role="user", created_at=started,
            content=str(data.get("userMessage") or "") + attachment_lines(data.get("attachments")),
            superseded=bool(data.get("superseded")),
        ))
        unfinished = record.status in ("active", "suspended")
        snapshot = snapshots.get(record.run_id)
        if snapshot is not None and not unfinished:
            tree = AgentNode.model_validate(snapshot)
        else:
            events = await manager.run_events(thread_id, record.run_id, data.get("firstEventId"), upto=last_id)
            if not events:
                continue
            tree = build_agent_tree_wire([e.json for e in events])
            if record.status == "active" and events[-1].type == "run-finish":
                unfinished = False  # finishing: run-finish is in the log, the record follows it
        if record.status == "suspended":
            _mark_expired(tree, _expired_calls(record, now))
        messages.append(InstanceAiMessage(
            id=record.message_group_id or record.run_id, run_id=record.run_id,
            message_group_id=record.message_group_id, run_ids=[record.run_id], role="assistant",
            created_at=_aware(record.finished_at or record.started_at), content=tree.text_content,
            reasoning=tree.reasoning, is_streaming=unfinished, agent_tree=tree,
            superseded=bool(data.get("superseded")),
        ))
    thread = await store.get_thread(thread_id)
    return ThreadMessages(thread_id=thread_id, messages=messages, next_event_id=last_id + 1,
                          metadata=dict(thread.metadata) if thread is not None else None, has_more=has_more)

