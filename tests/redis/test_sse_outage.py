"""A live SSE client is told when the stream ends at a Redis outage (issue 43.5), not left with EOF.

``serve --redis`` follows a thread for a client; redis-server is killed. The stream's source
fails; before the stream ends the client gets one ``event: error`` frame (no id, so its cursor
stays) whose data names the part (``redis_down``: the server's storage) and the next step, with
a ``retry:`` hint; the client library shows it as the connection's state and keeps reconnecting.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.protocol.sse import SSEParser
from instance_ai_tui.server.app import create_app
from instance_ai_tui.server.redis_service import build_redis_service
from tests.redis.test_outage import RedisProcess
from tests.server.live import serve_app

API = "/instance-ai"


async def test_the_live_stream_gets_an_error_frame_when_redis_goes_away(tmp_path: Path) -> None:
    redis = RedisProcess(tmp_path)
    redis.start()
    try:
        service = build_redis_service(Settings(model=ModelSettings(name="demo")), redis.url, generate_titles=False)
        async with serve_app(create_app(service)) as url, httpx.AsyncClient(base_url=url + API, timeout=30) as http:
            await http.post("/chat/t-live", json={"message": "hello"})
            frames = []
            states: list[tuple[ConnectionState, str]] = []
            async with RemoteClient(url, initial_backoff=5, max_backoff=5) as client:
                client.add_state_listener(lambda state, detail: states.append((state, detail)))

                async def follow() -> None:
                    async for _item in client.events("t-live", after=0):
                        pass

                following = asyncio.create_task(follow())
                async with http.stream("GET", "/events/t-live") as response:
                    parser = SSEParser()
                    async for chunk in response.aiter_bytes():
                        for frame in parser.feed(chunk):
                            frames.append(frame)
                            if frame.data and json.loads(frame.data).get("type") == "run-finish":
                                await asyncio.to_thread(redis.kill)  # the outage, with the stream live
                    # (the server ended the stream)
                error = [frame for frame in frames if frame.event == "error"]
                assert len(error) == 1 and frames[-1] is error[0], [f.event for f in frames]
                assert not error[0].id
                said = json.loads(error[0].data)
                assert said["code"] == "redis_down", said
                assert "the server's storage is unavailable" in said["message"] and "Redis" in said["message"], said
                assert any(state == ConnectionState.RECONNECTING and "storage is unavailable" in detail
                           for state, detail in states), states
                assert any("storage is unavailable" in note for note in client.diagnostics), client.diagnostics
                following.cancel()
                await asyncio.gather(following, return_exceptions=True)
    finally:
        redis.kill()
