"""The OpenAI adapter through the real openai client against the local wire-format server."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.model import (
    ModelError,
    ModelFinish,
    ModelReasoningDelta,
    ModelRequest,
    ModelTextDelta,
    ModelTimeout,
    ModelToolCallDelta,
    ModelUnreachable,
    ModelUsage,
    ToolCallAccumulator,
)
from instance_ai_tui.runtime.openai_model import ThinkSplitter
from instance_ai_tui.runtime.tools import Tool, ToolContext
from instance_ai_tui.runtime.usage import PriceTable
from tests.support.openai_server import MockResponse, MockToolCall


async def collect(model, messages=None, **kw):
    request = ModelRequest(messages=messages or [{"role": "user", "content": "hi"}], **kw)
    return [c async for c in model.stream(request)]


async def test_text_streams_in_pieces_with_usage(server, make_model):
    server.set_script([MockResponse(text="Hello there, how are you?", prompt_tokens=11, completion_tokens=6)])
    chunks = await collect(make_model())
    texts = [c.text for c in chunks if isinstance(c, ModelTextDelta)]
    assert len(texts) == 5 and "".join(texts) == "Hello there, how are you?"
    usage = next(c.usage for c in chunks if isinstance(c, ModelUsage))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.requests) == (11, 6, 17, 1)
    assert isinstance(chunks[-1], ModelFinish) and chunks[-1].reason == "stop"
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_from_extra_fields(server, make_model, field):
    server.set_script([MockResponse(reasoning="First I think. Then I answer.", reasoning_field=field, text="42")])
    chunks = await collect(make_model())
    reasoning = "".join(c.text for c in chunks if isinstance(c, ModelReasoningDelta))
    assert reasoning == "First I think. Then I answer."
    assert "".join(c.text for c in chunks if isinstance(c, ModelTextDelta)) == "42"


async def test_inline_think_blocks_split_across_chunks(server, make_model):
    # words_per_chunk=1 puts "<think>plan" and "</think>The" in separate SSE chunks
    server.set_script([MockResponse(text="<think>plan the answer</think>The answer is 7.", words_per_chunk=1)])
    chunks = await collect(make_model())
    assert "".join(c.text for c in chunks if isinstance(c, ModelReasoningDelta)) == "plan the answer"
    assert "".join(c.text for c in chunks if isinstance(c, ModelTextDelta)) == "The answer is 7."


def test_think_splitter_tags_cut_anywhere():
    text = "a<think>b c</think>d<think>e</think>"
    for cut in range(1, len(text)):
        s = ThinkSplitter()
        out = s.feed(text[:cut]) + s.feed(text[cut:]) + s.flush()
        reasoning = "".join(p for r, p in out if r)
        plain = "".join(p for r, p in out if not r)
        assert (reasoning, plain) == ("b ce", "ad"), cut


def test_accumulator_handles_repeated_and_split_names():
    acc = ToolCallAccumulator()
    acc.feed(0, "c1", "get_weather", '{"ci')
    acc.feed(0, "c1", "get_weather", 'ty": "Paris"}')
    acc.feed(1, None, "get_", "")
    acc.feed(1, None, "time", "{}")
    calls = acc.finish()
    assert calls[0].name == "get_weather" and calls[0].arguments == '{"city": "Paris"}' and calls[0].id == "c1"
    assert calls[1].name == "get_time" and calls[1].id.startswith("call_")


@pytest.mark.parametrize("llama", [False, True])
async def test_parallel_tool_call_fragments_assembled_by_index(server, make_model, llama):
    server.set_script([MockResponse(tool_calls=[
        MockToolCall(name="get_weather", arguments={"city": "Paris"}, id="call_a"),
        MockToolCall(name="get_weather", arguments={"city": "Berlin, Germany"}, id="call_b"),
    ], llama_cpp_style=llama, args_chunk_size=4)])
    chunks = await collect(make_model(), tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])
    finish = chunks[-1]
    assert isinstance(finish, ModelFinish) and finish.reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in finish.tool_calls] == [
        ("call_a", "get_weather", '{"city": "Paris"}'),
        ("call_b", "get_weather", '{"city": "Berlin, Germany"}'),
    ]
    deltas = [c for c in chunks if isinstance(c, ModelToolCallDelta)]
    # the name appears once per call even when the server repeats it in every fragment
    assert [d.name for d in deltas if d.name] == ["get_weather", "get_weather"]
    assert len(deltas) > 4


async def test_usage_with_cached_and_reasoning_tokens_and_price(server, make_model):
    server.set_script([MockResponse(text="ok", prompt_tokens=1000, completion_tokens=500, cached_tokens=400,
                                    reasoning_tokens=200)])
    model = make_model(model="my-local-model", prices={"my-local-model": {"input": 1.0, "output": 2.0, "cached_input": 0.5}})
    usage = next(c.usage for c in await collect(model) if isinstance(c, ModelUsage))
    assert usage.cached_input_tokens == 400 and usage.reasoning_tokens == 200
    assert usage.cost == pytest.approx((600 * 1.0 + 400 * 0.5 + 500 * 2.0) / 1e6)


async def test_http_error_becomes_model_error_with_status(server, make_model):
    server.set_script([MockResponse(status=429, error="Rate limit exceeded")])
    with pytest.raises(ModelError) as info:
        await collect(make_model())
    assert info.value.status_code == 429 and "Rate limit exceeded" in str(info.value) and info.value.retryable


async def test_error_in_the_middle_of_the_stream(server, make_model):
    server.set_script([MockResponse(text="one two three four", error_after_chunks=2, error="upstream broke")])
    with pytest.raises(ModelError, match="upstream broke"):
        await collect(make_model())


def _chunk(delta, finish=None, **extra):
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


async def test_chunks_of_the_wrong_shape_are_skipped_and_the_rest_arrives(server, make_model):
    """The stream's chunks are read as the JSON the server sent (not SDK objects): fields of
    the wrong type are ignored, the answer's good parts are kept."""
    server.set_script([MockResponse(raw_chunks=[
        _chunk({"role": "assistant", "content": ""}),
        {"choices": "not a list"},
        {"choices": [42]},
        _chunk("a string delta"),
        _chunk({"content": 7}),
        _chunk({"content": "Hello"}),
        _chunk({"tool_calls": ["junk", {"index": "x", "function": "junk"}]}),
        _chunk({"content": " world"}, finish=3),
        {"choices": [], "usage": "lots"},
        {"choices": [], "usage": {"prompt_tokens": "many", "completion_tokens": -1, "prompt_tokens_details": "x",
                                  "completion_tokens_details": {"reasoning_tokens": None}}},
        _chunk({}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2}),
    ])])
    chunks = await collect(make_model())
    assert "".join(c.text for c in chunks if isinstance(c, ModelTextDelta)) == "Hello world"
    finish = chunks[-1]
    assert isinstance(finish, ModelFinish) and finish.reason == "stop" and finish.model == "m"
    assert not finish.tool_calls and not [c for c in chunks if isinstance(c, ModelToolCallDelta)]
    usage = next(c.usage for c in chunks if isinstance(c, ModelUsage))
    assert (usage.input_tokens, usage.output_tokens) == (5, 2)


