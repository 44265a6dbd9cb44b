"""Deltas typed without a model (``protocol.ingest.decode``: a ``DeltaRun``): the remote and the
embedded client hand text and reasoning deltas over as runs in their batches, ``events()`` still
gives every event as its model, and the conversation folds both to the same tree."""

from __future__ import annotations

import json
from typing import Any

from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.client.sse import SseFrame
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import TextDeltaEvent, parse_event
from instance_ai_tui.protocol.ingest import Batch, DeltaRun, StreamItem, decode, events_of


def _events() -> list[dict[str, Any]]:
    run, root = "run-1", "agent-001"
    out: list[dict[str, Any]] = [
        {"type": "run-start", "runId": run, "agentId": root, "payload": {"messageId": "m1", "messageGroupId": "g1",
                                                                         "userMessage": "hi"}},
        {"type": "reasoning-delta", "runId": run, "agentId": root, "payload": {"text": "thinking "}},
        {"type": "status", "runId": run, "agentId": root, "payload": {"message": "looking"}},
    ]
    out += [{"type": "text-delta", "runId": run, "agentId": root, "responseId": "r1", "payload": {"text": f"w{i} "}}
            for i in range(20)]
    out.append({"type": "text-delta", "runId": run, "agentId": root, "payload": {"text": "\x1b[2Jcleared?"}})
    out.append({"type": "tool-call", "runId": run, "agentId": root,
                "payload": {"toolCallId": "c1", "toolName": "list-workflows", "args": {}}})
    out.append({"type": "run-finish", "runId": run, "agentId": root, "payload": {"status": "completed"}})
    return out


def _timeless(value: Any) -> Any:
    """``value`` without its creation times (the two conversations were folded a moment apart)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("createdAt", "updatedAt")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _frames() -> list[SseFrame]:
    return [SseFrame(data=json.dumps(e, separators=(",", ":")), id=i + 1, raw_id=str(i + 1))
            for i, e in enumerate(_events())]


def test_a_delta_is_typed_as_a_run_of_one_and_its_model_is_the_same() -> None:
    data = {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "hello"}}
    item = decode(7, data)
    assert type(item) is DeltaRun and item.ids == [7] and item.all_texts() == ["hello"] and item.count == 1
    (event,) = events_of(item)
    assert event == StreamItem(7, parse_event(data)) and isinstance(event.event, TextDeltaEvent)


def test_the_remote_client_types_deltas_without_a_model() -> None:
    client = RemoteClient("http://127.0.0.1:9")
    items = [item for frame in _frames() for item in client.batch_of([frame], 0).items]
    assert len(items) == len(_events())
    kinds = {item.type if type(item) is DeltaRun else item.event.type: type(item).__name__  # type: ignore[union-attr]
             for item in items}
    assert kinds == {"run-start": "StreamItem", "reasoning-delta": "DeltaRun", "status": "StreamItem",
                     "text-delta": "DeltaRun", "tool-call": "StreamItem", "run-finish": "StreamItem"}
    broken = client.batch_of([SseFrame(data='{"type":"text-delta","runId":"r","agentId":"a","payload":{"text":', id=99)], 0)
    assert broken.items == [] and "malformed" in client.diagnostics[-1]


def test_a_batch_and_its_events_one_by_one_fold_to_the_same_conversation() -> None:
    client = RemoteClient("http://127.0.0.1:9")
    batch = client.batch_of(list(_frames()), 0)
    assert isinstance(batch, Batch) and batch.count == len(_events()) and len(batch.items) < len(_events())
    models = [event for item in client.batch_of(list(_frames()), 0).items for event in events_of(item)]
    as_batch, as_models = Conversation("t"), Conversation("t")
    as_batch.fold(batch.items)
    for item in models:
        as_models.fold([item])
    batch_trees = [_timeless(m.to_wire()) for m in as_batch.messages]
    assert batch_trees == [_timeless(m.to_wire()) for m in as_models.messages]
    text = json.dumps(batch_trees)
    assert "\\u001b[2J" not in text and "cleared?" in text  # the terminal sequence made visible, not kept


async def test_the_embedded_client_reads_a_page_of_the_log_as_one_batch() -> None:
    from collections.abc import AsyncIterator

    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.protocol.ingest import Page
    from instance_ai_tui.store.base import StoredEvent

    events = _events()

    class Log:
        """The part of the assistant service ``EmbeddedClient`` reads: events from the log."""

        async def get_thread(self, thread_id: str) -> None:
            return None

        async def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
            rows = [StoredEvent(thread_id, index, event["type"], event["runId"], json.dumps(event))
                    for index, event in enumerate(events[after:], start=after + 1)]
            for start in range(0, len(rows), 10):  # pages of ten, saying what waits behind them
                yield Page(rows[start:start + 10], max(0, len(rows) - start - 10))

    client = EmbeddedClient(Log())  # type: ignore[arg-type]
    models = [item async for item in client.events("t")]
    assert [item.event.type for item in models] == [e["type"] for e in events]  # type: ignore[union-attr]
    batches = [batch async for batch in client.batches("t")]
    assert [batch.queued for batch in batches] == [16, 6, 0]
    assert sum(batch.count for batch in batches) == len(events)
    assert any(type(item) is DeltaRun and item.count == 10 for item in batches[1].items)
