"""The ``openai`` SDK without its aiohttp transport (``client.factory.skip_unused_optional_imports``):
``import openai`` imports ``openai._vendor.httpx_aiohttp`` (and aiohttp, some 100 ms) whenever
aiohttp is installed; a command skips it, and a streamed chat request through the SDK's default
client still reaches a real OpenAI-wire server and streams its answer back."""

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
import openai

async def main():
    client = openai.AsyncOpenAI(base_url=sys.argv[1], api_key="sk-test")
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "lean"}], stream=True)
    text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])
    await client.close()
    try:
        openai.DefaultAioHttpClient()
        aio = "built"
    except RuntimeError as exc:
        aio = str(exc)
    print(json.dumps({"text": text, "aio": aio, "aiohttp": "aiohttp" in sys.modules,
                      "vendored": sys.modules.get("openai._vendor.httpx_aiohttp") is not None}))

asyncio.run(main())
"""


def test_the_sdk_streams_a_chat_answer_without_its_aiohttp_transport(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"respond": {"text": "lean answer"}}]))
    server = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server", "--script", str(script)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert server.stdout is not None
        base_url = json.loads(server.stdout.readline())["base_url"]
        result = subprocess.run([sys.executable, "-c", CODE, base_url], capture_output=True, text=True, cwd=ROOT,
                                timeout=120)
    finally:
        server.terminate()
        server.wait(10)
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["text"] == "lean answer"
    assert seen["vendored"] is False and seen["aiohttp"] is False
    assert "aiohttp" in seen["aio"]  # the SDK's own words: the aiohttp extra is missing
