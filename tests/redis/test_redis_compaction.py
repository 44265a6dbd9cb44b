"""Compaction on the Redis store (issue 47): the observations and their cursor are a thread setting and
the raw messages stay, on a real redis-server as on SQLite; a thread restored through a new client goes
on from its notes."""

from __future__ import annotations

import redis.asyncio as aioredis

from instance_ai_tui.runtime.chunks import ContextCompactedChunk
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.store.redis import RedisStore
from tests.runtime.test_context_window import FIRST_ID, FIRST_NAME, agent_on, ask, respond
from tests.support.openai_server import MockOpenAIServer

WINDOW = 8_192


async def test_a_thread_on_redis_compacts_keeps_its_messages_and_goes_on_after_a_restart(
        redis_url: str, redis_client: aioredis.Redis) -> None:
    async with MockOpenAIServer(respond, context_window=WINDOW) as server:
        store = RedisStore(redis_client, prefix="compact:")
        await store.open()
        model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                            context_windows={"mock": WINDOW})
        agent = agent_on(model, store)
        compacted: list[ContextCompactedChunk] = []
        await ask(agent, "t", f"My workflow is {FIRST_ID}, named {FIRST_NAME}: get workflow {FIRST_ID}")
        for turn in range(2, 16):
            result, chunks = await ask(agent, "t", f"get workflow wf_{turn:03d}")
            assert result.status == "success", f"turn {turn}: {result.error}"
            compacted += [c for c in chunks if isinstance(c, ContextCompactedChunk)]
        await model.aclose()
        assert compacted and server.refused == 0
        # a restart: a new connection, store, model and agent
        client = aioredis.from_url(redis_url, decode_responses=True)
        try:
            again = RedisStore(client, prefix="compact:")
            await again.open()
            observed = await StoreMemory(again).get_observations("t")
            assert observed is not None and observed.compactions == len(compacted)
            assert f"workflow {FIRST_NAME!r} id={FIRST_ID}" in observed.facts
            stored = await again.list_messages("t")
            assert sum(1 for r in stored if r.role == "tool") == 15  # the raw messages stay
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": WINDOW})
            result, _ = await ask(agent_on(model, again), "t", "Which workflow came first?")
            await model.aclose()
        finally:
            await client.aclose()
    assert result.text == f"The first was {FIRST_NAME} ({FIRST_ID}).", result.text
    assert server.refused == 0
