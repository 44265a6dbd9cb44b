"""The agent loop through the real openai client: streaming, tools, concurrency, limits, events."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import (
    ErrorChunk,
    FinishChunk,
    MessageChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolResultChunk,
)
from instance_ai_tui.runtime.events import AgentEvent
from instance_ai_tui.runtime.tools import Tool, ToolContext, tool
from tests.support.openai_server import MockResponse, MockToolCall


class Sleep(BaseModel):
    name: str
    seconds: float


def sleeper(log: list[tuple[str, str, float]]) -> Tool:
    async def run(args: Sleep, ctx: ToolContext) -> dict:
        log.append(("start", args.name, time.monotonic()))
        await asyncio.sleep(args.seconds)
        if args.name.startswith("fail"):
            log.append(("fail", args.name, time.monotonic()))
            raise RuntimeError(f"{args.name} broke")
        log.append(("end", args.name, time.monotonic()))
        return {"slept": args.name}

    return Tool("sleep", "Sleep a while.", Sleep, run)


def three_calls(names: list[str], seconds: list[float]) -> MockResponse:
    return MockResponse(tool_calls=[
        MockToolCall(name="sleep", arguments={"name": n, "seconds": s}, id=f"call_{n}") for n, s in zip(names, seconds, strict=False)
    ])


async def test_text_streaming_chunks_and_result(server, make_model):
    server.set_script([MockResponse(reasoning="Thinking hard.", text="Hello, world. Nice day.")])
    agent = Agent("main", "Be nice.", make_model())
    stream = agent.stream("hi")
    chunks = [c async for c in stream]
    kinds = [c.type for c in chunks]
    assert kinds[:2] == ["reasoning-delta", "reasoning-delta"] and kinds[-2:] == ["message", "finish"]
    text = "".join(c.delta for c in chunks if isinstance(c, TextDeltaChunk))
    assert text == "Hello, world. Nice day." and sum(isinstance(c, TextDeltaChunk) for c in chunks) == 4
    assert "".join(c.delta for c in chunks if isinstance(c, ReasoningDeltaChunk)) == "Thinking hard."
    assert len({c.response_id for c in chunks}) == 1 and all(c.run_id == stream.run_id for c in chunks)
    result = await stream.result()
    assert result.status == "success" and result.finish_reason == "stop" and result.text == "Hello, world. Nice day."
    assert [m.role for m in result.messages] == ["assistant"] and result.messages[0].reasoning == "Thinking hard."
    body = server.requests[0].body
    assert body["messages"] == [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "hi"}]
    assert agent.get_state()["status"] == "success"


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_parallel_tool_calls_windows(server, make_model, concurrency):
    log: list[tuple[str, str, float]] = []
    server.set_script([three_calls(["a", "b", "c"], [0.15, 0.05, 0.1]), MockResponse(text="all done")])
    agent = Agent("main", "x", make_model(), [sleeper(log)], tool_call_concurrency=concurrency)
    stream = agent.stream("go")
    chunks = [c async for c in stream]
    result = await stream.result()
    assert result.status == "success" and result.text == "all done"
    starts = [name for kind, name, _ in log if kind == "start"]
    if concurrency == 1:
        assert [(k, n) for k, n, _ in log] == [("start", "a"), ("end", "a"), ("start", "b"), ("end", "b"),
                                               ("start", "c"), ("end", "c")]
    else:
        assert starts == ["a", "b", "c"] and [k for k, _, _ in log[:3]] == ["start"] * 3  # all started together
        ends = [n for k, n, _ in log if k == "end"]
        assert ends == ["b", "c", "a"]
        # results stream as each call settles ...
        assert [c.tool_call_id for c in chunks if isinstance(c, ToolResultChunk)] == ["call_b", "call_c", "call_a"]
    # ... but the tool messages are appended in call order
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_a", "call_b", "call_c"]
    tool_calls = [c for c in chunks if isinstance(c, ToolCallChunk)]
    assert [c.args["name"] for c in tool_calls] == ["a", "b", "c"]
    deltas = [c for c in chunks if isinstance(c, ToolCallDeltaChunk)]
    assert sum(d.start for d in deltas) == 3 and all(d.tool_name == "sleep" for d in deltas)
    # all chunks of the first response share its response id; the tool results too
    first = tool_calls[0].response_id
    assert all(c.response_id == first for c in chunks if isinstance(c, (ToolCallChunk, ToolResultChunk)))


async def test_failing_tool_does_not_cancel_siblings(server, make_model):
    log: list[tuple[str, str, float]] = []
    server.set_script([three_calls(["fail1", "ok1", "ok2"], [0.01, 0.1, 0.1]), MockResponse(text="partly done")])
    agent = Agent("main", "x", make_model(), [sleeper(log)], tool_call_concurrency=3)
    result = await agent.generate("go")
    assert result.status == "success"
    assert {(k, n) for k, n, _ in log} >= {("fail", "fail1"), ("end", "ok1"), ("end", "ok2")}
    tools = [m for m in result.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.is_error) for m in tools] == [("call_fail1", True), ("call_ok1", False), ("call_ok2", False)]
    assert tools[0].content == "Error: RuntimeError: fail1 broke"
    sent = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent[0]["content"] == "Error: RuntimeError: fail1 broke" and json.loads(sent[1]["content"]) == {"slept": "ok1"}


async def test_unknown_tool_and_invalid_arguments_are_tool_errors(server, make_model):
    log: list[tuple[str, str, float]] = []
    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="nope", arguments={}),
                                 MockToolCall(name="sleep", arguments={"name": "x", "seconds": "long"})]),
        MockResponse(text="sorry"),
    ])
    result = await Agent("main", "x", make_model(), [sleeper(log)]).generate("go")
    assert result.status == "success" and log == []
    errors = [m.content for m in result.messages if m.role == "tool"]
    assert "unknown tool 'nope'" in errors[0] and "available tools: sleep" in errors[0]
    assert "invalid arguments: seconds" in errors[1]


async def test_max_iterations_stops_the_loop(server, make_model):
    log: list[tuple[str, str, float]] = []
    server.set_script(lambda body: three_calls(["again"], [0]))
    agent = Agent("main", "x", make_model(), [sleeper(log)], max_iterations=3)
    stream = agent.stream("loop forever")
    chunks = [c async for c in stream]
    result = await stream.result()
    assert result.status == "success" and result.finish_reason == "max-iterations"
    assert len(server.requests) == 3 and len(log) == 6
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk) and finish.finish_reason == "max-iterations"
    assert finish.usage.requests == 3
    # every call has its result: no orphans in history
    assert [m.role for m in result.messages] == ["assistant", "tool"] * 3
    # a per-run override
    result = await agent.generate("again", max_iterations=1)
    assert result.finish_reason == "max-iterations" and len(server.requests) == 4


async def test_lifecycle_events_in_order(server, make_model):
    log: list[tuple[str, str, float]] = []
    server.set_script([three_calls(["a"], [0]), MockResponse(text="ok")])
    agent = Agent("main", "x", make_model(), [sleeper(log)])
    seen: list[str] = []
    agent.on(AgentEvent.AGENT_START, lambda e: seen.append(e.type.value))
    agent.on("TurnStart", lambda e: seen.append(f"TurnStart{e.data['iteration']}"))
    agent.on("TurnEnd", lambda e: seen.append(f"TurnEnd:{len(e.data['tool_results'])}"))

    async def on_tool_start(e):
        await asyncio.sleep(0)
        seen.append(f"ToolStart:{e.data['tool_name']}:{e.data['args']['name']}")

    agent.on("ToolExecutionStart", on_tool_start)
    agent.on("ToolExecutionEnd", lambda e: seen.append(f"ToolEnd:{e.data['is_error']}:{e.data['result']}"))
    agent.on("AgentEnd", lambda e: seen.append(f"AgentEnd:{len(e.data['messages'])}"))
    agent.on("Error", lambda e: seen.append("Error"))
    off = agent.on("AgentStart", lambda e: 1 / 0)  # a broken handler never breaks the run
    result = await agent.generate("go")
    assert result.status == "success"
    assert seen == ["AgentStart", "TurnStart1", "ToolStart:sleep:a", "ToolEnd:False:{'slept': 'a'}", "TurnEnd:1",
                    "TurnStart2", "TurnEnd:0", "AgentEnd:3"]
    off()
    server.set_script([MockResponse(status=500, error="boom")])
    seen.clear()
    result = await agent.generate("again")
    assert result.status == "failed" and "boom" in (result.error or "") and result.status_code == 500
    assert seen == ["AgentStart", "TurnStart1", "Error"]


async def test_model_failure_comes_back_on_the_result_and_stream_ends_with_error(server, make_model):
    server.set_script([MockResponse(status=503, error="overloaded"), MockResponse(status=503, error="overloaded")])
    agent = Agent("main", "x", make_model())
    result = await agent.generate("hi")
    assert result.status == "failed" and result.finish_reason == "error" and "HTTP 503" in (result.error or "")
    chunks = [c async for c in agent.stream("hi")]
    assert isinstance(chunks[-1], ErrorChunk) and not chunks[-1].cancelled and chunks[-1].status_code == 503
    state = agent.get_state()
    assert state["status"] == "failed" and json.dumps(state)


async def test_large_results_are_truncated_with_a_marker(server, make_model):
    big = tool(lambda: "x" * 5000, name="big", description="Big output.")
    server.set_script([MockResponse.call("big", {}), MockResponse(text="ok")])
    agent = Agent("main", "x", make_model(), [big], max_tool_output_chars=1000)
    result = await agent.generate("go")
    sent = server.requests[1].body["messages"][-1]["content"]
    assert len(sent) < 1100 and "[... truncated 4000 of 5000 characters ...]" in sent
    tool_message = next(m for m in result.messages if m.role == "tool")
    assert tool_message.result == "x" * 5000  # the raw result is kept


async def test_to_model_output_and_decorated_tools(server, make_model):
    @tool(to_model_output=lambda r: f"{len(r)} rows")
    async def query(table: str, limit: int = 10, *, ctx: ToolContext = None) -> list[dict]:  # type: ignore[assignment]
        """Query a table."""
        assert ctx is not None and ctx.tool_name == "query" and ctx.extra == {"user": "u1"}
        return [{"table": table, "n": i} for i in range(limit)]

    assert query.description == "Query a table." and not query.strict
    server.set_script([MockResponse.call("query", {"table": "t", "limit": 3}), MockResponse(text="ok")])
    result = await Agent("main", "x", make_model(), [query]).generate("go", extra={"user": "u1"})
    assert server.requests[1].body["messages"][-1]["content"] == "3 rows"
    assert next(m for m in result.messages if m.role == "tool").result == [{"table": "t", "n": i} for i in range(3)]
    schema = server.requests[0].body["tools"][0]["function"]["parameters"]
    assert schema["required"] == ["table"] and "ctx" not in schema["properties"]


async def test_message_chunks_carry_full_messages(server, make_model):
    log: list[tuple[str, str, float]] = []
    server.set_script([three_calls(["a"], [0]), MockResponse(text="ok")])
    chunks = [c async for c in Agent("main", "x", make_model(), [sleeper(log)]).stream("go")]
    messages = [c.message for c in chunks if isinstance(c, MessageChunk)]
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[0]["tool_calls"][0]["id"] == "call_a" and messages[1]["tool_call_id"] == "call_a"
    assert messages[0]["response_id"] == messages[1]["response_id"] != messages[2]["response_id"]


async def test_tool_progress_reaches_the_stream_after_its_call_and_never_after_the_result(server, make_model):
    """``ToolContext.report_progress`` is typed and lands in the run's own stream as a
    ``tool-progress`` chunk, between the call's ``tool-call`` and its ``tool-result``; a report
    after the call settled is dropped by the mapper, not shown on a finished card."""
    from instance_ai_tui.runtime.chunks import ToolProgressChunk

    class Copy(BaseModel):
        files: int

    async def copy(args: Copy, ctx: ToolContext) -> dict:
        for done in range(1, args.files + 1):
            ctx.report_progress(done, args.files, f"copied file {done}\nsecond line")
        return {"copied": args.files}

    server.set_script([MockResponse.call("copy", {"files": 2}), MockResponse(text="Copied.")])
    agent = Agent("main", "Copy.", make_model(), [Tool("copy", "Copy files.", Copy, copy)])
    chunks = [c async for c in agent.stream("copy two")]
    kinds = [c.type for c in chunks]
    first, last = kinds.index("tool-progress"), len(kinds) - 1 - kinds[::-1].index("tool-progress")
    assert kinds.index("tool-call") < first and last < kinds.index("tool-result")
    progress = [c for c in chunks if isinstance(c, ToolProgressChunk)]
    assert [(p.progress, p.total, p.text) for p in progress] == [
        (1, 2, "50% copied file 1"), (2, 2, "100% copied file 2")]
    assert progress[0].tool_name == "copy" and progress[0].tool_call_id == chunks[kinds.index("tool-call")].tool_call_id

