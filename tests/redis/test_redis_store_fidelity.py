"""What ``RedisStore``'s Lua scripts write must read back exactly (Lua's cjson would turn ``[]``
into ``{}`` and round numbers to 14 digits if a script re-encoded the JSON)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from instance_ai_tui.store.base import CheckpointRecord, MessageRecord
from instance_ai_tui.store.redis import RedisStore

STATE: dict[str, Any] = {
    "messages": [],
    "pending": [{"args": {}, "ids": []}],
    "big": 12345678901234567,
    "ratio": 0.1234567890123456,
    "text": "a/b \"q\" ünï",
    "none": None,
}


async def test_checkpoint_claim_keeps_state_exact(redis_client: Any) -> None:
    store = RedisStore(redis_client)
    now = datetime.now(UTC)
    saved = await store.save_checkpoint(CheckpointRecord(run_id="r", thread_id="t", state=STATE, created_at=now,
                                                         updated_at=now))
    claimed = await store.compare_and_set_checkpoint("r", saved.version, "running")
    assert claimed is not None and claimed.status == "running" and claimed.version == saved.version + 1
    assert claimed.state == STATE
    assert (await store.get_checkpoint("r")).state == STATE
    assert await store.compare_and_set_checkpoint("r", saved.version, "suspended") is None  # stale version
    replaced = await store.compare_and_set_checkpoint("r", claimed.version, "suspended", {"n": []})
    assert replaced is not None and replaced.state == {"n": []}


async def test_message_upsert_keeps_content_exact_and_order(redis_client: Any) -> None:
    store = RedisStore(redis_client)
    now = datetime.now(UTC)
    first = MessageRecord(id="m1", thread_id="t", role="assistant", content={"parts": [], **STATE}, created_at=now)
    second = MessageRecord(id="m2", thread_id="t", role="user", content=[], created_at=now)
    await store.upsert_messages("t", [first, second])
    await store.upsert_messages("t", [first.model_copy(update={"content": {"parts": [1]}})])  # update keeps seq
    rows = await store.list_messages("t")
    assert [(m.id, m.seq) for m in rows] == [("m1", 1), ("m2", 2)]
    assert rows[0].content == {"parts": [1]}
    assert rows[1].content == []
