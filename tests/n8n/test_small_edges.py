"""The smaller edges of a real n8n (issue 42.7), against the fake n8n that answers as n8n 2.41.1 does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.connection import full_stop
from instance_ai_tui.tui.screens.login import LoginScreen
from tests.support.fake_n8n import FakeN8n
from tests.support.waiting import until

from .conftest import make_client

SIZE = (120, 40)


async def test_n8ns_refusal_is_one_sentence_in_the_banner(fake: FakeN8n, tmp_path: Path) -> None:
    """n8n's "Wrong username or password. Do you have caps lock on?" gets no full stop after its
    question mark ("caps lock on?." before)."""
    client: N8nClient = make_client(fake, tmp_path / "cfg", password="not-it")
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, LoginScreen), pilot, what="the login dialog")
        await until(lambda: "caps lock" in app.connection.banner.message, pilot, what="the banner")
        banner = app.connection.banner.message
        assert "caps lock on? Messages cannot be sent" in banner and "?." not in banner, banner


def test_full_stop() -> None:
    assert [full_stop(t) for t in ("closed", "on?", "done.", "wait…", "x  ")] == ["closed.", "on?", "done.", "wait…", "x."]


def test_a_run_n8n_shut_down_reads_shutdown_not_user() -> None:
    """n8n 2.41.1 on SIGTERM, as it logged it (live: ``test_a_run_cut_by_n8ns_shutdown_reads_as_the_shutdown``):
    run-finish cancelled service_shutdown, then 0.45 s later the aborted run's own run-finish
    cancelled user_cancelled. The first says why."""
    import json

    from instance_ai_tui.client.base import StreamItem
    from instance_ai_tui.protocol.conversation import Conversation
    from instance_ai_tui.protocol.events import parse_event

    run = "run_2WkcqFOOs39c5xRzgdl6B"
    conversation = Conversation("t")
    for line in (
        {"type": "run-start", "runId": run, "agentId": f"orchestrator-{run}", "payload": {"messageId": "m"}},
        {"type": "text-delta", "runId": run, "agentId": f"orchestrator-{run}", "payload": {"text": "a long story"}},
        {"type": "run-finish", "runId": run, "agentId": f"orchestrator-{run}",
         "payload": {"status": "cancelled", "reason": "service_shutdown"}},
        {"type": "run-finish", "runId": run, "agentId": f"orchestrator-{run}",
         "payload": {"status": "cancelled", "reason": "user_cancelled"}},
    ):
        conversation.fold([StreamItem(None, parse_event(json.dumps(line)))])
    tree = conversation.messages[-1].reducer.tree()
    assert (tree.status, tree.cancellation_reason) == ("cancelled", "shutdown")
    # a person's cancel stays the person's
    again = Conversation("t")
    for line in (
        {"type": "run-start", "runId": run, "agentId": f"orchestrator-{run}", "payload": {"messageId": "m"}},
        {"type": "run-finish", "runId": run, "agentId": f"orchestrator-{run}",
         "payload": {"status": "cancelled", "reason": "user_cancelled"}},
    ):
        again.fold([StreamItem(None, parse_event(json.dumps(line)))])
    assert again.messages[-1].reducer.tree().cancellation_reason == "user"


def test_read_file_reads_as_the_file_it_read() -> None:
    """n8n 2.41.1's tool result of the local gateway's read_file (live:
    ``tests/live_n8n/test_gateway_words_live.py``): the file's lines, not "1 value"."""
    from instance_ai_tui.protocol.text_render import content_text, summarize_result
    from instance_ai_tui.tui.widgets.tool_card import result_summary

    text = "".join(f"line {i}\n" for i in range(12))
    n8n = {"type": "content", "value": [{"type": "text",
                                         "text": f'<untrusted_data source="tool:read_file">\n{text}\n</untrusted_data>'}]}
    assert content_text(n8n) == text
    assert result_summary(n8n) == summarize_result(n8n) == "12 lines"
    assert result_summary({"content": [{"type": "text", "text": "one line"}]}) == "one line"  # MCP's own shape
    assert content_text({"type": "content", "value": [{"type": "image", "data": "…"}]}) is None
    assert content_text({"content": [{"type": "text", "text": "no"}], "isError": True}) is None


