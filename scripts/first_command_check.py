#!/usr/bin/env python
"""The README's first command, as a new user runs it: ``pip install -e . && instance-ai``.

Run by ``.ci/run`` with the python of a fresh venv that has the package **without the test extras**
(the suite's venvs carry extra packages, sniffio once among them, that hid a start that hung). It
starts ``instance-ai`` in tmux (its own socket, empty XDG folders: the offline demo), and checks what a
person sees: the demo banner, the status reaching ``● embedded``, ``hello`` answered by the demo, and Ctrl+Q
ending the app with status 0 and the line that resumes the thread. On failure it prints the pane.

Usage::

    python scripts/first_command_check.py --python /path/to/venv/bin/python [--size 160x48]

Exit code 0 when every check held.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


class Pane:
    """One tmux session on a socket of its own."""

    def __init__(self, socket: Path, width: int, height: int) -> None:
        self.socket, self.width, self.height = socket, width, height

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:2])}: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-s", "first", "-x", str(self.width), "-y", str(self.height), command)
        self.tmux("set-option", "-t", "first", "remain-on-exit", "on")

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "first")

    def dead_status(self) -> str | None:
        dead, status = self.tmux("display-message", "-p", "-t", "first",
                                 "#{pane_dead} #{pane_dead_status}").strip().partition(" ")[::2]
        return (status or "0") if dead == "1" else None

    def wait(self, what: str, test: Callable[[str], bool], timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if test(self.text()):
                print(f"ok: {what}")
                return True
            time.sleep(0.2)
        print(f"FAILED: {what} (not within {timeout:.0f} s); the pane:\n{self.text()}")
        return False


def check(python: Path, width: int, height: int) -> bool:
    entry = python.parent / "instance-ai"
    if not entry.exists():
        print(f"FAILED: {entry} does not exist: install the package into that venv first (pip install -e .)")
        return False
    with tempfile.TemporaryDirectory(prefix="first-command-") as tmp:
        home = Path(tmp)
        env = f"XDG_DATA_HOME={shlex.quote(str(home / 'data'))} XDG_CONFIG_HOME={shlex.quote(str(home / 'config'))}"
        pane = Pane(home / "tmux.sock", width, height)
        pane.start(f"env {env} {shlex.quote(str(entry))}")
        try:
            ok = (pane.wait("the demo banner", lambda t: "DEMO MODE" in t, 60)
                  and pane.wait("the client ready (● embedded)", lambda t: "● embedded" in t, 60))
            if ok:
                pane.tmux("send-keys", "-t", "first", "-l", "hello")
                pane.tmux("send-keys", "-t", "first", "Enter")
                ok = pane.wait("the demo's answer, then ○ idle with the tokens counted",
                               lambda t: "offline demo of Instance AI" in t and "○ idle" in t and " in · " in t, 60)
            if ok:
                pane.tmux("send-keys", "-t", "first", "C-q")
                end = time.monotonic() + 30
                while pane.dead_status() is None and time.monotonic() < end:
                    time.sleep(0.2)
                status = pane.dead_status()
                ok = status == "0" and "instance-ai --thread" in pane.text()
                print(("ok: " if ok else "FAILED: ") + f"Ctrl+Q ended the app (status {status}) with the resume line"
                      + ("" if ok else f"; the pane:\n{pane.text()}"))
            return ok
        finally:
            subprocess.run(["tmux", "-S", str(pane.socket), "kill-server"], capture_output=True, timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="the venv's python")
    parser.add_argument("--size", default="160x48", help="the terminal's size, WxH")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("FAILED: tmux is not installed (apt-get install tmux)")
        return 1
    width, height = (int(v) for v in args.size.split("x"))
    return 0 if check(args.python, width, height) else 1


if __name__ == "__main__":
    sys.exit(main())
