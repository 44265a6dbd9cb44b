"""Server soak over HTTP: the RSS slope of ``instance-ai serve`` per run, from run 1,000 to 5,000.

``instance-ai serve --model demo`` runs in a subprocess (its own SQLite file); this script is
its client, as the TUI is: each run is a ``POST chat/<thread>`` on a new thread (every thread
id is new, so per-thread state that is never freed shows as growth) whose SSE stream
(``GET events/<thread>``) is read to its ``run-finish``, then ``GET threads/<thread>/messages``.
``--workers`` clients do this at once. The server's resident set size (``/proc/<pid>/status``
``VmRSS``) is sampled every ``--every`` runs; the slope is the least-squares line through the
samples from ``--from`` runs on, in bytes per run. Prints one line per sample and a JSON
summary::

    python benchmarks/server_soak.py [--runs 5000] [--from 1000] [--every 250] [--workers 4]

RSS moves in steps (the allocator's arenas, SQLite's page caches filling as the file grows), so
``--python-heap`` also tells what the server's Python objects do: the server runs in this
process under ``tracemalloc`` and the growth of what it allocated (the client's allocations
left out) between run ``--from`` and the last is printed per run, with its biggest sources.

Issue 31: the server grew 1.6 KB per run after 1,000 runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine

REPO = Path(__file__).resolve().parent.parent
API = "/instance-ai"


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def slope(samples: list[tuple[int, int]]) -> float:
    """Least-squares bytes per run through ``(runs, rss)`` samples."""
    n = len(samples)
    if n < 2:
        return float("nan")
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    var = sum((x - mean_x) ** 2 for x, _ in samples)
    return sum((x - mean_x) * (y - mean_y) for x, y in samples) / var


async def one_run(http: httpx.AsyncClient, thread: str, index: int) -> None:
    """Create the thread, follow its events, send, read to ``run-finish``, read the history."""
    (await http.post(f"{API}/threads", json={"threadId": thread})).raise_for_status()
    async with http.stream("GET", f"{API}/events/{thread}", timeout=60) as stream:
        answer = await http.post(f"{API}/chat/{thread}", json={"message": f"hello {index}"})
        answer.raise_for_status()
        async for line in stream.aiter_lines():
            if line.startswith("data:") and '"run-finish"' in line:
                break
    (await http.get(f"{API}/threads/{thread}/messages")).raise_for_status()


async def soak(url: str, pid: int, runs: int, every: int, workers: int) -> list[tuple[int, int]]:
    samples: list[tuple[int, int]] = []
    done = 0
    next_index = 0
    lock = asyncio.Lock()
    started = time.perf_counter()

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal done, next_index
        while True:
            async with lock:
                if next_index >= runs:
                    return
                next_index += 1
                index = next_index
            await one_run(http, f"soak-{index}", index)
            async with lock:
                done += 1
                if done % every == 0:
                    samples.append((done, rss_bytes(pid)))
                    rate = done / (time.perf_counter() - started)
                    print(f"{done:>7} runs  RSS {samples[-1][1] / 2**20:8.2f} MiB  ({rate:5.1f} runs/s)", file=sys.stderr, flush=True)

    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        await asyncio.gather(*[worker(http) for _ in range(workers)])
    return samples


async def python_heap(runs: int, start: int, workers: int, db: Path) -> dict[str, object]:
    """The server in this process under ``tracemalloc``: its Python heap's growth per run
    between run ``start`` and run ``runs`` (allocations made by the client left out)."""
    import gc
    import socket
    import tracemalloc

    sys.path.insert(0, str(REPO))
    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.config import ModelSettings, Settings
    from instance_ai_tui.server.app import create_app
    from instance_ai_tui.server.runner import make_server

    app = create_app(build_service(Settings(db_path=db, model=ModelSettings(name="demo")), demo_delay=0.0))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = make_server(app, "127.0.0.1", sock.getsockname()[1])
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    counter = iter(range(1, runs + 1))

    async def batch(http: httpx.AsyncClient, until: int) -> None:
        async def worker() -> None:
            for index in counter:
                await one_run(http, f"soak-{index}", index)
                if index >= until:
                    return
        await asyncio.gather(*[worker() for _ in range(workers)])

    client_side = [tracemalloc.Filter(False, pattern, all_frames=True)
                   for pattern in ("*/httpx/*", "*/httpcore/*", __file__, tracemalloc.__file__)]
    try:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            await batch(http, start)
            gc.collect()
            tracemalloc.start(25)
            first = tracemalloc.take_snapshot().filter_traces(client_side)
            await batch(http, runs)
            gc.collect()
            last = tracemalloc.take_snapshot().filter_traces(client_side)
            tracemalloc.stop()
    finally:
        server.should_exit = True
        await task
        sock.close()
    stats = last.compare_to(first, "lineno")
    measured = runs - start
    return {
        "python_heap_bytes_per_run": round(sum(stat.size_diff for stat in stats) / measured, 1),
        "biggest": [f"{stat.size_diff / measured:+.1f} B/run {stat.traceback[0].filename.rsplit('/', 2)[-1]}:"
                    f"{stat.traceback[0].lineno}" for stat in stats[:5]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--from", dest="start", type=int, default=1000, help="the slope counts samples from here on")
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--python-heap", action="store_true",
                        help="measure the server's Python heap in this process with tracemalloc instead of RSS")
    args = parser.parse_args()
    if args.python_heap:
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(python_heap(args.runs, args.start, args.workers, Path(tmp) / "heap.sqlite3"))
        print(json.dumps(with_machine({"runs": args.runs, "from": args.start, **result})))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        log = open(Path(tmp) / "serve.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--db",
             str(Path(tmp) / "soak.sqlite3"), "--model", "demo"],
            stdout=log, stderr=log, cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc)
            load = os.getloadavg()
            samples = asyncio.run(soak(url, proc.pid, args.runs, args.every, args.workers))
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
    counted = [(x, y) for x, y in samples if x >= args.start]
    per_run = slope(counted)
    first, last = (counted[0][1], counted[-1][1]) if counted else (0, 0)
    print(json.dumps(with_machine({
        "runs": args.runs,
        "workers": args.workers,
        "load_before": [round(v, 2) for v in load],
        "rss_mib": [round(y / 2**20, 2) for _, y in samples],
        "slope_bytes_per_run": round(per_run, 1),
        "growth_mib_from_to": [args.start, samples[-1][0] if samples else None, round((last - first) / 2**20, 2)],
    })))
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}{API}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit("serve did not start")


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    sys.exit(main())
