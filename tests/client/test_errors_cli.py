"""Every CLI command says a start-up failure in one line, without a traceback (issue 26): a corrupt or
locked database, an unknown thread."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from server.live import REPO


def cli(tmp_path: Path, *args: str, timeout: float = 60) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "XDG_DATA_HOME": str(tmp_path / "d")}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "INSTANCE_AI_URL", "OPENAI_BASE_URL", "INSTANCE_AI_DB"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "instance_ai_tui", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=timeout, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", [["threads"], ["export", "some-thread"], ["run", "hello", "--model", "demo"],
                                     ["serve", "--model", "demo", "--port", "5999"]])
def test_a_corrupt_database_is_one_line(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "bad.sqlite3"
    db.write_bytes(os.urandom(8192))
    code, out, err = cli(tmp_path, *command, "--db", str(db))
    assert code == 1 and "Traceback" not in err and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"instance-ai {command[0]}: the database {db} is damaged") and "--db PATH" in lines[0]


def test_a_locked_database_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE other (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        code, _out, err = cli(tmp_path, "threads", "--db", str(db))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "it is locked by another program" in err and str(db) in err


def test_an_unknown_thread_is_one_line(tmp_path: Path) -> None:
    code, out, err = cli(tmp_path, "export", "no-such-thread", "--db", str(tmp_path / "db.sqlite3"))
    assert code == 1 and out == "" and "Traceback" not in err
    assert err.strip() == "instance-ai export: thread 'no-such-thread' not found"
