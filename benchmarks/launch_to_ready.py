"""Launch to ready: exec -> a message typed at the first frame reaches the model, side by side with the floor.

    python benchmarks/launch_to_ready.py [--runs 5] [--forms embedded,url,floor]

What a person waits for: they start ``instance-ai``, type a message as soon as the prompt is
on the screen and press Enter; how long until the model has their request? Each program is a
fresh interpreter in a pseudo-terminal, timed from just before ``Popen`` (``time.monotonic``)
to the moment the local OpenAI-wire server (``tests/support/openai_server.py``, another
process; Linux's monotonic clock is shared by processes) receives the chat request that holds
the typed text. The message is typed the moment the first frame (the prompt's placeholder) is
on the terminal, so keys typed before the settings and the client exist are part of it.

* ``embedded``: ``python -m instance_ai_tui --new``, its model on the local server (``OPENAI_BASE_URL``);
* ``url``: ``python -m instance_ai_tui --url http://127.0.0.1:PORT --new`` to an ``instance-ai serve``
  (started once, its model on the local server);
* ``floor``: a minimal Textual app that imports ``openai`` and sends one streamed request at mount
  (what any Textual chat client on the ``openai`` SDK must pay);
* ``mcp3``: ``embedded`` with three MCP servers configured (issue 44.2: they must not delay the
  message; ``ratio_p50_to_embedded``, target <= 1.1);
* ``typing``: the floor that waits for typing as a person does (issue 44.3): a minimal Textual app
  with an ``Input``; the message is typed at its first frame, Enter sends it as one streamed request
  through ``openai`` (imported at start, as such a client does).

Each form's CPU (``wait4``: the program's own, from exec until it quit on the Ctrl+Q sent the moment
its request reached the model) is printed beside its time: ``cpu_s``, ``cpu_ratio_p50_to_typing``.

With ``--baseline DIR`` the embedded form of another checkout takes its turn too (``baseline``).

The forms take turns run after run, so the machine's load falls on all alike; the load is
printed with the figures. Nothing gives up on a slow machine (only a hang, after 10 minutes).
Printed JSON: per form ``p50/min/max/runs`` (seconds) and ``first_frame`` (seconds to the
prompt on screen, the app forms), ``ratio_p50`` to the floor. Target (issue 30): <= 1.3x.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from cold_start import ANSI, APP_MARKER  # noqa: E402
from machine import HANG_S, load, machine, ratio, summary  # noqa: E402

TARGET_RATIO = 1.3
#: issue 44.3: launch to ready and its CPU against the typing floor
TYPING_TARGET = 1.2
SIZE = (120, 40)
FLOOR_MARKER = b"Floor app"
FLOOR_APP = """
import sys
import openai
from textual.app import App
from textual.widgets import Static

class Floor(App):
    def compose(self):
        yield Static("Floor app")

    async def on_mount(self):
        self.run_worker(self.ask())

    async def ask(self):
        client = openai.AsyncOpenAI(base_url=sys.argv[1], api_key="sk-bench")
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": sys.argv[2]}], stream=True)
        async for _ in stream:
            pass

Floor().run()
"""


TYPING_MARKER = b"Typing floor"
TYPING_APP = """
import sys
import openai
from textual.app import App
from textual.widgets import Input, Static

class Typing(App):
    def compose(self):
        yield Static("Typing floor")
        yield Input(placeholder="message")

    async def on_input_submitted(self, message):
        self.run_worker(self.ask(message.value))

    async def ask(self, text):
        client = openai.AsyncOpenAI(base_url=sys.argv[1], api_key="sk-bench")
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": text}], stream=True)
        async for _ in stream:
            pass

