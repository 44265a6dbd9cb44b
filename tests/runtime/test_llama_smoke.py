"""Opt-in smoke test against a real llama.cpp-based server (llama-cpp-python + SmolLM2-135M).

Not run by default (building llama-cpp-python takes ~11 minutes). Start the server as in
shared/reference/local-peers.md (B2), then::

    INSTANCE_AI_LLAMA_BASE_URL=http://127.0.0.1:18103/v1 python -m pytest tests/runtime/test_llama_smoke.py
"""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime import Agent, ModelFinish, ModelRequest, ModelTextDelta, Tool, ToolContext
from instance_ai_tui.runtime.openai_model import OpenAIModel

BASE_URL = os.environ.get("INSTANCE_AI_LLAMA_BASE_URL")
MODEL = os.environ.get("INSTANCE_AI_LLAMA_MODEL", "smollm2")

pytestmark = pytest.mark.skipif(not BASE_URL, reason="set INSTANCE_AI_LLAMA_BASE_URL to run against llama.cpp")


class City(BaseModel):
    city: str


async def test_streams_text_with_usage():
    model = OpenAIModel(MODEL, base_url=BASE_URL, api_key="x", max_retries=0, first_token_timeout=60)
    chunks = [c async for c in model.stream(ModelRequest(messages=[{"role": "user", "content": "Say hello."}],
                                                         params={"max_tokens": 16}))]
    assert any(isinstance(c, ModelTextDelta) for c in chunks)
    assert isinstance(chunks[-1], ModelFinish) and chunks[-1].reason in ("stop", "length")


async def test_forced_tool_call_and_follow_up_turn():
    """llama.cpp repeats id and name in every delta and rejects content null on the follow-up."""
    seen: list[str] = []

    async def weather(args: City, ctx: ToolContext) -> dict:
        seen.append(args.city)
        return {"city": args.city, "temp_c": 21}

    model = OpenAIModel(MODEL, base_url=BASE_URL, api_key="x", max_retries=0, first_token_timeout=60,
                        default_params={"max_tokens": 64})
    tool_choice = {"type": "function", "function": {"name": "get_weather"}}
    agent = Agent("smoke", "You call tools.", model, [Tool("get_weather", "Weather of a city.", City, weather)],
                  max_iterations=2, model_params={"tool_choice": tool_choice})
    result = await agent.generate("What is the weather in Paris?")
    assert result.status == "success", result.error
    assert seen and all(isinstance(c, str) for c in seen)
    calls = [m for m in result.messages if m.role == "assistant" and m.tool_calls]
    assert calls and calls[0].tool_calls[0].name == "get_weather"  # not "get_weatherget_weather..."
