"""The typing test of issue 32 (``scripts/typing_test.py``), short, where tmux exists: the real app
in tmux, a real OpenAI-compatible model server raising cards at random moments, English typed at
random times. No card answered, no grant, no thread deleted or renamed, every sentence where it
was typed; then Ctrl+G + y and a + Enter work. (The full run: ``python scripts/typing_test.py``.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")
@pytest.mark.skipif(shutil.which("instance-ai") is None, reason="needs the instance-ai command (pip install -e .)")
def test_typing_at_random_times_answers_no_card_and_loses_no_key() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "typing_test.py"), "--duration", "40", "--seed", "32", "--json"],
        capture_output=True, text=True, timeout=420, cwd=ROOT, check=False,
    )
    summary_line = next((line for line in done.stdout.splitlines() if line.startswith("{")), "")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    summary = json.loads(summary_line)
    assert summary["failures"] == 0 and summary["sentences"] >= 5
    assert summary["random_phase"]["answered"] == []
    assert summary["deliberate"] == {"ctrl_g_y_approved": True, "always_allow_asked_then_granted": True}
