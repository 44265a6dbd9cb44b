"""Shell-first start (``tui.startup``): the first frame takes keys before the settings and the
client exist; they are swapped in when built; a start that cannot work ends with its reason."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.widgets import Input

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, StartError, StartingClient, Startup
from tests.support.waiting import until

from .scripts import SIZE

ROOT = Path(__file__).resolve().parents[2]


def demo_settings(tmp_path: Path) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})


def gated_app(tmp_path: Path, prefs: FirstFramePrefs | None = None) -> tuple[InstanceAiApp, asyncio.Event, list[Any]]:
    gate = asyncio.Event()
    built: list[Any] = []

    async def load() -> Started:
        await gate.wait()
        settings = demo_settings(tmp_path)
        client = EmbeddedClient(settings, demo_delay=0.002)
        built.append(client)
        return Started(client, settings)

    app = InstanceAiApp(startup=Startup(prefs or FirstFramePrefs(), load), watch_themes=False, persist_theme=False)
    return app, gate, built


async def test_the_first_frame_takes_keys_before_the_client_exists(tmp_path: Path) -> None:
    app, gate, built = gated_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.focused is app.prompt and "starting…" in str(app.status_line.render()), pilot,
                    what="the first frame")
        starting = app.client
        assert isinstance(starting, StartingClient) and not built
        assert app.focused is app.prompt
        shown = str(app.status_line.render())  # what the widget shows (not only what it would)
        assert "connecting" in shown and "starting…" in shown, shown
        await pilot.press(*"hello")
        await pilot.press("enter")  # nothing to send it with yet: it waits in the queue, visibly
        await until(lambda: bool(app.thread.outbox.queue.items), pilot)
        assert app.prompt.text == "" and [item.text for item in app.thread.outbox.queue.items] == ["hello"]
        assert "queued: hello" in " ".join(str(w.render()) for w in app.query(".queued-text"))
        # the hidden parts were mounted after the first frame
        assert app.find_bar.is_mounted and app.tasks_panel.is_mounted and app.connection.banner.is_mounted
        assert not app.query("#demo-banner")
        gate.set()
        await app.wait_until_ready()
        client = built[0]
        assert app.client is client and app.thread.client is client
        assert app.n8n_activity.client is client and app.pending_watch.client is client
        assert app.status_info.demo and app.query("#demo-banner")  # the demo model: its banner
        assert app.status_info.model == client.model_name
        del starting
        gc.collect()
        assert not [obj for obj in gc.get_objects() if isinstance(obj, StartingClient)]
        # the queued message was sent in the thread that opened (a new one: there were none)
        await until(lambda: app.thread_id is not None and not app.thread.outbox.queue.items, pilot)
        await until(lambda: app.conversation is not None and not app.conversation.is_streaming
                    and any(m.role == "user" for m in app.conversation.messages), pilot)
        assert [m.content for m in app.conversation.messages if m.role == "user"] == ["hello"]
        assert app.thread_list.local_threads()[0].id == app.thread_id


async def test_a_start_that_cannot_work_ends_the_app_with_its_reason() -> None:
    async def load() -> Started:
        raise StartError("cannot read config file /x/config.toml: Invalid value")

    app = InstanceAiApp(startup=Startup(FirstFramePrefs(), load), watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: not app.is_running, pilot, what="the app ended")
    assert app.start_error == "cannot read config file /x/config.toml: Invalid value"
    assert app.return_code == 2


async def test_the_first_frame_uses_the_preferences_read_without_validation(tmp_path: Path) -> None:
    prefs = FirstFramePrefs.from_ui({"theme": "textual-light", "enter_sends": False, "keys": {"new-thread": "ctrl+o"}})
    app, gate, _built = gated_app(tmp_path, prefs)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.stats.first_frame_at is not None, pilot, what="the first frame")
        assert app.theme == "textual-light"
        assert app.keys.keys("new-thread") == ("ctrl+o",) and not app.keys.enter_sends
        gate.set()  # the validated settings (defaults here) win once loaded
        await app.wait_until_ready()
        assert app.theme == "textual-dark"
        assert app.keys.keys("new-thread") != ("ctrl+o",) and app.keys.enter_sends


def test_unvalidated_preferences_of_the_wrong_type_are_left_to_the_settings() -> None:
    prefs = FirstFramePrefs.from_ui({"theme": 7, "enter_sends": "yes", "keys": ["x"]})
    assert prefs == FirstFramePrefs()
    assert FirstFramePrefs.from_ui({"theme": "nord"}, theme="dracula").theme == "dracula"


def test_the_app_takes_a_client_and_settings_or_a_startup(tmp_path: Path) -> None:
    settings = demo_settings(tmp_path)
    for args, kwargs in [((EmbeddedClient(settings),), {}), ((), {}),
                         ((EmbeddedClient(settings), settings), {"startup": Startup(FirstFramePrefs(), _never)})]:
        try:
            InstanceAiApp(*args, **kwargs)
        except TypeError as exc:
            assert "a client and its settings, or a startup" in str(exc)
        else:
            raise AssertionError(args)


async def _never() -> Started:
    raise AssertionError("not called")


def test_the_first_frame_is_drawn_before_pydantic_is_imported(tmp_path: Path) -> None:
    """In a fresh interpreter: when ``load`` starts (after the first frame), pydantic, the settings
    and the client modules have not been imported yet."""
    code = """
