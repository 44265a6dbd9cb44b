"""Abort: the HTTP stream closes at once, tools are cancelled, history keeps no orphans."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import ErrorChunk, TextDeltaChunk, ToolResultChunk
from instance_ai_tui.runtime.memory import StoreMemory, record_to_message
from instance_ai_tui.runtime.messages import strip_orphaned_tool_messages
from instance_ai_tui.runtime.tools import Tool, ToolContext
from tests.support.openai_server import MockResponse, MockToolCall
from tests.support.waiting import until


async def test_abort_mid_stream_closes_the_http_stream(server, make_model):
    """The server stops sending after four chunks and keeps the connection open for ever: only the
    abort can close it (the model's idle timeout, 60 s, would end it as a timeout, not an abort)."""
    server.set_script([
        MockResponse(text="one two three four five six", hang_after_chunks=4),
        MockResponse(text="Back again."),
    ])
    agent = Agent("main", "x", make_model())
    errors: list[str] = []
    agent.on("Error", lambda e: errors.append(e.data["message"]))
    stream = agent.stream("talk")
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        if sum(isinstance(c, TextDeltaChunk) for c in chunks) == 3:
            agent.abort()
    # the client hung up in the server's hang (a bound against a hang only, under the idle timeout)
    await server.wait_disconnect(0, timeout=30)
    assert server.requests[0].chunks_sent == 4
    last = chunks[-1]
    assert isinstance(last, ErrorChunk) and last.cancelled and last.error == "aborted"
    result = await stream.result()
    assert result.status == "cancelled" and result.finish_reason == "error" and errors == []
    assert agent.get_state()["status"] == "cancelled"
    # the same agent can run again
    again = await agent.generate("hello")
    assert again.status == "success" and again.text == "Back again."


class Wait(BaseModel):
    name: str
    seconds: float


def waiting(events: list[str]) -> Any:
    """A tool that waits ``seconds``, saying in ``events`` when it starts, ends or is cancelled."""
    async def wait(args: Wait, ctx: ToolContext) -> str:
        events.append(f"start {args.name}")
        try:
            await asyncio.sleep(args.seconds)
        except asyncio.CancelledError:
            events.append(f"cancelled {args.name}")
            raise
        events.append(f"end {args.name}")
        return "ok"

    return wait


async def test_abort_cancels_running_tools_and_settles_every_call(server, make_model, store):
    events: list[str] = []

    wait = waiting(events)

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="wait", arguments={"name": n, "seconds": s}, id=f"c_{n}")
                                 for n, s in (("fast", 0.0), ("slow", 30), ("later", 0))], prompt_tokens=50,
                     completion_tokens=20),
        MockResponse(text="fresh run"),
    ])
    memory = StoreMemory(store)
    agent = Agent("main", "x", make_model(), [Tool("wait", "Wait.", Wait, wait)], memory=memory,
                  tool_call_concurrency=2)
    stream = agent.stream("go", thread_id="t1")
    chunks = []
    async for chunk in stream:
        chunks.append(chunk)
        if isinstance(chunk, ToolResultChunk) and chunk.tool_call_id == "c_fast":
            await until(lambda: "start slow" in events, interval=0.001, what="the slow tool started")
            agent.abort()
    result = await stream.result()
    # abort cancelled the slow tool (it never ended: "end slow" after its 30 s without it); "later" never started
    assert sorted(events) == ["cancelled slow", "end fast", "start fast", "start slow"]
    assert result.status == "cancelled" and isinstance(chunks[-1], ErrorChunk) and chunks[-1].cancelled
    skipped = {c.tool_call_id: c.skipped for c in chunks if isinstance(c, ToolResultChunk)}
    assert skipped == {"c_fast": False, "c_slow": True, "c_later": True}
    # usage of the aborted run is kept
    assert result.usage.input_tokens == 50 and result.usage.requests == 1
    # the stored turn has every call answered, in call order: nothing for the stripper to remove
    stored = [record_to_message(r) for r in await store.list_messages("t1")]
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m.tool_call_id for m in stored if m.role == "tool"] == ["c_fast", "c_slow", "c_later"]
    assert strip_orphaned_tool_messages(stored) == stored
    assert stored[3].content == "[Skipped: run was aborted]" and stored[3].skipped
    # the next run on the thread sends a valid history
    again = await agent.generate("and now?", thread_id="t1")
    assert again.status == "success" and again.text == "fresh run"
    roles = [m["role"] for m in server.requests[1].body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "user"]


async def test_external_cancel_signal(server, make_model):
    server.set_script([MockResponse(text="a b c d e f", chunk_delay=0.2)])
    agent = Agent("main", "x", make_model())
    cancel = asyncio.Event()

    async def later() -> None:
        await server.wait_for_chunks(0, 2)
        cancel.set()

    task = asyncio.ensure_future(later())
    result = await agent.generate("go", cancel=cancel)
    await task
    assert result.status == "cancelled" and result.error == "aborted"
    await server.wait_disconnect(0, timeout=1)


async def test_abort_reaches_a_sub_agent(server, make_model):
    def script(body: dict) -> MockResponse:
        if body["messages"][0]["content"] == "parent":
            return MockResponse.call("researcher", {"input": "dig"})
        return MockResponse(text="digging deeper and deeper", hang_after_chunks=2)

    server.set_script(script)
    child = Agent("researcher", "child", make_model())
    parent = Agent("parent", "parent", make_model(), [child.as_tool("Research something.")])
    stream = parent.stream("go")
    await server.wait_for_chunks(1, 2)
    parent.abort()
    result = await stream.result()
    # the sub-agent's stream, hung after two chunks, was closed by the abort (a bound against a hang only)
    await server.wait_disconnect(1, timeout=30)
    assert server.requests[1].chunks_sent == 2
    assert result.status == "cancelled"
    assert child.get_state()["status"] == "cancelled"


