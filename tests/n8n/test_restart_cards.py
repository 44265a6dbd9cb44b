"""A card pending across an n8n restart stays answerable (issue 42.2), from what a real n8n 2.41.1
answered after ``kill -9`` and a start (``n8n_2_41_1_card_after_kill.json``: ``GET .../messages``; its
status said ``{"hasActiveRun": false, "isSuspended": false}``; the SSE replay had no ``run-finish`` and no
``run-sync``). n8n keeps the confirmation's checkpoint and takes the answer; the live tests answer it
(``tests/live_n8n/test_n8n_lifecycle_live.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from instance_ai_tui.client.base import StreamItem
from instance_ai_tui.protocol.api import ThreadMessages, ThreadStatus
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.tui.connection import INTERRUPTED_REASON, settle_interrupted

AFTER_KILL = json.loads((Path(__file__).parent / "n8n_2_41_1_card_after_kill.json").read_text())["data"]
NO_RUN = ThreadStatus.model_validate({"hasActiveRun": False, "isSuspended": False, "backgroundTasks": []})


def restored() -> Conversation:
    conversation = Conversation(AFTER_KILL["threadId"])
    conversation.load_history(ThreadMessages.model_validate(AFTER_KILL))
    return conversation


def test_the_history_after_a_restart_with_n8ns_status_shows_the_card_answerable() -> None:
    conversation = restored()
    assert not conversation.pending_confirmations()  # the history alone: a suspended run n8n still holds
    # comes back by its run-sync (a card drawn from the history would be rebuilt under the keys)
    run = AFTER_KILL["messages"][1]["runId"]
    assert settle_interrupted(conversation, NO_RUN) == [run]  # n8n's status: no run; the card waits again
    pending = conversation.pending_confirmations()
    assert [p.confirmation.message for p in pending] == ["Archive Explore archive (ID: MNeKsZqoSJT5te4O)"]
    assert conversation.is_streaming and conversation.active_run_id == run
    assert conversation.messages[-1].reducer.status == "active"  # not ended as interrupted


def test_a_status_that_still_holds_the_run_leaves_it_to_the_run_sync() -> None:
    conversation = restored()
    suspended = ThreadStatus.model_validate({"hasActiveRun": False, "isSuspended": True, "backgroundTasks": []})
    assert settle_interrupted(conversation, suspended) == [] and not conversation.pending_confirmations()


def test_a_run_cut_without_a_card_is_still_settled_as_interrupted() -> None:
    data = json.loads(json.dumps(AFTER_KILL))
    tree = data["messages"][1]["agentTree"]
    tree["toolCalls"][0].pop("confirmation")  # the same run, cut while its tool ran: nothing to answer
    conversation = Conversation(data["threadId"])
    conversation.load_history(ThreadMessages.model_validate(data))
    message = conversation.messages[-1]
    assert not conversation.pending_confirmations()
    message.is_streaming = True  # as the live stream had it before the restart
    assert settle_interrupted(conversation, NO_RUN) == [data["messages"][1]["runId"]]
    assert INTERRUPTED_REASON in json.dumps(message.to_message().to_wire())


def test_an_expired_or_answered_card_is_not_kept() -> None:
    for change in ({"expired": True}, ):
        data = json.loads(json.dumps(AFTER_KILL))
        data["messages"][1]["agentTree"]["toolCalls"][0]["confirmation"].update(change)
        conversation = Conversation(data["threadId"])
        conversation.load_history(ThreadMessages.model_validate(data))
        settle_interrupted(conversation, NO_RUN)  # an expired card: the run ends as interrupted
        assert not conversation.pending_confirmations() and not conversation.is_streaming
    data = json.loads(json.dumps(AFTER_KILL))
    data["messages"][1]["agentTree"]["toolCalls"][0]["confirmationStatus"] = "approved"
    conversation = Conversation(data["threadId"])
    conversation.load_history(ThreadMessages.model_validate(data))
    settle_interrupted(conversation, NO_RUN)
    assert not conversation.pending_confirmations()


def test_the_answer_continues_the_same_message() -> None:
    """After the answer n8n resumes the same run (no new run-start): its events fold into the card's message."""
    conversation = restored()
    settle_interrupted(conversation, NO_RUN)
    run = AFTER_KILL["messages"][1]["runId"]
    call = AFTER_KILL["messages"][1]["agentTree"]["toolCalls"][0]["toolCallId"]
    for raw in ({"type": "tool-result", "runId": run, "agentId": f"orchestrator-{run}",
                 "payload": {"toolCallId": call, "result": {"success": True}}},
                {"type": "run-finish", "runId": run, "agentId": f"orchestrator-{run}",
                 "payload": {"status": "completed"}}):
        conversation.fold([StreamItem(None, parse_event(json.dumps(raw)))])
    assert [m.role for m in conversation.messages] == ["user", "assistant"]
    assert not conversation.is_streaming and conversation.messages[-1].reducer.status == "completed"