import asyncio, json, sys
from instance_ai_tui.config_file import peek_ui
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Startup
seen = {}
async def load():
    seen["first_frame"] = app.stats.first_frame_at is not None
    seen["early"] = sorted(m for m in ("pydantic", "instance_ai_tui.config", "instance_ai_tui.client.embedded",
                                        "httpx", "instance_ai_tui.protocol.conversation") if m in sys.modules)
    app.exit()
    await asyncio.Event().wait()
app = InstanceAiApp(startup=Startup(FirstFramePrefs.from_ui(peek_ui()), load), watch_themes=False,
                    persist_theme=False)
async def main():
    async with app.run_test(size=(100, 30)) as pilot:
        while app.is_running:
            await pilot.pause(0.02)
asyncio.run(main())
print(json.dumps(seen))
"""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"), "PATH": "/usr/bin:/bin",
           "INSTANCE_AI_CONFIG": str(tmp_path / "c" / "config.toml"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                            check=True)
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"first_frame": True, "early": []}


async def test_keys_typed_while_the_app_starts_go_to_the_prompt(tmp_path: Path) -> None:
    """Textual focuses the first focusable widget when the screen is composed (the thread list's
    search) and ``on_mount``'s ``prompt.focus()`` runs later: keys typed while the app started went
    to the search (seen in tmux). The screen itself focuses the prompt now."""
    app, gate, _built = gated_app(tmp_path)
    app.prompt.focus = lambda scroll_visible=True: app.prompt  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.focused is app.prompt
        await pilot.press(*"hi")
        assert app.prompt.text == "hi" and app.query_one("#thread-search", Input).value == ""
        gate.set()
        await app.wait_until_ready()


async def test_the_first_thread_opens_after_the_markdown_warm_up(tmp_path: Path, monkeypatch: Any) -> None:
    """The warm-up (the parsers' lazy expressions, in a thread) ends before the first thread
    opens: a replay sharing the interpreter with it ran every loop callback twice as long
    (tui_ingest's worst stall 31-46 ms with it, 21-26 ms after)."""
    import time

    from instance_ai_tui.tui import startup as boot

    order: list[str] = []

    def slow_warm_up() -> None:
        time.sleep(0.3)  # the scenario: a slow warm-up (it runs on its own thread)
        order.append("warm-up done")

    monkeypatch.setattr(boot, "warm_up_markdown", slow_warm_up)
    app, gate, _built = gated_app(tmp_path)
    real_open = app.threads.open_first

    async def open_first(thread_id: str | None) -> None:
        order.append("thread opened")
        await real_open(thread_id)

    app.threads.open_first = open_first  # type: ignore[method-assign]  # (start-up opens the first thread here)
    async with app.run_test(size=SIZE):
        gate.set()
        await app.wait_until_ready()
    assert order == ["warm-up done", "thread opened"]
