"""``instance-ai run``'s answers to confirmations: what ``--approve all`` / ``--approve none`` send,
whether an answer approved, and an answer in words (``cli.run`` prints them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol.api import ConfirmBody
    from ..protocol.events import ConfirmationPayload


def auto_answer(request: ConfirmationPayload, *, approve: bool) -> ConfirmBody:
    """The body ``--approve all`` (``approve``) or ``--approve none`` sends for a confirmation."""
    from ..protocol.api import (
        ApprovalConfirm,
        DomainAccessApproveConfirm,
        DomainAccessDenyConfirm,
        QuestionAnswer,
        QuestionsConfirm,
        ResourceDecisionConfirm,
    )

    kind = request.effective_input_type
    if server_form(request):
        return ApprovalConfirm(approved=False)  # a server's form: run cannot fill it in, whatever the policy
    if kind == "questions" and request.questions:
        answers = []
        for question in request.questions:
            if approve and question.options:
                answers.append(QuestionAnswer(question_id=question.id, selected_options=[question.options[0]]))
            else:
                answers.append(QuestionAnswer(question_id=question.id, skipped=True))
        return QuestionsConfirm(answers=answers)
    if kind == "resource-decision" or request.resource_decision is not None:
        return ResourceDecisionConfirm(resource_decision="allowOnce" if approve else "denyOnce")
    if request.domain_access is not None:
        return DomainAccessApproveConfirm(domain_access_action="allow_once") if approve else DomainAccessDenyConfirm()
    return ApprovalConfirm(approved=approve)


def _approved(body: Any, request: ConfirmationPayload | None = None) -> bool | None:
    """Whether an answer approved (True), denied (False), or neither (questions, text, a server's
    form: declining it is the call's own answer, the call itself still runs)."""
    if request is not None and server_form(request):
        return None
    kind = getattr(body, "kind", "")
    if kind == "approval":
        return bool(body.approved)
    if kind in ("domainAccessDeny", "planDeny"):
        return False
    if kind == "resourceDecision":
        return bool(body.resource_decision != "denyOnce")
    return None


def server_form(request: ConfirmationPayload) -> bool:
    """Whether ``request`` is an MCP server's form (``elicitation/create``): ``run`` declines those."""
    return bool(request.mcp_elicitation)


def describe_answer(body: Any, request: ConfirmationPayload | None = None) -> str:
    if request is not None and server_form(request):
        return "declined: instance-ai run cannot fill in an MCP server's form (answer it in the app)"
    kind = getattr(body, "kind", "")
    if kind == "approval":
        return "approved" if body.approved else "denied"
    if kind == "questions":
        parts = [", ".join(a.selected_options) or a.custom_text or "skipped" for a in body.answers]
        return "answered: " + "; ".join(parts)
    return kind
