"""Copying that tells the truth: the system clipboard when a tool for it exists, the terminal's
OSC 52 otherwise, and a file when we know the terminal will drop OSC 52.

``copy_native(text)`` pipes ``text`` into the platform's clipboard tool (``wl-copy`` on Wayland,
``xclip``/``xsel`` on X11, ``pbcopy`` on macOS, ``clip.exe`` under WSL) and returns its name, or
``None`` when there is none or it failed. ``osc52_blocker()`` names a known reason why an OSC 52
copy cannot arrive (tmux unless ``set-clipboard on`` — its default, ``external``, drops an
application's copy —, GNU screen, the Linux console), or ``None`` when none is known (which
does not mean it arrived: only ``tmux_buffer_holds`` can tell, inside tmux).
``save_copy(text)`` keeps the text in a private file (mode 0600) and returns its path. All three
block: call them from a thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: seconds a clipboard tool may take
TOOL_TIMEOUT = 3.0


def _tools() -> list[list[str]]:
    env = os.environ
    tools: list[list[str]] = []
    if sys.platform == "darwin":
        tools.append(["pbcopy"])
    if env.get("WAYLAND_DISPLAY"):
        tools.append(["wl-copy"])
    if env.get("DISPLAY"):
        tools += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    if env.get("WSL_DISTRO_NAME"):
        tools.append(["clip.exe"])
    return [t for t in tools if shutil.which(t[0])]


def copy_native(text: str) -> str | None:
    for command in _tools():
        try:
            done = subprocess.run(command, input=text.encode("utf-8"), timeout=TOOL_TIMEOUT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return command[0]
    return None


def osc52_blocker() -> str | None:
    env = os.environ
    if env.get("TERM") == "linux":
        return "the Linux console has no clipboard"
    if env.get("STY"):
        return "GNU screen drops OSC 52 copies"
    if env.get("TMUX") and shutil.which("tmux"):
        try:
            done = subprocess.run(["tmux", "show-options", "-gv", "set-clipboard"], capture_output=True,
                                  text=True, timeout=TOOL_TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        setting = done.stdout.strip() if done.returncode == 0 else ""
        if setting in ("off", "external"):
            return (f"tmux has set-clipboard {setting}, so it drops a program's copy "
                    "(`tmux set -g set-clipboard on` lets it through)")
    return None


def in_tmux() -> bool:
    return bool(os.environ.get("TMUX")) and shutil.which("tmux") is not None


def tmux_buffer_holds(text: str) -> bool:
    """tmux's newest paste buffer is ``text``: a terminal copy (OSC 52) reached tmux."""
    try:
        done = subprocess.run(["tmux", "show-buffer"], capture_output=True, timeout=TOOL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.decode("utf-8", "replace").rstrip("\n") == text.rstrip("\n")


def save_copy(text: str, folder: Path | None = None) -> Path:
    if folder is None:
        from platformdirs import user_data_path

        folder = user_data_path("instance-ai", appauthor=False)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "clipboard.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    return path
