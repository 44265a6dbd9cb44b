"""Routes that changed state they should not have (issue 31 item 5), over real HTTP.

- ``PUT threads/<unknown>/model`` created the thread (2,000 PUTs made 2,000 threads): now 404
  and nothing is created;
- a send and a rewind of the same thread sent at the same moment both succeeded (9 of 10): the
  rewind could supersede the turn the send was starting. Now they never overlap: the second
  of the two is a 409, and the thread's history stays consistent either way.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from tests.support.waiting import until_async

from .live import serve_app

API = "/instance-ai"


def _app(tmp_path: Path) -> Any:
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    return create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)


async def test_setting_the_model_of_an_unknown_thread_is_404_and_creates_nothing(tmp_path: Path) -> None:
    async with serve_app(_app(tmp_path)) as url, httpx.AsyncClient(base_url=url + API, timeout=20) as http:
        for n in range(50):
            answer = await http.put(f"/threads/ghost-{n}/model", json={"model": ""})
            assert answer.status_code == 404, answer.text
        assert (await http.get("/threads")).json()["threads"] == []
        assert (await http.post("/threads", json={"threadId": "real"})).status_code == 201
        assert (await http.put("/threads/real/model", json={"model": ""})).status_code == 200
        assert [t["id"] for t in (await http.get("/threads")).json()["threads"]] == ["real"]


async def _settled(http: httpx.AsyncClient, thread_id: str) -> None:
    async def settled() -> bool:
        status = (await http.get(f"/threads/{thread_id}/status")).json()
        return not status["hasActiveRun"] and not status["isSuspended"]

    await until_async(settled, what="the run finished")


async def test_send_and_rewind_at_the_same_moment_never_both_change_the_thread(tmp_path: Path) -> None:
    outcomes: list[tuple[int, int]] = []
    async with serve_app(_app(tmp_path)) as url, httpx.AsyncClient(base_url=url + API, timeout=30) as http:
        assert (await http.post("/threads", json={"threadId": "t"})).status_code == 201
        for round_no in range(10):
            assert (await http.post("/chat/t", json={"message": f"turn {round_no}"})).status_code == 200
            await _settled(http, "t")
            messages = (await http.get("/threads/t/messages")).json()["messages"]
            target = [m for m in messages if m["role"] == "user" and not m.get("superseded")][-1]
            send, rewind = await asyncio.gather(
                http.post("/chat/t", json={"message": f"racing {round_no}"}),
                http.post("/threads/t/rewind", json={"messageId": target["id"]}),
            )
            outcomes.append((send.status_code, rewind.status_code))
            assert {send.status_code, rewind.status_code} <= {200, 409}, (send.text, rewind.text)
            await _settled(http, "t")
            messages = (await http.get("/threads/t/messages")).json()["messages"]
            racing = [m for m in messages if m["role"] == "user" and m["content"] == f"racing {round_no}"]
            if send.status_code == 200:
                # the turn the send started is never superseded by the rewind that raced it
                assert racing and not racing[0].get("superseded"), (outcomes, racing)
            else:
                assert not racing
            if rewind.status_code == 200:
                rewound = next(m for m in messages if m["id"] == target["id"])
                assert rewound.get("superseded")
    both = sum(1 for s, r in outcomes if s == r == 200)
    assert both <= 2, f"send and rewind both succeeded {both} of 10 times: {outcomes}"
