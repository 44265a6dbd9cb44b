"""A message typed at start goes to the model before what the person does not wait for (issue 30
item 1, ``tui.startup.StartSend``): the theme files, the model list and the watchers wait for
``app.start_sent``, which is set once the model has the message; the conversation view draws the
message once it is there (its frames are held until then, at most ``StartSend.HOLD``)."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.cli import build_parser
from instance_ai_tui.cli import tui as cli_tui
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import SIZE


def _user_texts(server: MockOpenAIServer) -> list[str]:
    return [str(m.get("content")) for r in server.requests for m in r.body.get("messages") or []
            if m.get("role") == "user"]


async def test_a_message_typed_at_start_reaches_the_model_before_the_deferred_start_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with MockOpenAIServer([MockResponse(text="An answer.")] * 4) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        args = build_parser(()).parse_args(["--new", "--model", "gpt-4o-mini", "--db", str(tmp_path / "db.sqlite3")])
        gate = asyncio.Event()

        async def load() -> Started:
            await gate.wait()
            return await cli_tui.load(args, None, None)

        app = InstanceAiApp(startup=Startup(FirstFramePrefs(), functools.partial(load)), start="new",
                            watch_themes=False, persist_theme=False)
        at_start_sent: list[int] = []

        async def watch_start_sent() -> None:
            await app.start_sent.wait()
            at_start_sent.append(len(server.requests))

        async with app.run_test(size=SIZE) as pilot:
            watcher = asyncio.create_task(watch_start_sent())
            await pilot.press(*"early words")
            await pilot.press("enter")
            await until(lambda: [i.text for i in app.thread.outbox.queue.items] == ["early words"], pilot)
            await pilot.pause(0.2)
            assert not app.start_sent.is_set()  # the theme files and the model list wait for the message
            assert app.theme_manager is not None and not app.theme_manager.file_themes
            gate.set()
            await until(lambda: bool(at_start_sent), pilot, timeout=10, what="app.start_sent")
            await watcher
            # set once the model had the message, not before
            assert at_start_sent[0] >= 1 and _user_texts(server)[0] == "early words"
            await until(lambda: bool(app.theme_manager and app.theme_manager.file_themes), pilot, timeout=10,
                        what="the theme files read after it")
            await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                        and any(m.role == "assistant" for m in app.conversation.messages), pilot)
            # the frames held for it let go: its turn and the answer are drawn
            conversation: Any = app.conversation
            await until(lambda: all(m.id in app.view.turns for m in conversation.messages), pilot,
                        what="every turn drawn")
            # the hold is let go by the frame timer's next ask once the answer began (``StartSend.hold``);
        # the turns may be drawn by another path just before that ask (read in between once, beside a
        # running app)
        await until(lambda: not app.boot.holding, pilot, what="the start hold let go")
