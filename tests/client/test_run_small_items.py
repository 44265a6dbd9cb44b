"""``instance-ai run``'s smaller defects (issue 39.6), through the command as a person runs it.

- an unreachable model server: its error is printed once (stderr), not three times (the answer
  on stdout carried "*Error: …*", the error line, and the run-finish line repeated it);
- ``--json`` names the thread: every line carries ``threadId`` (before: no line did, and a new
  thread's id was lost for ``--thread`` or ``export``);
- (the title warning's model body is visible text: ``tests/test_log_path.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from instance_ai_tui.protocol.events import parse_event
from tests.support.openai_server import closed_port_url

REPO = Path(__file__).resolve().parents[2]


async def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data"), **(env or {})}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "INSTANCE_AI_DB", "INSTANCE_AI_MODEL"):
        environ.pop(name, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", "run", *args, cwd=str(tmp_path), env=environ,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_an_unreachable_model_is_said_once(tmp_path: Path) -> None:
    url = closed_port_url()
    code, out, err = await run_cli(tmp_path, "--model", "gpt-x",
                                   "Please list the workflows that send the weekly sales report by email",
                                   env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "x"})
    assert code == 1
    assert err.count("refused the connection") == 1, err
    assert out.strip() == "", out  # the answer had no text: nothing on stdout
    assert f"error: the model server at {url} refused the connection" in err
    assert err.rstrip().endswith("run error"), err


async def test_json_lines_name_the_thread(tmp_path: Path) -> None:
    code, out, err = await run_cli(tmp_path, "--model", "demo", "--json", "hi")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    threads = {line.get("threadId") for line in lines}
    assert len(threads) == 1 and None not in threads, threads
    assert lines[0]["type"] == "run-start" and lines[-1]["type"] == "run-finish"
    assert all(parse_event(line).type == line["type"] for line in lines)  # still the protocol's events
    thread = threads.pop()
    code, out, err = await run_cli(tmp_path, "--model", "demo", "--thread", thread, "--json", "again")
    assert code == 0 and {json.loads(line)["threadId"] for line in out.splitlines()} == {thread}
