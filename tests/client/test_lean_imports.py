"""What a command imports: ``client.factory.skip_unused_optional_imports`` (a command's HTTP stack
starts without the optional modules it never uses: httpcore's trio support, httpx's command line,
and still works), and ``instance-ai run --url`` (no settings models, no embedded stack, no TUI)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import asyncio, json, sys
from instance_ai_tui.client.factory import skip_unused_optional_imports
skip_unused_optional_imports()
import httpx

async def main():
    async with httpx.AsyncClient() as http:  # a real request through httpcore's asyncio path
        try:
            await http.get("http://127.0.0.1:9/")
        except httpx.ConnectError:
            pass
asyncio.run(main())
loaded = {name: sys.modules.get(name) is not None for name in ("trio", "httpx._main", "click", "httpcore")}
print(json.dumps(loaded))
"""


def test_a_command_starts_http_without_trio_or_the_httpx_command_line() -> None:
    result = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            check=True)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {"trio": False, "httpx._main": False, "click": False, "httpcore": True}


async def test_a_run_by_url_builds_no_settings_and_never_imports_the_embedded_stack(tmp_path: Path) -> None:
    """``instance-ai run --url`` to our server (issue 30 item 5): no ``Settings`` (``config`` and its
    models), and nothing of the embedded side (assistant, runtime, store, the ``openai`` SDK) nor of
    the TUI: ``-X importtime`` of the real command lists every module it imported."""
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.server.app import create_app

    from .conftest import demo_settings

    env = {**os.environ, "INSTANCE_AI_CONFIG": str(tmp_path / "none.toml"), "PYTHONPATH": str(ROOT)}
    env.pop("INSTANCE_AI_TOKEN", None)
    service = build_service(demo_settings(tmp_path))
    async with serve_app(create_app(service)) as url:
        result = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-X", "importtime", "-m", "instance_ai_tui", "run", "--url", url, "--json",
                             "list my workflows"], capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
        threads = await service.list_threads()
    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "run-finish" and events[-1]["payload"]["status"] == "completed"
    assert len(threads) == 1  # the new thread, created without asking for its (absent) history first
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "instance_ai_tui.client.remote" in imported and "instance_ai_tui.protocol.conversation" in imported
    for prefix in ("instance_ai_tui.config", "instance_ai_tui.assistant", "instance_ai_tui.runtime",
                   "instance_ai_tui.store", "instance_ai_tui.client.embedded", "instance_ai_tui.tui", "openai",
                   "textual", "rich", "aiosqlite", "click"):
        assert not [name for name in imported if name == prefix or name.startswith(prefix + ".")], prefix
