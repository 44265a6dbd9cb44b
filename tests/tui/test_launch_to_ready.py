"""Launch to ready (issue 30): a message typed at the first frame reaches the model.

The app is started as ``instance-ai --new`` starts it (``cli.tui.load`` builds the settings and the
embedded client after the first frame), its model the local OpenAI-wire server. The message is
typed and sent while the first frame shows "starting…" (the client does not exist yet); the test
waits for the model to receive it, without timing it (``benchmarks/launch_to_ready.py`` times it).
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.cli import build_parser
from instance_ai_tui.cli import tui as cli_tui
from instance_ai_tui.tui import startup as boot
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, StartingClient, Startup
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import SIZE


def _user_texts(server: MockOpenAIServer) -> list[str]:
    return [str(m.get("content")) for r in server.requests for m in r.body.get("messages") or []
            if m.get("role") == "user"]


async def test_a_message_typed_at_the_first_frame_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    real_preload = boot.preload_ui

    def preload_ui() -> None:
        order.append("preload_ui")
        real_preload()

    monkeypatch.setattr(boot, "preload_ui", preload_ui)
    async with MockOpenAIServer([MockResponse(text="Hello from the model.")] * 4) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        args = build_parser(()).parse_args(["--new", "--model", "gpt-4o-mini", "--db", str(tmp_path / "db.sqlite3")])
        gate = asyncio.Event()

        async def load() -> Started:  # the CLI's own load, once the keys are in
            await gate.wait()
            return await cli_tui.load(args, None, None)

        app = InstanceAiApp(startup=Startup(FirstFramePrefs(), functools.partial(load)), start="new",
                            watch_themes=False, persist_theme=False)
        async with app.run_test(size=SIZE) as pilot:
            # the first frame: no client yet, the prompt takes the message
            assert isinstance(app.client, StartingClient) and app.focused is app.prompt
            await pilot.press(*"first words")
            await pilot.press("enter")
            await until(lambda: [i.text for i in app.thread.outbox.queue.items] == ["first words"], pilot)
            gate.set()
            await until(lambda: "first words" in _user_texts(server), pilot, what="the model received the message")
            await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                        and any(m.role == "assistant" for m in app.conversation.messages), pilot)
            shown: Any = [m.content for m in app.conversation.messages if m.role == "user"]
            assert shown == ["first words"]
            # what draws answers was imported after the message went out, not before it
            await until(lambda: order == ["preload_ui"], pilot, timeout=5, what=f"the deferred preload ran {order}")
