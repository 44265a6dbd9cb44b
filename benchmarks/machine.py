"""What every benchmark here shares: the machine's load, CPU accounting, timed subprocesses.

A figure is only meaningful next to the load it was taken under and next to its baseline
measured in the same run, so every benchmark prints ``machine()`` with its figures and the ratio
of ours to the baseline. Nothing here gives up on a slow machine: waits have a ceiling only
against a hang (minutes), never a start-up limit that a loaded 2-core machine could reach.

    from machine import machine, CpuClock, timed_run, ratio
"""

from __future__ import annotations

import os
import platform
import resource
import selectors
import statistics
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: only against a hang: a loaded machine must never reach it
HANG_S = 600.0


def load() -> dict[str, float]:
    """The machine's load averages (1, 5, 15 minutes) and its CPU count."""
    one, five, fifteen = os.getloadavg()
    return {"load_1m": round(one, 2), "load_5m": round(five, 2), "load_15m": round(fifteen, 2),
            "cpus": os.cpu_count() or 1}


def machine(started_load: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The load now (and at the start of the run, if given) with the platform: print it with the figures."""
    out: dict[str, Any] = {"load_at_end": load(), "python": platform.python_version(), "platform": platform.platform()}
    if started_load is not None:
        out["load_at_start"] = dict(started_load)
    return out


def ratio(ours: float | None, baseline: float | None) -> float | None:
    """``ours / baseline`` rounded, or ``None`` when either is missing."""
    if ours is None or baseline is None or baseline <= 0:
        return None
    return round(ours / baseline, 2)


def median(values: Sequence[float | None]) -> float | None:
    done = [v for v in values if v is not None]
    return round(statistics.median(done), 4) if done else None


def summary(values: Sequence[float | None]) -> dict[str, Any]:
    done = [v for v in values if v is not None]
    return {
        "p50": round(statistics.median(done), 4) if done else None,
        "min": round(min(done), 4) if done else None,
        "max": round(max(done), 4) if done else None,
        "runs": [None if v is None else round(v, 4) for v in values],
    }


class CpuClock:
    """CPU seconds of this process and of its waited-for children, from ``start()`` to ``stop()``.

    Children count only once they have been waited for (``RUSAGE_CHILDREN``): stop the clock
    after the baseline's work has ended, never when a benchmark gives up on it."""

    def __init__(self) -> None:
        self._self0 = 0.0
        self._children0 = 0.0
        self.self_s = 0.0
        self.children_s = 0.0

    @staticmethod
    def _read() -> tuple[float, float]:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime

    def start(self) -> CpuClock:
        self._self0, self._children0 = self._read()
        return self

    def stop(self) -> CpuClock:
        me, kids = self._read()
        self.self_s = me - self._self0
        self.children_s = kids - self._children0
        return self

    @property
    def total_s(self) -> float:
        return self.self_s + self.children_s


@dataclass(frozen=True)
class TimedRun:
    """One subprocess: wall seconds from exec to exit, its CPU seconds, peak memory, output."""

    wall_s: float
    cpu_s: float
    max_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def timed_run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
               timeout: float = HANG_S) -> TimedRun:
    """Run ``argv`` to its end: wall seconds from exec to exit; its own CPU and peak RSS (``wait4``)."""
    started = time.perf_counter()
    process = subprocess.Popen(list(argv), env=dict(env) if env is not None else None, cwd=cwd,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    chunks: dict[int, list[bytes]] = {1: [], 2: []}
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, 1)
    selector.register(process.stderr, selectors.EVENT_READ, 2)
    open_streams = 2
    deadline = started + timeout
    while open_streams and time.perf_counter() < deadline:
        for key, _ in selector.select(timeout=0.5):
            data = os.read(key.fileobj.fileno(), 1 << 16)  # type: ignore[union-attr]
            if data:
                chunks[key.data].append(data)
            else:
                selector.unregister(key.fileobj)
                open_streams -= 1
    if open_streams:
        process.kill()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    selector.close()
    process.stdout.close()
    process.stderr.close()
    return TimedRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode,
                    b"".join(chunks[1]).decode("utf-8", "replace"), b"".join(chunks[2]).decode("utf-8", "replace"))


#: the load when the benchmark started (this module is imported at its start)
STARTED_LOAD = load()


def with_machine(result: Any) -> Any:
    """``result`` (a JSON object) with ``machine``: the load at the start and now, beside the figures."""
    if isinstance(result, dict) and "machine" not in result:
        return {**result, "machine": machine(STARTED_LOAD)}
    return result
