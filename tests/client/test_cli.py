"""``instance-ai run / threads / export`` as subprocesses, embedded and against ``instance-ai serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from server.live import REPO, ServeProcess, free_port

from instance_ai_tui.protocol.events import EVENT_TYPES, parse_event


def cli(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "OPENAI_API_KEY", "INSTANCE_AI_MODEL", "INSTANCE_AI_DB"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "instance_ai_tui", *args],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=timeout, stdin=subprocess.DEVNULL,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        assert event["type"] in EVENT_TYPES or event["type"] == "run-sync"
        parse_event(event)
    return events


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_embedded_run_threads_export(tmp_path: Path, workspace: Path) -> None:
    db = str(tmp_path / "cli.sqlite3")
    done = cli(tmp_path, "run", "every morning send the weather to Slack", "--db", db, "--workspace", str(workspace),
               "--thread", "cli-1", "--json", "--approve", "all")
    assert done.returncode == 0, done.stderr
    events = json_lines(done.stdout)
    assert events[0]["type"] == "run-start" and events[-1]["type"] == "run-finish"
    assert events[-1]["payload"]["status"] == "completed"
    request = next(e for e in events if e["type"] == "confirmation-request")
    assert any(e["type"] == "tool-result" and e["payload"]["toolCallId"] == request["payload"]["toolCallId"] for e in events)

    denied = cli(tmp_path, "run", "every morning send the weather to Slack", "--db", db, "--thread", "cli-1",
                 "--approve", "none")
    assert denied.returncode == 0, denied.stderr
    assert "inactive" in denied.stdout and "{" not in denied.stdout.splitlines()[0]
    assert "⚙ activate-workflow" in denied.stderr and "→ denied" in denied.stderr and "▶ sub-agent" in denied.stderr

    questions = cli(tmp_path, "run", "build me a workflow", "--db", db, "--approve", "all", "--json")
    assert questions.returncode == 0, questions.stderr
    assert any(e["type"] == "confirmation-request" and e["payload"].get("inputType") == "questions"
               for e in json_lines(questions.stdout))

    listed = cli(tmp_path, "threads", "--db", db, "--json")
    assert listed.returncode == 0, listed.stderr
    threads = json.loads(listed.stdout)
    assert "cli-1" in [t["id"] for t in threads] and len(threads) == 2
    text = cli(tmp_path, "threads", "--db", db)
    assert "cli-1" in text.stdout and "Weather to Slack" in text.stdout

    markdown = cli(tmp_path, "export", "cli-1", "--format", "md", "--db", db)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith("# Weather to Slack") and markdown.stdout.count("## 👤 User") == 2
    out = tmp_path / "export.json"
    exported = cli(tmp_path, "export", "cli-1", "--format", "json", "-o", str(out), "--db", db)
    assert exported.returncode == 0 and exported.stdout == ""
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["threadId"] == "cli-1" and [m["role"] for m in data["messages"]] == ["user", "assistant"] * 2
    missing = cli(tmp_path, "export", "nope", "--db", db)
    assert missing.returncode == 1 and "not found" in missing.stderr


async def test_remote_run_threads_export_and_errors(tmp_path: Path, workspace: Path) -> None:
    server = ServeProcess(tmp_path / "served.sqlite3", extra=["--workspace", str(workspace), "--token", "sekrit"])
    await server.start()
    try:
        remote = ["--url", server.url, "--token", "sekrit"]
        done = cli(tmp_path, "run", "write a note: call mum", *remote, "--json", "--approve", "all", "--thread", "r-1")
        assert done.returncode == 0, done.stderr
        events = json_lines(done.stdout)
        assert events[-1]["payload"]["status"] == "completed"
        assert (workspace / "notes" / "instance-ai-note.md").exists()
        listed = cli(tmp_path, "threads", *remote, "--json")
        assert [t["id"] for t in json.loads(listed.stdout)] == ["r-1"]
        markdown = cli(tmp_path, "export", "r-1", *remote)
        assert markdown.returncode == 0 and "call mum" in markdown.stdout
        unauthorised = cli(tmp_path, "threads", "--url", server.url)
        assert unauthorised.returncode == 1 and "token" in unauthorised.stderr
        assert "sekrit" not in unauthorised.stderr + done.stderr
    finally:
        server.kill()
    nobody = cli(tmp_path, "run", "hello", "--url", f"http://127.0.0.1:{free_port()}")
    assert nobody.returncode == 1 and "cannot reach" in nobody.stderr and nobody.stdout == ""
