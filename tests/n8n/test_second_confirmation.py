"""A second question on the same tool call (issue 42.8, seen live on n8n 2.41.1): ``workflows setup`` with
a credential recipe asks first where the credential will go (``credentialDestination``); once that is
allowed, the same suspended call asks again with the setup itself (``setupRequests``, a new requestId on
the same toolCallId). The first answer must not hide the second question."""

from __future__ import annotations

from typing import Any

from instance_ai_tui.protocol.conversation import Conversation
from tests.support.fold import apply_wire


def event(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "runId": "r1", "agentId": "orchestrator-r1", "payload": payload}


def confirmation(request_id: str, **fields: Any) -> dict[str, Any]:
    return event("confirmation-request", {"requestId": request_id, "toolCallId": "t1", "toolName": "workflows",
                                          "args": {}, **fields})


def test_a_new_question_on_an_answered_call_waits_for_its_own_answer() -> None:
    conv = Conversation()
    apply_wire(conv, 1, event("run-start", {"messageId": "m"}))
    apply_wire(conv, 2, event("tool-call", {"toolCallId": "t1", "toolName": "workflows",
                                            "args": {"action": "setup", "workflowId": "w1"}}))
    apply_wire(conv, 3, confirmation("dest", severity="warning", message="Review where this credential will be used",
                                     credentialDestination={"origin": "https://api.example.com",
                                                            "nodeNames": ["Fetch things"]}))
    assert [p.request_id for p in conv.pending_confirmations()] == ["dest"]
    assert conv.mark_confirmation_resolved("dest", approved=True)
    assert conv.pending_confirmations() == []
    apply_wire(conv, 4, confirmation("setup", severity="info", message="Configure credentials for your workflow",
                                     setupRequests=[{"node": {"name": "Fetch things", "type": "n8n-nodes-base.httpRequest",
                                                              "typeVersion": 4.2, "parameters": {}},
                                                     "credentialType": "httpTemplatedCustomAuth", "needsAction": True}],
                                     workflowId="w1"))
    assert [p.request_id for p in conv.pending_confirmations()] == ["setup"]
    assert conv.messages[-1].tree().tool_calls[0].confirmation_status is None
    # the same request again (a replay) is still answered
    apply_wire(conv, 5, confirmation("dest", severity="warning", message="Review where this credential will be used",
                                     credentialDestination={"origin": "https://api.example.com",
                                                            "nodeNames": ["Fetch things"]}))
    assert "dest" not in [p.request_id for p in conv.pending_confirmations()]
