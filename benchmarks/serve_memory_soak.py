"""Memory of ``instance-ai serve`` over 3,000 runs, and what grows (issue 43.2).

``instance-ai serve`` runs in a subprocess of its own, as a person runs it (its own SQLite file,
titles on), and this script is its client: each run creates a thread (every id new, so per-thread
state never freed shows as growth), follows its SSE stream, sends a message long enough to get a
title, reads to ``run-finish`` and reads the history. The model is the offline demo
(``--model demo``) or, with ``--openai``, the real ``openai`` client against the repo's OpenAI-wire
test server in another process (the product path: request building, streaming, usage, titles).

Two passes, one after the other:

- **RSS**: the server's resident set (``/proc/PID/status``) as started and every ``--every`` runs (and
  after 10, 50, 100); the slope is the least-squares line through the samples from run ``--from`` on, in
  bytes per run (target: <= 1 KB). The first runs import and warm up what a run needs (the model
  client, the parsers, SQLite's cache): RSS from run 0 divided by the runs is not a leak's slope, and
  the JSON gives both (``warmup_mib_0_to_from``, ``average_bytes_per_run_from_0``);
- **heap** (``--trace``): the same soak with the server under ``tracemalloc`` (started in the server
  process by ``serve_traced``); at run ``--from`` and at the last run the server dumps a snapshot
  (SIGUSR1) and the growth between them is listed by source line (the biggest first), per run.

Prints one line per sample and a JSON summary with the machine's load, beside its baseline in the
same run: the RSS after the warm-up (``--from``) and the growth of the first 1,000 runs::

    python benchmarks/serve_memory_soak.py [--runs 3000] [--from 1000] [--every 250] [--workers 4] [--openai] [--trace]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine
from server_soak import rss_bytes, slope  # the same RSS reading and bytes-per-run fit as server_soak

REPO = Path(__file__).resolve().parent.parent
API = "/instance-ai"
MESSAGE = "Please list the workflows that send the weekly sales report by email, run {index}"
#: the demo model answers a listing without asking anything (a build would wait for an approval)
DEMO_MESSAGE = "Please list my workflows for the weekly review, run {index}"

#: runs the server under tracemalloc and dumps a snapshot to $SOAK_SNAPSHOT_DIR/N.tm on each SIGUSR1
SERVE_TRACED = """
import os, signal, sys, tracemalloc
tracemalloc.start(int(os.environ.get("SOAK_FRAMES", "8")))
count = [0]
def dump(signum, frame):
    import gc
    gc.collect()
    count[0] += 1
    path = os.path.join(os.environ["SOAK_SNAPSHOT_DIR"], f"{count[0]}.tm")
    tracemalloc.take_snapshot().dump(path + ".part")
    os.replace(path + ".part", path)
