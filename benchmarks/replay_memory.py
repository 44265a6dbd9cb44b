"""``instance-ai replay`` of a large recording: peak memory and time, against the ``json.loads`` floor.

    python benchmarks/replay_memory.py [--events 1000000] [--baseline PATH_TO_OTHER_CHECKOUT]

Writes a JSON-lines recording of ``--events`` events (one run: a run-start, text and reasoning deltas,
a tool call and its result every 200 events, a run-finish) to a temporary file, then runs, each in a
fresh process so peak RSS is its own:

* ``floor``: read the file line by line and ``json.loads`` each line (nothing kept);
* ``replay``: ``python -m instance_ai_tui replay FILE --json`` of this checkout;
* ``baseline`` (with ``--baseline``): the same command from another checkout (e.g. the commit before).

Prints one JSON object: seconds, peak RSS (MB) and the ratio to the floor for each. Issue 14's target:
replay of 1M events under 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine

ROOT = Path(__file__).resolve().parents[1]

FLOOR = """
import json, sys

with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        json.loads(line)
"""


def write_recording(path: Path, events: int) -> int:
    run, root = "run_big", "orchestrator-run_big"

    def ev(kind: str, payload: dict[str, Any], agent: str = root) -> str:
        return json.dumps({"type": kind, "runId": run, "agentId": agent, "payload": payload}, separators=(",", ":"))

    with path.open("w", encoding="utf-8") as fh:
        fh.write(ev("run-start", {"messageId": "m1", "messageGroupId": "g1"}) + "\n")
        written = 1
        call = 0
        while written < events - 1:
            if written % 200 == 0:
                call += 1
                fh.write(ev("tool-call", {"toolCallId": f"c{call}", "toolName": "list-workflows", "args": {"n": call}}) + "\n")
                fh.write(ev("tool-result", {"toolCallId": f"c{call}", "result": {"items": call}}) + "\n")
                written += 2
            elif written % 50 == 0:
                fh.write(ev("reasoning-delta", {"text": "thinking about it "}) + "\n")
                written += 1
            else:
                fh.write(ev("text-delta", {"text": f"token{written % 97} "}) + "\n")
                written += 1
        fh.write(ev("run-finish", {"status": "completed"}) + "\n")
        written += 1
    return written


def measure(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Seconds and peak RSS of one child process (``wait4`` gives that child's own usage)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.stderr:
        process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "exit": code,
            **({"stderr": stderr[-300:]} if code else {})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=Path, help="another checkout to run side by side (its replay command)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        path = Path(tmp) / "recording.jsonl"
        count = write_recording(path, args.events)
        out: dict[str, Any] = {"events": count, "file_mb": round(path.stat().st_size / 1e6, 1),
                               "python": platform.python_version(), "cpus": os.cpu_count()}
        env = {**os.environ}
        out["floor"] = measure([sys.executable, "-c", FLOOR, str(path)], env)
        command = [sys.executable, "-m", "instance_ai_tui", "replay", str(path), "--json"]
        out["replay"] = measure(command, {**env, "PYTHONPATH": str(ROOT)})
        if args.baseline is not None:
            out["baseline"] = measure(command, {**env, "PYTHONPATH": str(args.baseline.resolve())})
        for name in ("replay", "baseline"):
            if name in out and out["floor"]["seconds"]:
                out[name]["x_floor_time"] = round(out[name]["seconds"] / out["floor"]["seconds"], 2)
        out["target_peak_rss_mb"] = 300
        out["meets_target"] = out["replay"]["peak_rss_mb"] < 300
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    main()
