"""Soak: many runs through one long-lived service; the process's RSS after every 1,000 runs.

The real assistant service (``--model demo``, a SQLite file, the in-process bus) answers
``--runs`` messages, each on a new thread by default (every thread id is new: per-thread state
that is never freed shows up as growth), with a ``--message-kb`` message. After warm-up the
RSS should stay flat. Prints one line per ``--every`` runs and a JSON summary::

    python benchmarks/soak.py [--runs 5000] [--every 1000] [--message-kb 1] [--same-thread]

Issue 15 item 10: ``--model demo`` kept every model request for the life of the server
(~6.6 KB per run, ~240 MB per 100 runs with 100 KB messages) and one lock per thread id.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import os

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine


def rss_mib() -> float:
    """Resident set size now (not the peak), from /proc."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def soak(runs: int, every: int, message_kb: int, same_thread: bool, db: Path) -> dict[str, object]:
    service = build_service(Settings(db_path=db, model=ModelSettings(name="demo")), demo_delay=0.0,
                            generate_titles=False)
    await service.start()
    filler = "x" * max(0, message_kb * 1024 - 16)
    samples: list[tuple[int, float]] = []
    started = time.perf_counter()
    try:
        for index in range(1, runs + 1):
            thread = "soak" if same_thread else f"soak-{index}"
            run_id = await service.send(thread, f"hello {index:>8} {filler}")  # a new string per run, as from a client
            live = service.runs.live(thread)
            if live is not None and live.finished is not None:
                await live.finished
            if index % every == 0:
                gc.collect()
                samples.append((index, rss_mib()))
                elapsed = time.perf_counter() - started
                print(f"{index:>7} runs  RSS {samples[-1][1]:8.1f} MiB  ({index / elapsed:6.1f} runs/s)  last {run_id}",
                      file=sys.stderr, flush=True)
        state = {
            "locks": len(service.runs._locks),
            "live_runs": len(service.runs.live_runs()),
        }
    finally:
        await service.shutdown()
    after_warmup = [rss for _, rss in samples[1:]] or [rss for _, rss in samples]
    return {
        "runs": runs,
        "message_kb": message_kb,
        "rss_mib": [round(rss, 1) for _, rss in samples],
        "growth_after_warmup_mib": round(max(after_warmup) - min(after_warmup), 1) if after_warmup else None,
        **state,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--message-kb", type=int, default=1)
    parser.add_argument("--same-thread", action="store_true", help="every run on one thread (default: a new one each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(soak(args.runs, args.every, args.message_kb, args.same_thread, Path(tmp) / "soak.sqlite3"))
    print(json.dumps(with_machine(result)))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
