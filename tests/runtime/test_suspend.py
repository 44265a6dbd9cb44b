"""Approval (approve/deny), programmatic suspend/resume, pending calls and checkpoint claims."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.checkpoints import InMemoryCheckpointStore, StoreCheckpointStore, utcnow
from instance_ai_tui.runtime.chunks import FinishChunk, ToolCallSuspendedChunk, ToolResultChunk
from instance_ai_tui.runtime.errors import CheckpointNotFound, InvalidResumeData, ResumeConflict, UnknownToolCall
from instance_ai_tui.runtime.tools import Tool, ToolContext, tool
from tests.support.openai_server import MockResponse, MockToolCall


class Path_(BaseModel):
    path: str


def delete_tool(deleted: list[str], **options) -> Tool:
    async def delete(args: Path_, ctx: ToolContext) -> str:
        deleted.append(args.path)
        return f"deleted {args.path}"

    return Tool("delete_file", "Delete a file.", Path_, delete, **options)


class Question(BaseModel):
    question: str


class AskPayload(BaseModel):
    question: str
    options: list[str]


class Answer(BaseModel):
    choice: str


def ask_tool(asked: list[str]) -> Tool:
    async def ask(args: Question, ctx: ToolContext) -> dict:
        if not ctx.resumed:
            asked.append(args.question)
            ctx.suspend(AskPayload(question=args.question, options=["red", "blue"]))
        assert ctx.suspend_payload == {"question": args.question, "options": ["red", "blue"]}
        return {"answer": ctx.resume_data.choice}

    return Tool("ask_user", "Ask the user.", Question, ask, suspend_schema=AskPayload, resume_schema=Answer)


async def run_until_suspended(agent: Agent, text: str, **kw):
    stream = agent.stream(text, **kw)
    chunks = [c async for c in stream]
    return chunks, await stream.result()


async def test_approve_runs_the_tool(server, make_model):
    deleted: list[str] = []
    server.set_script([MockResponse.call("delete_file", {"path": "/tmp/a"}), MockResponse(text="Deleted.")])
    agent = Agent("main", "x", make_model(), [delete_tool(deleted, needs_approval=True,
                                                               approval_message=lambda a: f"Delete {a.path}?")])
    chunks, result = await run_until_suspended(agent, "delete /tmp/a")
    suspended = [c for c in chunks if isinstance(c, ToolCallSuspendedChunk)]
    assert len(suspended) == 1 and suspended[0].kind == "approval" and deleted == []
    assert suspended[0].suspend_payload["message"] == "Delete /tmp/a?"
    assert suspended[0].resume_schema["required"] == ["approved"]
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].suspended and chunks[-1].finish_reason == "tool-calls"
    assert result.status == "suspended" and [p.tool_call_id for p in result.pending_suspend] == [suspended[0].tool_call_id]
    assert agent.get_state()["status"] == "suspended"
    stream = await agent.approve(result.run_id, suspended[0].tool_call_id)
    chunks = [c async for c in stream]
    final = await stream.result()
    assert deleted == ["/tmp/a"] and final.status == "success" and final.text == "Deleted."
    assert final.run_id == result.run_id
    assert [c.result for c in chunks if isinstance(c, ToolResultChunk)] == ["deleted /tmp/a"]
    # the whole turn is in the result (the approval in between does not lose the assistant call)
    assert [m.role for m in final.messages] == ["assistant", "tool", "assistant"]
    assert final.usage.requests == 2
    # finished runs cannot be resumed again
    with pytest.raises(CheckpointNotFound):
        await agent.approve(result.run_id, suspended[0].tool_call_id)


async def test_deny_gives_the_model_a_tool_error(server, make_model):
    deleted: list[str] = []
    server.set_script([MockResponse.call("delete_file", {"path": "/etc"}), MockResponse(text="OK, I won't.")])
    agent = Agent("main", "x", make_model(), [delete_tool(deleted)], require_approval={"delete_file"})
    _, result = await run_until_suspended(agent, "delete /etc")
    call_id = result.pending_suspend[0].tool_call_id
    final = await (await agent.deny(result.run_id, call_id, reason="too dangerous")).result()
    assert deleted == [] and final.status == "success" and final.text == "OK, I won't."
    sent = server.requests[1].body["messages"][-1]
    assert sent["role"] == "tool" and "denied by user: too dangerous" in sent["content"]
    tool_message = next(m for m in final.messages if m.role == "tool")
    assert tool_message.is_error


async def test_conditional_approval_callable(server, make_model):
    deleted: list[str] = []

    async def only_outside_tmp(args: Path_, ctx: ToolContext) -> bool:
        return not args.path.startswith("/tmp/")

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="delete_file", arguments={"path": "/tmp/x"}, id="c1"),
                                 MockToolCall(name="delete_file", arguments={"path": "/home/x"}, id="c2")]),
        MockResponse(text="done"),
    ])
    agent = Agent("main", "x", make_model(), [delete_tool(deleted, needs_approval=only_outside_tmp)])
    _, result = await run_until_suspended(agent, "clean up")
    assert deleted == ["/tmp/x"] and [p.tool_call_id for p in result.pending_suspend] == ["c2"]
    final = await (await agent.approve(result.run_id, "c2")).result()
    assert deleted == ["/tmp/x", "/home/x"] and final.status == "success"
    tool_ids = [m["tool_call_id"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_ids == ["c1", "c2"]


async def test_suspend_and_resume_with_schema_validation(server, make_model):
    asked: list[str] = []
    server.set_script([MockResponse.call("ask_user", {"question": "Which color?"}), MockResponse(text="Blue it is.")])
    agent = Agent("main", "x", make_model(), [ask_tool(asked)])
    chunks, result = await run_until_suspended(agent, "pick a color")
    suspended = next(c for c in chunks if isinstance(c, ToolCallSuspendedChunk))
    assert suspended.kind == "suspend" and suspended.suspend_payload == {"question": "Which color?", "options": ["red", "blue"]}
    assert suspended.resume_schema["properties"]["choice"]["type"] == "string"
    with pytest.raises(InvalidResumeData, match="choice"):
        await agent.resume(result.run_id, suspended.tool_call_id, {"colour": "blue"})
    with pytest.raises(UnknownToolCall):
        await agent.resume(result.run_id, "call_other", {"choice": "blue"})
    # a bad request does not consume the checkpoint
    final = await (await agent.resume(result.run_id, suspended.tool_call_id, {"choice": "blue"})).result()
    assert final.status == "success" and final.text == "Blue it is." and asked == ["Which color?"]
    assert server.requests[1].body["messages"][-1]["content"] == '{"answer": "blue"}'


async def test_invalid_suspend_payload_is_a_tool_error(server, make_model):
    async def bad(args: Question, ctx: ToolContext) -> None:
        ctx.suspend({"question": args.question})  # options missing

    server.set_script([MockResponse.call("ask_user", {"question": "?"}), MockResponse(text="hm")])
    agent = Agent("main", "x", make_model(), [Tool("ask_user", "Ask.", Question, bad, suspend_schema=AskPayload,
                                                   resume_schema=Answer)])
    result = await agent.generate("go")
    assert result.status == "success"
    assert "invalid payload" in next(m.content for m in result.messages if m.role == "tool")


async def test_suspension_stops_later_windows_and_keeps_them_pending(server, make_model):
    asked: list[str] = []
    ran: list[str] = []

    @tool
    async def note(text: str) -> str:
        "Write a note."
        ran.append(text)
        return "noted"

    server.set_script([
        MockResponse(tool_calls=[
            MockToolCall(name="note", arguments={"text": "1"}, id="n1"),
            MockToolCall(name="ask_user", arguments={"question": "Q?"}, id="q"),
            MockToolCall(name="note", arguments={"text": "2"}, id="n2"),
            MockToolCall(name="note", arguments={"text": "3"}, id="n3"),
        ]),
        MockResponse(text="finished"),
    ])
    checkpoints = InMemoryCheckpointStore()
    agent = Agent("main", "x", make_model(), [note, ask_tool(asked)], tool_call_concurrency=2, checkpoints=checkpoints)
    _, result = await run_until_suspended(agent, "go")
    # window 1 = (n1, q): q suspends; window 2 = (n2, n3) never starts
    assert ran == ["1"] and result.status == "suspended"
    state = agent.get_state()
    pending = state["pending_tool_calls"]
    assert pending["q"]["suspended"] is True
    assert pending["n2"]["suspended"] is False and pending["n3"]["suspended"] is False
    assert list(state["settled_tool_calls"]) == ["n1"]
    record = await checkpoints.load(result.run_id)
    assert record is not None and record.status == "suspended" and set(record.state["pending_tool_calls"]) == {"q", "n2", "n3"}
    final = await (await agent.resume(result.run_id, "q", {"choice": "red"})).result()
    assert ran == ["1", "2", "3"] and final.status == "success"
    tool_ids = [m["tool_call_id"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_ids == ["n1", "q", "n2", "n3"]
    assert await checkpoints.load(result.run_id) is None


async def test_several_suspensions_in_one_window(server, make_model):
    deleted: list[str] = []
    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="delete_file", arguments={"path": p}, id=f"d{i}")
                                 for i, p in enumerate(["/a", "/b"])]),
        MockResponse(text="both handled"),
    ])
    agent = Agent("main", "x", make_model(), [delete_tool(deleted, needs_approval=True)], tool_call_concurrency=3)
    chunks, result = await run_until_suspended(agent, "delete both")
    assert [c.tool_call_id for c in chunks if isinstance(c, ToolCallSuspendedChunk)] == ["d0", "d1"]
    second = await agent.approve(result.run_id, "d0")
    chunks = [c async for c in second]
    partial = await second.result()
    # still waiting for d1: re-suspended, and d1 is not announced a second time
    assert partial.status == "suspended" and [p.tool_call_id for p in partial.pending_suspend] == ["d1"]
    assert not any(isinstance(c, ToolCallSuspendedChunk) for c in chunks) and deleted == ["/a"]
    final = await (await agent.deny(partial.run_id, "d1")).result()
    assert final.status == "success" and deleted == ["/a"] and len(server.requests) == 2


async def test_two_resumes_cannot_both_run(server, make_model, store):
    deleted: list[str] = []
    server.set_script([MockResponse.call("delete_file", {"path": "/x"}), MockResponse(text="done")])
    agent = Agent("main", "x", make_model(), [delete_tool(deleted, needs_approval=True)],
                  checkpoints=StoreCheckpointStore(store))
    _, result = await run_until_suspended(agent, "go")
    call_id = result.pending_suspend[0].tool_call_id
    outcomes = await asyncio.gather(agent.approve(result.run_id, call_id), agent.approve(result.run_id, call_id),
                                    return_exceptions=True)
    streams = [o for o in outcomes if not isinstance(o, BaseException)]
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(streams) == 1 and len(errors) == 1
    assert isinstance(errors[0], (ResumeConflict, CheckpointNotFound)) or "not suspended" in str(errors[0])
    assert (await streams[0].result()).status == "success" and deleted == ["/x"]


async def test_expired_checkpoints_are_swept(server, make_model, store):
    for checkpoints in (InMemoryCheckpointStore(), StoreCheckpointStore(store)):
        deleted: list[str] = []
        server.set_script([MockResponse.call("delete_file", {"path": "/x"})])
        agent = Agent("main", "x", make_model(), [delete_tool(deleted, needs_approval=True)],
                      checkpoints=checkpoints, checkpoint_ttl=60)
        _, result = await run_until_suspended(agent, "go")
        assert await checkpoints.load(result.run_id) is not None
        assert await checkpoints.sweep() == 0
        assert await checkpoints.sweep(utcnow() + timedelta(seconds=61)) == 1
        with pytest.raises(CheckpointNotFound):
            await agent.approve(result.run_id, result.pending_suspend[0].tool_call_id)
