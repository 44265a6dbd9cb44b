"""The assistant's typed events on their way into the log: built as protocol models, stamped and
serialised once by the ``RunEmitter``, stored by the real bus over a real SQLite file."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from instance_ai_tui.aio import aclosing
from instance_ai_tui.assistant.emitter import RunEmitter, agent_completed, error_event
from instance_ai_tui.assistant.mapping import ChunkMapper
from instance_ai_tui.bus.base import to_new_event
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.events import (
    AgentCompletedEvent,
    ErrorEvent,
    RunFinishEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
    parse_event,
)
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.runtime.chunks import TextDeltaChunk, ToolCallChunk, ToolResultChunk
from instance_ai_tui.store.base import NewEvent, StoredEvent
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.fold import apply_all_wire
from tests.support.waiting import until

RUN = "run_e"
ROOT = f"orchestrator-{RUN}"


_ticks = itertools.count(1_700_000_000_001)


def clock() -> int:
    return next(_ticks)


async def test_mapped_chunks_are_stored_as_the_models_serialise(bus: InProcessBus, store: SqliteStore) -> None:
    emitter = RunEmitter(bus, "t", RUN, clock=clock)
    mapper = ChunkMapper(emitter, ROOT)
    mapper.handle(TextDeltaChunk(RUN, "r1", "Hel"))
    mapper.handle(TextDeltaChunk(RUN, "r1", "lo"))
    mapper.handle(ToolCallChunk(RUN, "r1", "tc1", "list-files", {"path": "."}))
    mapper.handle(ToolResultChunk(RUN, "r1", "tc1", "list-files", result={"files": ["a", None]}))
    mapper.handle(ToolCallChunk(RUN, "r1", "tc2", "read-file", {"path": "x"}))
    mapper.handle(ToolResultChunk(RUN, "r1", "tc2", "read-file", error="no such file", is_error=True))
    emitter.emit(agent_completed("agent-x", "builder", "completed", "built"))
    emitter.emit(error_event(ROOT, "quota", 429))
    finish = emitter.run_finish(ROOT, "completed", usage={"inputTokens": 3})
    await emitter.finish(finish)

    stored = [item async for item in store.iter_events("t")]
    kinds = [item.type for item in stored]
    assert kinds == [
        "text-delta", "text-delta", "tool-call", "status", "tool-result", "status", "tool-call", "status",
        "tool-error", "status", "agent-completed", "error", "run-finish",
    ]
    assert [item.id for item in stored] == list(range(1, 14)) and emitter.first_id == 1
    models = [parse_event(item.json) for item in stored]
    # what was stored is exactly the models' one serialisation: it parses back to an equal model
    # that serialises to the same text
    assert [m.to_json() for m in models] == [item.json for item in stored]
    assert all(item.run_id == RUN for item in stored)
    first = json.loads(stored[0].json)
    assert list(first) == ["type", "runId", "agentId", "responseId", "ts", "payload"]
    assert first == {"type": "text-delta", "runId": RUN, "agentId": ROOT, "responseId": "r1",
                     "ts": first["ts"], "payload": {"text": "Hel"}}
    assert isinstance(models[0], TextDeltaEvent) and isinstance(models[2], ToolCallEvent)
    assert isinstance(models[4], ToolResultEvent) and models[4].payload.result == {"files": ["a", None]}
    assert isinstance(models[8], ToolErrorEvent) and models[8].payload.error == "no such file"
    assert isinstance(models[10], AgentCompletedEvent) and "error" not in json.loads(stored[10].json)["payload"]
    assert isinstance(models[11], ErrorEvent) and json.loads(stored[11].json)["payload"] == {
        "content": "quota", "statusCode": 429}
    assert isinstance(models[12], RunFinishEvent)
    assert json.loads(stored[12].json)["payload"] == {"status": "completed", "usage": {"inputTokens": 3}}
    stamps = [m.ts or 0 for m in models]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps) and stamps[0] > 1_700_000_000_000
    # and the stored log folds like the models themselves
    assert RunReducer().apply_all(models).tree_dict() == apply_all_wire(RunReducer(), [
        item.json for item in stored]).tree_dict()

    emitter.emit(error_event(ROOT, "too late"))
    assert emitter.dropped == 1
    assert await store.last_event_id("t") == 13


async def test_a_bad_event_of_a_batch_is_reported_not_raised(bus: InProcessBus, store: SqliteStore) -> None:
    emitter = RunEmitter(bus, "t", RUN)
    emitter.emit(error_event(ROOT, "fine"))
    await emitter.flush()
    bad = error_event(ROOT, "unserialisable")
    bad.payload.__pydantic_extra__ = {"blob": object()}
    emitter.emit(bad)
    await emitter.flush()
    assert emitter.failures == 1 and emitter.last_error is not None
    assert await store.last_event_id("t") == 1


async def test_the_bus_takes_typed_events_only(bus: InProcessBus, store: SqliteStore) -> None:
    typed = RunEmitter(bus, "t", RUN).stamp(error_event(ROOT, "typed"))
    stored = await bus.publish_many("t", [typed])
    assert [s.id for s in stored] == [1] and stored[0].event is typed
    assert stored[0].json == to_new_event(typed).json and stored[0].run_id == RUN
    for wrong in ({"type": "status", "runId": RUN, "payload": {"message": "as a dict"}},
                  NewEvent(type="status", run_id=RUN, json="{}")):
        with pytest.raises(TypeError, match="protocol events"):
            await bus.publish_many("t", [wrong])  # type: ignore[list-item]
    assert await store.last_event_id("t") == 1


async def test_a_subscriber_in_process_gets_the_model_the_emitter_built(bus: InProcessBus, store: SqliteStore) -> None:
    """One token is validated once: the live subscriber holds the emitter's own object (no JSON
    parsed back); what is read back from the log is its JSON, equal to it when parsed."""
    emitter = RunEmitter(bus, "t", RUN)

    async def follow() -> list[StoredEvent]:
        async with aclosing(bus.subscribe("t")) as live:
            return [await anext(live) for _ in range(5)]

    follower = asyncio.ensure_future(follow())
    await until(lambda: bus.subscriber_count("t") == 1, what="the subscription is live")
    built = [emitter.text_delta(ROOT, f"tok{n} ") for n in range(5)]
    for event in built:
        emitter.emit(event)
    received = await follower
    assert [item.event for item in received] == built
    assert all(item.event is event for item, event in zip(received, built, strict=True))
    replayed = await store.read_events("t")
    assert [item.event for item in replayed] == [None] * 5
    assert [parse_event(item.json) for item in replayed] == built
