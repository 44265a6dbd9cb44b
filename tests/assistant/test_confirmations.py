"""Confirmations: approvals, always-allow, questions, text answers, plan review, sub-agent approvals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.demo_instance import DemoN8n
from instance_ai_tui.assistant.errors import ConfirmationExpired, ConfirmationNotFound, InvalidRequest
from instance_ai_tui.assistant.service import AssistantOptions
from instance_ai_tui.protocol.api import parse_confirm_body
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from tests.support.waiting import until_async

from .conftest import answer, collect, finish_status, of_type, types, without_status

WRITE = ScriptedResponse(tool_calls=[ScriptedToolCall("write-file", {"path": "notes/a.md", "content": "hello"})])


def last_tool_message(request: ModelRequest) -> dict[str, Any]:
    return next(m for m in reversed(request.messages) if m.get("role") == "tool")


async def test_approve_runs_the_tool(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE, "Written."]), workspace_root=workspace)
    run_id = await ai.send("a", "write a note")
    first = await collect(ai, "a", until=("confirmation-request",))
    request = first[-1]
    assert request["agentId"] == f"orchestrator-{run_id}"
    payload = request["payload"]
    # the request refers to its tool call's arguments instead of copying them (issue 31)
    call = next(e for e in first if e["type"] == "tool-call" and e["payload"]["toolCallId"] == payload["toolCallId"])
    assert payload["toolName"] == "write-file" and payload["args"] == {}
    assert call["payload"]["args"] == {"path": "notes/a.md", "content": "hello"}
    assert payload["severity"] == "warning" and payload["inputType"] == "approval"
    assert payload["message"] == "Write 5 characters to `notes/a.md`?"
    assert payload["requestId"].startswith("cr_")
    assert not (workspace / "notes/a.md").exists()
    await answer(ai, payload["requestId"], {"approved": True})
    rest = await collect(ai, "a", after=request["id"])
    # the answer is marked on the call first (a repeated tool-call: the card's time leaves out the wait)
    assert without_status(types(rest)) == ["tool-call", "tool-result", "text-delta", "run-finish"]
    assert rest[0]["payload"] == {"toolCallId": payload["toolCallId"], "toolName": "write-file", "args": {},
                                  "answered": True}
    assert rest[1]["payload"]["toolCallId"] == payload["toolCallId"]
    assert (workspace / "notes/a.md").read_text() == "hello"
    assert "run-start" not in types(rest)  # the same run goes on
    with pytest.raises(ConfirmationNotFound):  # answered already
        await answer(ai, payload["requestId"], {"approved": True})


async def test_deny_is_n8ns_denied_result_and_the_model_hears_it(make_ai: Any, workspace: Path) -> None:
    model = ScriptedModel([WRITE, "Okay, I did not write it."])
    ai = await make_ai(model, workspace_root=workspace)
    await ai.send("d", "write a note")
    request = (await collect(ai, "d", until=("confirmation-request",)))[-1]
    await answer(ai, request["payload"]["requestId"], {"kind": "approval", "approved": False, "userInput": "not now"})
    rest = await collect(ai, "d", after=request["id"])
    # a denial is n8n's result {success: false, denied: true} (issue 26: one word for it in every view)
    assert not of_type(rest, "tool-error")
    denial = of_type(rest, "tool-result")[0]
    assert denial["payload"]["toolCallId"] == request["payload"]["toolCallId"]
    assert denial["payload"]["result"] == {"success": False, "denied": True, "reason": "User denied the action: not now"}
    assert "denied" in last_tool_message(model.requests[-1])["content"]
    assert rest[-1]["payload"]["status"] == "completed"
    assert not (workspace / "notes/a.md").exists()


async def test_always_allow_is_remembered_per_thread(make_ai: Any, workspace: Path, db_path: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE, "one", WRITE, "two", WRITE, "three"]), workspace_root=workspace)
    await ai.send("aa", "write")
    request = (await collect(ai, "aa", until=("confirmation-request",)))[-1]
    await answer(ai, request["payload"]["requestId"], {"kind": "approval", "approved": True, "scope": "session"})
    first = await collect(ai, "aa", after=request["id"])
    second_run = await ai.send("aa", "write again")
    second = await collect(ai, "aa", after=first[-1]["id"])
    assert "confirmation-request" not in types(second)  # allowed without asking
    assert of_type(second, "tool-result") and second[0]["runId"] == second_run
    # another thread still asks
    await ai.send("other", "write")
    assert (await collect(ai, "other", until=("confirmation-request",)))[-1]["type"] == "confirmation-request"
    assert await ai.store.get_setting("thread:aa", "always_allow") == ["write-file"]


async def test_questions_round_trip(make_ai: Any) -> None:
    questions = {"introMessage": "Two things:", "questions": [
        {"id": "q1", "question": "Which channel?", "type": "single", "options": ["#ops", "#dev"]},
        {"id": "q2", "question": "Anything else?", "type": "text"},
    ]}
    model = ScriptedModel([ScriptedResponse.call("ask-user", questions), "Thanks!"])
    ai = await make_ai(model)
    await ai.send("q", "post to slack")
    request = (await collect(ai, "q", until=("confirmation-request",)))[-1]["payload"]
    assert request["inputType"] == "questions" and request["severity"] == "info"
    assert request["introMessage"] == "Two things:"
    assert [q["id"] for q in request["questions"]] == ["q1", "q2"]
    status = await ai.status("q")
    assert status.is_suspended
    with pytest.raises(InvalidRequest, match="does not fit"):
        await answer(ai, request["requestId"], {"kind": "planDeny"})
    await answer(ai, request["requestId"], {"kind": "questions", "answers": [
        {"questionId": "q1", "selectedOptions": ["#ops"]},
        {"questionId": "q2", "selectedOptions": [], "customText": "be brief"},
    ]})
    events = await collect(ai, "q")
    result = of_type(events, "tool-result")[-1]["payload"]["result"]
    assert result == {"answers": [
        {"questionId": "q1", "question": "Which channel?", "answer": "#ops"},
        {"questionId": "q2", "question": "Anything else?", "answer": "be brief"},
    ]}
    assert "#ops" in last_tool_message(model.requests[-1])["content"]


async def test_single_text_question_takes_user_input(make_ai: Any) -> None:
    model = ScriptedModel([ScriptedResponse.call("ask-user", {"questions": [
        {"id": "name", "question": "What should the workflow be called?", "type": "text"}]}), "Got it."])
    ai = await make_ai(model)
    await ai.send("txt", "make a workflow")
    request = (await collect(ai, "txt", until=("confirmation-request",)))[-1]["payload"]
    assert request["inputType"] == "text" and request["message"] == "What should the workflow be called?"
    await answer(ai, request["requestId"], {"kind": "approval", "approved": True, "userInput": "Morning digest"})
    events = await collect(ai, "txt")
    assert of_type(events, "tool-result")[-1]["payload"]["result"]["answers"][0]["answer"] == "Morning digest"


PLAN = {"action": "create", "goal": "Weather to Slack", "review": True,
        "tasks": [{"id": "t1", "description": "Build it"}, {"id": "t2", "description": "Test it"}]}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"kind": "approval", "approved": True}, {"approved": True}),
        ({"kind": "approval", "approved": False, "userInput": "add a test step"},
         {"approved": False, "feedback": "add a test step"}),
        ({"kind": "planDeny"}, {"approved": False, "rejected": True}),
    ],
    ids=["approve", "request-changes", "reject"],
)
async def test_plan_review(make_ai: Any, body: dict[str, Any], expected: dict[str, Any]) -> None:
    model = ScriptedModel([ScriptedResponse.call("plan", PLAN), "Understood."])
    ai = await make_ai(model)
    await ai.send("p", "weather to slack")
    events = await collect(ai, "p", until=("confirmation-request",))
    update = of_type(events, "tasks-update")[0]["payload"]["tasks"]
    assert update == [{"id": "t1", "description": "Build it", "status": "pending"},
                      {"id": "t2", "description": "Test it", "status": "pending"}]
    request = events[-1]["payload"]
    assert request["inputType"] == "plan-review" and request["tasks"] == update
    assert request["toolName"] == "plan"
    with pytest.raises(InvalidRequest):
        await answer(ai, request["requestId"], {"kind": "questions", "answers": []})
    await answer(ai, request["requestId"], body)
    rest = await collect(ai, "p", after=events[-1]["id"])
    result = of_type(rest, "tool-result")[0]["payload"]["result"]
    assert {k: result[k] for k in expected} == expected
    seen_by_model = json.loads(last_tool_message(model.requests[-1])["content"])
    assert seen_by_model["approved"] is expected["approved"]
    assert rest[-1]["payload"]["status"] == "completed"


async def test_unknown_and_expired_confirmations(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE, "never"]), workspace_root=workspace,
                       options=AssistantOptions(generate_titles=False, confirmation_ttl=0.2))
    with pytest.raises(ConfirmationNotFound):
        await ai.confirm("cr_nope", parse_confirm_body({"approved": True}))
    await ai.send("x", "write")
    request = (await collect(ai, "x", until=("confirmation-request",)))[-1]
    history_before = await ai.messages("x")
    assert history_before.messages[1].agent_tree.tool_calls[0].confirmation.expired is None

    async def expired() -> bool:
        history = await ai.messages("x")
        return history.messages[1].agent_tree.tool_calls[0].confirmation.expired is True

    await until_async(expired, what="the confirmation expired")
    with pytest.raises(ConfirmationExpired) as err:
        await answer(ai, request["payload"]["requestId"], {"approved": True})
    assert err.value.status == 400
    finish = (await collect(ai, "x", after=request["id"]))[-1]
    assert finish_status(finish) == {"status": "cancelled", "reason": "timeout"}
    assert not (workspace / "notes/a.md").exists()


async def test_cancel_while_suspended(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE]), workspace_root=workspace)
    run_id = await ai.send("cw", "write")
    request = (await collect(ai, "cw", until=("confirmation-request",)))[-1]
    assert await ai.cancel("cw") is True
    rest = await collect(ai, "cw", after=request["id"])
    assert types(rest) == ["tool-error", "run-finish"]
    assert finish_status(rest[-1]) == {"status": "cancelled", "reason": "user_cancelled"}
    assert await ai.store.get_checkpoint(run_id) is None
    with pytest.raises(ConfirmationNotFound):
        await answer(ai, request["payload"]["requestId"], {"approved": True})
    assert await ai.cancel("cw") is False


def _builder_script(request: ModelRequest) -> ScriptedResponse:
    """Orchestrator delegates to a builder that writes a file (needs approval), then both report."""
    tool_names = request.tool_names()
    last = request.messages[-1]
    if "delegate" in tool_names:
        if last["role"] == "user":
            return ScriptedResponse.call("delegate", {"role": "workflow builder", "instructions": "Write the spec file.",
                                                      "tools": ["write-file", "list-workflows"]})
        return ScriptedResponse(text=f"Builder said: {last['content']}")
    if last["role"] == "user":
        return ScriptedResponse(tool_calls=[ScriptedToolCall("write-file", {"path": "spec.md", "content": "# Spec"})])
    return ScriptedResponse(text="Wrote spec.md" if "denied" not in last["content"] else "I was not allowed to write.")


@pytest.mark.parametrize("approved", [True, False])
async def test_sub_agent_approval_travels_up(make_ai: Any, workspace: Path, approved: bool) -> None:
    ai = await make_ai(ScriptedModel(_builder_script), workspace_root=workspace, n8n=DemoN8n())
    run_id = await ai.send("sub", "write the spec with a builder")
    first = await collect(ai, "sub", until=("confirmation-request",))
    spawned = of_type(first, "agent-spawned")[0]
    sub = spawned["agentId"]
    request = first[-1]
    assert request["agentId"] == sub  # the card belongs to the sub-agent's tool call
    sub_call = next(e for e in first if e["type"] == "tool-call" and e["agentId"] == sub)
    assert request["payload"]["toolCallId"] == sub_call["payload"]["toolCallId"]
    assert request["payload"]["toolName"] == "write-file" and request["payload"]["severity"] == "warning"
    status = await ai.status("sub")
    assert status.is_suspended and status.run_id == run_id
    history = await ai.messages("sub")
    child = history.messages[1].agent_tree.children[0]
    assert child.tool_calls[0].confirmation is not None and child.tool_calls[0].is_loading
    await answer(ai, request["payload"]["requestId"], {"approved": approved})
    rest = await collect(ai, "sub", after=request["id"])
    same_call = [e for e in rest if e["payload"].get("toolCallId") == sub_call["payload"]["toolCallId"]]
    assert same_call[0]["type"] == "tool-call" and same_call[0]["payload"].get("answered") is True
    assert same_call[0]["agentId"] == sub  # the answer is marked on the sub-agent's call
    sub_outcome = same_call[1]
    assert sub_outcome["agentId"] == sub
    assert sub_outcome["type"] == "tool-result"  # a denial is n8n's result {denied: true} (issue 26)
    assert (sub_outcome["payload"]["result"].get("denied") is True) is not approved
    completed = of_type(rest, "agent-completed")[0]
    assert completed["agentId"] == sub and completed["payload"]["status"] == "completed"
    expected = "Wrote spec.md" if approved else "I was not allowed to write."
    assert completed["payload"]["result"] == expected
    assert (workspace / "spec.md").exists() is approved
    assert rest[-1]["type"] == "run-finish" and rest[-1]["payload"]["status"] == "completed"
    tree = (await ai.store.get_snapshots("sub"))[run_id]
    assert tree["textContent"] == f"Builder said: {expected}"
    assert tree["children"][0]["status"] == "completed"


async def test_parallel_sub_agents_are_bounded(make_ai: Any) -> None:
    running = 0
    peak = 0

    async def script(request: ModelRequest) -> ScriptedResponse:
        nonlocal running, peak
        if "delegate" in request.tool_names():
            if request.messages[-1]["role"] == "user":
                return ScriptedResponse(tool_calls=[
                    ScriptedToolCall("delegate", {"role": f"worker {i}", "instructions": f"task {i}", "tools": []})
                    for i in range(3)])
            return ScriptedResponse(text="all done")
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)  # the scenario: a sub-agent's model takes a moment
        running -= 1
        return ScriptedResponse(text=f"finished {request.messages[-1]['content']}")

    ai = await make_ai(ScriptedModel(script), options=AssistantOptions(generate_titles=False, max_sub_agents=2))
    await ai.send("par", "do three things")
    events = await collect(ai, "par")
    spawned = of_type(events, "agent-spawned")
    completed = of_type(events, "agent-completed")
    assert len(spawned) == 3 and len(completed) == 3
    assert {e["payload"]["role"] for e in spawned} == {"worker 0", "worker 1", "worker 2"}
    assert peak == 2  # parallel, but never more than the limit
    assert events[-1]["payload"]["status"] == "completed"


async def test_two_approvals_in_one_response(make_ai: Any, workspace: Path) -> None:
    model = ScriptedModel([
        ScriptedResponse(tool_calls=[ScriptedToolCall("write-file", {"path": "one.md", "content": "1"}),
                                     ScriptedToolCall("write-file", {"path": "two.md", "content": "2"})]),
        "Both handled.",
    ])
    ai = await make_ai(model, workspace_root=workspace)
    await ai.send("two", "write two files")
    first = await collect(ai, "two", until=("confirmation-request",))
    second_request = (await collect(ai, "two", after=first[-1]["id"], until=("confirmation-request",)))[-1]
    requests = [first[-1]["payload"], second_request["payload"]]
    args = {e["payload"]["toolCallId"]: e["payload"]["args"] for e in first if e["type"] == "tool-call"}
    requests = [{**r, "args": args[r["toolCallId"]]} for r in requests]  # the requests refer to their calls
    assert {r["args"]["path"] for r in requests} == {"one.md", "two.md"}
    await answer(ai, requests[0]["requestId"], {"approved": True})
    async def suspended_again() -> bool:  # the run settles the first call and waits for the second again
        return (await ai.status("two")).is_suspended

    await until_async(suspended_again, what="the run waits for the second call")
    assert "run-finish" not in types([e.data() for e in await ai.store.read_events("two")])
    await answer(ai, requests[1]["requestId"], {"approved": False})
    events = await collect(ai, "two")
    assert events[-1]["payload"]["status"] == "completed"
    assert (workspace / f"{requests[0]['args']['path']}").exists()
    assert not (workspace / f"{requests[1]['args']['path']}").exists()


async def test_sweeper_ends_runs_whose_confirmations_expired(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai(ScriptedModel([WRITE]), workspace_root=workspace,
                       options=AssistantOptions(generate_titles=False, confirmation_ttl=0.1, sweep_interval=0.05))
    run_id = await ai.send("sw", "write")
    request = (await collect(ai, "sw", until=("confirmation-request",)))[-1]
    finish = (await collect(ai, "sw", after=request["id"], timeout=5))[-1]
    assert finish_status(finish) == {"status": "cancelled", "reason": "timeout"}
    assert (await ai.store.get_run(run_id)).status == "cancelled"
    assert not (await ai.status("sw")).is_suspended
