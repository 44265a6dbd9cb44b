"""``HeadlessRun`` in process: terminal prompts, automatic answers, text output."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from instance_ai_tui.cli.run import HeadlessRun, auto_answer, describe_answer
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.protocol.api import (
    ApprovalConfirm,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    QuestionsConfirm,
    ResourceDecisionConfirm,
)
from instance_ai_tui.protocol.events import ConfirmationPayload

from .conftest import demo_settings


async def test_prompts_on_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["2", "", "y"])  # trigger: option 2 (Webhook), destination: skipped, then approve
    monkeypatch.setattr("builtins.input", lambda: next(answers))
    out, err = io.StringIO(), io.StringIO()
    async with EmbeddedClient(demo_settings(tmp_path)) as client:
        run = HeadlessRun(client, "tty", "build me a workflow", json_mode=False, policy="ask", out=out, err=err)
        assert await run.run() == 0
        history = await client.messages("tty")
    prompts = err.getvalue()
    assert "1. Every morning" in prompts and "2. Webhook" in prompts
    assert "answered: Webhook; skipped" in prompts
    assert "Webhook" in out.getvalue() and out.getvalue().endswith("\n")
    assert history.messages[-1].content.strip() == out.getvalue().strip()


def test_automatic_answers() -> None:
    def request(**extra: object) -> ConfirmationPayload:
        return ConfirmationPayload.model_validate({"requestId": "cr", "message": "ok?", **extra})

    assert auto_answer(request(), approve=True) == ApprovalConfirm(approved=True)
    assert auto_answer(request(inputType="plan-review"), approve=False) == ApprovalConfirm(approved=False)
    questions = request(inputType="questions", questions=[
        {"id": "a", "question": "A?", "options": ["x", "y"]}, {"id": "b", "question": "B?", "type": "text"}])
    approved = auto_answer(questions, approve=True)
    assert isinstance(approved, QuestionsConfirm)
    assert [(a.question_id, a.selected_options, a.skipped) for a in approved.answers] == [("a", ["x"], None), ("b", [], True)]
    assert describe_answer(approved) == "answered: x; skipped"
    denied = auto_answer(questions, approve=False)
    assert all(a.skipped for a in denied.answers)  # type: ignore[union-attr]
    decision = request(inputType="resource-decision", resourceDecision={"resource": "/etc"})
    assert auto_answer(decision, approve=False) == ResourceDecisionConfirm(resource_decision="denyOnce")
    domain = request(domainAccess={"url": "https://x.io", "host": "x.io"})
    assert auto_answer(domain, approve=True) == DomainAccessApproveConfirm(domain_access_action="allow_once")
    assert auto_answer(domain, approve=False) == DomainAccessDenyConfirm()


async def test_without_a_terminal_denials_say_they_were_automatic_and_the_call_shows_denied(tmp_path: Path) -> None:
    """issue 12: ``run`` with no terminal and no --approve does not claim the user denied; the
    call's line says 'denied' (protocol.display_state), as the app and export do."""
    out, err = io.StringIO(), io.StringIO()
    async with EmbeddedClient(demo_settings(tmp_path)) as client:
        run = HeadlessRun(client, "pipe", "every morning send the weather forecast to Slack", json_mode=False,
                          policy="none", policy_chosen=False, out=out, err=err)
        await run.run()
    notes = err.getvalue()
    assert "denied automatically: no terminal to ask on (pass --approve all or --approve none to choose)" in notes
    assert "✗ activate-workflow: denied" in notes
    assert "denied by user" not in notes.lower()
