"""Issue 13: the n8n dialect reads past 100 threads and past 100 messages (the fake pages as 2.41.1 does)."""

from __future__ import annotations

import uuid

from instance_ai_tui.client.n8n import N8nClient
from tests.support.fake_n8n import FakeN8n, Say

from .test_n8n_dialect import Stream


async def test_more_than_100_threads_are_listed(fake: FakeN8n, client: N8nClient) -> None:
    made = [str(uuid.uuid4()) for _ in range(130)]
    for tid in made:
        await client.create_thread(tid)
    raw = await client._ai("GET", "/threads")  # n8n's first page, as the route gives it
    assert len(raw["threads"]) == 100 and raw["hasMore"] is True
    listed = await client.list_threads()
    assert sorted(t.id for t in listed) == sorted(made)  # each once, none missing


async def test_more_than_100_messages_are_read(fake: FakeN8n, client: N8nClient) -> None:
    fake.script = lambda message: [Say(f"echo {message}", "resp-1")]
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        for n in range(70):  # 140 messages: 70 questions, 70 answers
            run_id = await client.send(tid, f"question {n}")
            await stream.until(lambda i, r=run_id: i.event is not None and i.event.type == "run-finish"
                               and i.event.run_id == r)
    history = await client.messages(tid)
    users = [m.content for m in history.messages if m.role == "user"]
    assert users == [f"question {n}" for n in range(70)]
    assert len(history.messages) == 140 and len({m.id for m in history.messages}) == 140
    pages = [r.query for r in fake.requests_to(f"/rest/instance-ai/threads/{tid}/messages")]
    assert any("page=1" in q for q in pages)