Typing().run()
"""


class ModelServer:
    """``tests.support.openai_server`` in its own process, answering "ok" to everything."""

    def __init__(self, tmp: str) -> None:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps([{"respond": {"text": "ok", "completion_tokens": 1}}]))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--script", str(script)],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        self.base_url: str = json.loads(self.proc.stdout.readline())["base_url"]

    def received(self, marker: str) -> float | None:
        """``time.monotonic()`` at which a chat request whose user text holds ``marker`` arrived."""
        url = self.base_url.removesuffix("/v1") + "/_mock/requests"
        with urllib.request.urlopen(url, timeout=30) as response:
            requests = json.loads(response.read())
        for request in requests:
            users = [m for m in request["body"].get("messages") or [] if m.get("role") == "user"]
            if any(marker in json.dumps(m.get("content")) for m in users):
                return float(request["received_at"])
        return None

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def env_for(tmp: str, model_url: str) -> dict[str, str]:
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": f"{tmp}/config",
        "XDG_DATA_HOME": f"{tmp}/data",
        "INSTANCE_AI_CONFIG": f"{tmp}/config/config.toml",
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "sk-bench",
        "INSTANCE_AI_MODEL": "gpt-4o-mini",
    }
    for name in ("TEXTUAL_THEME", "INSTANCE_AI_DB", "INSTANCE_AI_TOKEN", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def write_mcp_servers(config: str, count: int) -> None:
    """Issue 44.2's form ``mcp3``: the embedded app with ``count`` MCP servers configured (the suite's
    Python test server: each imports the ``mcp`` SDK as it starts, about a CPU-second)."""
    script = ROOT / "tests" / "support" / "mcp_servers.py"
    tables = "".join(f'[mcp.servers.s{i}]\ncommand = "{sys.executable}"\nargs = ["{script}", "tools"]\n'
                     for i in range(count))
    Path(config).parent.mkdir(parents=True, exist_ok=True)
    Path(config).write_text(tables, encoding="utf-8")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def our_server(model_url: str) -> Iterator[str]:
    """``instance-ai serve`` with its model on the local server, for the ``--url`` form."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="instance-ai-serve-") as tmp:
        process = subprocess.Popen(
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--db", f"{tmp}/serve.sqlite3",
             "--log-level", "warning"],
            env=env_for(tmp, model_url), cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if process.poll() is not None:
                    raise RuntimeError("instance-ai serve exited at start")
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(10)


