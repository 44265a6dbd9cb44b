"""What the app imports after its first frame is imported off the event loop: a large import on
the loop is a turn nothing else gets (keys wait, the stream being read waits). Measured by
``benchmarks/tui_ingest.py`` (issue 44): the workflow room the watchers build imported the
workflow screen and canvas modules on the loop, its longest turn while a thread's stream arrived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

WATCHED = ("instance_ai_tui.tui.screens.workflow", "instance_ai_tui.tui.widgets.workflow_canvas")

SCRIPT = """
import asyncio, json, sys, threading
WATCHED = {watched!r}
TYPED = {typed!r}
where = {{}}
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name in WATCHED and name not in where:
            where[name] = "loop" if threading.current_thread() is threading.main_thread() else "thread"
        return None
sys.meta_path.insert(0, Finder())
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup
gate = asyncio.Event()
async def load():
    await gate.wait()
    settings = Settings.model_validate({{"model": {{"name": "demo"}}, "db_path": sys.argv[1]}})
    return Started(EmbeddedClient(settings, demo_delay=0.001), settings)
app = InstanceAiApp(startup=Startup(FirstFramePrefs(), load), start="new", watch_themes=False, persist_theme=False)
async def main():
    async with app.run_test(size=(100, 30)) as pilot:
        if TYPED:  # a message typed at the first frame: the watchers start once it reached the model
            await pilot.press(*"hello", "enter")
            while not app.thread.outbox.queue.items:
                await pilot.pause(0.02)
        gate.set()
        await app.wait_until_ready(timeout=60)
        while app.actions._workflows is None:  # (the watchers build it)
            await pilot.pause(0.02)
asyncio.run(main())
print(json.dumps(where))
"""


@pytest.mark.parametrize("typed", [False, True], ids=["opened", "typed-at-start"])
def test_the_workflow_room_is_imported_off_the_event_loop(tmp_path: Path, typed: bool) -> None:
    """In a fresh interpreter, a finder on ``sys.meta_path`` notes the thread each watched module is
    first imported in; once the thread is open and the watchers (which build the workflow room)
    started, none of them was imported on the event loop's thread: when the app opened its thread,
    and when a message typed at the first frame went out first (the watchers start after it)."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"), "PATH": "/usr/bin:/bin",
           "INSTANCE_AI_CONFIG": str(tmp_path / "c" / "config.toml"), "PYTHONPATH": str(ROOT)}
    code = SCRIPT.format(watched=WATCHED, typed=typed)
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db.sqlite3")], capture_output=True,
                            text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    where = json.loads(result.stdout.strip().splitlines()[-1])
    assert where == dict.fromkeys(WATCHED, "thread")
