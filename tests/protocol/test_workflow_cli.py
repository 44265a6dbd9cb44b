"""``instance-ai workflow show|list`` as a person runs it, piped (plain text, no escape codes): the demo
instance (seeded, and a workflow the demo agent built into the SQLite file), errors in words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BUILD = "every morning send the weather forecast to Slack"


def cli(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "N8N_", "INSTANCE_AI_"))}
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data")})
    return subprocess.run([sys.executable, "-m", "instance_ai_tui", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_list_and_show_the_seeded_demo_instance_without_creating_a_database(tmp_path: Path) -> None:
    db = tmp_path / "never.sqlite3"
    listed = cli(tmp_path, "workflow", "list", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert "wf-102  Lead intake  (3 nodes)" in listed.stdout
    shown = cli(tmp_path, "workflow", "show", "wf-102", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout
    lines = shown.stdout.splitlines()
    assert lines[0] == "Lead intake · wf-102 · 3 nodes"
    assert "│⚡ Webhook" in shown.stdout and "├───▶┤▪ Edit Fields (Set)" in shown.stdout
    compact = cli(tmp_path, "workflow", "show", "wf-102", "--compact", "--db", str(db))
    assert compact.returncode == 0 and len(compact.stdout.splitlines()) < len(lines)
    assert not db.exists()


def test_show_a_workflow_the_demo_agent_built(tmp_path: Path) -> None:
    db = tmp_path / "ai.sqlite3"
    built = cli(tmp_path, "run", "--model", "demo", "--db", str(db), "--approve", "all", BUILD)
    assert built.returncode == 0, built.stderr[-2000:]
    shown = cli(tmp_path, "workflow", "show", "wf-104", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith("Weather to Slack · wf-104 · 3 nodes")
    for name in ("Schedule Trigger", "OpenWeatherMap", "Slack"):
        assert name in shown.stdout


def test_unknown_workflow_and_bad_arguments_say_so(tmp_path: Path) -> None:
    missing = cli(tmp_path, "workflow", "show", "wf-999", "--db", str(tmp_path / "x.sqlite3"))
    assert missing.returncode == 1
    assert "instance-ai workflow:" in missing.stderr and "wf-999 not found" in missing.stderr
    assert "Traceback" not in missing.stderr
    no_action = cli(tmp_path, "workflow")
    assert no_action.returncode == 2 and "show" in no_action.stderr
