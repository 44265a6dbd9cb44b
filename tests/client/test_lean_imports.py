"""``client.factory.skip_unused_optional_imports``: a command's HTTP stack starts without the
optional modules it never uses (httpcore's trio support, httpx's command line), and still works."""

from __future__ import annotations

import json
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
