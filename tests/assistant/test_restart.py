"""Restarts: suspended runs survive and can be confirmed; runs a crash left active are swept."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from instance_ai_tui.assistant.demo_instance import DemoN8n
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from instance_ai_tui.store.base import RunRecord
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.waiting import until_async

from .conftest import answer, collect, finish_status, of_type, types

WRITE = ScriptedResponse(text="I'll write it.", tool_calls=[ScriptedToolCall("write-file", {"path": "r.md", "content": "R"})])


async def test_restart_with_pending_approval_then_approved(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE]), workspace_root=workspace)
    run_id = await ai.send("r", "write r.md")
    request = (await collect(ai, "r", until=("confirmation-request",)))[-1]
    await ai.shutdown()  # keeps the suspended run
    assert (await _stored_run(ai.store.path, run_id)).status == "suspended"

    # a new process on the same database file, with a model that only knows the rest
    ai2 = await make_ai(ScriptedModel(["Done after the restart."]), workspace_root=workspace)
    status = await ai2.status("r")
    assert status.is_suspended and status.run_id == run_id
    history = await ai2.messages("r")
    assert history.messages[1].agent_tree.tool_calls[0].confirmation.request_id == request["payload"]["requestId"]
    await answer(ai2, request["payload"]["requestId"], {"approved": True})
    rest = await collect(ai2, "r", after=request["id"])
    assert rest[0]["id"] == request["id"] + 1  # the log continues, no gap
    assert [e["runId"] for e in rest] == [run_id] * len(rest)
    assert of_type(rest, "tool-result")[0]["payload"]["toolCallId"] == request["payload"]["toolCallId"]
    assert finish_status(rest[-1]) == {"status": "completed"}
    assert (workspace / "r.md").read_text() == "R"
    tree = (await ai2.store.get_snapshots("r"))[run_id]
    assert tree["textContent"] == "I'll write it.Done after the restart."


async def test_restart_with_pending_sub_agent_approval(make_ai: Any, workspace: Path) -> None:
    def script(request: Any) -> ScriptedResponse:
        last = request.messages[-1]
        if "delegate" in request.tool_names():
            if last["role"] == "user":
                return ScriptedResponse.call("delegate", {"role": "writer", "instructions": "write w.md",
                                                          "tools": ["write-file"]})
            return ScriptedResponse(text="orchestrator done")
        if last["role"] == "user":
            return ScriptedResponse.call("write-file", {"path": "w.md", "content": "W"})
        return ScriptedResponse(text="writer done")

    ai = await make_ai(ScriptedModel(script), workspace_root=workspace)
    run_id = await ai.send("rs", "delegate a write")
    request = (await collect(ai, "rs", until=("confirmation-request",)))[-1]
    await ai.shutdown()
    ai2 = await make_ai(ScriptedModel(script), workspace_root=workspace)
    await answer(ai2, request["payload"]["requestId"], {"approved": True})
    rest = await collect(ai2, "rs", after=request["id"])
    completed = of_type(rest, "agent-completed")[0]
    assert completed["agentId"] == request["agentId"] and completed["payload"]["result"] == "writer done"
    assert rest[-1]["payload"]["status"] == "completed"
    assert (workspace / "w.md").read_text() == "W"
    assert await ai2.store.list_checkpoints(status="suspended") == []
    assert (await ai2.store.get_snapshots("rs"))[run_id]["children"][0]["status"] == "completed"


async def test_crash_sweep_interrupts_runs_left_active(db_path: Path, make_ai: Any) -> None:
    # simulate a process that died mid-run: a run recorded active, a tool call without result
    store = SqliteStore(db_path)
    await store.open()
    bus = InProcessBus(store)
    run_id, root = "run_crashed", "orchestrator-run_crashed"
    await store.upsert_run(RunRecord(run_id=run_id, thread_id="crash", status="active",
                                     message_group_id="mg_x", started_at=datetime.now(UTC),
                                     data={"messageId": "msg_1", "userMessage": "build it"}))
    base = {"runId": run_id, "ts": 1_700_000_000_000}
    await bus.publish_many("crash", [parse_event(event) for event in [
        {**base, "type": "run-start", "agentId": root, "payload": {"messageId": "msg_1"}},
        {**base, "type": "tool-call", "agentId": root, "payload": {"toolCallId": "tc_done", "toolName": "plan", "args": {}}},
        {**base, "type": "tool-result", "agentId": root, "payload": {"toolCallId": "tc_done", "result": {}}},
        {**base, "type": "tool-call", "agentId": root, "payload": {"toolCallId": "tc_open", "toolName": "delegate", "args": {}}},
        {**base, "type": "agent-spawned", "agentId": "agent-b", "payload": {"parentId": root, "role": "builder"}},
        {**base, "type": "tool-call", "agentId": "agent-b", "payload": {"toolCallId": "tc_sub", "toolName": "create-workflow", "args": {}}},
    ]])
    await bus.close()
    await store.close()

    ai = await make_ai(ScriptedModel(["fresh run"]), n8n=DemoN8n())
    events = [e.data() for e in await ai.store.read_events("crash", after=6)]
    assert types(events) == ["tool-interrupted", "tool-interrupted", "agent-completed", "run-finish"]
    interrupted = {e["payload"]["toolCallId"]: e["agentId"] for e in events if e["type"] == "tool-interrupted"}
    assert interrupted == {"tc_open": root, "tc_sub": "agent-b"}
    assert "verify before retrying" in events[0]["payload"]["error"]
    assert events[-1]["payload"] == {"status": "interrupted", "reason": "crash_interrupted"}
    assert all(e["runId"] == run_id and "ts" in e for e in events)
    assert (await ai.store.get_run(run_id)).status == "interrupted"
    tree = (await ai.store.get_snapshots("crash"))[run_id]
    assert tree["cancellationReason"] == "interrupted"
    assert all(not c["isLoading"] for c in tree["toolCalls"])
    assert not (await ai.status("crash")).has_active_run
    new_run = await ai.send("crash", "try again")  # the thread is usable again
    assert (await collect(ai, "crash", after=10))[-1]["runId"] == new_run


async def _stored_run(path: Path, run_id: str) -> RunRecord:
    store = SqliteStore(path)
    await store.open()
    try:
        record = await store.get_run(run_id)
        assert record is not None
        return record
    finally:
        await store.close()


async def test_request_recorded_but_not_published_is_published_on_reload(make_ai: Any, workspace: Path,
                                                                          monkeypatch: Any) -> None:
    from instance_ai_tui.assistant.run_manager import RunManager

    original = RunManager.__dict__["publish_request"]
    monkeypatch.setattr(RunManager, "publish_request", staticmethod(lambda run, pending: None))  # "dies" here
    ai = await make_ai(ScriptedModel([WRITE]), workspace_root=workspace)
    run_id = await ai.send("lost", "write r.md")
    async def suspended() -> bool:
        return (await ai.status("lost")).is_suspended

    await until_async(suspended, what="the run suspended")
    before = [e.data() for e in await ai.store.read_events("lost")]
    assert "confirmation-request" not in types(before)
    await ai.shutdown()
    monkeypatch.setattr(RunManager, "publish_request", original)
    ai2 = await make_ai(ScriptedModel(["Written."]), workspace_root=workspace)
    request = (await collect(ai2, "lost", after=len(before), until=("confirmation-request",)))[-1]
    assert request["runId"] == run_id and request["payload"]["toolName"] == "write-file"
    await answer(ai2, request["payload"]["requestId"], {"approved": True})
    rest = await collect(ai2, "lost", after=request["id"])
    assert finish_status(rest[-1]) == {"status": "completed"}
    assert (workspace / "r.md").read_text() == "R"


async def test_demo_activation_approved_after_a_restart(make_ai: Any) -> None:
    """The demo's simulated n8n keeps its workflows in the store, so the approval still works."""
    ai = await make_ai("demo")
    run_id = await ai.send("demo", "every morning send the weather forecast to Slack")
    seen = await collect(ai, "demo", until=("confirmation-request",))
    request = seen[-1]
    assert request["payload"]["toolName"] == "activate-workflow"
    call = next(e for e in seen if e["type"] == "tool-call" and e["payload"]["toolCallId"] == request["payload"]["toolCallId"])
    workflow_id = call["payload"]["args"]["workflowId"]  # the request refers to its call's arguments (issue 31)
    await ai.shutdown()

    ai2 = await make_ai("demo")
    await answer(ai2, request["payload"]["requestId"], {"approved": True})
    rest = await collect(ai2, "demo", after=request["id"])
    result = of_type(rest, "tool-result")[0]
    assert result["payload"]["toolCallId"] == request["payload"]["toolCallId"]
    assert result["payload"]["result"]["active"] is True
    assert finish_status(rest[-1]) == {"status": "completed"}
    answer_text = "".join(e["payload"]["text"] for e in of_type(rest, "text-delta"))
    assert "**active** now" in answer_text
    workflows = await DemoN8n(ai2.store).list_workflows()
    assert {w["id"]: w["active"] for w in workflows}[workflow_id] is True
    assert run_id == rest[-1]["runId"]


async def test_demo_reports_a_failed_activation_honestly(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("demo2", "every morning send the weather forecast to Slack")
    seen = await collect(ai, "demo2", until=("confirmation-request",))
    request = seen[-1]
    call = next(e for e in seen if e["type"] == "tool-call" and e["payload"]["toolCallId"] == request["payload"]["toolCallId"])
    # the workflow disappears before the user answers
    await ai.services.n8n.delete_workflow(call["payload"]["args"]["workflowId"])
    await answer(ai, request["payload"]["requestId"], {"approved": True})
    rest = await collect(ai, "demo2", after=request["id"])
    answer_text = "".join(e["payload"]["text"] for e in of_type(rest, "text-delta"))
    assert "could **not activate**" in answer_text and "not found" in answer_text
    assert "as you asked" not in answer_text
