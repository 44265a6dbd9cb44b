"""SqliteStore: threads, events, messages, checkpoints, runs, snapshots, settings."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from instance_ai_tui.store.base import CheckpointRecord, MessageRecord, RunRecord, ThreadNotFound
from instance_ai_tui.store.sqlite import SqliteStore

from .conftest import delta

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def message(id: str, content: object, thread: str = "t", role: str = "user") -> MessageRecord:
    return MessageRecord(id=id, thread_id=thread, role=role, content=content, created_at=NOW, seq=99)


def checkpoint(run_id: str, status: str = "suspended", thread: str | None = "t", expires: datetime | None = None) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=run_id, thread_id=thread, status=status, state={"step": 1}, created_at=NOW, updated_at=NOW, expires_at=expires
    )


# -- threads -------------------------------------------------------------------------------


async def test_thread_crud(store: SqliteStore) -> None:
    created = await store.create_thread("t1", title="Weather to Slack", metadata={"model": "m"})
    assert created.id == "t1" and created.title == "Weather to Slack" and created.metadata == {"model": "m"}
    assert created.created_at.tzinfo is not None
    assert await store.get_thread("t1") == created
    assert await store.get_thread("nope") is None

    updated = await store.update_thread("t1", title="Renamed")
    assert updated.title == "Renamed" and updated.metadata == {"model": "m"}
    assert updated.updated_at > created.updated_at and updated.created_at == created.created_at
    updated = await store.update_thread("t1", metadata={"other": True})
    assert updated.title == "Renamed" and updated.metadata == {"other": True}

    with pytest.raises(ThreadNotFound):
        await store.update_thread("missing", title="x")
    assert await store.delete_thread("t1") is True
    assert await store.get_thread("t1") is None
    assert await store.delete_thread("t1") is False


async def test_create_existing_thread_keeps_it_and_fills_given_fields(store: SqliteStore) -> None:
    await store.append_events("t", [delta("x")])  # creates the row, untitled
    lazily = await store.get_thread("t")
    assert lazily is not None and lazily.title == ""
    named = await store.create_thread("t", title="Named later")
    assert named.title == "Named later" and named.created_at == lazily.created_at
    again = await store.create_thread("t")
    assert again.title == "Named later"


async def test_list_threads_newest_first_search_and_limit(store: SqliteStore) -> None:
    for thread_id, title in [("a", "Weather report"), ("b", "Slack alerts"), ("c", "WEATHER to Slack"), ("d", "Ünïcode Straße")]:
        await store.create_thread(thread_id, title=title)
    assert [t.id for t in await store.list_threads()] == ["d", "c", "b", "a"]
    await store.update_thread("a", metadata={"touched": 1})
    assert [t.id for t in await store.list_threads()] == ["a", "d", "c", "b"]
    assert [t.id for t in await store.list_threads(search="weather")] == ["a", "c"]
    assert [t.id for t in await store.list_threads(search="SLACK")] == ["c", "b"]
    assert [t.id for t in await store.list_threads(search="STRASSE")] == ["d"]  # casefold, not just lower
    assert [t.id for t in await store.list_threads(search="üNÏ")] == ["d"]
    assert [t.id for t in await store.list_threads(search="%")] == []  # no wildcards
    assert [t.id for t in await store.list_threads(limit=2)] == ["a", "d"]
    assert await store.list_threads(search="nothing like it") == []


async def test_messages_bump_the_thread_to_the_top(store: SqliteStore) -> None:
    await store.create_thread("old")
    await store.create_thread("new")
    await store.upsert_messages("old", [message("m1", "hi", thread="old")])
    assert [t.id for t in await store.list_threads()] == ["old", "new"]


# -- events --------------------------------------------------------------------------------


async def test_append_read_and_last_id(store: SqliteStore) -> None:
    assert await store.last_event_id("t") == 0
    assert await store.append_events("t", []) == []
    stored = await store.append_events("t", [delta("a"), delta("b", run_id="r2")])
    assert [(e.id, e.type, e.run_id) for e in stored] == [(1, "text-delta", "r1"), (2, "text-delta", "r2")]
    assert stored[1].data() == {"type": "text-delta", "runId": "r2", "agentId": "a1", "payload": {"text": "b"}}
    more = await store.append_events("t", [delta(str(i)) for i in range(8)])
    assert [e.id for e in more] == list(range(3, 11))
    assert await store.last_event_id("t") == 10
    assert await store.read_events("t") == [*stored, *more]
    assert [e.id for e in await store.read_events("t", after=4, limit=3)] == [5, 6, 7]
    assert await store.read_events("t", after=10) == []
    assert await store.read_events("other") == []
    with pytest.raises(ValueError, match="thread id"):
        await store.append_events("", [delta("x")])


async def test_iter_events_pages_and_sees_events_appended_meanwhile(store: SqliteStore) -> None:
    await store.append_events("t", [delta(str(i)) for i in range(50)])
    reads = 0
    original = store._read

    async def counting_read(sql: str, params: object = ()) -> list[object]:
        nonlocal reads
        reads += 1
        return await original(sql, params)  # type: ignore[arg-type]

    store._read = counting_read  # type: ignore[method-assign]
    seen = []
    async for event in store.iter_events("t", after=5, batch=7):
        seen.append(event.id)
        if event.id == 20:
            await store.append_events("t", [delta("late 1"), delta("late 2")])
    assert seen == list(range(6, 53))
    assert reads == 7  # 47 events, 7 per page: pages are read one at a time


async def test_ids_are_per_thread(store: SqliteStore) -> None:
    a = await store.append_events("a", [delta("1"), delta("2")])
    b = await store.append_events("b", [delta("1")])
    assert [e.id for e in a] == [1, 2] and [e.id for e in b] == [1]
    assert (await store.get_thread("b")) is not None


# -- messages ------------------------------------------------------------------------------


async def test_message_upsert_keeps_seq_and_order(store: SqliteStore) -> None:
    await store.upsert_messages("t", [message("m1", "hello"), message("m2", {"parts": [1]}, role="assistant")])
    await store.upsert_messages("t", [message("m3", "third")])
    first = await store.list_messages("t")
    assert [(m.id, m.seq) for m in first] == [("m1", 1), ("m2", 2), ("m3", 3)]
    assert first[1].content == {"parts": [1]} and first[1].role == "assistant"

    changed = MessageRecord(id="m2", thread_id="t", role="assistant", content="rewritten", run_id="r9",
                            created_at=NOW + timedelta(hours=1), data={"agentTree": {"x": 1}})
    await store.upsert_messages("t", [changed, message("m4", "fourth")])
    after = await store.list_messages("t")
    assert [(m.id, m.seq) for m in after] == [("m1", 1), ("m2", 2), ("m3", 3), ("m4", 4)]
    m2 = after[1]
    assert (m2.content, m2.run_id, m2.data) == ("rewritten", "r9", {"agentTree": {"x": 1}})
    assert m2.created_at == NOW  # kept from the first insert
    assert await store.list_messages("other") == []
    with pytest.raises(ValueError, match="belongs to thread"):
        await store.upsert_messages("t", [message("m5", "x", thread="elsewhere")])
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        await store.upsert_messages("t", [message("m6", {1, 2})])


# -- checkpoints ---------------------------------------------------------------------------


async def test_checkpoint_save_get_list_delete(store: SqliteStore) -> None:
    first = await store.save_checkpoint(checkpoint("r1"))
    assert first.version == 1 and first.state == {"step": 1} and first.created_at == NOW
    second = await store.save_checkpoint(checkpoint("r1", status="running"))
    assert second.version == 2 and second.status == "running" and second.created_at == NOW
    assert second.updated_at > first.updated_at
    assert await store.get_checkpoint("r1") == second
    await store.save_checkpoint(checkpoint("r2", thread="u"))
    await store.save_checkpoint(checkpoint("r3", status="completed", thread=None))
    assert [c.run_id for c in await store.list_checkpoints()] == ["r1", "r2", "r3"]
    assert [c.run_id for c in await store.list_checkpoints(status="suspended")] == ["r2"]
    assert [c.run_id for c in await store.list_checkpoints(thread_id="t")] == ["r1"]
    assert [c.run_id for c in await store.list_checkpoints(status="running", thread_id="u")] == []
    await store.delete_checkpoint("r1")
    assert await store.get_checkpoint("r1") is None
    await store.delete_checkpoint("r1")  # deleting twice is fine


async def test_compare_and_set(store: SqliteStore) -> None:
    saved = await store.save_checkpoint(checkpoint("r1"))
    claimed = await store.compare_and_set_checkpoint("r1", saved.version, "running")
    assert claimed is not None and claimed.version == saved.version + 1 and claimed.status == "running"
    assert claimed.state == {"step": 1}  # state untouched when not given
    assert await store.compare_and_set_checkpoint("r1", saved.version, "completed") is None  # stale
    done = await store.compare_and_set_checkpoint("r1", claimed.version, "completed", state={"step": 2})
    assert done is not None and done.state == {"step": 2} and done.status == "completed"
    assert await store.compare_and_set_checkpoint("missing", 1, "running") is None


async def test_two_concurrent_claims_exactly_one_wins(store: SqliteStore) -> None:
    for round_ in range(20):
        saved = await store.save_checkpoint(checkpoint(f"r{round_}"))
        results = await asyncio.gather(
            *(store.compare_and_set_checkpoint(saved.run_id, saved.version, "running", {"by": who}) for who in range(2))
        )
        winners = [r for r in results if r is not None]
        assert len(winners) == 1
        stored = await store.get_checkpoint(saved.run_id)
        assert stored == winners[0] and stored.version == saved.version + 1  # type: ignore[union-attr]


async def test_sweep_marks_then_deletes_expired_checkpoints(store: SqliteStore) -> None:
    past, future = NOW - timedelta(minutes=1), NOW + timedelta(minutes=1)
    await store.save_checkpoint(checkpoint("suspended-old", expires=past))
    await store.save_checkpoint(checkpoint("running-new", status="running", expires=future))
    await store.save_checkpoint(checkpoint("completed-old", status="completed", expires=past))
    await store.save_checkpoint(checkpoint("forever"))
    await store.save_checkpoint(checkpoint("exactly-now", expires=NOW))
    assert await store.sweep_checkpoints(NOW) == 3
    statuses = {c.run_id: (c.status, c.version) for c in await store.list_checkpoints()}
    assert statuses == {
        "suspended-old": ("expired", 2),
        "running-new": ("running", 1),
        "completed-old": ("expired", 2),
        "forever": ("suspended", 1),
        "exactly-now": ("expired", 2),
    }
    assert await store.sweep_checkpoints(NOW) == 3  # the expired ones are removed now
    assert sorted(c.run_id for c in await store.list_checkpoints()) == ["forever", "running-new"]
    assert await store.sweep_checkpoints(NOW) == 0
    assert await store.sweep_checkpoints(future + timedelta(seconds=1)) == 1


# -- runs, snapshots, settings --------------------------------------------------------------


async def test_runs(store: SqliteStore) -> None:
    r1 = RunRecord(run_id="r1", thread_id="t", started_at=NOW, message_group_id="g1", owner="me")
    r2 = RunRecord(run_id="r2", thread_id="t", status="suspended", started_at=NOW + timedelta(seconds=1))
    r3 = RunRecord(run_id="r3", thread_id="u", started_at=NOW - timedelta(seconds=1))
    for record in (r1, r2, r3):
        await store.upsert_run(record)
    assert await store.get_run("r1") == r1
    assert await store.get_run("nope") is None
    assert [r.run_id for r in await store.list_runs()] == ["r3", "r1", "r2"]
    assert [r.run_id for r in await store.list_runs(thread_id="t")] == ["r1", "r2"]
    assert [r.run_id for r in await store.list_runs(status=["active", "suspended"])] == ["r3", "r1", "r2"]
    assert [r.run_id for r in await store.list_runs(thread_id="t", status=["suspended"])] == ["r2"]
    assert await store.list_runs(status=[]) == []
    finished = r1.model_copy(update={"status": "completed", "finished_at": NOW + timedelta(minutes=1), "data": {"n": 1}})
    await store.upsert_run(finished)
    assert await store.get_run("r1") == finished
    assert [r.run_id for r in await store.list_runs(status=["active"])] == ["r3"]


async def test_snapshots(store: SqliteStore) -> None:
    assert await store.get_snapshots("t") == {}
    await store.save_snapshot("t", "r2", {"agentId": "root", "children": []})
    await store.save_snapshot("t", "r1", {"agentId": "root", "textContent": "first"})
    await store.save_snapshot("t", "r2", {"agentId": "root", "textContent": "replaced"})
    snapshots = await store.get_snapshots("t")
    assert list(snapshots) == ["r2", "r1"]
    assert snapshots["r2"] == {"agentId": "root", "textContent": "replaced"}
    assert (await store.get_thread("t")) is not None
    # a page of history reads only its runs' snapshots (and more ids than SQLite binds at once)
    assert await store.get_snapshots("t", ["r1", "missing"]) == {"r1": {"agentId": "root", "textContent": "first"}}
    assert await store.get_snapshots("t", []) == {}
    assert list(await store.get_snapshots("t", [f"x{i}" for i in range(1200)] + ["r2"])) == ["r2"]


async def test_settings(store: SqliteStore) -> None:
    assert await store.get_setting("global", "theme") is None
    for value in ("dark", 3, 2.5, True, None, ["a", 1], {"nested": {"x": [1, 2]}}):
        await store.set_setting("global", "v", value)
        assert await store.get_setting("global", "v") == value
    await store.set_setting("thread:t", "v", "other scope")
    assert await store.get_setting("global", "v") == {"nested": {"x": [1, 2]}}
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        await store.set_setting("global", "bad", object())


async def test_delete_thread_removes_everything_of_it(store: SqliteStore) -> None:
    for thread in ("t", "keep"):
        await store.create_thread(thread, title=thread)
        await store.append_events(thread, [delta("a"), delta("b")])
        await store.upsert_messages(thread, [message("m1", "hi", thread=thread)])
        await store.save_snapshot(thread, "r1", {"x": 1})
        await store.save_checkpoint(checkpoint(f"{thread}-r1", thread=thread))
        await store.upsert_run(RunRecord(run_id=f"{thread}-r1", thread_id=thread, started_at=NOW))
        for scope in (thread, f"thread:{thread}", f"embeddings:{thread}"):
            await store.set_setting(scope, "k", 1)
    await store.set_setting("at", "k", 1)  # a scope that merely ends with "t", no colon: kept
    assert await store.delete_thread("t") is True
    assert await store.get_thread("t") is None
    assert await store.read_events("t") == []
    assert await store.list_messages("t") == []
    assert await store.get_snapshots("t") == {}
    assert await store.list_checkpoints(thread_id="t") == []
    assert await store.list_runs(thread_id="t") == []
    assert [await store.get_setting(s, "k") for s in ("t", "thread:t", "embeddings:t")] == [None, None, None]
    assert await store.get_setting("at", "k") == 1
    # the other thread is untouched
    assert len(await store.read_events("keep")) == 2
    assert len(await store.list_messages("keep")) == 1
    assert await store.get_snapshots("keep") == {"r1": {"x": 1}}
    assert len(await store.list_checkpoints(thread_id="keep")) == 1
    assert len(await store.list_runs(thread_id="keep")) == 1
    assert await store.get_setting("thread:keep", "k") == 1
    # a new thread of the same id starts from scratch
    assert [e.id for e in await store.append_events("t", [delta("again")])] == [1]
