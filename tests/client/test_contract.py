"""One contract suite, run against EmbeddedClient and RemoteClient(our server on 127.0.0.1)."""

from __future__ import annotations

import asyncio

import pytest

from instance_ai_tui.client.base import Client, ConnectionState, NotFoundError, RunActiveError, StreamItem
from instance_ai_tui.protocol.api import ApprovalConfirm, QuestionAnswer, QuestionsConfirm
from instance_ai_tui.protocol.conversation import Conversation
from tests.support.fold import apply

from .conftest import first, read_run, types


def fold(thread_id: str, items: list[StreamItem]) -> Conversation:
    conversation = Conversation(thread_id)
    for item in items:
        apply(conversation, item.id, item.event if item.event is not None else item.run_sync)
    return conversation


async def test_send_and_stream(client: Client) -> None:
    expected_state = ConnectionState.EMBEDDED if client.mode == "embedded" else ConnectionState.CONNECTED
    assert client.state == expected_state and client.model_name == "demo (offline)"
    await client.create_thread("simple", "Simple")
    run_id = await client.send("simple", "list workflows")
    items = await read_run(client, "simple", run_id)
    kinds = types(items)
    assert kinds[0] == "run-start" and kinds[-1] == "run-finish"
    assert [item.id for item in items] == list(range(1, len(items) + 1))
    call = first(items, "tool-call", toolName="list-workflows")
    assert first(items, "tool-result", toolCallId=call.payload.tool_call_id).payload.result is not None
    assert "text-delta" in kinds and items[-1].event.payload.status == "completed"
    root = fold("simple", items).message_for_run(run_id)
    assert root is not None and root.content.strip() and root.tree().tool_calls[0].tool_name == "list-workflows"
    assert client.diagnostics == []


async def test_approve_with_sub_agent_tree(client: Client) -> None:
    run_id = await client.send("loop", "every morning send the weather to Slack")

    async def on_item(item: StreamItem) -> None:
        if item.event is not None and item.event.type == "confirmation-request":
            status = await client.status("loop")
            assert status.is_suspended and not status.has_active_run and status.run_id == run_id
            with pytest.raises(RunActiveError):
                await client.send("loop", "another message")
            await client.confirm(item.event.payload.request_id, ApprovalConfirm(approved=True))

    items = await read_run(client, "loop", run_id, on_item=on_item)
    request = first(items, "confirmation-request")
    assert request.payload.tool_name == "activate-workflow"
    assert first(items, "tool-result", toolCallId=request.payload.tool_call_id)
    spawned = first(items, "agent-spawned")
    assert spawned.payload.parent_id == items[0].event.agent_id and spawned.payload.role == "workflow builder"
    assert "tasks-update" in types(items) and items[-1].event.payload.status == "completed"
    tree = fold("loop", items).message_for_run(run_id).tree()
    assert [child.role for child in tree.children] == ["workflow builder"]
    assert {call.tool_name for call in tree.children[0].tool_calls} >= {"list-nodes", "create-workflow"}
    assert (await client.status("loop")).has_active_run is False


async def test_deny(client: Client) -> None:
    run_id = await client.send("deny", "every morning send the weather to Slack")

    async def on_item(item: StreamItem) -> None:
        if item.event is not None and item.event.type == "confirmation-request":
            await client.confirm(item.event.payload.request_id, ApprovalConfirm(approved=False))

    items = await read_run(client, "deny", run_id, on_item=on_item)
    request = first(items, "confirmation-request")
    denial = first(items, "tool-result", toolCallId=request.payload.tool_call_id).payload.result
    assert denial["denied"] is True and denial["success"] is False  # n8n's shape of a denial (issue 26)
    assert items[-1].event.payload.status == "completed"


async def test_questions(client: Client) -> None:
    run_id = await client.send("ask", "build me a workflow")
    answered: list[str] = []

    async def on_item(item: StreamItem) -> None:
        event = item.event
        if event is None or event.type != "confirmation-request":
            return
        payload = event.payload
        if payload.effective_input_type == "questions":
            answers = [QuestionAnswer(question_id=q.id, selected_options=[q.options[0]]) for q in payload.questions]
            answered.extend(q.options[0] for q in payload.questions)
            await client.confirm(payload.request_id, QuestionsConfirm(answers=answers))
        else:
            await client.confirm(payload.request_id, ApprovalConfirm(approved=True))

    items = await read_run(client, "ask", run_id, on_item=on_item)
    assert answered == ["Every morning", "Slack"]
    assert first(items, "tool-call", toolName="ask-user")
    assert items[-1].event.payload.status == "completed"
    assert "Slack" in fold("ask", items).message_for_run(run_id).content


async def test_cancel_and_409(client: Client) -> None:
    run_id = await client.send("cancel", "every morning send the weather to Slack")
    with pytest.raises(RunActiveError):
        await client.send("cancel", "too soon")
    cancelled = asyncio.Event()

    async def on_item(item: StreamItem) -> None:
        if item.event is not None and item.event.type == "reasoning-delta" and not cancelled.is_set():
            cancelled.set()
            await client.cancel("cancel")

    items = await read_run(client, "cancel", run_id, on_item=on_item)
    finish = items[-1].event.payload
    assert (finish.status, finish.reason) == ("cancelled", "user_cancelled")
    assert types(items).count("run-finish") == 1
    await client.cancel("cancel")  # after the finish: a no-op
    status = await client.status("cancel")
    assert not status.has_active_run and not status.is_suspended
    history = await client.messages("cancel")
    assert history.next_event_id == items[-1].id + 1  # the second cancel published nothing


async def test_history_then_resume_from_next_event_id(client: Client) -> None:
    first_run = await client.send("hist", "list workflows")
    before = await read_run(client, "hist", first_run)
    history = await client.messages("hist")
    assert history.next_event_id == before[-1].id + 1
    roles = [m.role for m in history.messages]
    assert roles == ["user", "assistant"] and history.messages[1].agent_tree is not None
    assert history.messages[0].content == "list workflows"
    second_run = await client.send("hist", "show files")
    after = await read_run(client, "hist", second_run, after=history.next_event_id - 1)
    assert after[0].id == history.next_event_id and after[0].event.type == "run-start"
    assert after[0].event.run_id == second_run
    ids = [item.id for item in after]
    assert ids == sorted(set(ids)) and ids == list(range(ids[0], ids[0] + len(ids)))
    conversation = Conversation("hist")
    conversation.load_history(history)
    for item in after:
        apply(conversation, item.id, item.event)
    assert [m.role for m in conversation.messages] == ["user", "assistant", "user", "assistant"]


async def test_threads_and_errors(client: Client) -> None:
    created = await client.create_thread("t-crud", "First title")
    assert created.id == "t-crud"
    assert (await client.rename_thread("t-crud", "Renamed")).title == "Renamed"
    assert "t-crud" in [t.id for t in await client.list_threads()]
    await client.delete_thread("t-crud")
    assert "t-crud" not in [t.id for t in await client.list_threads()]
    for call in (
        client.messages("t-crud"),
        client.status("nope"),
        client.delete_thread("nope"),
        client.confirm("cr_missing", ApprovalConfirm(approved=True)),
    ):
        with pytest.raises(NotFoundError):
            await call
    with pytest.raises(NotFoundError):
        async for _ in client.events("nope"):
            pass
