"""Routing, errors, auth and SSE framing of the app, over a real uvicorn, with a small fake service."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from instance_ai_tui.server.app import create_app
from tests.support.waiting import until

from .fake_service import FakeService
from .live import serve_app

API = "/instance-ai"


async def read_frames(response: httpx.Response, count: int, timeout: float = 5.0) -> list[tuple[int | None, dict]]:
    """Read ``count`` data frames (id, JSON) from an open SSE response."""
    frames: list[tuple[int | None, dict]] = []
    frame_id: int | None = None
    lines = response.aiter_lines()

    async def collect() -> None:
        nonlocal frame_id
        async for line in lines:
            if line.startswith("id: "):
                frame_id = int(line[4:])
            elif line.startswith("data: "):
                frames.append((frame_id, json.loads(line[6:])))
                frame_id = None
                if len(frames) == count:
                    return

    await asyncio.wait_for(collect(), timeout)
    return frames


@pytest.fixture
async def fake() -> FakeService:
    return FakeService()


async def test_health_threads_and_errors(fake: FakeService) -> None:
    app = create_app(fake)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API) as http:
        assert fake.started == 1
        health = (await http.get("/health")).json()
        assert health["service"] == "instance-ai" and health["model"] == "fake" and health["authRequired"] is False
        created = await http.post("/threads", json={"threadId": "t-1", "title": "First"})
        assert created.status_code == 201 and created.json()["id"] == "t-1"
        again = await http.post("/threads", json={"threadId": "t-1"})
        assert again.status_code == 200 and again.json()["title"] == "First"
        listed = (await http.get("/threads")).json()
        assert [t["id"] for t in listed["threads"]] == ["t-1"] and listed["total"] == 1
        renamed = await http.patch("/threads/t-1", json={"title": "Renamed"})
        assert renamed.json()["title"] == "Renamed"
        # client mistakes: 400/404/405/413 with {code, message}, never 500
        for response, status in [
            (await http.patch("/threads/t-1", json={"title": ""}), 400),
            (await http.patch("/threads/t-1", json={"bogus": 1}), 400),
            (await http.patch("/threads/nope", json={"title": "x"}), 404),
            (await http.post("/chat/t-1", content=b"{not json", headers={"content-type": "application/json"}), 400),
            (await http.post("/chat/t-1", content=b"{not json"), 415),
            (await http.post("/chat/t-1", json=["a"]), 400),
            (await http.post("/chat/t-1", json={"message": 5}), 400),
            (await http.post("/chat/t-1", json={}), 400),
            (await http.post("/chat/t-1", json={"message": "   "}), 400),
            (await http.post("/chat/t-1", json={"message": "x" * 2_000_000}), 413),
            (await http.post("/confirm/cr-x", json={"approved": "maybe"}), 400),
            (await http.post("/confirm/cr-x", json={"kind": "nope"}), 400),
            (await http.post("/confirm/cr-x", json={"approved": True}), 404),
            (await http.get("/threads/nope/messages"), 404),
            (await http.get("/threads/nope/status"), 404),
            (await http.post("/chat/nope/cancel"), 404),
            (await http.get("/events/nope"), 404),
            (await http.get("/events/t-1", params={"lastEventId": "-1"}), 400),
            (await http.get("/events/t-1", params={"lastEventId": "abc"}), 400),
            (await http.get("/threads/bad%20id/status"), 400),
            (await http.get("/no/such/route"), 404),
            (await http.put("/threads"), 405),
        ]:
            assert response.status_code == status, (response.request.url, response.text)
            body = response.json()
            assert body["code"] == status and body["message"]
        assert "message" in (await http.post("/chat/t-1", json={"message": "   "})).json()["message"]
        assert (await http.delete("/threads/t-1")).json() == {"ok": True}
        assert (await http.delete("/threads/t-1")).status_code == 404
        schema = (await http.get("/openapi.json")).json()
        assert schema["openapi"].startswith("3.1") and f"{API}/chat/{{threadId}}" in schema["paths"]
    assert fake.stopped == 1


async def test_sse_headers_ids_replay_and_live(fake: FakeService) -> None:
    app = create_app(fake, ping_interval=0.05)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API, timeout=10) as http:
        await http.post("/threads", json={"threadId": "t"})
        run_id = (await http.post("/chat/t", json={"message": "one two"})).json()["runId"]
        busy = await http.post("/chat/t", json={"message": "again"})
        assert busy.status_code == 409 and busy.json()["code"] == 409
        async with http.stream("GET", "/events/t") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-cache"
            assert response.headers["x-accel-buffering"] == "no"
            assert response.headers["connection"] == "keep-alive"
            frames = await read_frames(response, 6)
        ids = [i for i, _ in frames]
        assert ids == [1, 2, 3, 4, 5, 6]
        assert frames[0][1]["type"] == "run-start" and frames[-1][1]["type"] == "run-finish"
        assert all(e["runId"] == run_id for _, e in frames)
        # cursor from the header wins over the query; the query alone works too
        for kwargs in ({"headers": {"Last-Event-ID": "4"}, "params": {"lastEventId": "1"}}, {"params": {"lastEventId": "4"}}):
            async with http.stream("GET", "/events/t", **kwargs) as response:
                assert [i for i, _ in await read_frames(response, 2)] == [5, 6]
        # live: a subscriber that is connected before the run sees it, with pings in between
        async with http.stream("GET", "/events/t", params={"lastEventId": "6"}) as response:
            await http.post("/chat/t", json={"message": "approve it"})
            raw = ""
            chunks = response.aiter_text()
            async for chunk in chunks:
                raw += chunk
                if "confirmation-request" in raw:
                    break
            status = (await http.get("/threads/t/status")).json()
            assert status == {"hasActiveRun": True, "isSuspended": True, "runId": "run2", "backgroundTasks": []}
            assert (await http.post("/confirm/cr-run2", json={"approved": True})).json()["ok"] is True
            async for chunk in chunks:
                raw += chunk
                if "run-finish" in raw and ": ping" in raw:
                    break
        assert raw.startswith(": connected\n\n") and "id: 7\n" in raw
        assert '"tool-result"' in raw


async def test_cancel_is_idempotent_and_shutdown_ends_streams(fake: FakeService) -> None:
    app = create_app(fake, ping_interval=30)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API, timeout=10) as http:
        await http.post("/chat/c", json={"message": "approve this"})
        assert (await http.post("/chat/c/cancel")).json() == {"ok": True}
        assert (await http.post("/chat/c/cancel")).json() == {"ok": True}
        await http.post("/chat/c", json={"message": "approve again"})
        received: list[str] = []

        async def listen() -> None:
            async with http.stream("GET", "/events/c") as response:
                async for line in response.aiter_lines():
                    received.append(line)

        listener = asyncio.create_task(listen())
        await until(lambda: bool(received), what="the stream connected")
        await app.state.shutdown_gracefully()
        await asyncio.wait_for(listener, 5)  # the stream ended by itself
    finishes = [json.loads(line[6:])["payload"] for line in received if line.startswith("data: ") and "run-finish" in line]
    assert finishes[0] == {"status": "cancelled", "reason": "user_cancelled"}
    assert finishes[-1] == {"status": "cancelled", "reason": "service_shutdown"}


async def test_token_required_everywhere_but_health(fake: FakeService) -> None:
    app = create_app(fake, token="s3cret")
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API) as http:
        assert (await http.get("/health")).json()["authRequired"] is True
        denied = await http.get("/threads")
        assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
        assert (await http.get("/threads", headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await http.get("/threads", headers={"Authorization": "Bearer s3cret"})).status_code == 200
        assert (await http.get("/threads", params={"token": "s3cret"})).status_code == 200
        assert "s3cret" not in denied.text
