"""RedisStore against a real redis-server: the Store protocol's behaviour."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from instance_ai_tui.store.base import CheckpointRecord, MessageRecord, NewEvent, RunRecord, Store, ThreadNotFound
from instance_ai_tui.store.redis import RedisStore


@pytest.fixture
async def store(redis_client) -> RedisStore:
    s = RedisStore(redis_client, prefix="t:")
    await s.open()
    return s


def now() -> datetime:
    return datetime.now(UTC)


def ev(i: int, run: str = "r1") -> NewEvent:
    data = {"type": "text-delta", "runId": run, "agentId": "a", "payload": {"text": f"t{i}"}}
    return NewEvent("text-delta", run, json.dumps(data, separators=(",", ":")))


async def test_is_a_store(store: RedisStore) -> None:
    assert isinstance(store, Store)


async def test_threads_crud_and_order(store: RedisStore) -> None:
    await store.create_thread("a", "Alpha")
    await asyncio.sleep(0.01)  # the scenario: a later time stamp
    await store.create_thread("b", "Beta", {"k": 1})
    again = await store.create_thread("b", "ignored")
    assert again.title == "Beta" and again.metadata == {"k": 1}
    assert [t.id for t in await store.list_threads()] == ["b", "a"]
    await asyncio.sleep(0.01)  # the scenario: a later time stamp
    renamed = await store.update_thread("a", title="Alpha 2", metadata={"x": True})
    assert renamed.title == "Alpha 2" and renamed.metadata == {"x": True}
    assert [t.id for t in await store.list_threads()] == ["a", "b"]
    assert [t.id for t in await store.list_threads(search="beT")] == ["b"]
    assert len(await store.list_threads(limit=1)) == 1
    with pytest.raises(ThreadNotFound):
        await store.update_thread("nope", title="x")
    await store.append_events("a", [ev(1)])
    assert await store.delete_thread("a") is True
    assert await store.get_thread("a") is None
    assert await store.last_event_id("a") == 0
    assert await store.delete_thread("a") is False


async def test_event_ids_are_gap_free_under_concurrency(store: RedisStore) -> None:
    async def writer(k: int) -> list[int]:
        ids: list[int] = []
        for i in range(20):
            stored = await store.append_events("t", [ev(i, f"r{k}"), ev(i + 1, f"r{k}")])
            ids += [e.id for e in stored]
        return ids

    results = await asyncio.gather(*(writer(k) for k in range(5)))
    all_ids = sorted(i for ids in results for i in ids)
    assert all_ids == list(range(1, 201))
    assert await store.last_event_id("t") == 200
    replay = [e.id for e in await store.read_events("t", after=150)]
    assert replay == list(range(151, 201))
    assert [e.id for e in await store.read_events("t", after=10, limit=5)] == [11, 12, 13, 14, 15]
    streamed = [e.id async for e in store.iter_events("t", after=0, batch=7)]
    assert streamed == list(range(1, 201))
    first = (await store.read_events("t", limit=1))[0]
    assert first.type == "text-delta" and first.data()["payload"]["text"].startswith("t")


async def test_messages_upsert_keeps_order(store: RedisStore) -> None:
    t = now()
    await store.upsert_messages("t", [MessageRecord(id="m1", thread_id="t", role="user", content="hi", created_at=t)])
    await store.upsert_messages(
        "t",
        [
            MessageRecord(id="m2", thread_id="t", role="assistant", content="yo", created_at=t),
            MessageRecord(id="m1", thread_id="t", role="user", content="hi (edited)", created_at=t),
        ],
    )
    messages = await store.list_messages("t")
    assert [(m.id, m.seq, m.content) for m in messages] == [("m1", 1, "hi (edited)"), ("m2", 2, "yo")]


async def test_checkpoint_cas_exactly_one_winner(store: RedisStore) -> None:
    saved = await store.save_checkpoint(
        CheckpointRecord(run_id="r", thread_id="t", status="suspended", state={"a": 1}, created_at=now(), updated_at=now())
    )
    results = await asyncio.gather(
        *(store.compare_and_set_checkpoint("r", saved.version, "running") for _ in range(10))
    )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and winners[0].status == "running" and winners[0].version == saved.version + 1
    assert winners[0].state == {"a": 1}
    updated = await store.compare_and_set_checkpoint("r", winners[0].version, "suspended", {"b": 2})
    assert updated is not None and updated.state == {"b": 2}
    assert await store.compare_and_set_checkpoint("missing", 1, "running") is None
    assert [c.run_id for c in await store.list_checkpoints(status="suspended", thread_id="t")] == ["r"]


async def test_sweep_expired_checkpoints(store: RedisStore) -> None:
    past = now() - timedelta(seconds=5)
    for run_id, expires in [("old", past), ("fresh", now() + timedelta(hours=1)), ("never", None)]:
        await store.save_checkpoint(
            CheckpointRecord(run_id=run_id, status="suspended", created_at=now(), updated_at=now(), expires_at=expires)
        )
    assert await store.sweep_checkpoints(now()) == 1
    assert (await store.get_checkpoint("old")).status == "expired"
    assert await store.sweep_checkpoints(now()) == 0
    await store.delete_checkpoint("old")
    assert await store.get_checkpoint("old") is None


async def test_runs_snapshots_settings(store: RedisStore) -> None:
    await store.upsert_run(RunRecord(run_id="r1", thread_id="t", status="active", started_at=now()))
    await store.upsert_run(RunRecord(run_id="r2", thread_id="t", status="completed", started_at=now()))
    await store.upsert_run(RunRecord(run_id="r3", thread_id="u", status="active", started_at=now()))
    assert [r.run_id for r in await store.list_runs(thread_id="t")] == ["r1", "r2"]
    assert sorted(r.run_id for r in await store.list_runs(status=["active"])) == ["r1", "r3"]
    assert (await store.get_run("r2")).status == "completed"
    await store.save_snapshot("t", "r1", {"agentId": "a", "children": []})
    assert await store.get_snapshots("t") == {"r1": {"agentId": "a", "children": []}}
    assert await store.get_snapshots("t", ["r1", "missing"]) == {"r1": {"agentId": "a", "children": []}}
    assert await store.get_snapshots("t", []) == {}
    assert await store.get_setting("thread:t", "always") is None
    await store.set_setting("thread:t", "always", ["write-file"])
    assert await store.get_setting("thread:t", "always") == ["write-file"]


async def test_search_finds_message_text_as_sqlite_does(store: RedisStore) -> None:
    """The same search semantics as SqliteStore's full-text index (tests/store/test_sqlite_search.py)."""
    await store.create_thread("weather", "Morning report")
    await store.create_thread("backup", "Nightly backup")
    await store.create_thread("other", "Something else")

    def msg(id: str, thread: str, content: str, role: str = "user") -> MessageRecord:
        return MessageRecord(id=id, thread_id=thread, role=role, content=content, created_at=now())

    await store.upsert_messages("weather", [msg("u1", "weather", "Send the forecast to our Slack channel"),
                                            msg("a1", "weather", "Done: the Slack node posts at 7:00.", "assistant")])
    await store.upsert_messages("backup", [msg("u2", "backup", "Back up Postgres every night, Ünïcode Straße")])
    await store.upsert_messages("other", [msg("t2", "other", "slack mentioned only by a tool", "tool")])
    assert [t.id for t in await store.list_threads(search="slack")] == ["weather"]
    assert [t.id for t in await store.list_threads(search="SLA")] == ["weather"]
    assert [t.id for t in await store.list_threads(search="slack posts")] == ["weather"]
    assert await store.list_threads(search="slack postgres") == []
    assert [t.id for t in await store.list_threads(search="unicode")] == ["backup"]
    assert [t.id for t in await store.list_threads(search="nightly")] == ["backup"]
