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


# --------------------------------------------------------------------------- quiet and loaded

#: the two conditions every benchmark runs in (issue 44): as the machine is, and beside
#: ``stress-ng --cpu STRESS_CPUS`` started and stopped by the benchmark itself
QUIET, LOADED = "quiet", "loaded"
STRESS_CPUS = 2
#: seconds the stressor runs before a loaded measurement starts (its load has built up)
STRESS_SETTLE_S = 1.0


class Stressor:
    """``stress-ng --cpu N`` beside a measurement: started by ``start``, stopped (and waited for)
    by ``stop``; it ends by itself after ``HANG_S`` should the benchmark die without stopping it."""

    def __init__(self, cpus: int = STRESS_CPUS) -> None:
        self.cpus = cpus
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Stressor:
        if self.process is None:
            argv = ["stress-ng", "--cpu", str(self.cpus), "--timeout", f"{int(HANG_S)}s", "--quiet"]
            try:
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, start_new_session=True)
            except FileNotFoundError:
                raise SystemExit("--loaded needs stress-ng on PATH (apt-get install stress-ng)") from None
            time.sleep(STRESS_SETTLE_S)
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            os.killpg(process.pid, 15)  # (its workers are its own session's)
            process.wait()

    def __enter__(self) -> Stressor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def add_load_switch(parser: Any) -> None:
    """``--loaded`` (and ``--rounds``) on a benchmark's ``argparse`` parser."""
    parser.add_argument("--loaded", action="store_true",
                        help=f"measure quiet AND beside stress-ng --cpu {STRESS_CPUS} (started and stopped here), "
                        "in alternating rounds")
    parser.add_argument("--rounds", type=int, default=1,
                        help="rounds of (quiet, loaded) measurements, alternating (default 1)")


def conditions(loaded: bool, rounds: int = 1) -> Any:
    """``(condition, round)`` for each measurement to take: ``quiet``, then (``--loaded``) ``loaded``
    with the stressor running while the caller's loop body measures, ``rounds`` times, alternating.
    Iterate it to its end (a ``for`` loop): the stressor is stopped when the loaded turn's body ends."""
    for index in range(max(1, rounds)):
        yield QUIET, index
        if loaded:
            with Stressor():
                yield LOADED, index


def by_condition(loaded: bool, rounds: int, measure: Any) -> dict[str, Any]:
    """``measure()`` (a JSON object) under each condition, alternating: ``{"quiet": [...],
    "loaded": [...]}`` (one entry a round), each entry with the load at its start and end."""
    out: dict[str, list[Any]] = {QUIET: []}
    if loaded:
        out[LOADED] = []
    for condition, _round in conditions(loaded, rounds):
        started = load()
        result = dict(measure())
        result["load"] = {"start": started, "end": load()}
        out[condition].append(result)
    return out


def quiet_and_loaded(script: str) -> None:
    """The ``--loaded`` switch of a benchmark (call it first in its ``__main__``): with ``--loaded``
    (and ``--rounds N``) in the command line, run the same command line (without them) in a child
    process, quiet then beside ``stress-ng --cpu 2`` (started and stopped here), ``N`` rounds
    alternating, and print one JSON object: ``quiet`` and ``loaded``, a list of each round's result
    (the child's JSON, with its own floor or peer measured in its run) with the load at its start
    and end; then exit. Without ``--loaded``: return at once (the benchmark runs as it always did)."""
    import json
    import sys
    from pathlib import Path

    argv = sys.argv[1:]
    if "--loaded" not in argv:
        return
    rest: list[str] = []
    rounds = 1
    skip = False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == "--loaded":
            continue
        elif arg == "--rounds":
            rounds, skip = int(argv[index + 1]), True
        elif arg.startswith("--rounds="):
            rounds = int(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    started = load()
    out: dict[str, Any] = {"benchmark": Path(script).stem, "argv": rest, "rounds": rounds,
                           "stressor": f"stress-ng --cpu {STRESS_CPUS}", QUIET: [], LOADED: []}
    for condition, index in conditions(True, rounds):
        at_start = load()
        child = subprocess.run([sys.executable, script, *rest], stdout=subprocess.PIPE, text=True, check=False)
        entry: dict[str, Any] = {"round": index, "load_at_start": at_start, "load_at_end": load(),
                                 "exit": child.returncode}
        try:
            entry["result"] = json.loads(child.stdout)
        except ValueError:
            entry["stdout"] = child.stdout[-4000:]
        out[condition].append(entry)
        print(json.dumps({condition: entry["load_at_start"], "round": index, "exit": child.returncode}),
              file=sys.stderr, flush=True)
    out["machine"] = machine(started)
    print(json.dumps(out, indent=1))
    raise SystemExit(0)
