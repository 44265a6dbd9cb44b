"""An honest end after a storage outage (issue 26, item 6): a run that failed because the storage was
down, and could not record its end, is not swept later as if its process had crashed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from instance_ai_tui.assistant.errors import STORAGE_UNAVAILABLE
from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.runtime.scripted import ScriptedModel
from instance_ai_tui.store.base import RunRecord
from instance_ai_tui.store.errors import StorageUnavailable
from instance_ai_tui.store.sqlite import SqliteStore

from .conftest import collect, types


async def test_a_run_that_failed_on_storage_is_swept_as_a_storage_failure_not_a_crash(db_path: Path,
                                                                                       make_ai: Any) -> None:
    store = SqliteStore(db_path)
    await store.open()
    bus = InProcessBus(store)
    run_id, root = "run_outage", "orchestrator-run_outage"
    await store.upsert_run(RunRecord(run_id=run_id, thread_id="outage", status="active", message_group_id="mg",
                                     started_at=datetime.now(UTC), data={"messageId": "m1", "userMessage": "hi"}))
    base = {"runId": run_id, "ts": 1_700_000_000_000}
    await bus.publish_many("outage", [parse_event(event) for event in [
        {**base, "type": "run-start", "agentId": root, "payload": {"messageId": "m1"}},
        {**base, "type": "error", "agentId": root,
         "payload": {"content": f"{STORAGE_UNAVAILABLE} (Redis refused)", "code": "redis_down"}},
    ]])  # ... and then the storage was gone: neither run-finish nor the record's end were stored
    await bus.close()
    await store.close()

    ai = await make_ai(ScriptedModel(["fresh"]))
    events = [e.data() for e in await ai.store.read_events("outage", after=2)]
    assert types(events) == ["run-finish"]
    assert events[-1]["payload"] == {"status": "error", "reason": STORAGE_UNAVAILABLE}
    assert (await ai.store.get_run(run_id)).status == "error"


class FlakyBus(InProcessBus):
    """The real in-process bus whose storage refuses a run's end a few times, as during an outage."""

    def __init__(self, store: SqliteStore, refusals: int) -> None:
        super().__init__(store)
        self.refusals = refusals

    async def publish_many(self, thread_id: str, events: Any, **kwargs: Any) -> Any:
        if self.refusals and any(getattr(e, "type", None) == "run-finish" for e in events):
            self.refusals -= 1
            raise StorageUnavailable("the storage is down for now")
        return await super().publish_many(thread_id, events, **kwargs)


async def test_the_run_finish_is_held_and_retried_while_the_storage_is_down(db_path: Path) -> None:
    store = SqliteStore(db_path)
    bus = FlakyBus(store, refusals=3)
    ai = InstanceAI(store, bus, model=ScriptedModel(["All done."]), options=AssistantOptions(generate_titles=False))
    await ai.start()
    try:
        run_id = await ai.send("flaky", "hello there")
        events = await collect(ai, "flaky")
        assert events[-1]["type"] == "run-finish" and events[-1]["payload"]["status"] == "completed"
        assert bus.refusals == 0  # it was refused three times, then stored
        assert (await ai.store.get_run(run_id)).status == "completed"  # not left active for a sweep
    finally:
        await ai.shutdown()
