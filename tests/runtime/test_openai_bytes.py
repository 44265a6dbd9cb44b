"""The runtime's fast request path sends exactly what ``chat.completions.create`` sends (issue 14).

``OpenAIModel`` no longer lets the SDK walk the whole message history on every request; the rule is
that the bytes on the wire do not change. Both paths talk to the real local OpenAI-wire server through
the SDK's own HTTP client, with a transport that records every request's body and headers on the way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, _base_client

from instance_ai_tui.runtime import openai_model
from instance_ai_tui.runtime.model import ModelFinish, ModelRequest
from instance_ai_tui.runtime.openai_model import OpenAIModel
from tests.support.openai_server import MockOpenAIServer, MockResponse

http: Any = getattr(_base_client, "httpx2", None) or _base_client.httpx  # type: ignore[attr-defined]

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


class _Recording(http.AsyncBaseTransport):  # type: ignore[misc]
    def __init__(self, sent: list[tuple[bytes, dict[str, str]]]) -> None:
        self.sent = sent
        self.inner = http.AsyncHTTPTransport()

    async def handle_async_request(self, request: Any) -> Any:
        body = await request.aread()
        self.sent.append((body, {k.lower(): v for k, v in request.headers.items()}))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _send(server: MockOpenAIServer, request: ModelRequest, *, fast: bool,
                monkeypatch: pytest.MonkeyPatch, **model_kw: Any) -> tuple[bytes, dict[str, str]]:
    sent: list[tuple[bytes, dict[str, str]]] = []
    client = AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0,
                         http_client=http.AsyncClient(transport=_Recording(sent)))
    model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", client=client, **model_kw)
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(openai_model, "_sdk_fast_path", lambda client: None)  # the SDK's own create()
        chunks = [c async for c in model.stream(request)]
    await model.aclose()
    assert isinstance(chunks[-1], ModelFinish)
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
async def test_the_fast_path_sends_the_same_bytes_and_headers_as_create(
    tools: list[dict[str, Any]], tool_choice: Any, params: dict[str, Any], model_kw: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with MockOpenAIServer([MockResponse(text="ok"), MockResponse(text="ok")]) as server:
        request = ModelRequest(messages=HISTORY, tools=tools, tool_choice=tool_choice, params=params)
        old_body, old_headers = await _send(server, request, fast=False, monkeypatch=monkeypatch, **model_kw)
        new_body, new_headers = await _send(server, request, fast=True, monkeypatch=monkeypatch, **model_kw)
    assert new_body == old_body
    assert json.loads(new_body)["messages"] == HISTORY
    assert new_headers == old_headers
    assert new_headers["authorization"] == "Bearer sk-test"


async def test_the_fast_path_does_not_walk_the_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's transform sees the rest of the body once, never the messages (the O(history) cost)."""
    from openai._utils import _transform

    seen: list[int] = []
    original = _transform._async_transform_recursive

    async def counting(data: Any, **kw: Any) -> Any:
        if isinstance(data, dict) and "messages" in data:
            seen.append(len(data["messages"]))
        return await original(data, **kw)

    monkeypatch.setattr(_transform, "_async_transform_recursive", counting)
    async with MockOpenAIServer([MockResponse(text="ok")] * 3) as server:
        model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)
        for turn in range(3):
            request = ModelRequest(messages=HISTORY * (turn + 1), tools=TOOLS)
            assert isinstance([c async for c in model.stream(request)][-1], ModelFinish)
        await model.aclose()
        assert [len(r.body["messages"]) for r in server.requests] == [7, 14, 21]
    assert seen == [0]  # one probe with no messages; the three requests' histories were not walked


async def test_the_fast_path_reads_the_chunks_without_building_sdk_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``ChatCompletionChunk`` per token cost about 50 us: the fast path reads each chunk's
    JSON as the SDK decoded it. (``create``, for clients that are not the SDK's own, still
    gives SDK objects: both read the same.)"""
    from openai.types.chat import ChatCompletionChunk

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a ChatCompletionChunk was built")

    reply = MockResponse(text="one two three", reasoning="hmm so", prompt_tokens=9, completion_tokens=3)
    async with MockOpenAIServer([reply, reply]) as server:
        model = OpenAIModel("gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)
        request = ModelRequest(messages=HISTORY)
        with monkeypatch.context() as patched:
            patched.setattr(ChatCompletionChunk, "construct", classmethod(refuse))
            patched.setattr(ChatCompletionChunk, "model_construct", classmethod(refuse))
            fast = [c async for c in model.stream(request)]
        monkeypatch.setattr("instance_ai_tui.runtime.openai_model._sdk_fast_path", lambda client: None)
        slow = [c async for c in model.stream(request)]
        await model.aclose()
    assert fast == slow
    assert isinstance(fast[-1], ModelFinish) and fast[-1].reason == "stop"