def launch(argv: list[str], env: dict[str, str], cwd: str, marker: bytes, typed: str | None,
           server: ModelServer, token: str) -> tuple[float | None, float | None, float | None]:
    """(seconds to the first frame, seconds to the request at the model, CPU seconds) of one program."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    started = time.monotonic()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True,
                               start_new_session=True)
    os.close(slave)
    output, frame_at, arrived = b"", None, None
    next_poll = 0.0
    try:
        while time.monotonic() - started < HANG_S and process.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.01)
            if ready:
                try:
                    output += os.read(master, 1 << 16)
                except OSError:
                    break
                if frame_at is None and marker in ANSI.sub(b"", output):
                    frame_at = time.monotonic() - started
                    if typed is not None:
                        os.write(master, typed.encode() + b"\r")
                output = output[-4096:] if frame_at is not None else output
            now = time.monotonic()
            if frame_at is not None and now >= next_poll:
                next_poll = now + 0.02
                received = server.received(token)
                if received is not None:
                    arrived = received - started
                    break
    finally:
        with contextlib.suppress(OSError):
            os.write(master, b"\x11")  # Ctrl+Q
        cpu = _reap(process)
        os.close(master)
    return frame_at, arrived, cpu


def _reap(process: subprocess.Popen[bytes]) -> float | None:
    """Wait for ``process`` (killed after 10 s) and give its own CPU seconds (``wait4``)."""
    deadline = time.monotonic() + 10
    while True:
        with contextlib.suppress(ChildProcessError):
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                return round(usage.ru_utime + usage.ru_stime, 4)
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            deadline = time.monotonic() + HANG_S
        time.sleep(0.01)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--forms", default="embedded,url,floor,typing")
    parser.add_argument("--baseline", type=Path,
                        help="another checkout (e.g. a `git archive` of an older commit): its embedded form "
                             "takes its turn too, as `baseline` (before / after in one run)")
    args = parser.parse_args()
    started_load = load()
    forms = args.forms.split(",") + (["baseline"] if args.baseline is not None else [])
    arrived: dict[str, list[float | None]] = {form: [] for form in forms}
    frames: dict[str, list[float | None]] = {form: [] for form in forms}
    cpus: dict[str, list[float | None]] = {form: [] for form in forms}
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="instance-ai-ready-") as tmp:
        server = ModelServer(tmp)
        try:
            with our_server(server.base_url) as url:
                def one(form: str, n: int) -> None:
                    token = f"ready-{form}-{n}"
                    with tempfile.TemporaryDirectory(prefix="instance-ai-ready-run-") as run_tmp:
                        env = env_for(run_tmp, server.base_url)
                        if form == "floor":
                            argv = [python, "-c", FLOOR_APP, server.base_url, token]
                            frame, at, cpu = launch(argv, env, run_tmp, FLOOR_MARKER, None, server, token)
                        elif form == "typing":
                            argv = [python, "-c", TYPING_APP, server.base_url]
                            frame, at, cpu = launch(argv, env, run_tmp, TYPING_MARKER, token, server, token)
                        else:
                            argv = [python, "-m", "instance_ai_tui", "--new"]
                            if form == "mcp3":
                                write_mcp_servers(env["INSTANCE_AI_CONFIG"], 3)
                            if form == "url":
                                argv[3:3] = ["--url", url]
                            if form == "baseline":
                                env["PYTHONPATH"] = str(args.baseline.resolve())
                            frame, at, cpu = launch(argv, env, run_tmp, APP_MARKER, token, server, token)
                    if n >= 0:
                        frames[form].append(frame)
                        arrived[form].append(at)
                        cpus[form].append(cpu)
                    print(json.dumps({"form": form, "run": n, "first_frame_s": frame, "at_model_s": at, "cpu_s": cpu}),
                          file=sys.stderr, flush=True)

                for form in forms:  # warm the file cache and the bytecode caches
                    one(form, -1)
                for n in range(args.runs):
                    for form in forms:
                        one(form, n)
        finally:
            server.close()
    result: dict[str, Any] = {"benchmark": "launch_to_ready", "runs": args.runs, "size": f"{SIZE[0]}x{SIZE[1]}"}
    for form in forms:
        result[form] = {"at_model_s": summary(arrived[form]), "first_frame_s": summary(frames[form]),
                        "cpu_s": summary(cpus[form])}
    floor = result.get("floor", {}).get("at_model_s", {}).get("p50")
    typing = result.get("typing", {})
    for form in forms:
        if form not in ("floor", "typing"):
            value = ratio(result[form]["at_model_s"]["p50"], floor)
            result[form]["ratio_p50_to_floor"] = value
            result[form]["meets_target"] = value is not None and value <= TARGET_RATIO
            if typing:
                result[form]["ratio_p50_to_typing"] = ratio(result[form]["at_model_s"]["p50"],
                                                            typing["at_model_s"]["p50"])
                result[form]["cpu_ratio_p50_to_typing"] = ratio(result[form]["cpu_s"]["p50"], typing["cpu_s"]["p50"])
    if "mcp3" in result and "embedded" in result:  # issue 44.2: MCP servers never delay a message (<= 1.1x)
        result["mcp3"]["ratio_p50_to_embedded"] = ratio(result["mcp3"]["at_model_s"]["p50"],
                                                        result["embedded"]["at_model_s"]["p50"])
    result["target_ratio_to_typing"] = TYPING_TARGET
    result["target_ratio"] = TARGET_RATIO
    result["machine"] = machine(started_load)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    raise SystemExit(main())
