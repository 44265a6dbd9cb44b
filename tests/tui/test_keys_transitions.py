"""No refused input during transitions (issue 32, rule 5): a message sent while the app starts,
while a thread opens (Ctrl+N, a switch) or while the client reconnects waits, visibly, and goes
to the thread the person will see; it is never refused for being early.

The Ctrl+N race of the issue, as the real app meets it: the app starts shell-first (a
``Startup``: settings and client are built after the first frame), an embedded client whose
model is a real OpenAI wire-format server (``tests.support.openai_server``), a database that
already has a thread (so the start-up would open it), and the person presses Ctrl+N at the first
frame and sends a message 0, 0.1, 0.3 and 0.5 s after it. Every time the message reaches the
model, in the new thread.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import SIZE, make_app, simple_run


def _answer(body: dict[str, Any]) -> MockResponse:
    return MockResponse(text="Noted.")


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings.model_validate({
        "model": {"name": "gpt-4o-mini", "base_url": url, "api_key": "sk-test"},
        "db_path": tmp_path / "db.sqlite3",
    })


def _user_texts(server: MockOpenAIServer) -> list[str]:
    texts: list[str] = []
    for request in server.requests:
        for message in request.body.get("messages") or []:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, str):
                texts.append(content)
    return texts


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3, 0.5])
async def test_ctrl_n_at_the_first_frame_then_send_the_message_reaches_the_model(tmp_path: Path, delay: float) -> None:
    async with MockOpenAIServer(_answer) as server:
        settings = _settings(tmp_path, server.base_url)
        before = EmbeddedClient(settings)  # a thread from an earlier session: the start-up would open it
        await before.open()
        old = await before.create_thread(title="Yesterday")
        await before.close()

        async def load() -> Started:
            return Started(EmbeddedClient(settings), settings)

        app = InstanceAiApp(startup=Startup(FirstFramePrefs(), load), watch_themes=False, persist_theme=False)
        text = f"hello model after {delay} s"
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.stats.first_frame_at is not None, pilot, timeout=10)
            first = asyncio.get_running_loop().time()
            await pilot.press("ctrl+n")
            wait = first + delay - asyncio.get_running_loop().time()
            if wait > 0:  # the person types ``delay`` s after the first frame: the scenario, not a wait
                await asyncio.sleep(wait)
            app.prompt.load_text(text)
            await pilot.press("enter")
            await until(lambda: app.prompt.text == "", pilot)  # taken: sent or queued, never left in the prompt
            assert not any("Not sent" in str(n.message) for n in app._notifications)
            await until(lambda: text in _user_texts(server), pilot)
            await app.wait_until_ready()
            assert app.thread_id is not None and app.thread_id != old.id  # the thread Ctrl+N opened
            await until(lambda: not app.thread.outbox.queue.items, pilot)
            assert [m.content for m in app.conversation.messages if m.role == "user"] == [text]


async def test_a_message_sent_while_a_thread_opens_waits_and_goes_to_that_thread() -> None:
    client = RecordedClient({"older": [], "work": []}, runs=[simple_run()], titles={"older": "Older", "work": "Work"},
                        model_name="scripted-test")
    gate = asyncio.Event()
    recent = client.recent_messages

    async def slow_recent(thread_id: str, limit: int) -> Any:
        if thread_id == "older":
            await gate.wait()  # the history is slow to come
        return await recent(thread_id, limit)

    client.recent_messages = slow_recent  # type: ignore[method-assign]
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        assert app.thread_id == "work"
        app.thread_list.focus_list()
        await pilot.pause()
        while app.thread_list.highlighted_thread_id != "older":
            await pilot.press("down")
        await pilot.press("enter")  # switch: the prompt has the keys at once, the thread opens
        await until(lambda: app.thread.opening > 0 and app.focused is app.prompt, pilot)
        await pilot.press(*["space" if c == " " else c for c in "list my workflows"])
        await pilot.press("enter")
        await until(lambda: [i.text for i in app.thread.outbox.queue.items] == ["list my workflows"], pilot)
        assert app.prompt.text == ""
        assert "queued: list my workflows" in " ".join(str(w.render()) for w in app.query(".queued-text"))
        assert not [c for c in client.calls if c[0] == "send"]
        gate.set()
        await until(lambda: ("send", ("older", "list my workflows")) in client.calls
                    or any(c[0] == "send" for c in client.calls), pilot)
        sends = [c for c in client.calls if c[0] == "send"]
        assert sends and sends[0][1][0] == "older"  # the thread the person sees
        assert not app.thread.outbox.queue.items


class _SlowToLetGo(RecordedClient):
    """A server that still says "a run is active" (409) for a moment after a cancel."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals = 0

    async def cancel(self, thread_id: str) -> None:
        await super().cancel(thread_id)
        self.refusals = 3

    async def send(self, thread_id: str, text: str) -> str:
        if self.refusals:
            self.refusals -= 1
            self.calls.append(("refused", text))
            from instance_ai_tui.client.base import RunActiveError

            raise RunActiveError("a run is already active in this thread", 409)
        return await super().send(thread_id, text)


async def test_a_message_queued_behind_a_run_being_stopped_is_sent_once_the_run_has_let_go() -> None:
    from .scripts import questions_run

    client = _SlowToLetGo(runs=[questions_run(), simple_run()], model_name="scripted-test")
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("build it")
        await pilot.press("enter")
        await until(lambda: bool(app.thread.pending), pilot)
        app.prompt.load_text("list my workflows instead")
        await pilot.press("enter")  # the agent waits for an answer: queued
        await until(lambda: [i.text for i in app.thread.outbox.queue.items] == ["list my workflows instead"], pilot)
        await pilot.press("escape")  # stop it; the server takes a moment to let the run go
        await until(lambda: ("send", (app.thread_id, "list my workflows instead")) in client.calls, pilot)
        assert [c for c in client.calls if c[0] == "refused"]  # it was refused meanwhile, and retried
        assert app.prompt.text == "" and not any("Not sent" in str(n.message) for n in app._notifications)
