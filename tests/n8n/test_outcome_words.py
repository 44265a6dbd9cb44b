"""✓ only where n8n reports success (issue 42.6): tool calls as a real n8n 2.41.1 stored them
(``n8n_2_41_1_results.json``, from its history: a credential pick it could not verify, a denied web
search, ``create-tasks``' refusal) read the same way by the TUI, ``export`` and ``run``. Live, driven
with keys, in ``tests/live_n8n/test_n8n_outcomes_live.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from instance_ai_tui.protocol.api import (
    ApprovalConfirm,
    CredentialSelectionConfirm,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    PlanDenyConfirm,
    QuestionsConfirm,
    ResourceDecisionConfirm,
    answer_verdict,
)
from instance_ai_tui.protocol.display_state import display_state
from instance_ai_tui.protocol.tree import ToolCallState

CALLS = json.loads((Path(__file__).parent / "n8n_2_41_1_results.json").read_text())


def state(name: str, **change: object) -> tuple[str, str]:
    call = ToolCallState.model_validate({**CALLS[name], **change})
    shown = display_state(call, run_active=False)
    return shown.kind, shown.label


def test_a_credential_pick_n8n_could_not_verify() -> None:
    assert state("xs-cred") == ("failed", "picked, not verified: slackApi failed its connection test: ENOTFOUND")
    verified = {**CALLS["xs-cred"]["result"], "verified": True}
    assert state("xs-cred", result=verified) == ("done", "done")


def test_a_web_search_that_returned_nothing_is_never_a_success() -> None:
    assert state("xs-search") == ("not-run", "no results")
    assert state("xs-search", confirmationStatus="denied") == ("denied", "denied")  # live: the app knows
    found = {"query": "n8n notes", "results": [{"title": "n8n", "url": "https://n8n.io", "snippet": "…"}]}
    assert state("xs-search", result=found) == ("done", "done")


def test_an_error_text_of_n8ns_orchestration_tools_is_a_failure() -> None:
    kind, label = state("xs-plan")
    assert kind == "failed" and label.startswith('failed: `planningContext.source: "replan"` is only valid'), label
    assert state("xs-plan", result="Error: planned task service not available.") == \
        ("failed", "failed: planned task service not available.")
    checkpoint = {"ok": False, "result": "Error: no task with id \"t9\" exists in the current plan."}
    assert state("xs-plan", result=checkpoint) == ("failed", 'failed: no task with id "t9" exists in the current plan.')
    assert state("xs-plan", result={"result": "Plan approved.", "taskCount": 1})[0] == "done"


def test_a_denied_fetch_is_denied() -> None:
    denied = {"url": "https://x.example", "finalUrl": "https://x.example", "title": "",
              "content": "User denied access to this URL.", "truncated": False, "contentLength": 0}
    assert state("xs-search", args={"action": "fetch-url", "url": "https://x.example"}, result=denied) == \
        ("denied", "denied")


@pytest.mark.parametrize(("body", "verdict"), [
    (ApprovalConfirm(approved=True), True), (ApprovalConfirm(approved=False), False),
    (DomainAccessDenyConfirm(), False), (DomainAccessApproveConfirm(domain_access_action="allow_once"), True),
    (ResourceDecisionConfirm(resource_decision="denyOnce"), False),
    (ResourceDecisionConfirm(resource_decision="allowOnce"), True), (PlanDenyConfirm(), False),
    (QuestionsConfirm(answers=[]), None), (CredentialSelectionConfirm(credentials={"a": "b"}), None),
])
def test_what_an_answer_says(body: object, verdict: bool | None) -> None:
    """The card's answer, as the conversation records it (a web search refused on the card is denied)."""
    assert answer_verdict(body) is verdict  # type: ignore[arg-type]
