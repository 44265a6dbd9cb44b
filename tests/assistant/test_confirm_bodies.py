"""Every confirm body kind maps onto resume data; answers of the wrong kind are refused."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.assistant.confirmations import (
    PendingConfirmation,
    always_allow,
    approval_decision,
    check_fits,
    resume_data,
)
from instance_ai_tui.assistant.errors import InvalidRequest
from instance_ai_tui.protocol.api import parse_confirm_body


@pytest.mark.parametrize(
    ("body", "data"),
    [
        ({"approved": True}, {"approved": True}),
        ({"kind": "approval", "approved": False, "userInput": "no"}, {"approved": False, "userInput": "no"}),
        ({"kind": "planDeny"}, {"approved": False, "denied": True}),
        ({"kind": "questions", "answers": [{"questionId": "q", "selectedOptions": ["a"]}]},
         {"approved": True, "answers": [{"questionId": "q", "selectedOptions": ["a"]}]}),
        ({"kind": "credentialSelection", "credentials": {"slackApi": "c1"}},
         {"approved": True, "credentials": {"slackApi": "c1"}}),
        ({"kind": "credentialAutoSetup", "credentialType": "slackApi"},
         {"approved": True, "autoSetup": {"credentialType": "slackApi"}}),
        ({"kind": "credentialDestination", "approved": True, "origin": "https://x.io"},
         {"approved": True, "origin": "https://x.io"}),
        ({"kind": "domainAccessApprove", "domainAccessAction": "allow_once"},
         {"approved": True, "domainAccessAction": "allow_once"}),
        ({"kind": "domainAccessDeny"}, {"approved": False}),
        ({"kind": "resourceDecision", "resourceDecision": "denyOnce"},
         {"approved": False, "resourceDecision": "denyOnce"}),
        ({"kind": "resourceDecision", "resourceDecision": "allowOnce"},
         {"approved": True, "resourceDecision": "allowOnce"}),
        ({"kind": "mcpConnect", "approved": True, "connectedSlugs": ["gh"]},
         {"approved": True, "connectedSlugs": ["gh"]}),
    ],
)
def test_resume_data(body: dict[str, Any], data: dict[str, Any]) -> None:
    assert resume_data(parse_confirm_body(body)) == data


def test_setup_workflow_bodies_keep_their_fields() -> None:
    data = resume_data(parse_confirm_body({"kind": "setupWorkflowApply", "nodeParameters": {"HTTP": {"url": "u"}}}))
    assert data["approved"] is True and data["action"] == "apply" and data["nodeParameters"] == {"HTTP": {"url": "u"}}
    trigger = resume_data(parse_confirm_body({"kind": "setupWorkflowTestTrigger", "testTriggerNode": "Webhook"}))
    assert trigger["action"] == "test-trigger" and trigger["testTriggerNode"] == "Webhook"


def test_always_allow_and_decisions() -> None:
    assert always_allow(parse_confirm_body({"approved": True, "scope": "session"}))
    assert not always_allow(parse_confirm_body({"approved": False, "scope": "session"}))
    assert not always_allow(parse_confirm_body({"approved": True, "scope": "once"}))
    assert always_allow(parse_confirm_body({"kind": "resourceDecision", "resourceDecision": "allowForSession"}))
    decision = approval_decision({"approved": False, "userInput": "too risky"})
    assert decision.approved is False and decision.reason == "too risky"
    assert approval_decision({"approved": True, "userInput": "ignored"}).reason is None


def _pending(input_type: str) -> PendingConfirmation:
    return PendingConfirmation(request_id="cr_1", thread_id="t", run_id="r", agent_id="a", tool_call_id="c",
                               tool_name="x", input_type=input_type, resume_tool_call_id="c", resume_kind="suspend")


@pytest.mark.parametrize(
    ("input_type", "kind", "fits"),
    [
        ("approval", "approval", True),
        ("approval", "resourceDecision", True),
        ("approval", "questions", False),
        ("approval", "planDeny", False),
        ("questions", "questions", True),
        ("questions", "approval", True),
        ("questions", "domainAccessDeny", False),
        ("plan-review", "planDeny", True),
        ("plan-review", "approval", True),
        ("plan-review", "questions", False),
        ("text", "approval", True),
        ("text", "questions", False),
    ],
)
def test_check_fits(input_type: str, kind: str, fits: bool) -> None:
    bodies = {
        "approval": {"kind": "approval", "approved": True},
        "resourceDecision": {"kind": "resourceDecision", "resourceDecision": "allowOnce"},
        "questions": {"kind": "questions", "answers": []},
        "planDeny": {"kind": "planDeny"},
        "domainAccessDeny": {"kind": "domainAccessDeny"},
    }
    body = parse_confirm_body(bodies[kind])
    if fits:
        check_fits(body, _pending(input_type))
    else:
        with pytest.raises(InvalidRequest):
            check_fits(body, _pending(input_type))
