"""Which card answers a confirmation: n8n's own shapes first (``n8n_cards``), then the generic cards
of ``confirmations`` and the questions wizard (``questions_card``). It sits above them all so that
none of the card modules imports another that imports it back."""

from __future__ import annotations

from ...protocol.tree import Confirmation, ToolCallState
from .confirmations import ApprovalCard, ConfirmCard, PlanReviewCard, TextCard


def build_card(tool: ToolCallState, confirmation: Confirmation) -> ConfirmCard:
    """The card for a confirmation's ``inputType``."""
    # imported when the first card is drawn (start-up time): n8n's shapes and the questions wizard
    from .n8n_cards import build_n8n_card  # credentials, setup, MCP, domains, ...

    n8n_card = build_n8n_card(tool, confirmation)
    if n8n_card is not None:
        return n8n_card
    kind = confirmation.effective_input_type
    if kind == "questions" and confirmation.questions:
        from .elicitation_card import ElicitationCard, is_server_form
        from .questions_card import QuestionsCard

        if is_server_form(confirmation):  # an MCP server's form (mcp)
            return ElicitationCard(tool, confirmation)

        return QuestionsCard(tool, confirmation)
    if kind == "plan-review":
        return PlanReviewCard(tool, confirmation)
    if kind == "text":
        return TextCard(tool, confirmation)
    return ApprovalCard(tool, confirmation)
