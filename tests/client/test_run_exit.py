"""``instance-ai run`` ends its process as soon as the run has finished (``cli.run.exit_now``):
its output flushed, the exit code kept; called from another program, it only returns the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from instance_ai_tui.cli.run import exit_now

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import atexit, sys
sys.argv[0] = "/usr/local/bin/instance-ai"  # as the console script starts it
from instance_ai_tui.cli.run import exit_now
atexit.register(lambda: print("teardown ran", file=sys.stderr))
sys.stdout.write("the answer, without a newline")
sys.stderr.write("a note")
exit_now(5)
print("not reached")
"""


def test_the_command_exits_at_once_with_its_output_and_code() -> None:
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 5
    assert result.stdout == "the answer, without a newline"
    assert result.stderr == "a note"  # flushed, and no teardown after it


def test_called_from_another_program_it_returns_the_code() -> None:
    assert exit_now(3) == 3
