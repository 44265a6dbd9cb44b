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


def _approved(body: Any) -> bool | None:
    """Whether an answer approved (True), denied (False), or neither (questions, text)."""
    kind = getattr(body, "kind", "")
    if kind == "approval":
        return bool(body.approved)
    if kind in ("domainAccessDeny", "planDeny"):
        return False
    if kind == "resourceDecision":
        return bool(body.resource_decision != "denyOnce")
    return None


def describe_answer(body: Any) -> str:
    kind = getattr(body, "kind", "")
    if kind == "approval":
        return "approved" if body.approved else "denied"
    if kind == "questions":
        parts = [", ".join(a.selected_options) or a.custom_text or "skipped" for a in body.answers]
        return "answered: " + "; ".join(parts)
    return kind
