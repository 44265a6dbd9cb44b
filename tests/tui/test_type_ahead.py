"""Type-ahead at launch (issue 39.4): a message typed and sent before the first frame is sent.

In a real terminal (tmux), ``instance-ai --model demo`` is started and the keys of a message and
Enter are sent 0.1 s after the command (and at once, with the command: typed while the interpreter
starts), ten times, each a new user's folders. Before: the terminal, still in cooked mode, turned
Enter into a line feed, read as Ctrl+J: the message sat in the prompt on two lines, unsent (10 of
10 here). Now the demo's answer is on the screen and the prompt is empty, every time; and after
the app quits the terminal has its settings back (icrnl, icanon, echo).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSWER = "offline demo of Instance AI"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self, tmp_path: Path) -> None:
        self.socket = f"ta-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp_path

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "t")

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


async def launch_and_type(tmp_path: Path, n: int, delay: float) -> tuple[bool, str]:
    tmux = Tmux(tmp_path)
    home = tmp_path / f"user-{n}"
    environ = {"XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
               "PYTHONPATH": str(REPO)}
    try:
        tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "30",
             *[item for key, value in environ.items() for item in ("-e", f"{key}={value}")], "bash --norc --noprofile")
        tmux("send-keys", "-t", "t", f"cd {tmp_path}; PS1='$ '; clear", "Enter")
        await asyncio.sleep(0.5)
        tmux("send-keys", "-t", "t", f"{sys.executable} -m instance_ai_tui --model demo; echo EXITED $?", "Enter")
        await asyncio.sleep(delay)
        tmux("send-keys", "-t", "t", "hello there", "Enter")
        deadline = time.monotonic() + 120
        while ANSWER not in (screen := tmux.screen()):
            if time.monotonic() > deadline:
                return False, screen
            await asyncio.sleep(0.25)
        tmux("send-keys", "-t", "t", "C-q")
        while "EXITED 0" not in (screen := tmux.screen()):
            if time.monotonic() > deadline:
                return False, screen
            await asyncio.sleep(0.25)
        tmux("send-keys", "-t", "t", "clear; stty -a", "Enter")
        await asyncio.sleep(1.0)
        settings = tmux.screen().split()
        restored = all(flag in settings for flag in ("icrnl", "icanon", "echo", "isig"))
        return restored, screen if restored else " ".join(settings)
    finally:
        tmux.kill()


@pytest.mark.parametrize("delay", [0.1, 0.0])
async def test_a_message_typed_at_launch_is_sent_ten_of_ten(tmp_path: Path, delay: float) -> None:
    outcomes = []
    for n in range(10):
        sent, screen = await launch_and_type(tmp_path, n, delay)
        outcomes.append(sent)
        assert sent, f"launch {n + 1}: the message typed {delay} s after the command was not sent:\n{screen}"
    assert outcomes == [True] * 10


@pytest.mark.parametrize("stdin", ["pseudofile", "none", "closed", "pipe"])
def test_capture_without_a_terminal_does_nothing(stdin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest's captured stdin (no fileno), no stdin, a closed one or a pipe: ``capture`` leaves
    it alone and says so; the CLI never crashes on it (CI failed with io.UnsupportedOperation)."""
    import io
    import os

    from instance_ai_tui.cli import type_ahead

    read_end, write_end = os.pipe()
    try:
        if stdin == "pseudofile":
            replacement: Any = io.StringIO("typed")
        elif stdin == "none":
            replacement = None
        elif stdin == "closed":
            replacement = os.fdopen(os.dup(read_end))
            replacement.close()
        else:
            replacement = os.fdopen(os.dup(read_end))
        monkeypatch.setattr(sys, "stdin", replacement)
        monkeypatch.setattr(type_ahead, "_original", None)
        assert type_ahead.capture() is False
        assert type_ahead._original is None  # nothing captured: nothing to give back
        assert type_ahead.take_early() == ""
    finally:
        if stdin == "pipe":
            replacement.close()
        os.close(read_end)
        os.close(write_end)


def test_the_tui_command_with_a_pseudofile_stdin_says_its_error(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The TUI's command run with stdin that has no fileno (pytest's capture) reaches its own
    argument check (a gateway folder without --url) instead of crashing in the type-ahead capture."""
    import io

    from instance_ai_tui.cli import main as cli_main
    from instance_ai_tui.cli import type_ahead

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(type_ahead, "_original", None)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "cfg" / "none.toml"))
    assert cli_main(["--gateway", str(tmp_path)]) == 2
    assert "it needs --url of an n8n instance" in capsys.readouterr().err
