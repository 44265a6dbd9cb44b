"""Restore from launch: exec -> the last thread's newest content on screen, by thread size.

    python benchmarks/restore_from_launch.py [--sizes 100,1000,3000] [--repeats 3]

What a person waits for when they start ``instance-ai`` again: the latest thread (the default,
``--continue``) opens on its newest answer. For each size a real SQLite file holds one thread of
that many runs (each: a user message, a tool call, its result and an answer, with the run record
and agent-tree snapshot a finished run leaves). The app is started as a fresh interpreter in a
pseudo-terminal (``python -m instance_ai_tui --db FILE --model demo``) and timed from ``Popen`` to
the moment the newest answer's text is on the terminal; then it is sent Ctrl+Q and its peak RSS
and CPU seconds are read from ``wait4``. Beside it, in the same run, the floor: a minimal Textual
app's first frame (``cold_start.MINIMAL_APP``). The sizes and the floor take turns, so the load falls
on all alike; it is printed with the figures.

A person who starts the app again quit it before: the app then kept the newest screenful of its
open thread beside the database (``tui.screen_cache``), which the next first frame shows until the
real thread replaces it. So each program is first started once, left running until its thread
has opened (``SETTLE_S``) and quit: ``runs_N`` are the starts after that (a start that quits
before it opened the database keeps that screen valid). ``runs_N_cold`` (``--no-cold`` leaves them
out) are starts with that file removed first: the first start on a database, the whole restore
(its peak RSS is the memory of the restoring app; the warm starts quit before the store opens).

Printed JSON: per program ``content_s`` (p50/min/max/runs), ``peak_rss_mb``, ``cpu_s`` (to the quit),
``ratio_p50`` to the floor, and ``growth``: the largest size's content time and memory over the
smallest's (the warm starts; ``growth_cold`` for the cold ones). Targets (issue 30): < 0.5 s for
1,000 runs, flat in thread size (time and memory).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from cold_start import ANSI, MINIMAL_APP, MINIMAL_MARKER  # noqa: E402
from machine import HANG_S, load, machine, ratio, summary  # noqa: E402


def cache_path(db: Path) -> Path:
    """``tui.screen_cache.cache_path`` (not imported: Textual would grow this process, and a child's
    peak RSS from ``wait4`` counts the image it was forked from)."""
    return db.with_name(db.name + ".screen.json")

SIZE = (120, 40)
TARGET_S = 0.5
#: seconds the warm-up start runs on after its content showed, so that its thread has opened
#: when it quits (and keeps its screen for the next start, ``tui.screen_cache``)
SETTLE_S = 3.0


async def build(db: Path, runs: int) -> None:
    from long_thread import fill

    from instance_ai_tui.store.sqlite import SqliteStore
    from tests.support.finished_runs import fill_runs

    async with SqliteStore(db) as store:
        await fill(store, "long", runs)
        await fill_runs(store, "long", runs)


def env_for(tmp: str) -> dict[str, str]:
    env = {**os.environ, "TERM": "xterm-256color", "XDG_CONFIG_HOME": f"{tmp}/config",
           "XDG_DATA_HOME": f"{tmp}/data", "INSTANCE_AI_CONFIG": f"{tmp}/config/config.toml",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for name in ("TEXTUAL_THEME", "INSTANCE_AI_MODEL", "OPENAI_API_KEY", "INSTANCE_AI_DB", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def launch(argv: list[str], marker: bytes, cwd: str, *, settle: bool = False) -> dict[str, Any]:
    """Seconds from exec until ``marker`` is on the screen; then Ctrl+Q (``settle``: after the real
    thread has had a moment to open, as a person who used the app quits it); peak RSS and CPU (``wait4``)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env_for(cwd), cwd=cwd,
                               close_fds=True, start_new_session=True)
    os.close(slave)
    output, seen = b"", None
    try:
        while time.perf_counter() - started < HANG_S and process.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.005)
            if not ready:
                continue
            try:
                output += os.read(master, 1 << 16)
            except OSError:
                break
            if marker in ANSI.sub(b"", output):
                seen = time.perf_counter() - started
                break
        if settle and seen is not None:
            quiet_until = time.perf_counter() + SETTLE_S
            while time.perf_counter() < quiet_until and process.poll() is None:
                if select.select([master], [], [], 0.05)[0]:
                    with contextlib.suppress(OSError):
                        os.read(master, 1 << 16)
    finally:
        with contextlib.suppress(OSError):
            os.write(master, b"\x11")  # Ctrl+Q
        deadline = time.monotonic() + 30
        usage = None
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                while select.select([master], [], [], 0)[0] and os.read(master, 1 << 16):
                    pass  # keep the terminal drained so the app can exit
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.02)
        else:
            os.killpg(process.pid, signal.SIGKILL)
            _pid, _status, usage = os.wait4(process.pid, 0)
        os.close(master)
    return {"content_s": seen, "peak_rss_mb": round(usage.ru_maxrss / 1024, 1) if usage else None,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3) if usage else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,3000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True,
                        help="also time each size without the screen kept at the last quit (default: on)")
    parser.add_argument("--build-db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--build-runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_db is not None:
        asyncio.run(build(args.build_db, args.build_runs))
        return 0
    started_load = load()
    sizes = [int(n) for n in args.sizes.split(",")]
    results: dict[str, dict[str, list[Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="instance-ai-restore-") as tmp:
        programs: dict[str, tuple[list[str], bytes, Path | None]] = {}
        for runs in sizes:
            db = Path(tmp) / f"thread-{runs}.sqlite3"
            # in a child: the store and pydantic would grow this process, and each program's peak
            # RSS from wait4 counts the image it is forked from
            subprocess.run([sys.executable, __file__, "--build-db", str(db), "--build-runs", str(runs)], check=True)
            argv = [sys.executable, "-m", "instance_ai_tui", "--db", str(db), "--model", "demo"]
            marker = f"Answer {runs - 1}:".encode()
            programs[f"runs_{runs}"] = (argv, marker, None)
            if args.cold:
                programs[f"runs_{runs}_cold"] = (argv, marker, db)
        programs["floor_minimal_textual"] = ([sys.executable, "-c", MINIMAL_APP], MINIMAL_MARKER, None)
        for argv, marker, _db in programs.values():  # warm the caches (and quit once, as a person did before)
            launch(argv, marker, tmp, settle=True)
        for name in programs:
            results[name] = {"content_s": [], "peak_rss_mb": [], "cpu_s": []}
        for _ in range(args.repeats):
            for name, (argv, marker, cold_db) in programs.items():
                if cold_db is not None:  # the first start on this database: no screen kept from the last one
                    cache_path(cold_db).unlink(missing_ok=True)
                measured = launch(argv, marker, tmp)
                for key, value in measured.items():
                    results[name][key].append(value)
                print(json.dumps({name: measured}), file=sys.stderr, flush=True)
    out: dict[str, Any] = {"benchmark": "restore_from_launch", "repeats": args.repeats}
    for name, values in results.items():
        out[name] = {key: summary(series) for key, series in values.items()}
    floor = out["floor_minimal_textual"]["content_s"]["p50"]
    for runs in sizes:
        entry = out[f"runs_{runs}"]
        entry["ratio_p50_to_floor"] = ratio(entry["content_s"]["p50"], floor)
    small, large = out[f"runs_{sizes[0]}"], out[f"runs_{sizes[-1]}"]
    out["growth"] = {
        "sizes": [sizes[0], sizes[-1]],
        "content_s": ratio(large["content_s"]["p50"], small["content_s"]["p50"]),
        "peak_rss_mb": ratio(large["peak_rss_mb"]["p50"], small["peak_rss_mb"]["p50"]),
    }
    if 1000 in sizes:
        value = out["runs_1000"]["content_s"]["p50"]
        out["meets_target_1000_runs"] = value is not None and value < TARGET_S
    if args.cold:
        for runs in sizes:
            entry = out[f"runs_{runs}_cold"]
            entry["ratio_p50_to_floor"] = ratio(entry["content_s"]["p50"], floor)
        small, large = out[f"runs_{sizes[0]}_cold"], out[f"runs_{sizes[-1]}_cold"]
        out["growth_cold"] = {
            "sizes": [sizes[0], sizes[-1]],
            "content_s": ratio(large["content_s"]["p50"], small["content_s"]["p50"]),
            "peak_rss_mb": ratio(large["peak_rss_mb"]["p50"], small["peak_rss_mb"]["p50"]),
        }
    out["target_s"] = TARGET_S
    out["machine"] = machine(started_load)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    raise SystemExit(main())
