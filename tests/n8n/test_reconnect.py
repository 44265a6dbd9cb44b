"""Issue 13: the n8n dialect rides through n8n's restart (HTML 200, HTML 404s, then the stream).

The fake replays the boot window measured on n8n 2.41.1 (``testing.n8n_boot``) with a short,
configurable 404 phase, so no test waits the real 6.5 s.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from instance_ai_tui.client.base import ClientError, ConnectionState
from instance_ai_tui.client.n8n import ModuleNotReadyError, N8nClient
from instance_ai_tui.client.sse import MAX_BACKOFF_CAP, backoff_delay
from instance_ai_tui.protocol.api import ThreadStatus
from tests.support.fake_n8n import FakeN8n, Pause, Say
from tests.support.n8n_boot import restart
from tests.support.waiting import until, until_async

from .conftest import make_client
from .test_n8n_dialect import Stream, is_type


async def test_the_stream_survives_a_restart_with_html_then_404_then_the_stream(
    fake: FakeN8n, client: N8nClient
) -> None:
    tid = str(uuid.uuid4())
    states: list[tuple[ConnectionState, str]] = []
    client.add_state_listener(lambda state, detail: states.append((state, detail)))
    async with Stream(client, tid) as stream:
        await client.send(tid, "hello before")
        await stream.until(is_type("run-finish"))
        window = await restart(fake, html_answers=1, not_found_seconds=0.8, not_found_answers=1)
        # the client went through the whole boot window, kept trying, and is connected again
        await until(lambda: client.state == ConnectionState.CONNECTED and window.not_found_served > 0,
                    what="connected again after the boot window")
        assert window.html_served == 1 and window.not_found_served >= 1
        run_id = await client.send(tid, "hello after the restart")
        finish = await stream.until(lambda i: i.event is not None and i.event.type == "run-finish"
                                    and i.event.run_id == run_id)
    assert finish.event is not None and finish.event.payload.status == "completed"  # type: ignore[union-attr]
    texts = [m.content for m in stream.conversation.messages if m.role == "assistant"]
    assert len(texts) == 2 and all("2 workflows" in t for t in texts)
    reconnecting = [d for s, d in states if s == ConnectionState.RECONNECTING]
    assert any("next try in" in d for d in reconnecting), reconnecting
    assert ConnectionState.OFFLINE not in [s for s, _ in states]


async def test_a_stream_that_never_worked_still_fails_on_html(fake: FakeN8n, client: N8nClient) -> None:
    await client.open()
    await restart(fake, html_answers=1, not_found_seconds=0.3, crash=False)
    tid = str(uuid.uuid4())
    with pytest.raises(ClientError):
        async for _item in client.events(tid):
            pass


async def test_history_during_boot_is_an_error_not_an_empty_thread(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "hello")
        await stream.until(is_type("run-finish"))
    await restart(fake, html_answers=0, not_found_seconds=5)
    with pytest.raises(ModuleNotReadyError):
        await client.messages(tid)
    assert not await client.thread_gone(tid)  # an HTML 404 proves nothing


async def test_a_run_cut_by_the_crash_has_no_run_finish_and_status_says_so(fake: FakeN8n, tmp_path: Path) -> None:
    fake.script = lambda message: [Say("Working on it.", "resp-1"), Pause(30)]
    client = make_client(fake, tmp_path / "config")
    try:
        tid = str(uuid.uuid4())
        async with Stream(client, tid) as stream:
            await client.send(tid, "long job")
            await stream.until(is_type("text-delta"))
            await restart(fake, html_answers=1, not_found_seconds=0.3)
            answered: list[ThreadStatus] = []

            async def status_read() -> bool:  # n8n answers again after its boot window
                try:
                    answered.append(await client.status(tid))
                except ClientError:
                    return False
                return True

            await until_async(status_read, what="n8n answers the thread's status again")
            status = answered[-1]
            assert not status.has_active_run and not status.is_suspended
            assert stream.conversation.is_streaming  # the client alone cannot know: the app checks status
            assert "run-finish" not in stream.types()
    finally:
        await client.close()


def test_backoff_is_capped_at_30_seconds() -> None:
    assert MAX_BACKOFF_CAP == 30.0
    assert max(backoff_delay(n, 1.0, MAX_BACKOFF_CAP) for n in range(1, 40)) <= 30.0