@pytest.mark.parametrize("junk", [["a", "list"], "a string", 12])
async def test_a_chunk_that_is_not_an_object_is_a_clear_error(server, make_model, junk):
    server.set_script([MockResponse(raw_chunks=[_chunk({"content": "Hi"}), junk, _chunk({"content": "!"})])])
    with pytest.raises(ModelError, match="malformed stream chunk"):
        await collect(make_model())


async def test_first_token_timeout(server, make_model):
    server.set_script([MockResponse(text="late", first_chunk_delay=20.0)])
    with pytest.raises(ModelTimeout, match="no response"):  # (without the timeout: "late", after 20 s)
        await collect(make_model(first_token_timeout=0.3))
    await server.wait_disconnect(0)
    assert server.requests[0].chunks_sent == 0  # the client hung up before the late answer began


async def test_idle_timeout_between_chunks(server, make_model):
    server.set_script([MockResponse(text="a b c d", hang_after_chunks=2)])
    with pytest.raises(ModelTimeout, match="stalled"):  # (without the timeout: a hang, for ever)
        await collect(make_model(idle_timeout=0.3))
    await server.wait_disconnect(0)
    assert server.requests[0].chunks_sent == 2  # the client hung up in the stall, after the two chunks


async def test_unreachable_server_is_a_clear_error():
    from instance_ai_tui.runtime.openai_model import OpenAIModel

    model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    with pytest.raises(ModelUnreachable, match=r"the model server at http://127.0.0.1:9/v1 refused the connection"):
        await collect(model)


def test_missing_api_key_for_openai_is_a_clear_error(monkeypatch):
    from instance_ai_tui.runtime.openai_model import OpenAIModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o-mini")


