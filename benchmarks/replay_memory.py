"""``instance-ai replay`` of a large recording: peak memory and time, against the ``json.loads`` floor.

    python benchmarks/replay_memory.py [--events 1000000] [--repeats 3] [--baseline PATH_TO_OTHER_CHECKOUT]

Writes a JSON-lines recording of ``--events`` events (one run: a run-start, text and reasoning deltas,
a tool call and its result every 200 events, a run-finish) to a temporary file, then runs, each in a
fresh process so peak RSS is its own:

* ``floor``: read the file line by line and ``json.loads`` each line (nothing kept);
* ``replay``: ``python -m instance_ai_tui replay FILE --json`` of this checkout;
* ``baseline`` (with ``--baseline``): the same command from another checkout (e.g. the commit before).

Each form runs ``--repeats`` times, taking turns (floor, replay, baseline, floor, ...), so the load of
the moment falls on each alike. Prints one JSON object: median seconds, every run's seconds, peak RSS
(MB) and the median's ratio to the floor for each, and the machine's load. Targets: issue 30, <= 2x
the floor's time; issue 14, 1M events under 300 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
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


def measure(argv: list[str], env: dict[str, str], cwd: str) -> dict[str, Any]:
    """Seconds and peak RSS of one child process (``wait4`` gives that child's own usage). ``cwd``: not
    a checkout (``python -m`` looks in the working directory first: the code run is ``PYTHONPATH``'s)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
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
    parser.add_argument("--repeats", type=int, default=3, help="turns of floor / replay (/ baseline); medians")
    parser.add_argument("--baseline", type=Path, help="another checkout to run side by side (its replay command)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-bench-") as tmp:
        path = Path(tmp) / "recording.jsonl"
        count = write_recording(path, args.events)
        out: dict[str, Any] = {"events": count, "file_mb": round(path.stat().st_size / 1e6, 1),
                               "python": platform.python_version(), "cpus": os.cpu_count(), "repeats": args.repeats}
        env = {**os.environ}
        command = [sys.executable, "-m", "instance_ai_tui", "replay", str(path), "--json"]
        forms: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": ([sys.executable, "-c", FLOOR, str(path)], env),
            "replay": (command, {**env, "PYTHONPATH": str(ROOT)}),
        }
        if args.baseline is not None:
            forms["baseline"] = (command, {**env, "PYTHONPATH": str(args.baseline.resolve())})
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in forms}
        for _ in range(args.repeats):  # taking turns: the load of the moment falls on each alike
            for name, (argv, form_env) in forms.items():
                runs[name].append(measure(argv, form_env, tmp))
        for name, results in runs.items():
            out[name] = {"seconds": statistics.median(r["seconds"] for r in results),
                         "runs_s": [r["seconds"] for r in results],
                         "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
                         "exit": max((r["exit"] for r in results), key=abs),
                         **({"stderr": results[-1]["stderr"]} if "stderr" in results[-1] else {})}
        for name in ("replay", "baseline"):
            if name in out and out["floor"]["seconds"]:
                out[name]["x_floor_time"] = round(out[name]["seconds"] / out["floor"]["seconds"], 2)
        out["target_x_floor_time"] = 2.0
        out["target_peak_rss_mb"] = 300
        out["meets_target"] = out["replay"]["peak_rss_mb"] < 300 and out["replay"]["x_floor_time"] <= 2.0
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
