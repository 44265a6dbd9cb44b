"""The scripted model (same adapter interface) and the mock server's other modes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import openai
import pytest

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.model import ModelCancelled, ModelError, ModelFinish, ModelRequest, ModelTextDelta
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from instance_ai_tui.runtime.tools import tool
from tests.support.openai_server import MockResponse, Rule

ROOT = Path(__file__).resolve().parents[2]


async def test_scripted_model_from_a_callable_drives_the_loop():
    @tool
    def add(a: int, b: int) -> int:
        "Add."
        return a + b

    def policy(request: ModelRequest) -> ScriptedResponse:
        last = request.messages[-1]
        if last["role"] == "tool":
            return ScriptedResponse(text=f"The sum is {last['content']}.")
        return ScriptedResponse(reasoning="I should add.", tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})])

    model = ScriptedModel(policy)
    result = await Agent("calc", "x", model, [add]).generate("2+3?")
    assert result.text == "The sum is 5." and model.calls == 2
    assert model.requests[0].tools[0]["function"]["name"] == "add"
    assert result.usage.requests == 2 and result.usage.input_tokens > 0


async def test_scripted_model_streams_small_chunks_and_reports_exhaustion():
    model = ScriptedModel(["one two three"])
    chunks = [c async for c in model.stream(ModelRequest(messages=[{"role": "user", "content": "x"}]))]
    assert [c.text for c in chunks if isinstance(c, ModelTextDelta)] == ["one ", "two ", "three"]
    assert isinstance(chunks[-1], ModelFinish)
    with pytest.raises(ModelError, match="no response left"):
        [c async for c in model.stream(ModelRequest(messages=[]))]
    failing = await Agent("a", "x", ScriptedModel([ScriptedResponse(error=ModelError("nope", status_code=400))])).generate("x")
    assert failing.status == "failed" and failing.status_code == 400


async def test_scripted_model_honours_cancel():
    model = ScriptedModel([ScriptedResponse(text="a b c d e f g", delay=0.05)])
    cancel = asyncio.Event()
    got: list[str] = []
    with pytest.raises(ModelCancelled):
        async for c in model.stream(ModelRequest(messages=[]), cancel=cancel):
            if isinstance(c, ModelTextDelta):
                got.append(c.text)
                if len(got) == 2:
                    cancel.set()
    assert len(got) == 2


async def test_non_streaming_and_rules(server):
    server.set_script([
        Rule(tool_result_contains="temp_c", respond=MockResponse(text="21 C in Paris.")),
        Rule(contains="weather", has_tool="get_weather", respond=MockResponse.call("get_weather", {"city": "Paris"})),
        Rule(contains="hello", respond=MockResponse(text="Hi!", reasoning="greeting")),
    ])
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather?"}], tools=tools)
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather"
    second = await client.chat.completions.create(model="m", tools=tools, messages=[
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21}'},
    ])
    assert second.choices[0].message.content == "21 C in Paris."
    hello = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    assert hello.choices[0].message.content == "Hi!" and hello.choices[0].message.model_extra["reasoning_content"] == "greeting"
    with pytest.raises(openai.InternalServerError, match="no rule matches"):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "other"}])
    with pytest.raises(openai.BadRequestError, match="valid string"):
        await client.chat.completions.create(model="m", messages=[{"role": "assistant", "content": None}])
    await client.close()


async def test_server_runs_as_a_process(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"when": {"contains": "ping"}, "respond": {"text": "pong"}}]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.openai_server", "--script", str(script), cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        base_url = json.loads(line)["base_url"]
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}],
                                                      stream=True)
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == "pong"
        await client.close()
    finally:
        proc.terminate()
        await proc.wait()