async def test_abort_right_after_start_and_at_any_point(server, make_model):
    from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
    from instance_ai_tui.runtime.tools import tool

    agent = Agent("main", "x", ScriptedModel(["never sent"]))
    stream = agent.stream("hi")
    stream.abort()  # before the task ran at all
    chunks = [c async for c in stream]
    assert len(chunks) == 1 and isinstance(chunks[0], ErrorChunk) and chunks[0].cancelled
    assert (await stream.result()).status == "cancelled"

    @tool
    async def slow(n: int) -> int:
        "Slow."
        await asyncio.sleep(0.002)  # the scenario: a tool that takes a moment
        return n

    # abort after every possible number of chunks: every run ends cancelled or done, never hangs
    for k in range(12):
        script = [ScriptedResponse(text="a b", tool_calls=[ScriptedToolCall("slow", {"n": 1})]), "c d e"]
        agent = Agent("main", "x", ScriptedModel(script, delay=0.001), [slow])
        stream = agent.stream("go")
        chunks = []
        async for chunk in stream:
            chunks.append(chunk)
            if len(chunks) == k:
                stream.abort()
        result = await asyncio.wait_for(stream.result(), 2)
        assert result.status == ("cancelled" if isinstance(chunks[-1], ErrorChunk) else "success")
        if 1 <= k <= 6:
            assert result.status == "cancelled", k
        roles = [m.role for m in result.messages]
        calls = sum(len(m.tool_calls or []) for m in result.messages)
        assert roles.count("tool") == calls  # no orphans whatever the moment


async def test_a_model_that_fails_mid_run_ends_the_run_failed_with_its_turn_stored(server, make_model, store):
    """The second model call fails (the server answers 500): the run ends failed, and its wind-up
    stores what the run did before (the call and its result), so the next run reads a whole turn."""
    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="wait", arguments={"name": "fast", "seconds": 0}, id="c_fast")]),
        MockResponse(status=500, error="the model server broke"),
        MockResponse(text="fresh run"),
    ])

    async def wait(args: Wait, ctx: ToolContext) -> str:
        return "ok"

    agent = Agent("main", "x", make_model(), [Tool("wait", "Wait.", Wait, wait)], memory=StoreMemory(store))
    stream = agent.stream("go", thread_id="t1")
    chunks = [chunk async for chunk in stream]
    result = await stream.result()
    assert result.status == "failed" and "the model server broke" in (result.error or "")
    assert isinstance(chunks[-1], ErrorChunk) and not chunks[-1].cancelled
    stored = [record_to_message(r) for r in await store.list_messages("t1")]
    assert [m.role for m in stored] == ["user", "assistant", "tool"]
    assert stored[2].tool_call_id == "c_fast" and stored[2].content == "ok" and not stored[2].skipped
    again = await agent.generate("and now?", thread_id="t1")
    assert again.status == "success" and again.text == "fresh run"
    assert [m["role"] for m in server.requests[2].body["messages"]] == ["system", "user", "assistant", "tool", "user"]


async def test_a_run_that_fails_with_calls_open_settles_them_and_leaves_nothing_running(server, make_model, store):
    """A tool's approval policy raises while its sibling (same window) is running: the run ends
    failed, the sibling is cancelled (not left running past the run), every call of the batch is
    settled as skipped by the failure, and the stored turn has each call answered."""
    events: list[str] = []

    wait = waiting(events)

    async def broken_policy(args: Wait, ctx: ToolContext) -> bool:
        await until(lambda: "start slow" in events, interval=0.001, what="the slow tool started")
        raise RuntimeError("the approval policy broke")

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="wait", arguments={"name": "slow", "seconds": 30}, id="c_slow"),
                                 MockToolCall(name="odd", arguments={"name": "odd", "seconds": 0}, id="c_odd"),
                                 MockToolCall(name="wait", arguments={"name": "later", "seconds": 0}, id="c_later")]),
        MockResponse(text="fresh run"),
    ])
    agent = Agent("main", "x", make_model(), [Tool("wait", "Wait.", Wait, wait),
                                              Tool("odd", "Odd.", Wait, wait, needs_approval=broken_policy)],
                  memory=StoreMemory(store), tool_call_concurrency=2)
    stream = agent.stream("go", thread_id="t1")
    chunks = [chunk async for chunk in stream]
    result = await stream.result()
    assert result.status == "failed" and "the approval policy broke" in (result.error or "")
    assert isinstance(chunks[-1], ErrorChunk) and not chunks[-1].cancelled
    # nothing of the run goes on after it ended: the slow call was cancelled, the later one never started
    assert not [t for t in asyncio.all_tasks() if "ToolExecution._settle" in repr(t.get_coro()) and not t.done()]
    assert events == ["start slow", "cancelled slow"]
    results = {c.tool_call_id: (c.skipped, c.model_output) for c in chunks if isinstance(c, ToolResultChunk)}
    assert results == {cid: (True, "[Skipped: run failed]") for cid in ("c_slow", "c_odd", "c_later")}
    stored = [record_to_message(r) for r in await store.list_messages("t1")]
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m.tool_call_id for m in stored if m.role == "tool"] == ["c_slow", "c_odd", "c_later"]
    assert strip_orphaned_tool_messages(stored) == stored
    await asyncio.sleep(0.05)  # (a sibling left running would record its result after the run's end)
    assert events == ["start slow", "cancelled slow"]
    again = await agent.generate("and now?", thread_id="t1")
    assert again.status == "success" and again.text == "fresh run"
