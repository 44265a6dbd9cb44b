"""The request the adapter sends is the one the official ``openai`` client sends (issue 46 item 3).

``OpenAIModel`` speaks HTTP itself (``httpx`` and its own event-stream reader, no SDK internals); the
contract is that what reaches the server is what ``AsyncOpenAI().chat.completions.create(...)`` sends
for the same request: the same JSON body (messages untouched, every parameter, unknown ones at the top
level as the SDK's ``extra_body`` puts them) and the same bearer token. Both talk to the real local
OpenAI-wire server, each through a transport that records every request on the way.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI

from instance_ai_tui.runtime.model import ModelFinish, ModelRequest
from instance_ai_tui.runtime.openai_model import OpenAIModel
from tests.support.openai_server import MockOpenAIServer, MockResponse

HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You build n8n workflows. Ünïcödé — “quotes” and emoji 🚀."},
    {"role": "user", "content": "make a schedule trigger"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "thinking about it",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "create-workflow", "arguments": '{"a": 1}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "id": "wf_1"}'},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this picture"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
        ],
    },
    {"role": "assistant", "content": "Done: 1.0 × 2 = 2", "name": "orchestrator"},
    {"role": "user", "content": "thanks\n\twith\ttabs and \\ backslashes \u0000 nul"},
]

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "create-workflow",
            "description": "Create a workflow",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "nodes": {"type": "array", "items": {"type": "object"}}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
]


def _recording(http: Any, sent: list[tuple[bytes, dict[str, str]]]) -> Any:
    """A transport of the HTTP package ``http`` (httpx, or the one the SDK is built on) that records
    each request's body and headers."""

    class Recording(http.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self.inner = http.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            body = await request.aread()
            sent.append((body, {k.lower(): v for k, v in request.headers.items()}))
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Recording()


def _sdk_http() -> Any:
    """The HTTP package the installed SDK is built on (httpx; httpx2 in its 3.x releases)."""
    import importlib

    import openai

    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


async def _ours(server: MockOpenAIServer, request: ModelRequest, **model_kw: Any) -> tuple[bytes, dict[str, str]]:
    sent: list[tuple[bytes, dict[str, str]]] = []
    client = httpx.AsyncClient(transport=_recording(httpx, sent))
    model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", client=client, **model_kw)
    chunks = [c async for c in model.stream(request)]
    await model.aclose()
    assert isinstance(chunks[-1], ModelFinish) and len(sent) == 1
    return sent[0]


async def _sdks(server: MockOpenAIServer, request: ModelRequest, default_params: dict[str, Any] | None = None,
                ) -> tuple[bytes, dict[str, str]]:
    """What the SDK sends for the same request (unknown parameters go through ``extra_body``)."""
    sent: list[tuple[bytes, dict[str, str]]] = []
    http = _sdk_http()
    client = AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0,
                         http_client=http.AsyncClient(transport=_recording(http, sent)))
    params: dict[str, Any] = {**(default_params or {}), **request.params}
    known = {"temperature", "max_tokens", "tool_choice", "parallel_tool_calls", "stop", "user", "seed"}
    extra = {k: params.pop(k) for k in list(params) if k not in known}
    if request.tools:
        params["tools"] = request.tools
        if request.tool_choice is not None:
            params["tool_choice"] = request.tool_choice
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=request.messages, stream=True,
                                                  stream_options={"include_usage": True},
                                                  extra_body=extra or None, **params)
    async for _chunk in stream:
        pass
    await client.close()
    assert len(sent) == 1
    return sent[0]


@pytest.mark.parametrize(
    ("tools", "tool_choice", "params", "model_kw"),
    [
        ([], None, {}, {}),
        (TOOLS, "auto", {"temperature": 0.2, "max_tokens": 300}, {}),
        (TOOLS, {"type": "function", "function": {"name": "create-workflow"}}, {"top_k": 5, "min_p": 0.1},
         {"default_params": {"seed": 7, "repetition_penalty": 1.1}}),
        (TOOLS, None, {"parallel_tool_calls": False, "stop": ["\n\n"], "user": "u1"}, {}),
    ],
)
async def test_the_adapter_sends_what_the_openai_client_sends(
    tools: list[dict[str, Any]], tool_choice: Any, params: dict[str, Any], model_kw: dict[str, Any],
) -> None:
    async with MockOpenAIServer([MockResponse(text="ok"), MockResponse(text="ok")]) as server:
        request = ModelRequest(messages=HISTORY, tools=tools, tool_choice=tool_choice, params=params)
        ours, our_headers = await _ours(server, request, **model_kw)
        theirs, their_headers = await _sdks(server, request, model_kw.get("default_params"))
    assert json.loads(ours) == json.loads(theirs)
    assert json.loads(ours)["messages"] == HISTORY
    assert our_headers["authorization"] == their_headers["authorization"] == "Bearer sk-test"
    assert our_headers["content-type"] == their_headers["content-type"] == "application/json"


async def test_the_adapter_reads_what_the_openai_client_reads() -> None:
    """The same stream read by the SDK and by our event reader gives the same text, reasoning, tool
    call and usage."""
    reply = MockResponse(text="one two three", reasoning="hmm so", prompt_tokens=9, completion_tokens=3,
                         tool_calls=[{"name": "create-workflow", "arguments": {"name": "x"}}])
    async with MockOpenAIServer([reply, reply]) as server:
        model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)
        ours = [c async for c in model.stream(ModelRequest(messages=HISTORY))]
        await model.aclose()
        client = AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        stream = await client.chat.completions.create(model="gpt-4o-mini", messages=HISTORY, stream=True,  # type: ignore[arg-type]
                                                      stream_options={"include_usage": True})
        text, reasoning, args, usage = "", "", "", None
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                for call in choice.delta.tool_calls or ():
                    args += (call.function.arguments if call.function else None) or ""
        await client.close()
    finish = ours[-1]
    assert isinstance(finish, ModelFinish) and finish.reason == "tool_calls"
    assert "".join(c.delta for c in ours if c.type == "text-delta") == text == "one two three"
    assert "".join(c.delta for c in ours if c.type == "reasoning-delta") == reasoning == "hmm so"
    assert finish.tool_calls[0].arguments == args and json.loads(args) == {"name": "x"}
    from instance_ai_tui.runtime.model import ModelUsage

    counted = next(c for c in ours if isinstance(c, ModelUsage))
    assert usage is not None and counted.usage.input_tokens == usage.prompt_tokens
