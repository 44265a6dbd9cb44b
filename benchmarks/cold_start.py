"""Cold start: time to first paint of the app vs a minimal Textual app, side by side.

    python benchmarks/cold_start.py [--runs 7] [--size 160x48]

Each program is started as a fresh interpreter in a pseudo-terminal (so every import is cold
and the terminal is real) and timed from ``Popen`` to the moment its first frame is on the
terminal (the frame's text contains a marker: the prompt's placeholder for the app, the one
label of the minimal app); then it is sent Ctrl+Q. The three programs take turns, run after
run, so that the machine's load falls on all of them alike:

* ``app_embedded_demo``: ``python -m instance_ai_tui --model demo --new`` (fresh config and
  SQLite file in a temporary folder);
* ``app_url``: ``python -m instance_ai_tui --url http://127.0.0.1:PORT --new`` against an
  ``instance-ai serve --model demo`` started once by this script;
* ``minimal_textual``: an ``App`` with one ``Static`` (the floor: Python + Textual + a frame).

Python's bytecode cache is on, as on a user's machine: ``PYTHONDONTWRITEBYTECODE`` (set in some
sandboxes and CI images) is removed from the programs' environment and each program runs once
before the measured runs, so every import reads its ``.pyc`` as it does from the second start
on. ``--no-bytecode-cache`` keeps the variable: our package, installed editable, is then
compiled from source at every start (some 100 ms more here) while the minimal app's Textual,
compiled when pip installed it, is not.

Printed JSON: per program ``p50_s``, ``max_s``, ``min_s`` and every run; ``ratio_p50`` of each
app form to the minimal app; ``import_s``: importing ``instance_ai_tui.tui.app`` and
``textual.app`` in a fresh interpreter (median). Targets (issue 14): first paint < 0.6 s and
<= 1.5x the minimal app.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[()][A-Z0-9]|[=>78cDEHM])")
APP_MARKER = b"Message Instance AI"
MINIMAL_MARKER = b"Minimal Textual app"
MINIMAL_APP = f"""
from textual.app import App
from textual.widgets import Footer, Static


class Minimal(App):
    def compose(self):
        yield Static({MINIMAL_MARKER.decode()!r})
        yield Footer()

Minimal().run()
"""
TARGET_SECONDS = 0.6
TARGET_RATIO = 1.5


#: keep ``PYTHONDONTWRITEBYTECODE`` from the environment (``--no-bytecode-cache``)
KEEP_NO_BYTECODE = False


def _bytecode_policy(env: dict[str, str]) -> dict[str, str]:
    """``env`` without ``PYTHONDONTWRITEBYTECODE`` unless ``--no-bytecode-cache``."""
    if not KEEP_NO_BYTECODE:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def clean_env(tmp: str) -> dict[str, str]:
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": f"{tmp}/config",
        "XDG_DATA_HOME": f"{tmp}/data",
        "INSTANCE_AI_CONFIG": f"{tmp}/config/config.toml",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    for name in ("TEXTUAL_THEME", "INSTANCE_AI_MODEL", "OPENAI_API_KEY", "INSTANCE_AI_DB", "INSTANCE_AI_TOKEN"):
        env.pop(name, None)
    return _bytecode_policy(env)


def first_paint(argv: list[str], marker: bytes, size: tuple[int, int], timeout: float = 30.0) -> float | None:
    """Seconds from starting ``argv`` in a pty of ``size`` until ``marker`` is on its screen."""
    with tempfile.TemporaryDirectory(prefix="instance-ai-cold-") as tmp:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=clean_env(tmp), cwd=tmp,
                                   close_fds=True, start_new_session=True)
        os.close(slave)
        output, seen = b"", None
        try:
            while time.perf_counter() - started < timeout and process.poll() is None:
                ready, _, _ = select.select([master], [], [], 0.005)
                if not ready:
                    continue
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    break
                output += data
                if seen is None and marker in ANSI.sub(b"", output):
                    seen = time.perf_counter() - started
                    os.write(master, b"\x11")  # Ctrl+Q
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        finally:
            os.close(master)
    return seen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def demo_server() -> Iterator[str]:
    """``instance-ai serve --model demo`` on a free port, for the ``--url`` form."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="instance-ai-serve-") as tmp:
        process = subprocess.Popen(
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--model", "demo",
             "--db", f"{tmp}/serve.sqlite3", "--log-level", "warning"],
            env=clean_env(tmp), cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if process.poll() is not None:
                    raise RuntimeError("instance-ai serve exited at start")
                time.sleep(0.1)
            else:
                raise RuntimeError("instance-ai serve did not listen within 60 s")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=10)


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = _bytecode_policy({**os.environ, "PYTHONPATH": str(ROOT)})
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    return float(result.stdout.strip())


def summary(times: list[float | None]) -> dict[str, Any]:
    done = [t for t in times if t is not None]
    return {
        "p50_s": round(statistics.median(done), 3) if done else None,
        "max_s": round(max(done), 3) if done else None,
        "min_s": round(min(done), 3) if done else None,
        "runs_s": [None if t is None else round(t, 3) for t in times],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", default="160x48", help="terminal size COLSxROWS")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE from the environment (see the module docstring)")
    args = parser.parse_args()
    global KEEP_NO_BYTECODE
    KEEP_NO_BYTECODE = args.no_bytecode_cache
    cols, rows = (int(n) for n in args.size.lower().split("x"))
    size = (cols, rows)
    python = sys.executable
    times: dict[str, list[float | None]] = {"app_embedded_demo": [], "app_url": [], "minimal_textual": []}
    with demo_server() as url:
        programs = {
            "app_embedded_demo": ([python, "-m", "instance_ai_tui", "--model", "demo", "--new"], APP_MARKER),
            "app_url": ([python, "-m", "instance_ai_tui", "--url", url, "--new"], APP_MARKER),
            "minimal_textual": ([python, "-c", MINIMAL_APP], MINIMAL_MARKER),
        }
        for argv, marker in programs.values():  # warm the OS file cache and write the bytecode caches
            first_paint(argv, marker, size)
        for _ in range(args.runs):
            for name, (argv, marker) in programs.items():
                times[name].append(first_paint(argv, marker, size))
    result: dict[str, Any] = {"runs": args.runs, "size": args.size, "bytecode_cache": not KEEP_NO_BYTECODE,
                              **{k: summary(v) for k, v in times.items()}}
    floor = result["minimal_textual"]["p50_s"]
    for name in ("app_embedded_demo", "app_url"):
        p50 = result[name]["p50_s"]
        result[name]["ratio_p50"] = round(p50 / floor, 2) if p50 and floor else None
        result[name]["meets_targets"] = bool(p50 and floor and p50 < TARGET_SECONDS and p50 / floor <= TARGET_RATIO)
    result["import_s"] = {
        module: round(statistics.median(import_seconds(module) for _ in range(3)), 3)
        for module in ("instance_ai_tui.tui.app", "textual.app")
    }
    print(json.dumps(with_machine(result), indent=2))
    return 0


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    raise SystemExit(main())
