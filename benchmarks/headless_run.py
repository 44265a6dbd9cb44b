"""Headless run: ``instance-ai run --url`` for one short answer, side by side with curl + SSE.

    python benchmarks/headless_run.py [--runs 5] [--baseline PATH_TO_OTHER_CHECKOUT]

What a person (or a script) waits for: from typing ``instance-ai run --url URL "message"`` to
having the answer and the prompt back. One ``instance-ai serve`` is started, its model the local
OpenAI-wire server (``tests/support/openai_server.py``, answering one short sentence of 14 words at
20 words/s, a model's pace); then, taking
turns run after run so the load falls on both alike:

* ``ours``: ``python -m instance_ai_tui run --url URL "message"``, from exec to exit;
* ``curl``: the same request made by a shell with curl: create the thread (``POST /threads``),
  send (``POST /chat/:id``) and read ``GET /events/:id`` (SSE) until the run's ``run-finish``,
  from exec to exit (the floor of any client of the protocol).

With ``--baseline`` the other checkout's ``run --url`` takes its turn too (before / after in one run).
Each is timed from exec to exit with its own CPU (``wait4``), and ``ours`` also to the moment its
first request reached the server and to the ``run-finish`` it printed: ``exit_after_finish_s`` is
how long it stayed after the run had finished. Printed JSON: per form ``p50/min/max/runs``,
``ratio_p50`` (ours / curl), the machine's load. Target (issue 30): <= 1.5x curl, exit at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from machine import HANG_S, load, machine, ratio, summary, timed_run  # noqa: E402

TARGET_RATIO = 1.5
ANSWER = "The workflow runs every morning at 8 and posts the weather to Slack."

CURL_SCRIPT = r"""
set -e
base="$1/instance-ai"; thread="$2"; message="$3"
curl -sf -X POST -H 'content-type: application/json' -d "{\"threadId\":\"$thread\"}" "$base/threads" >/dev/null
curl -sf -X POST -H 'content-type: application/json' -d "{\"message\":\"$message\"}" "$base/chat/$thread" >/dev/null
exec 3< <(exec curl -sN -H 'accept: text/event-stream' "$base/events/$thread" 2>/dev/null)
reader=$!
while IFS= read -r line <&3; do
  case "$line" in
    data:*'"text-delta"'*) ;;
    data:*'"run-finish"'*) kill "$reader" 2>/dev/null; exit 0 ;;
  esac
done
exit 1
"""


def env_for(tmp: str, model_url: str) -> dict[str, str]:
    env = {**os.environ, "XDG_CONFIG_HOME": f"{tmp}/config", "XDG_DATA_HOME": f"{tmp}/data",
           "INSTANCE_AI_CONFIG": f"{tmp}/config/config.toml",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "sk-bench", "INSTANCE_AI_MODEL": "gpt-4o-mini"}
    for name in ("INSTANCE_AI_DB", "INSTANCE_AI_TOKEN", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


class ModelServer:
    def __init__(self, tmp: str) -> None:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps([{"respond": {"text": ANSWER, "chunk_delay": 0.05, "completion_tokens": 14}}]))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--script", str(script)],
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        self.base_url: str = json.loads(self.proc.stdout.readline())["base_url"]

    def received(self, marker: str) -> float | None:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/_mock/requests", timeout=30) as response:
            for request in json.loads(response.read()):
                if marker in json.dumps(request["body"].get("messages")):
                    return float(request["received_at"])
        return None

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@contextlib.contextmanager
def our_server(model_url: str) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with tempfile.TemporaryDirectory(prefix="instance-ai-serve-") as tmp:
        process = subprocess.Popen(
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--db", f"{tmp}/serve.sqlite3",
             "--log-level", "warning"],
            env=env_for(tmp, model_url), cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path,
                        help="another checkout whose 'run --url' takes turns with ours (e.g. the code before a change)")
    args = parser.parse_args()
    if shutil.which("curl") is None or shutil.which("bash") is None:
        print(json.dumps({"skipped": "needs curl and bash"}))
        return 0
    started_load = load()
    forms = ("ours", "curl", "baseline") if args.baseline is not None else ("ours", "curl")
    walls: dict[str, list[float | None]] = {form: [] for form in forms}
    cpus: dict[str, list[float | None]] = {form: [] for form in forms}
    first_request: list[float | None] = []
    exit_after_finish: list[float | None] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="instance-ai-headless-") as tmp:
        model = ModelServer(tmp)
        try:
            with our_server(model.base_url) as url:
                env = env_for(tmp, model.base_url)
                for n in range(-1, args.runs):  # run -1 warms the caches
                    for form in forms:
                        token = f"headless-{form}-{n}-{uuid.uuid4().hex[:6]}"
                        form_env = env
                        if form == "curl":
                            argv = ["bash", "-c", CURL_SCRIPT, "curl-bench", url, str(uuid.uuid4()), token]
                        else:
                            argv = [sys.executable, "-m", "instance_ai_tui", "run", "--url", url, "--json", token]
                            if form == "baseline":
                                form_env = {**env, "PYTHONPATH": str(args.baseline.resolve())}
                        started = time.monotonic()
                        result = timed_run(argv, env=form_env, cwd=tmp)  # (not a checkout: PYTHONPATH's code runs)
                        ended = started + result.wall_s
                        if result.returncode != 0 or (form != "curl" and ANSWER.split()[0] not in result.stdout):
                            failures.append(f"{form} run {n}: exit {result.returncode}: {result.stderr[-300:]}")
                            continue
                        if n < 0:
                            continue
                        walls[form].append(result.wall_s)
                        cpus[form].append(result.cpu_s)
                        if form == "ours":
                            arrived = model.received(token)
                            first_request.append(None if arrived is None else arrived - started)
                            finished = _finish_seen(result.stdout)
                            exit_after_finish.append(None if finished is None else ended - finished)
        finally:
            model.close()
    out: dict[str, Any] = {"benchmark": "headless_run", "runs": args.runs,
                           "ours": {"wall_s": summary(walls["ours"]), "cpu_s": summary(cpus["ours"]),
                                    "model_request_s": summary(first_request),
                                    "exit_after_finish_s": summary(exit_after_finish)},
                           "curl": {"wall_s": summary(walls["curl"]), "cpu_s": summary(cpus["curl"])}}
    out["ratio_p50"] = ratio(out["ours"]["wall_s"]["p50"], out["curl"]["wall_s"]["p50"])
    if args.baseline is not None:
        out["baseline"] = {"checkout": str(args.baseline), "wall_s": summary(walls["baseline"]),
                           "cpu_s": summary(cpus["baseline"])}
        out["baseline_ratio_p50"] = ratio(out["baseline"]["wall_s"]["p50"], out["curl"]["wall_s"]["p50"])
    out["target_ratio"] = TARGET_RATIO
    out["meets_target"] = out["ratio_p50"] is not None and out["ratio_p50"] <= TARGET_RATIO
    out["failures"] = failures
    out["machine"] = machine(started_load)
    print(json.dumps(out, indent=1))
    return 0


def _finish_seen(stdout: str) -> float | None:
    """When the run finished on the server: its ``run-finish`` event's ``ts`` (epoch milliseconds),
    converted to this process's monotonic clock."""
    for line in reversed(stdout.splitlines()):
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict) and event.get("type") == "run-finish" and isinstance(event.get("ts"), int | float):
                return time.monotonic() - (time.time() - float(event["ts"]) / 1000)
    return None


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    raise SystemExit(main())
