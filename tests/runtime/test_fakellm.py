"""The agent against fakellm (PyPI), a second, independent OpenAI wire-format implementation."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import ToolCallDeltaChunk
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.runtime.tools import Tool, ToolContext
from tests.support import free_port

FAKELLM = shutil.which("fakellm")

RULES = """\
version: 1
defaults: {fallback: deterministic_echo}
rules:
  - name: after_tool_result
    when: {tool_result_contains: "temp_c"}
    respond: {content: "It is 21 C and sunny in Paris."}
  - name: weather_tool_call
    when: {tools_include: "get_weather", messages_contain: "weather"}
    respond:
      tool_calls: [{name: get_weather, arguments: {city: "Paris"}}]
"""


class City(BaseModel):
    city: str


@pytest.mark.skipif(FAKELLM is None, reason="fakellm is not installed")
async def test_tool_round_trip_through_fakellm(tmp_path: Path):
    config = tmp_path / "fakellm.yaml"
    config.write_text(RULES)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        FAKELLM or sys.executable, "serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config),
        cwd=str(tmp_path), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(300):
                try:
                    if (await http.get(f"http://127.0.0.1:{port}/_fakellm/stats")).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.05)
            else:
                pytest.fail("fakellm did not start")
        seen: list[str] = []

        async def weather(args: City, ctx: ToolContext) -> dict:
            seen.append(args.city)
            return {"city": args.city, "temp_c": 21}

        model = OpenAIModel("gpt-4o-mini", base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
        agent = Agent("main", "You report the weather.", model, [Tool("get_weather", "Weather.", City, weather)])
        stream = agent.stream("What is the weather in Paris?")
        chunks = [c async for c in stream]
        result = await stream.result()
        assert result.status == "success", result.error
        assert seen == ["Paris"] and result.text == "It is 21 C and sunny in Paris."
        assert any(isinstance(c, ToolCallDeltaChunk) and c.start and c.tool_name == "get_weather" for c in chunks)
        assert [m.role for m in result.messages] == ["assistant", "tool", "assistant"]
        await model.aclose()
    finally:
        proc.terminate()
        await proc.wait()
