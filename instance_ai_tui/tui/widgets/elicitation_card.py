"""``ElicitationCard`` — an MCP server's form (``elicitation/create``), asked under the call that asked.

The questions wizard (``questions_card``), every keyboard rule of a card with it: one field at a
time, digits pick options, the last number types an answer, ``s`` skips (a field with a default
keeps it), the review page sends with Enter. ``x`` there declines: the server hears "decline" and
the call goes on, so the card reads "form declined", never "denied" (the call itself was not).
Cancelling the run (Esc on the conversation) cancels the form.
"""

from __future__ import annotations

import re

from ...protocol.api import ApprovalConfirm
from ...protocol.tree import Confirmation
from .questions_card import QuestionsCard

#: how ``assistant.mcp.elicitation`` says a field's default in its question
_DEFAULT = re.compile(r" — default: (.*) \(s keeps it\)$", re.S)
#: the card's words for its two answers (``tui.cards`` marks neither a denial)
ACCEPTED = "form sent"
DECLINED = "form declined"


def is_server_form(confirmation: Confirmation) -> bool:
    return bool(confirmation.mcp_elicitation)


class ElicitationCard(QuestionsCard):
    """A server's form: accept (the answers), decline (``x``), cancel (the run's Esc)."""

    HELP = """
## A form from an MCP server

The server asks for what it needs to go on with its call. One field at a time: **1–9** pick an
option (yes/no for a yes-or-no field), the last number types your own answer; **s** skips a field
(one with a default keeps it); **Left** goes back. The review page: **Enter**/**y** sends the form,
**x** declines it (the server hears no and the call goes on). Esc on the conversation cancels the
run, and the form with it.
"""

    def _answer_text(self, qid: str) -> str:
        """A skipped field with a default reads as the default it sends, not as "(skipped)"."""
        if qid in self.skipped:
            question = next((q.question for q in self.questions if q.id == qid), "")
            found = _DEFAULT.search(question)
            if found:
                return f"{found.group(1)} (the default)"
        return super()._answer_text(qid)

    def submit(self) -> None:
        from ...protocol.api import QuestionsConfirm

        self.answer(QuestionsConfirm(answers=self.answers()), ACCEPTED)

    def action_wizard_decline(self) -> None:
        if self.on_review:
            self.answer(ApprovalConfirm(approved=False), DECLINED)
