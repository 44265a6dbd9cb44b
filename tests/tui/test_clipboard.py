"""Copy says where the text went, and "copied" only where delivery is known (issue 32): the system
clipboard tool, tmux's paste buffer read back; otherwise the terminal copy (OSC 52) is sent and
the text kept in a private file, and the notice says where."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from instance_ai_tui.tui.widgets.turns import UserMessage
from tests.support.waiting import until

from .scripts import SIZE, make_app, recorded, simple_run
from .test_interactions import send, turns


def _fake_tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "TMUX", "STY", "WSL_DISTRO_NAME"):
        monkeypatch.delenv(name, raising=False)
    return folder


async def _copy_user_message(app, pilot) -> None:
    await send(pilot, app, "list my workflows")
    await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
    message = next(w for w in app.view.turns.values() if isinstance(w, UserMessage))
    message.focus()
    await pilot.press("c")


def _note(app, text: str) -> bool:
    return any(text in str(n.message) for n in app._notifications)


async def test_a_clipboard_tool_is_used_and_named(bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISPLAY", ":99")
    _fake_tool(bin_dir, "xclip", f'cat > "{tmp_path}/xclip.out"')
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await _copy_user_message(app, pilot)
        await until(lambda: _note(app, "(xclip)"), pilot)
    assert (tmp_path / "xclip.out").read_text() == "list my workflows"


async def test_tmux_without_set_clipboard_saves_a_file_and_says_so(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    _fake_tool(bin_dir, "tmux", 'echo off')
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await _copy_user_message(app, pilot)
        await until(lambda: _note(app, "tmux has set-clipboard off"), pilot)
    saved = tmp_path / "data" / "instance-ai" / "clipboard.txt"
    assert saved.read_text() == "list my workflows"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert app.clipboard == "list my workflows"  # OSC 52 was still tried


async def test_otherwise_the_terminal_is_named_and_a_file_kept_since_delivery_is_unknown(
    bin_dir: Path, tmp_path: Path
) -> None:
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await _copy_user_message(app, pilot)
        await until(lambda: _note(app, "sent to the terminal's clipboard (OSC 52)"), pilot)
        assert not _note(app, "Copied")  # a terminal may drop it without a word: not "copied"
    assert (tmp_path / "data" / "instance-ai" / "clipboard.txt").read_text() == "list my workflows"


async def test_tmux_by_default_drops_the_copy_so_a_file_is_kept(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    _fake_tool(bin_dir, "tmux", 'if [ "$1" = show-options ]; then echo external; else echo "older text"; fi')
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await _copy_user_message(app, pilot)
        await until(lambda: _note(app, "tmux has set-clipboard external"), pilot)
        assert not _note(app, "Copied")
    assert (tmp_path / "data" / "instance-ai" / "clipboard.txt").read_text() == "list my workflows"


async def test_a_copy_read_back_from_tmux_says_copied(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    _fake_tool(bin_dir, "tmux", 'if [ "$1" = show-buffer ]; then printf "list my workflows"; else echo on; fi')
    app = make_app(recorded([simple_run()]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await _copy_user_message(app, pilot)
        await until(lambda: _note(app, "into tmux's paste buffer"), pilot)
        assert _note(app, "Copied")