signal.signal(signal.SIGUSR1, dump)
from instance_ai_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_openai_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The repo's OpenAI-wire test server in a process of its own: titles for title requests,
    a short streamed answer for everything else."""
    script = workdir / "script.json"
    script.write_text(json.dumps([
        {"contains": "sales report", "last_role": "user", "respond": {"text": "Three workflows send it: Weekly "
                                                                                "sales, Sales digest and Report mailer."}},
    ]))
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--script", str(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=str(REPO),
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    return proc, json.loads(line)["base_url"]


class Serve:
    """``instance-ai serve`` in a subprocess (traced: under ``SERVE_TRACED``)."""

    def __init__(self, workdir: Path, *, model: str, base_url: str | None, traced: bool) -> None:
        self.port = free_port()
        self.message = DEMO_MESSAGE if model == "demo" else MESSAGE
        self.snapshots = workdir / "snapshots"
        self.snapshots.mkdir(exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(workdir / "data"),
               "XDG_CONFIG_HOME": str(workdir / "config"), "SOAK_SNAPSHOT_DIR": str(self.snapshots)}
        if base_url:
            env.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "soak"})
        args = ["serve", "--port", str(self.port), "--db", str(workdir / "soak.sqlite3"), "--model", model,
                "--log-level", "warning"]
        command = [sys.executable, "-c", SERVE_TRACED, *args] if traced else [sys.executable, "-m", "instance_ai_tui",
                                                                               *args]
        self.log = open(workdir / f"serve-{'traced' if traced else 'plain'}.log", "wb")
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=self.log, cwd=str(REPO), env=env)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 600  # (under tracemalloc the imports alone take half a minute on a busy machine)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"serve exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}{API}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise SystemExit("serve did not start")

    def snapshot(self) -> tracemalloc.Snapshot:
        before = len(list(self.snapshots.glob("*.tm")))
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 600
        while len(list(self.snapshots.glob("*.tm"))) <= before:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("the server wrote no snapshot")
            time.sleep(0.2)
        return tracemalloc.Snapshot.load(str(self.snapshots / f"{before + 1}.tm"))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


async def one_run(http: httpx.AsyncClient, thread: str, index: int, message: str = MESSAGE) -> None:
    (await http.post(f"{API}/threads", json={"threadId": thread})).raise_for_status()
    async with http.stream("GET", f"{API}/events/{thread}", timeout=120) as stream:
        answer = await http.post(f"{API}/chat/{thread}", json={"message": message.format(index=index)})
        answer.raise_for_status()
        async for line in stream.aiter_lines():
            if line.startswith("data:") and '"run-finish"' in line:
                break
    (await http.get(f"{API}/threads/{thread}/messages")).raise_for_status()


async def soak(serve: Serve, runs: int, every: int, workers: int, marks: dict[int, str],
               label: str) -> tuple[list[tuple[int, int]], dict[str, tracemalloc.Snapshot]]:
    """``runs`` runs by ``workers`` clients; RSS every ``every`` runs; at each run count in ``marks``
    the clients wait and the server dumps a heap snapshot (named by the mark)."""
    samples: list[tuple[int, int]] = [(0, rss_bytes(serve.proc.pid))]  # the server as started, before any run
    snapshots: dict[str, tracemalloc.Snapshot] = {}
    started = time.perf_counter()
    done = 0
    early = [n for n in (10, 50, 100) if n < every]  # the first runs import and warm what a run needs
    for stop in sorted({*early, *range(every, runs + 1, every), *marks, runs}):
        counter = iter(range(done + 1, stop + 1))

        async def worker(http: httpx.AsyncClient, counter: Iterator[int] = counter) -> None:
            for index in counter:
                await one_run(http, f"soak-{label}-{index}", index, serve.message)

        async with httpx.AsyncClient(base_url=serve.url, timeout=120) as http:
            await asyncio.gather(*[worker(http) for _ in range(workers)])
        done = stop
        if done % every == 0 or done == runs or done in early:
            samples.append((done, rss_bytes(serve.proc.pid)))
            rate = done / (time.perf_counter() - started)
            print(f"[{label}] {done:>6} runs  RSS {samples[-1][1] / 2**20:8.2f} MiB  ({rate:5.1f} runs/s)", file=sys.stderr, flush=True)
        if done in marks:
            snapshots[marks[done]] = await asyncio.to_thread(serve.snapshot)
    return samples, snapshots


def growth(first: tracemalloc.Snapshot, last: tracemalloc.Snapshot, runs: int, top: int = 12) -> dict[str, object]:
    """What the server's heap gained between two snapshots, per run, by line and by its traceback."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    first, last = first.filter_traces(ignore), last.filter_traces(ignore)
    by_line = last.compare_to(first, "lineno")
    by_trace = last.compare_to(first, "traceback")
    total = sum(stat.size_diff for stat in by_line)
    return {
        "heap_bytes_per_run": round(total / runs, 1),
        "biggest_lines": [f"{stat.size_diff / runs:+.1f} B/run ({stat.count_diff:+d} blocks) "
                          f"{stat.traceback[0].filename.split('site-packages/')[-1].split('/work/wt/')[-1]}:"
                          f"{stat.traceback[0].lineno}" for stat in by_line[:top]],
        "biggest_tracebacks": [[f"{stat.size_diff / runs:+.1f} B/run"] + [
            f"{frame.filename.split('site-packages/')[-1].split('/work/wt/')[-1]}:{frame.lineno}"
            for frame in list(stat.traceback)[-8:]] for stat in by_trace[:4]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--from", dest="start", type=int, default=1000, help="the slope counts samples from here on")
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--openai", action="store_true", help="the real openai client against the OpenAI-wire test server")
    parser.add_argument("--trace", action="store_true", help="a second soak under tracemalloc: what grows, by line")
    parser.add_argument("--no-rss", action="store_true", help="only the traced soak")
    args = parser.parse_args()
    load = os.getloadavg()
    result: dict[str, object] = {"runs": args.runs, "from": args.start, "workers": args.workers,
                                 "model": "openai-wire test server" if args.openai else "demo",
                                 "load_before": [round(v, 2) for v in load]}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model_server, base_url = start_openai_server(workdir) if args.openai else (None, None)
        model = "mock" if args.openai else "demo"
        try:
            if not args.no_rss:
                (workdir / "plain").mkdir()
                serve = Serve(workdir / "plain", model=model, base_url=base_url, traced=False)
                try:
                    samples, _ = asyncio.run(soak(serve, args.runs, args.every, args.workers, {}, "rss"))
                finally:
                    serve.stop()
                counted = [(x, y) for x, y in samples if x >= args.start]
                warm = dict(samples).get(args.start)
                first_thousand = [(x, y) for x, y in samples if 0 < x <= min(args.start, args.runs)]
                result.update({
                    "rss_mib_by_runs": {x: round(y / 2**20, 2) for x, y in samples},
                    "warmup_mib_0_to_from": round(((warm or samples[-1][1]) - samples[0][1]) / 2**20, 2),
                    "average_bytes_per_run_from_0": round((samples[-1][1] - samples[0][1]) / max(1, samples[-1][0]), 1),
                    "slope_bytes_per_run": round(slope(counted), 1),
                    "target_bytes_per_run": 1024,
                    "baseline_rss_mib_at_from": round(warm / 2**20, 2) if warm else None,
                    "baseline_warmup_slope_bytes_per_run": round(slope(first_thousand), 1),
                })
            if args.trace:
                (workdir / "traced").mkdir()
                serve = Serve(workdir / "traced", model=model, base_url=base_url, traced=True)
                try:
                    _, snaps = asyncio.run(soak(serve, args.runs, args.every, args.workers,
                                                {args.start: "from", args.runs: "last"}, "heap"))
                finally:
                    serve.stop()
                result["heap"] = growth(snaps["from"], snaps["last"], args.runs - args.start)
        finally:
            if model_server is not None:
                model_server.terminate()
                model_server.wait(10)
    print(json.dumps(with_machine(result)))
    return 0


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    sys.exit(main())
