"""``QuestionsCard`` — ``inputType: questions``: a wizard, one question at a time; digits pick
options (toggle for multi-select), the last number is a free-text "other", ``s`` skips, Left goes
back; a review page before submit. A card like the others of ``confirmations`` (the keyboard
model, the grace period, one answer)."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.widgets import Input, Static

from ...protocol.api import ApprovalConfirm, QuestionAnswer, QuestionsConfirm
from ...protocol.tree import Confirmation, ToolCallState
from .. import keymap
from .confirmations import ConfirmCard


class QuestionsCard(ConfirmCard):
    """A wizard over ``confirmation.questions``; ``page == len(questions)`` is the review page."""

    HELP = """
## Questions

One question at a time. **1–9** pick an option (multi-select: toggle, then **Enter**);
the last number types your own answer; **↑**/**↓** move the highlight and **Enter** picks it.
**s** skips, **Left**/**Backspace** goes back; **Enter** with nothing chosen asks for a choice
instead of skipping. The review page: **Enter**/**y** submits, **Left** goes back, **x**
declines to answer.
"""

    #: named in the footer while the wizard has the keys (``on_key`` does the work; these name it)
    KEY_SCOPES = ("questions", "card_always")
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("questions")]

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.questions = list(confirmation.questions or [])
        self.page = 0
        self.selected: dict[str, list[str]] = {q.id: [] for q in self.questions}
        self.custom: dict[str, str] = {}
        self.skipped: set[str] = set()
        #: the highlighted option of the page (1-based; ↑/↓ move it, Enter picks it); 0: none
        self.cursor = 0

    def compose(self) -> ComposeResult:
        yield Static(self.title(), classes="card-title", markup=False)
        if self.intro():
            yield Static(self.intro() or "", markup=False)
        yield Static(id="question", markup=False)
        yield Input(placeholder="Type your answer, Enter to continue, Esc to cancel", id="other")
        yield Static(id="keys", classes="card-keys", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self._render_page()

    # ------------------------------------------------------------------ state
    @property
    def on_review(self) -> bool:
        return self.page >= len(self.questions)

    def _options(self, index: int) -> list[str]:
        return list(self.questions[index].options or [])

    def answers(self) -> list[QuestionAnswer]:
        out: list[QuestionAnswer] = []
        for q in self.questions:
            if q.id in self.skipped:
                out.append(QuestionAnswer(question_id=q.id, selected_options=[], skipped=True))
            else:
                out.append(
                    QuestionAnswer(
                        question_id=q.id,
                        selected_options=list(self.selected.get(q.id, [])),
                        custom_text=self.custom.get(q.id) or None,
                    )
                )
        return out

    def _answer_text(self, qid: str) -> str:
        if qid in self.skipped:
            return "(skipped)"
        parts = list(self.selected.get(qid, []))
        if self.custom.get(qid):
            parts.append(f"“{self.custom[qid]}”")
        return ", ".join(parts) if parts else "(no answer)"

    # ------------------------------------------------------------------ rendering
    def _render_page(self) -> None:
        other = self.query_one("#other", Input)
        question = self.query_one("#question", Static)
        keys = self.query_one("#keys", Static)
        if self.on_review:
            lines: list[tuple[str, str] | str] = [("Review your answers\n", "bold")]
            for i, q in enumerate(self.questions, 1):
                lines.append(f"{i}. {q.question}\n   → ")
                lines.append((self._answer_text(q.id) + "\n", "$text-accent"))
            question.update(Content.assemble(*lines))
            keys.update("Enter/y submit · ← back · x decline")
            other.display = False
            return
        q = self.questions[self.page]
        opts = self._options(self.page)
        parts: list[tuple[str, str] | str] = [
            (f"Question {self.page + 1}/{len(self.questions)}", "$text-muted"),
            ("  (choose several)" if q.type == "multi" else "", "$text-muted"),
            "\n",
            (q.question + "\n", "bold"),
        ]
        chosen = self.selected.get(q.id, [])
        for n, option in enumerate(opts, 1):
            mark = ("[x] " if option in chosen else "[ ] ") if q.type == "multi" else ("● " if option in chosen else "○ ")
            parts.append(("▸" if n == self.cursor else " ", "bold $text-accent"))
            parts.append((f"{n}. ", "$text-accent"))
            parts.append((mark + option + "\n", "reverse" if n == self.cursor else ""))
        if opts:
            custom = self.custom.get(q.id)
            other_row = len(opts) + 1
            parts.append(("▸" if other_row == self.cursor else " ", "bold $text-accent"))
            parts.append((f"{other_row}. ", "$text-accent"))
            parts.append((f"Other… {('“' + custom + '”') if custom else ''}\n",
                          "reverse" if other_row == self.cursor else ""))
        if self._asked_for_choice:
            parts.append(("Choose an option (a number, or ↑/↓ then Enter), or s to skip.\n", "bold $text-warning"))
        question.update(Content.assemble(*parts))
        free_text = q.type == "text" or not opts
        other.display = free_text or q.id in self.custom
        if free_text:
            other.value = self.custom.get(q.id, "")
        back = " · ← back" if self.page else ""
        if free_text:
            keys.update(f"type the answer, Enter continue · Esc leave the field · s skip{back}")
        elif q.type == "multi":
            keys.update(f"1–{len(opts) + 1} or ↑/↓ Enter toggle · → continue · s skip{back}")
        else:
            keys.update(f"1–{len(opts) + 1} or ↑/↓ Enter choose · s skip{back}")

    def focus_default(self, scroll_visible: bool = True) -> None:
        if not self.on_review and self._needs_text(self.page):
            self.query_one("#other", Input).focus(scroll_visible=scroll_visible)
        else:
            self.focus(scroll_visible=scroll_visible)

    def _needs_text(self, index: int) -> bool:
        q = self.questions[index]
        return q.type == "text" or not q.options

    # ------------------------------------------------------------------ navigation
    _asked_for_choice = False

    def goto(self, page: int) -> None:
        self.page = max(0, min(page, len(self.questions)))
        self.cursor = 0
        self._asked_for_choice = False
        self._render_page()
        self.focus_default()
        self.reveal()

    def next_page(self) -> None:
        self.goto(self.page + 1)

    def choose(self, number: int) -> None:
        """Pick option ``number`` (1-based) on the current question."""
        if self.on_review:
            return
        q = self.questions[self.page]
        opts = self._options(self.page)
        if not opts or number < 1 or number > len(opts) + 1:
            return
        self.skipped.discard(q.id)
        if number == len(opts) + 1:
            other = self.query_one("#other", Input)
            other.display = True
            other.value = self.custom.get(q.id, "")
            other.focus()
            return
        option = opts[number - 1]
        chosen = self.selected.setdefault(q.id, [])
        if q.type == "multi":
            if option in chosen:
                chosen.remove(option)
            else:
                chosen.append(option)
            self._render_page()
        else:
            chosen[:] = [option]
            self.custom.pop(q.id, None)
            self.next_page()

    def move(self, step: int) -> None:
        """↑/↓: move the highlight over the options (and "Other…")."""
        if self.on_review or not self._options(self.page):
            return
        rows = len(self._options(self.page)) + 1
        self.cursor = (self.cursor - 1 + step) % rows + 1 if self.cursor else (1 if step > 0 else rows)
        self._render_page()

    def enter(self) -> None:
        """Enter on a question: pick the highlighted option (a multi-select toggles it, Enter with
        nothing highlighted continues); with nothing chosen at all, ask for a choice instead of
        silently skipping the question (``s`` skips)."""
        q = self.questions[self.page]
        if self.cursor:
            number, self.cursor = self.cursor, self.cursor if q.type == "multi" else 0
            self.choose(number)
            return
        answered = bool(self.selected.get(q.id)) or bool(self.custom.get(q.id)) or q.id in self.skipped
        if not answered and self._options(self.page):
            self._asked_for_choice = True
            self._render_page()
            return
        self.next_page()

    def action_wizard_enter(self) -> None:
        if self.on_review:
            self.submit()
        else:
            self.enter()

    def action_wizard_move(self) -> None:
        self.move(1)

    def action_wizard_skip(self) -> None:
        if not self.on_review:
            self.skipped.add(self.questions[self.page].id)
            self.next_page()

    def submit(self) -> None:
        self.answer(QuestionsConfirm(answers=self.answers()), "answered")

    def on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if isinstance(focused, Input):
            if event.key == "escape":
                event.stop()
                if not self.on_review and not self._needs_text(self.page):
                    focused.display = bool(self.custom.get(self.questions[self.page].id))
                self.focus()
            return
        if self.in_grace or self.answered:
            if event.key not in ("tab", "shift+tab", "escape"):
                event.stop()
                event.prevent_default()
            return
        key = event.key
        handled = True
        if key.isdigit() and key != "0":
            self.choose(int(key))
        elif key in ("left", "backspace"):
            if self.page:
                self.goto(self.page - 1)
        elif key == "right":
            self.next_page()
        elif key == "s" and not self.on_review:
            self.skipped.add(self.questions[self.page].id)
            self.next_page()
        elif key in ("enter", "y") and self.on_review:
            self.submit()
        elif key in ("up", "down"):
            self.move(-1 if key == "up" else 1)
        elif key == "enter":
            self.enter()
        elif key == "x" and self.on_review:
            self.answer(ApprovalConfirm(approved=False), "declined")
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    @on(Input.Changed, "#other")
    def _typed_during_grace(self, event: Input.Changed) -> None:
        if self.in_grace and event.value:
            event.input.value = ""

    @on(Input.Submitted, "#other")
    def _other_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.in_grace or self.on_review:
            return
        q = self.questions[self.page]
        text = event.value.strip()
        if text:
            self.custom[q.id] = text
            self.skipped.discard(q.id)
            if q.type == "single":
                self.selected[q.id] = []
        else:
            self.custom.pop(q.id, None)
        self.next_page()
