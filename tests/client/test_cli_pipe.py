"""Issue 13: ``instance-ai threads | head`` ends quietly (no BrokenPipeError traceback), exit 141."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from instance_ai_tui.cli import EXIT_PIPE_CLOSED, build_parser
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import ModelSettings, Settings

REPO = Path(__file__).resolve().parents[2]


async def test_threads_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    db = tmp_path / "many.sqlite3"
    settings = Settings(db_path=db, model=ModelSettings(name="demo"))
    async with EmbeddedClient(settings) as client:
        for n in range(400):  # --json is ~200 bytes a thread: well past a pipe's 64 KiB buffer
            await client.create_thread(f"thread-{n:04d}", title=f"a thread with a long enough title {n}")
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}

    def run_into_a_closed_pipe() -> tuple[bytes, str, int]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "instance_ai_tui", "threads", "--json", "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(REPO),
        )
        assert proc.stdout is not None and proc.stderr is not None
        head = proc.stdout.read(200)  # what `head -c 200` reads, then it goes away
        proc.stdout.close()
        err = proc.stderr.read().decode()
        return head, err, proc.wait(60)

    first, stderr, code = await asyncio.to_thread(run_into_a_closed_pipe)
    assert first.startswith(b"[")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr, stderr
    assert code == EXIT_PIPE_CLOSED == 141


def test_exit_codes_are_documented_in_the_help() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "exit codes: 0 done, 1 error, 2 bad arguments, 130 interrupted, 141 output closed early" in text