def test_from_settings_uses_config_and_env(tmp_path):
    from instance_ai_tui.config import load_settings
    from instance_ai_tui.runtime.openai_model import OpenAIModel

    cfg = tmp_path / "config.toml"
    cfg.write_text('[model]\nname = "qwen"\nidle_timeout = 7\n[model.prices.qwen]\ninput = 1\noutput = 3\n')
    settings = load_settings(path=cfg, env={"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "k"})
    model = OpenAIModel.from_settings(settings.model)
    assert model.name == "qwen" and model.base_url == "http://127.0.0.1:1/v1" and model.idle_timeout == 7
    assert model.prices.get("qwen").output == 3 and model.prices.get("gpt-4o") is not None
    assert not model.supports_strict_tools


class Nothing(BaseModel):
    pass


class Lookup(BaseModel):
    key: str


async def test_agent_tool_turn_sends_empty_string_content_and_repairs_null_args(server, make_model):
    """llama.cpp rejects ``content: null`` on an assistant tool-call turn; the server here does too."""
    seen: list[dict] = []

    async def now(args: Nothing, ctx: ToolContext) -> str:
        seen.append(args.model_dump())
        return "12:00"

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="now", arguments="null"), MockToolCall(name="now", arguments="")],
                     llama_cpp_style=True),
        MockResponse(text="It is noon."),
    ])
    agent = Agent("a", "Be brief.", make_model(), [Tool("now", "The time.", Nothing, now)])
    result = await agent.generate("time?")
    assert result.status == "success", result.error
    assert result.text == "It is noon." and seen == [{}, {}]
    assistant = server.requests[1].body["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == "" and len(assistant["tool_calls"]) == 2


async def test_bad_json_arguments_become_a_tool_error_the_model_corrects(server, make_model):
    calls: list[str] = []

    async def lookup(args: Lookup, ctx: ToolContext) -> str:
        calls.append(args.key)
        return f"value of {args.key}"

    server.set_script([
        MockResponse.call("lookup", '{"key": "a"'),  # truncated JSON
        MockResponse.call("lookup", {"key": "a"}),
        MockResponse(text="done"),
    ])
    agent = Agent("a", "x", make_model(), [Tool("lookup", "Look up.", Lookup, lookup)])
    result = await agent.generate("go")
    assert result.status == "success" and calls == ["a"]
    error_message = server.requests[1].body["messages"][-1]
    assert error_message["role"] == "tool" and "not valid JSON" in error_message["content"]
    # the broken call is replayed with valid JSON so strict servers accept the history
    assert server.requests[1].body["messages"][-2]["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_strict_tool_schema_only_where_supported(server, make_model):
    server.set_script([MockResponse(text="a"), MockResponse(text="b")])
    tool = Tool("lookup", "Look up.", Lookup, lambda a, c: "x")
    await Agent("a", "x", make_model(strict_tools=True), [tool]).generate("go")
    await Agent("a", "x", make_model(), [tool]).generate("go")
    strict_fn = server.requests[0].body["tools"][0]["function"]
    plain_fn = server.requests[1].body["tools"][0]["function"]
    assert strict_fn["strict"] is True and strict_fn["parameters"]["additionalProperties"] is False
    assert "strict" not in plain_fn


def test_price_table_extend_and_prefix_lookup():
    table = PriceTable({"custom": {"input": 3, "output": 4}})
    assert table.get("openrouter/custom").input == 3
    assert table.get("openai/gpt-4o-mini") is not None and table.get("unknown") is None


def test_our_strict_schemas_are_the_openai_packages_own():
    """``runtime.tools.strict_schema`` follows the rules of the ``openai`` package's conversion (its
    public ``pydantic_function_tool``): nested models, lists, optionals, ``$ref`` with a description,
    enums, ``None`` defaults."""
    from enum import StrEnum
    from typing import Literal

    import openai
    from pydantic import BaseModel, Field

    from instance_ai_tui.runtime.tools import strict_schema

    class Kind(StrEnum):
        a = "a"
        b = "b"

    class Node(BaseModel):
        name: str
        kind: Kind = Field(description="which kind")
        position: list[int]

    class Args(BaseModel):
        title: str = Field(description="the title")
        nodes: list[Node]
        main: Node = Field(description="the main node")
        note: str | None = None
        mode: Literal["x", "y"]
        extra: dict[str, int] | None = None

    for model in (Args, Node):
        theirs = openai.pydantic_function_tool(model)["function"]["parameters"]
        assert strict_schema(model.model_json_schema()) == theirs, model.__name__


def test_a_tools_strict_schema_is_built_once_and_is_what_building_it_anew_gives(monkeypatch):
    """Every tool's definition is asked for before every model call; its strict schema (pydantic's
    ``model_json_schema`` made strict: ~0.25 ms a tool) is built on the first ask only, and is what
    building it anew gives (the non-strict one is the tool's ``parameters``, as before)."""
    from instance_ai_tui.runtime.tools import strict_schema

    class Args(BaseModel):
        name: str
        count: int

    async def handler(args, ctx):
        return {}

    tool = Tool("count_things", "Count.", Args, handler, strict=True)
    fresh = strict_schema(Args.model_json_schema())
    built = 0
    schema = Args.model_json_schema

    def counted(*args, **kwargs):
        nonlocal built
        built += 1
        return schema(*args, **kwargs)

    monkeypatch.setattr(Args, "model_json_schema", counted)
    first, second = tool.definition(strict=True), tool.definition(strict=True)
    assert first == second == {"type": "function", "function": {
        "name": "count_things", "description": "Count.", "parameters": fresh, "strict": True}}
    assert built <= 1
    assert tool.definition(strict=False)["function"]["parameters"] == tool.parameters == Args.model_json_schema()
