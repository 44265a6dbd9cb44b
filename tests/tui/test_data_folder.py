"""A data folder that cannot be created (issue 39.6): a clear error, no hang, no traceback.

The default database lives in ``$XDG_DATA_HOME/instance-ai``; when its parent is read-only
(here a read-only tmpfs, since root writes through permissions) the folder cannot be made.
Before: the app stayed at "● connecting" for ever and ``run``/``threads`` printed an
``OSError`` traceback. Now the app shows the start-failure screen (the folder, the cause, the
fix) and exits 2, and each command prints one line and exits 1.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup

from .scripts import SIZE
from .test_errors_start import failure_screen, shown

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def read_only_parent(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0:
        os.chmod(where, 0o500)  # (a user other than root cannot write here)
        yield where
        os.chmod(where, 0o700)
        return
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


async def test_the_app_says_the_folder_cannot_be_made(read_only_parent: Path) -> None:
    db = read_only_parent / "data" / "instance-ai" / "instance-ai.sqlite3"

    async def load() -> Started:
        settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
        return Started(EmbeddedClient(settings, demo_delay=0.002), settings)

    app = InstanceAiApp(startup=Startup(FirstFramePrefs(), load), watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        words = shown(await failure_screen(app, pilot))
        assert "cannot be written" in words and str(db.parent) in words and "--db" in words, words
        await pilot.press("q")
    assert app.return_code == 2


@pytest.mark.parametrize("command", [["run", "--model", "demo", "hello"], ["threads"]])
async def test_the_commands_say_it_in_one_line(read_only_parent: Path, tmp_path: Path, command: list[str]) -> None:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(read_only_parent / "data"),
               "XDG_CONFIG_HOME": str(tmp_path / "config")}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_DB", "INSTANCE_AI_MODEL", "INSTANCE_AI_TOKEN"):
        environ.pop(name, None)
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "instance_ai_tui", *command],
                                   capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"instance-ai {command[0]}: cannot create the folder {read_only_parent}/data/instance-ai")
    assert "cannot be written" in lines[0] and "--db PATH" in lines[0]
