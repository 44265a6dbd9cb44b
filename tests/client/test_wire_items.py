"""Hot events as decoded JSON (``StreamItem.wire``, issue 30 item 3): the remote client hands text
deltas, reasoning deltas and status events over without building a model; every consumer that
reads ``event`` still gets the model, and the conversation folds both forms to the same tree."""

from __future__ import annotations

import json
from typing import Any

from instance_ai_tui.client.base import StreamItem, wire_item
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.client.sse import SseFrame
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import TextDeltaEvent, parse_event


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


def test_a_hot_event_is_kept_as_wire_and_parsed_only_when_read() -> None:
    data = {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "hello"}}
    item = wire_item(7, data)
    assert item is not None and item.wire is data and not item.parsed
    event = item.event
    assert isinstance(event, TextDeltaEvent) and event.payload.text == "hello" and item.parsed
    assert item == StreamItem(7, parse_event(data))


def test_what_is_not_a_well_formed_hot_event_is_parsed_as_before() -> None:
    assert wire_item(1, {"type": "tool-call", "runId": "r", "agentId": "a", "payload": {}}) is None
    assert wire_item(1, {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": 3}}) is None
    assert wire_item(1, {"type": "status", "runId": 5, "agentId": "a", "payload": {"message": "m"}}) is None
    assert wire_item(1, ["text-delta"]) is None


def test_the_remote_client_hands_hot_frames_over_unparsed() -> None:
    client = RemoteClient("http://127.0.0.1:9")
    items = [client.frame_item(frame) for frame in _frames()]
    assert all(item is not None for item in items)
    kinds = {item.wire["type"] if not item.parsed else item.event.type: item.parsed  # type: ignore[union-attr]
             for item in items if item is not None}
    assert kinds == {"run-start": True, "reasoning-delta": False, "status": False, "text-delta": False,
                     "tool-call": True, "run-finish": True}
    broken = client.frame_item(SseFrame(data='{"type":"text-delta","runId":"r","agentId":"a","payload":{"text":', id=99))
    assert broken is None and "malformed" in client.diagnostics[-1]


def test_both_forms_fold_to_the_same_conversation() -> None:
    client = RemoteClient("http://127.0.0.1:9")
    items = [item for item in (client.frame_item(frame) for frame in _frames()) if item is not None]
    as_wire, as_models = Conversation("t"), Conversation("t")
    for item in items:
        if not item.parsed:
            assert item.wire is not None
            as_wire.apply_wire(item.id, item.wire)
        else:
            assert item.event is not None
            as_wire.apply(item.id, item.event)
    for item in items:
        assert item.event is not None
        as_models.apply(item.id, item.event)
    wire_trees = [_timeless(m.to_wire()) for m in as_wire.messages]
    assert wire_trees == [_timeless(m.to_wire()) for m in as_models.messages]
    text = json.dumps(wire_trees)
    assert "\\u001b[2J" not in text and "cleared?" in text  # the terminal sequence made visible, not kept


async def test_the_embedded_client_hands_hot_events_from_the_log_over_unparsed() -> None:
    from collections.abc import AsyncIterator

    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.store.base import StoredEvent

    events = _events()

    class Log:
        """The part of the assistant service ``EmbeddedClient.events`` reads: events from the log."""

        async def get_thread(self, thread_id: str) -> None:
            return None

        async def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
            rows = [StoredEvent(thread_id, index, event["type"], event["runId"], json.dumps(event))
                    for index, event in enumerate(events[after:], start=after + 1)]
            for start in range(0, len(rows), 3):  # pages of three
                yield rows[start:start + 3]

    client = EmbeddedClient(Log())  # type: ignore[arg-type]
    items = [item async for item in client.events("t")]
    assert [item.parsed for item in items] == [e["type"] not in ("text-delta", "reasoning-delta", "status")
                                               for e in events]
    assert [item.event.type for item in items if item.event is not None] == [e["type"] for e in events]