def test_the_setup_card_names_the_workflow() -> None:
    """n8n's setup request names the workflow only by id; the n8n client adds its name (live:
    test_workflow_setup_applied_by_keys), and the card's title shows it."""
    from instance_ai_tui.client.n8n import _setup_requests
    from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
    from instance_ai_tui.tui.widgets.card_factory import build_card

    page = {"messages": [{"agentTree": {"toolCalls": [{"confirmation": {
        "requestId": "r1", "severity": "info", "message": "Configure credentials for your workflow",
        "workflowId": "wf7", "setupRequests": [{"node": {"name": "Slack"}, "isTrigger": False}]}}]}}]}
    found: list[dict[str, object]] = []
    _setup_requests(page, found, 0)
    assert [f["workflowId"] for f in found] == ["wf7"]
    found[0]["workflowName"] = "Daily digest"
    card = build_card(ToolCallState(tool_call_id="c1"), Confirmation.model_validate(found[0]))
    assert "Set up workflow Daily digest (wf7)" in str(card.title())


async def test_the_channel_and_resource_cards_say_each_sentence_once() -> None:
    """n8n 2.41's channel request says "Set up the slack channel" (configure-channel.tool.js) and a
    gateway decision's message is "read_file: DESCRIPTION" (create-tools-from-mcp-server.js): the cards
    do not repeat them."""
    from textual.app import App, ComposeResult

    from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
    from instance_ai_tui.tui.widgets.card_factory import build_card
    from tests.support.cards import card_text

    description = "Read file linked.txt: it has 2 hard links (it may be a file from outside the shared folder)"
    cards = [
        build_card(ToolCallState(tool_call_id="c1"), Confirmation.model_validate({
            "requestId": "r1", "severity": "info", "message": "Set up the slack channel",
            "channelConfig": {"integrationType": "slack", "agentId": "a1"}})),
        build_card(ToolCallState(tool_call_id="c2", tool_name="read_file"), Confirmation.model_validate({
            "requestId": "r2", "severity": "warning", "message": f"read_file: {description}",
            "inputType": "resource-decision", "resourceDecision": {
                "toolGroup": "filesystemRead", "resource": "linked.txt", "description": description,
                "options": ["denyOnce", "allowOnce", "allowForSession"]}})),
    ]

    class Cards(App[None]):
        def compose(self) -> ComposeResult:
            yield from cards

    app = Cards()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        channel, decision = (card_text(card) for card in cards)
    assert channel.lower().count("set up the slack channel") == 1, channel
    assert decision.count(description) == 1 and "linked.txt" in decision, decision


async def test_a_run_n8n_shut_down_still_reads_shutdown_after_a_reload(fake: FakeN8n, tmp_path: Path) -> None:
    """After a reload the tree is n8n's history, n8n's own fold of its log (``agent-run-reducer.js``:
    the *last* run-finish gives ``cancellationReason``), which says "user" for a run its shutdown cut.
    The client reads the log's tail (n8n's SSE replay) and says the shutdown; a person's cancel stays
    the person's. The fake folds as n8n does here."""
    import asyncio
    import json

    from instance_ai_tui.protocol.reducer import RunReducer
    from tests.support.fake_n8n import Emit, Pause, Say, apply_all_wire

    def n8ns_fold(thread: Any, run_ids: list[str]) -> dict[str, Any]:
        events = [json.loads(json.dumps(e)) for _seq, e in thread.log if e.get("runId") in set(run_ids)]
        tree = json.loads(json.dumps(apply_all_wire(RunReducer(), events).tree_dict()))
        finishes = [e for e in events if e["type"] == "run-finish"]
        reason = finishes[-1]["payload"].get("reason") if finishes else None
        if tree.get("status") == "cancelled":
            tree["cancellationReason"] = {"service_shutdown": "shutdown", "user_cancelled": "user"}.get(reason)
        return tree

    fake._fold = n8ns_fold  # type: ignore[method-assign]
    fake.script = lambda message: [Say("a long story", "r1"), *(
        [Emit("run-finish", {"status": "cancelled", "reason": "service_shutdown"})] if "shutdown" in message else []),
        Pause(30)]
    client = make_client(fake, tmp_path / "cfg")
    try:
        reasons = []
        for message in ("cut by the shutdown", "cancelled by me"):
            thread = (await client.create_thread()).id
            await client.send(thread, message)
            await until_log(fake, thread, "run-finish" if "shutdown" in message else "run-start")
            await asyncio.sleep(0.1)
            await client.cancel(thread)  # n8n's aborted run: run-finish cancelled user_cancelled
            await until_log(fake, thread, "user_cancelled")
            history = await client.messages(thread)
            tree = next(m for m in history.messages if m.role == "assistant").agent_tree
            assert tree is not None
            reasons.append((tree.status, tree.cancellation_reason))
        assert reasons == [("cancelled", "shutdown"), ("cancelled", "user")]
    finally:
        await client.close()


async def until_log(fake: FakeN8n, thread: str, word: str) -> None:
    import asyncio
    import json

    for _ in range(200):
        if any(word in json.dumps(e) for _seq, e in fake.events_of(thread)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no {word} in the fake's log of {thread}")
