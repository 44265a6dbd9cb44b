"""Runs: the seed's event sequences, one run per thread, cancel, errors, snapshots, history."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import pytest

from instance_ai_tui.assistant.demo_instance import DemoN8n
from instance_ai_tui.assistant.errors import InvalidRequest, RunActive, ThreadNotFound
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.runtime.model import ModelError
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

from .conftest import answer, collect, finish_status, of_type, types, without_status


def _check_envelopes(events: list[dict[str, Any]], run_id: str) -> None:
    assert events[0]["type"] == "run-start"
    assert events[-1]["type"] == "run-finish"
    assert [e["id"] for e in events] == list(range(events[0]["id"], events[0]["id"] + len(events)))
    for e in events:
        assert e["runId"] == run_id
        assert isinstance(e["ts"], int) and e["ts"] > 1_600_000_000_000
        parse_event(e)  # every event is a valid protocol event


async def test_simple_query_sequence(make_ai: Any) -> None:
    model = ScriptedModel([
        ScriptedResponse(reasoning="Let me look up the workflows.", tool_calls=[ScriptedToolCall("list-workflows", {})]),
        ScriptedResponse(text="You have 3 workflows."),
    ])
    ai = await make_ai(model, n8n=DemoN8n())
    run_id = await ai.send("t1", "which workflows do I have?")
    assert run_id.startswith("run_")
    events = await collect(ai, "t1")
    _check_envelopes(events, run_id)
    assert without_status(types(events)) == [
        "run-start", "thread-title-updated", "reasoning-delta", "tool-call", "tool-result", "text-delta", "run-finish"]
    root = f"orchestrator-{run_id}"
    assert {e["agentId"] for e in events} == {root}
    start = events[0]["payload"]
    assert start["userMessage"] == "which workflows do I have?"
    assert start["messageId"].startswith("msg_") and start["messageGroupId"].startswith("mg_")
    call = of_type(events, "tool-call")[0]
    result = of_type(events, "tool-result")[0]
    assert call["payload"]["toolName"] == "list-workflows"
    assert result["payload"]["toolCallId"] == call["payload"]["toolCallId"]
    assert len(result["payload"]["result"]) == 3
    # one responseId per model response
    first_response = {e["responseId"] for e in events if e["type"] in ("reasoning-delta", "tool-call", "tool-result")}
    second_response = {e["responseId"] for e in of_type(events, "text-delta")}
    assert len(first_response) == 1 and len(second_response) == 1 and first_response != second_response
    statuses = [e["payload"]["message"] for e in of_type(events, "status")]
    assert statuses == ["Running list-workflows…", ""]
    assert finish_status(events[-1]) == {"status": "completed"}
    # the snapshot of the finished run is stored
    snapshots = await ai.store.get_snapshots("t1")
    tree = snapshots[run_id]
    assert tree["agentId"] == root and tree["status"] == "completed"
    assert tree["textContent"] == "You have 3 workflows."
    assert tree["toolCalls"][0]["toolName"] == "list-workflows" and tree["toolCalls"][0]["isLoading"] is False


async def test_autonomous_loop_with_demo_model(make_ai: Any, workspace: Any) -> None:
    from instance_ai_tui.assistant.service import AssistantOptions

    ai = await make_ai("demo", workspace_root=workspace, options=AssistantOptions(generate_titles=True))
    assert ai.model_label == "demo (offline)"
    run_id = await ai.send("loop", "Every morning send the weather forecast to Slack")
    first = await collect(ai, "loop", until=("confirmation-request", "run-finish"))
    assert first[-1]["type"] == "confirmation-request"
    request = first[-1]["payload"]
    assert request["toolName"] == "activate-workflow" and request["severity"] == "warning"
    assert request["message"].startswith("Activate workflow wf-")
    status = await ai.status("loop")
    assert status.is_suspended and not status.has_active_run and status.run_id == run_id
    assert [t.role for t in status.background_tasks] == ["workflow builder"]
    assert status.background_tasks[0].status == "completed"
    await answer(ai, request["requestId"], {"approved": True})
    rest = await collect(ai, "loop", after=first[-1]["id"])
    events = first + rest
    _check_envelopes(events, run_id)
    root = f"orchestrator-{run_id}"
    names = without_status(types(events))
    # the person's first words title the thread at once; the title model refines it when it answers
    assert names[:2] == ["run-start", "thread-title-updated"]
    assert [n for n in names if n != "thread-title-updated"][:4] == ["run-start", "reasoning-delta", "tool-call",
                                                                       "tasks-update"]
    titles = [e["payload"]["title"] for e in of_type(events, "thread-title-updated")]
    assert titles[0] == "Every morning send the weather forecast to Slack" and len(titles) == 2
    # delegate: tool-call, agent-spawned, the sub-agent's events, agent-completed, tool-result
    delegate_call = next(e for e in events if e["type"] == "tool-call" and e["payload"]["toolName"] == "delegate")
    spawned = of_type(events, "agent-spawned")[0]
    completed = of_type(events, "agent-completed")[0]
    delegate_result = next(e for e in events if e["type"] == "tool-result"
                           and e["payload"]["toolCallId"] == delegate_call["payload"]["toolCallId"])
    sub = spawned["agentId"]
    assert sub.startswith("agent-workflow-builder-") and sub != root
    assert spawned["payload"]["parentId"] == root and spawned["payload"]["role"] == "workflow builder"
    assert delegate_call["id"] < spawned["id"] < completed["id"] < delegate_result["id"]
    sub_events = [e for e in events if e["agentId"] == sub]
    assert sub_events[0] is spawned and sub_events[-1] is completed
    sub_tools = [e["payload"]["toolName"] for e in sub_events if e["type"] == "tool-call"]
    assert sub_tools == ["list-nodes", "create-workflow"]
    assert all(spawned["id"] <= e["id"] <= completed["id"] for e in sub_events)
    assert "wf-" in delegate_result["payload"]["result"]
    # plan updates in the seed's flat form
    updates = of_type(events, "tasks-update")
    assert len(updates) == 3
    assert [t["status"] for t in updates[0]["payload"]["tasks"]] == ["in_progress", "pending", "pending"]
    assert [t["status"] for t in updates[-1]["payload"]["tasks"]] == ["completed", "completed", "completed"]
    # approval -> tool-result, then the final text, then run-finish
    activation = next(e for e in events if e["type"] == "tool-result"
                      and e["payload"]["toolCallId"] == request["toolCallId"])
    assert activation["payload"]["result"]["active"] is True
    assert names[-2:] == ["text-delta", "run-finish"]
    assert events[-1]["payload"]["status"] == "completed"
    title = of_type(events, "thread-title-updated")[-1]["payload"]["title"]
    assert (await ai.get_thread("loop")).title == title
    assert "weather" in title.lower()
    # history: user + assistant message with the tree, and the cursor
    history = await ai.messages("loop")
    assert [m.role for m in history.messages] == ["user", "assistant"]
    assistant = history.messages[1]
    assert assistant.content.startswith("Done! I created **Weather")
    assert assistant.agent_tree is not None and assistant.agent_tree.children[0].agent_id == sub
    assert history.next_event_id == events[-1]["id"] + 1
    assert not (await ai.status("loop")).background_tasks


async def test_second_send_is_refused_while_active_or_suspended(make_ai: Any) -> None:
    model = ScriptedModel([ScriptedResponse(text="slow answer " * 5, delay=0.05),
                           ScriptedResponse.call("write-file", {"path": "x.txt", "content": "x"}),
                           "never reached"])
    ai = await make_ai(model, workspace_root=tempfile.mkdtemp())
    await ai.send("busy", "first")
    with pytest.raises(RunActive) as err:
        await ai.send("busy", "second")
    assert err.value.status == 409
    await collect(ai, "busy")
    # a suspended run (waiting for approval) also blocks the thread
    await ai.send("busy", "write it")
    events = await collect(ai, "busy", until=("confirmation-request",))
    with pytest.raises(RunActive):
        await ai.send("busy", "third")
    other = await ai.send("other-thread", "independent")  # other threads are not blocked
    assert other.startswith("run_")
    assert events[-1]["type"] == "confirmation-request"


async def test_cancel_active_run_is_idempotent(make_ai: Any) -> None:
    model = ScriptedModel([ScriptedResponse(text="word " * 200, delay=0.02)])
    ai = await make_ai(model)
    run_id = await ai.send("c", "talk a lot")
    await collect(ai, "c", until=("text-delta",))
    assert await ai.cancel("c") is True
    events = await collect(ai, "c")
    assert events[-1]["type"] == "run-finish"
    assert events[-1]["payload"] == {"status": "cancelled", "reason": "user_cancelled"}
    assert of_type(events, "run-start")[0]["runId"] == run_id
    last_id = events[-1]["id"]
    assert await ai.cancel("c") is False  # again: no-op
    assert await ai.store.last_event_id("c") == last_id
    assert (await ai.store.get_run(run_id)).status == "cancelled"
    assert (await ai.store.get_snapshots("c"))[run_id]["cancellationReason"] == "user"
    assert not (await ai.status("c")).has_active_run
    await ai.send("c", "next message works")  # the thread is free again


async def test_cancel_after_finish_is_a_no_op(make_ai: Any) -> None:
    ai = await make_ai(ScriptedModel(["done"]))
    await ai.send("f", "hi")
    events = await collect(ai, "f")
    assert await ai.cancel("f") is False
    assert await ai.store.last_event_id("f") == events[-1]["id"]
    with pytest.raises(ThreadNotFound):
        await ai.cancel("never-created")


async def test_cancel_stops_sub_agents(make_ai: Any) -> None:
    slow_builder = ScriptedResponse(text="building " * 100, delay=0.02)

    def script(request: Any) -> ScriptedResponse:
        if "delegate" in request.tool_names():
            return ScriptedResponse.call("delegate", {"role": "workflow builder", "instructions": "build it",
                                                      "tools": ["list-workflows"]})
        return slow_builder

    ai = await make_ai(ScriptedModel(script), n8n=DemoN8n())
    run_id = await ai.send("cs", "build something")
    before = await collect(ai, "cs", until=("text-delta",))
    sub = of_type(before, "agent-spawned")[0]["agentId"]
    assert before[-1]["agentId"] == sub
    assert (await ai.status("cs")).background_tasks[0].status == "running"
    assert await ai.cancel("cs") is True
    events = await collect(ai, "cs")
    names = types(events)
    assert names[-1] == "run-finish" and events[-1]["payload"]["reason"] == "user_cancelled"
    completed = of_type(events, "agent-completed")
    assert completed and completed[0]["agentId"] == sub and completed[0]["payload"]["status"] == "cancelled"
    # the delegate call stopped by the cancel has no failure of its own: it reads "not run (cancelled)"
    assert not of_type(events, "tool-error")
    assert completed[0]["id"] < events[-1]["id"]
    tree = (await ai.store.get_snapshots("cs"))[run_id]
    assert tree["children"][0]["status"] == "cancelled"


async def test_model_error_ends_run_with_error(make_ai: Any) -> None:
    ai = await make_ai(ScriptedModel([ScriptedResponse(error=ModelError("upstream 503", status_code=503))]))
    run_id = await ai.send("e", "hello there")
    events = await collect(ai, "e")
    assert without_status(types(events)) == ["run-start", "thread-title-updated", "error", "run-finish"]
    assert events[2]["payload"] == {"content": "upstream 503", "statusCode": 503, "code": "model"}
    assert events[-1]["payload"] == {"status": "error", "reason": "upstream 503"}
    assert (await ai.store.get_run(run_id)).status == "error"
    assert (await ai.store.get_snapshots("e"))[run_id]["status"] == "error"


async def test_messages_cursor_then_stream_without_duplicates(make_ai: Any) -> None:
    ai = await make_ai(ScriptedModel(["First answer.", "Second answer."]))
    await ai.send("h", "question one")
    first = await collect(ai, "h")
    history = await ai.messages("h")
    assert history.next_event_id == first[-1]["id"] + 1
    assert [(m.role, m.content) for m in history.messages] == [("user", "question one"), ("assistant", "First answer.")]
    run2 = await ai.send("h", "question two")
    events = await collect(ai, "h", after=history.next_event_id - 1)
    assert events[0]["type"] == "run-start" and events[0]["runId"] == run2
    assert events[0]["id"] == history.next_event_id
    history2 = await ai.messages("h")
    assert [m.content for m in history2.messages] == ["question one", "First answer.", "question two", "Second answer."]
    assert history2.messages[3].agent_tree.agent_id == f"orchestrator-{run2}"


async def test_history_of_a_suspended_run_is_folded_from_events(make_ai: Any, workspace: Any) -> None:
    ai = await make_ai(ScriptedModel([ScriptedResponse(text="Writing.", tool_calls=[ScriptedToolCall(
        "write-file", {"path": "a.txt", "content": "A"})])]), workspace_root=workspace)
    await ai.send("s", "write a file")
    events = await collect(ai, "s", until=("confirmation-request",))
    history = await ai.messages("s")
    assistant = history.messages[1]
    assert assistant.is_streaming is True and assistant.content == "Writing."
    call = assistant.agent_tree.tool_calls[0]
    assert call.tool_name == "write-file" and call.is_loading and call.confirmation.severity == "warning"
    assert history.next_event_id == events[-1]["id"] + 1


async def test_thread_api(make_ai: Any) -> None:
    ai = await make_ai(ScriptedModel([]))
    created = await ai.create_thread(title="My thread")
    assert created.id.startswith("thread_") and created.title == "My thread"
    assert (await ai.create_thread(created.id)).title == "My thread"  # idempotent
    renamed = await ai.rename_thread(created.id, "Renamed")
    assert renamed.title == "Renamed"
    assert [t.id for t in await ai.list_threads("renam")] == [created.id]
    with pytest.raises(InvalidRequest):
        await ai.rename_thread(created.id, "  ")
    with pytest.raises(InvalidRequest):
        await ai.send("bad/id", "x")
    with pytest.raises(InvalidRequest):
        await ai.send(created.id, "   ")
    with pytest.raises(ThreadNotFound):
        await ai.messages("missing")
    await ai.delete_thread(created.id)
    with pytest.raises(ThreadNotFound):
        await ai.get_thread(created.id)
    with pytest.raises(ThreadNotFound):
        await ai.delete_thread(created.id)


async def test_shutdown_cancels_active_runs(make_ai: Any) -> None:
    ai = await make_ai(ScriptedModel([ScriptedResponse(text="word " * 300, delay=0.02)]))
    run_id = await ai.send("sd", "long")
    await collect(ai, "sd", until=("text-delta",))
    await ai.runs.shutdown()
    events = await ai.store.read_events("sd")
    last = events[-1].data()
    assert last["type"] == "run-finish" and last["payload"] == {"status": "cancelled", "reason": "service_shutdown"}
    assert (await ai.store.get_run(run_id)).status == "cancelled"
    await asyncio.sleep(0)


async def test_failing_sub_agent_is_a_tool_error_for_the_orchestrator(make_ai: Any) -> None:
    def script(request: Any) -> ScriptedResponse:
        if "delegate" in request.tool_names():
            if request.messages[-1]["role"] == "user":
                return ScriptedResponse.call("delegate", {"role": "debugger", "instructions": "look", "tools": []})
            return ScriptedResponse(text="The debugger failed, sorry.")
        return ScriptedResponse(error=ModelError("sub-agent model broke"))

    ai = await make_ai(ScriptedModel(script))
    run_id = await ai.send("sf", "debug it")
    events = await collect(ai, "sf")
    completed = of_type(events, "agent-completed")[0]
    assert completed["payload"]["status"] == "error" and "sub-agent model broke" in completed["payload"]["error"]
    delegate_error = of_type(events, "tool-error")[-1]
    assert delegate_error["agentId"] == f"orchestrator-{run_id}"
    assert "the debugger failed: sub-agent model broke" in delegate_error["payload"]["error"]
    assert finish_status(events[-1]) == {"status": "completed"}
    assert "".join(e["payload"]["text"] for e in of_type(events, "text-delta")) == "The debugger failed, sorry."


async def test_instance_ai_implements_the_service_protocol(make_ai: Any) -> None:
    from instance_ai_tui.assistant.service_api import AssistantService

    ai = await make_ai(ScriptedModel([]))
    assert isinstance(ai, AssistantService)
    assert ai.model_label == "scripted"


@pytest.mark.parametrize("text", ["hi", "hello there!", "Fix the failing Slack node in the nightly report "
                                                         "workflow and tell me what was wrong with it"])
async def test_every_thread_gets_a_title_from_the_first_words_at_once(make_ai: Any, text: str) -> None:
    """Issue 33 item 9: greetings, failed runs and threads of models that cannot title stayed
    "(untitled)"; now the first words title a thread as its first run starts."""
    from instance_ai_tui.assistant.run_manager import FIRST_WORDS_TITLE, first_words_title

    ai = await make_ai(ScriptedModel(lambda request: ScriptedResponse(text="ok")))
    await ai.send("t", text)
    events = await collect(ai, "t", until=("run-finish",))
    titles = [e["payload"]["title"] for e in of_type(events, "thread-title-updated")]
    assert titles and titles[0] == first_words_title(text)
    assert len(titles[0]) <= FIRST_WORDS_TITLE + 1 and titles[0].split()[0] == text.split()[0]
    stored = (await ai.get_thread("t")).title
    assert stored == titles[-1] and stored
    await ai.rename_thread("t", "Mine")
    await ai.send("t", "and another thing to do today")
    await collect(ai, "t", after=events[-1]["id"], until=("run-finish",))
    assert (await ai.get_thread("t")).title == "Mine"  # a title once given is never replaced
