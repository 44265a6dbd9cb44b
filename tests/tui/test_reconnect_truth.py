"""Reconnect tells the truth every time (issue 39 item 3): ``instance-ai serve`` killed with SIGKILL at a
random point of a streamed answer and started again — the reconnected app shows the cut run exactly as
a fresh app on the same server does, twenty times out of twenty; a server that comes back with another
model (the demo or not) changes the status line and the banner.

The server is a real ``instance-ai serve`` subprocess on its SQLite file; the app is the real app with a
``RemoteClient``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from server.live import ServeProcess

from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .test_connection import SIZE, make_app, send

#: kills at random points of a streamed answer (issue 39's acceptance: 20 of 20)
KILLS = 20
#: what the model streams, a word every 20 ms (some 4 s): the kill lands in the middle of it
LONG_ANSWER = " ".join(f"word{index}" for index in range(200))


def outcomes(app: InstanceAiApp) -> list[tuple[str, str]]:
    """Each answer's end as the screen draws it (the footer's words: ``⊘ Cancelled (interrupted)``,
    ``✗ The run failed…``), read from the model the footer is drawn from (a long thread mounts its tail)."""
    from instance_ai_tui.tui.widgets.agent_info import agent_info

    out = []
    for msg in app.conversation.messages if app.conversation is not None else []:
        if msg.role != "assistant" or msg.reducer is None:
            continue
        info = agent_info(msg.reducer, msg.reducer.root_id)
        detail = (info.cancellation_reason or info.error or "") if info is not None else ""
        out.append((msg.reducer.status, detail))
    return out


@pytest.mark.timeout(1200)  # twenty restarts of a server process
async def test_a_server_killed_at_random_points_of_an_answer_shows_each_cut_as_a_fresh_app_does(
        tmp_path: Path) -> None:
    chance = random.Random(39)
    model = MockOpenAIServer(lambda body: MockResponse(text=LONG_ANSWER, chunk_delay=0.02))
    await model.__aenter__()
    serve = ServeProcess(tmp_path / "served.sqlite3", model="slow-model",
                         env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test-key"})
    await serve.start()
    try:
        client = RemoteClient(serve.url, initial_backoff=0.05, max_backoff=0.5)
        app = make_app(client)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready(timeout=30)
            for round_no in range(KILLS):
                asked = len(model.requests)
                await send(app, pilot, f"tell me about workflows ({round_no})")
                await until(lambda: len(model.requests) > asked, pilot, timeout=30,  # noqa: B023
                            what=f"round {round_no}: the model asked")
                await pilot.pause(chance.uniform(0.0, 3.0))  # a random point of the answer (some 4 s long)
                serve.kill()
                await until(lambda: app.client.state == ConnectionState.RECONNECTING, pilot, timeout=20,
                            what=f"round {round_no}: reconnecting")
                await serve.start(timeout=60)
                await until(lambda: app.client.state == ConnectionState.CONNECTED, pilot, timeout=30,
                            what=f"round {round_no}: reconnected")
                await until(lambda: not app.conversation.is_streaming, pilot, timeout=30,
                            what=f"round {round_no}: the cut run ended on screen")
                await app.wait_until_rendered()
            live = outcomes(app)
            thread_id = app.thread_id
        assert len(live) == KILLS
        # a fresh app on the same server: what the database says
        fresh = make_app(RemoteClient(serve.url), thread_id=thread_id)
        async with fresh.run_test(size=SIZE) as pilot:
            await fresh.wait_until_ready(timeout=30)
            await fresh.wait_until_rendered()
            restored = outcomes(fresh)
        assert len(restored) == KILLS
        assert live == restored, [(i, live[i], restored[i]) for i in range(KILLS) if live[i] != restored[i]]
        cut = [index for index, (status, _detail) in enumerate(restored) if status != "completed"]
        assert len(cut) >= KILLS // 2  # (most kills land mid-answer; one that lands after its end cuts nothing)
        assert all(restored[i] == ("cancelled", "interrupted") for i in cut), [restored[i] for i in cut]
    finally:
        serve.kill()
        await model.__aexit__(None, None, None)


def banner_shown(app: InstanceAiApp) -> bool:
    return any(widget.display for widget in app.query("#demo-banner"))


async def test_a_server_back_with_another_model_changes_the_status_line_and_the_banner(tmp_path: Path) -> None:
    async with MockOpenAIServer([MockResponse(text="Hello from a real model.")] * 3) as model:
        db = tmp_path / "served.sqlite3"
        demo = ServeProcess(db)
        await demo.start()
        real: ServeProcess | None = None
        try:
            app = make_app(RemoteClient(demo.url, initial_backoff=0.05, max_backoff=0.5))
            async with app.run_test(size=SIZE) as pilot:
                await app.wait_until_ready(timeout=30)
                await until(lambda: banner_shown(app) and "DEMO" in str(app.status_line.render()), pilot,
                            what="the demo's banner")
                await send(app, pilot, "hello")  # (a thread open: its event stream sees the server go)
                await until(lambda: app.thread_id is not None and not app.conversation.is_streaming
                            and len(app.conversation.messages) == 2, pilot, timeout=30, what="the demo's answer")
                demo.kill()
                await until(lambda: app.client.state == ConnectionState.RECONNECTING, pilot, what="reconnecting")
                real = ServeProcess(db, port=demo.port, model="scripted-real",
                                    env={"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test-key"})
                await real.start()
                await until(lambda: app.client.state == ConnectionState.CONNECTED, pilot, timeout=30,
                            what="reconnected")
                await until(lambda: not banner_shown(app) and "DEMO" not in str(app.status_line.render())
                            and "scripted-real" in str(app.status_line.render()), pilot, timeout=20,
                            what="the real model named, the demo banner gone")
        finally:
            demo.kill()
            if real is not None:
                real.kill()

