"""``QuestionsCard`` — ``inputType: questions``: a wizard, one question at a time; digits pick
options (toggle for multi-select), the last number is a free-text "other", ``s`` skips, Left goes
back; a review page before submit. A card like the others of ``confirmations`` (the keyboard
model, the grace period, one answer).

Nothing is recorded or passed by itself: Enter on an empty field, Enter or → with nothing
chosen ask for an answer (``s`` skips on purpose). Each page has one list of keys
(``page_hints``): the card's hint line and the footer are both made from it
(``keymap.Hint``), so the footer never names a key the page does not have. A letter typed
where it is no key (the review page, a list of options) is not dropped: the card shows it,
and Esc carries it to the prompt."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingsMap, BindingType
from textual.content import Content
from textual.widgets import Input, Static

from ...protocol.api import ApprovalConfirm, QuestionAnswer, QuestionsConfirm
from ...protocol.safe_text import visible
from ...protocol.tree import Confirmation, ToolCallState
from .. import keymap
from ..keymap import Hint
from .confirmations import ConfirmCard, card_keys
from .hint_line import HintLine

#: the most of a stray typed text the card keeps (and shows) for the prompt
STRAY_LIMIT = 2000


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

    #: named in the footer while the wizard has the keys (``on_key`` does the work; the bindings
    #: of the page shown, ``page_hints``, name it: see ``_bind_page``)
    KEY_SCOPES = ("questions", "questions_review", "card_always")
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("questions"), *keymap.bindings("questions_review")]

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.questions = list(confirmation.questions or [])
        self.page = 0
        self.selected: dict[str, list[str]] = {q.id: [] for q in self.questions}
        self.custom: dict[str, str] = {}
        self.skipped: set[str] = set()
        #: the highlighted option of the page (1-based; ↑/↓ move it, Enter picks it); 0: none
        self.cursor = 0
        #: letters typed where they are no key (shown on the card; Esc takes them to the prompt)
        self.stray = ""
        #: why the page did not move on ("Choose an option…", "Type an answer…"); "" when it did
        self.asked = ""
        #: "Other…" was picked on this page: its field is shown and has the keys (told by this
        #: flag, not by the focus, which moves a refresh later: the page drawn in between hid the
        #: field and the letters typed next went into a hidden field)
        self.other_open = False

    def compose(self) -> ComposeResult:
        yield Static(self.title(), classes="card-title", markup=False)
        if self.intro():
            yield Static(self.intro() or "", markup=False)
        yield Static(id="question", markup=False)
        yield Input(id="other")
        yield HintLine(id="keys", classes="card-keys")

    def on_mount(self) -> None:
        super().on_mount()
        # the field's words are the card line's (it said "Esc to cancel": Esc leaves the field); short, so the
        # field beside the workflow panel shows them whole (Textual's Input cuts a placeholder without "…"),
        # the line under it says the rest
        self.query_one("#other", Input).placeholder = "Type your answer · " + card_keys(self).hint_line(
            [Hint("wizard-leave-field")])
        self._render_page()

    # ------------------------------------------------------------------ state
    @property
    def on_review(self) -> bool:
        return self.page >= len(self.questions)

    def _options(self, index: int) -> list[str]:
        return list(self.questions[index].options or [])

    def _offers_other(self, index: int) -> bool:
        """"Other…" follows the options, except on a yes/no question (it offered "3. Other…")."""
        q = self.questions[index]
        words = {o.strip().rstrip(".!").lower() for o in q.options or []}
        return not (q.type == "single" and len(q.options or []) == 2 and words == {"yes", "no"})

    def _rows(self, index: int) -> int:
        """The numbered rows of a question: its options and "Other…" when it offers one."""
        return len(self._options(index)) + (1 if self._offers_other(index) else 0)

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

    # ------------------------------------------------------------------ the keys of a page
    def page_hints(self) -> tuple[str, list[Hint]]:
        """The keys of the page shown: a lead (the digits, or what typing does) and the bound
        keys, in the words the card line and the footer both use."""
        back = [Hint("wizard-back")] if self.page else []
        if self.on_review:
            return "", [Hint("wizard-submit", all_keys=True), *back, Hint("wizard-decline")]
        q = self.questions[self.page]
        if self._needs_text(self.page) or self._typing_other():
            return "type your answer, Enter continue", [Hint("wizard-leave-field")]
        move = Hint("wizard-move", all_keys=True)
        if q.type == "multi":
            return (f"1–{self._rows(self.page)} toggle",
                    [move, Hint("wizard-enter", "Toggle"), Hint("wizard-next", "Continue"), Hint("wizard-skip"), *back])
        return f"1–{self._rows(self.page)} choose", [move, Hint("wizard-enter", "Choose"), Hint("wizard-skip"), *back]

    def _typing_other(self) -> bool:
        return self.other_open and not self.on_review

    def _bind_page(self) -> None:
        """The footer's bindings are the page's (``page_hints``), with the card's own."""
        _lead, hints = self.page_hints()
        own = [b for b in keymap.bindings("card_always")]
        self._bindings = BindingsMap([*own, *keymap.hint_bindings(hints)])
        self.refresh_bindings()

    def _keys_line(self) -> str:
        """The card's key line, on one line (``HintLine`` breaks it between its hints only)."""
        return " · ".join(self._key_hints())

    def _key_hints(self) -> list[str]:
        lead, hints = self.page_hints()
        parts = card_keys(self).hint_parts(hints, lead=lead)
        if lead.startswith("type"):  # the page's other keys work once the field is left
            after = [Hint("wizard-skip")] + ([Hint("wizard-back")] if self.page else [])
            parts[-1] += f" (then {card_keys(self).hint_line(after)})"
        return parts

    # ------------------------------------------------------------------ rendering
    def _render_page(self, *, fresh: bool = False) -> None:
        """Draw the page. ``fresh``: just moved to it (what the field held was the last page's,
        even while the field still has the focus: the focus moves after this draw)."""
        other = self.query_one("#other", Input)
        question = self.query_one("#question", Static)
        keys = self.query_one("#keys", HintLine)
        stray: list[tuple[str, str] | str] = []
        if self.stray:
            shown = visible(self.stray if len(self.stray) <= 60 else "…" + self.stray[-59:])
            stray = [(f"typed here: “{shown}” — not a key of this page; Esc takes it to the prompt\n",
                      "bold $text-warning")]
        if self.on_review:
            lines: list[tuple[str, str] | str] = [("Review your answers\n", "bold")]
            for i, q in enumerate(self.questions, 1):
                lines.append(f"{i}. {q.question}\n   → ")
                lines.append((self._answer_text(q.id) + "\n", "$text-accent"))
            question.update(Content.assemble(*lines, *stray))
            other.display = False
            keys.set_hints(self._key_hints())
            self._bind_page()
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
        if opts and self._offers_other(self.page):
            custom = self.custom.get(q.id)
            other_row = len(opts) + 1
            parts.append(("▸" if other_row == self.cursor else " ", "bold $text-accent"))
            parts.append((f"{other_row}. ", "$text-accent"))
            parts.append((f"Other… {('“' + custom + '”') if custom else ''}\n",
                          "reverse" if other_row == self.cursor else ""))
        if self.asked:
            parts.append((self.asked + "\n", "bold $text-warning"))
        question.update(Content.assemble(*parts, *stray))
        free_text = self._needs_text(self.page)
        typing = self._typing_other() and not fresh
        other.display = free_text or q.id in self.custom or typing
        if (free_text and not typing) or fresh:
            other.value = self.custom.get(q.id, "")
        keys.set_hints(self._key_hints())
        self._bind_page()

    def focus_default(self, scroll_visible: bool = True) -> None:
        if not self.on_review and self._needs_text(self.page):
            self.query_one("#other", Input).focus(scroll_visible=scroll_visible)
        else:
            self.focus(scroll_visible=scroll_visible)

    def _needs_text(self, index: int) -> bool:
        q = self.questions[index]
        return q.type == "text" or not q.options

    # ------------------------------------------------------------------ navigation
    def goto(self, page: int) -> None:
        self.page = max(0, min(page, len(self.questions)))
        self.cursor = 0
        self.other_open = False
        self.asked = ""
        self._render_page(fresh=True)
        self.focus_default()
        self.reveal()

    def _answered(self, index: int) -> bool:
        q = self.questions[index]
        return bool(self.selected.get(q.id)) or bool(self.custom.get(q.id)) or q.id in self.skipped

    def ask(self, words: str) -> None:
        """The page does not move on: say why (the card's warning line)."""
        self.asked = words
        self._render_page()

    def forward(self) -> None:
        """→ / Enter past a question: on only when it is answered or skipped."""
        if self.on_review:
            return
        if not self._answered(self.page):
            if self._needs_text(self.page):
                self.ask("Type an answer, or leave the field (Esc) and press s to skip.")
            elif self.questions[self.page].type == "multi":
                self.ask("Tick at least one (a number, or ↑/↓ then Enter), then →; or s to skip.")
            else:
                self.ask("Choose an option (a number, or ↑/↓ then Enter), or s to skip.")
            return
        self.next_page()

    def next_page(self) -> None:
        self.goto(self.page + 1)

    def choose(self, number: int) -> None:
        """Pick option ``number`` (1-based) on the current question."""
        if self.on_review:
            return
        q = self.questions[self.page]
        opts = self._options(self.page)
        if not opts or number < 1 or number > self._rows(self.page):
            return
        self.skipped.discard(q.id)
        self.asked = ""
        if number == len(opts) + 1:
            other = self.query_one("#other", Input)
            self.other_open = True
            other.display = True
            other.value = self.custom.get(q.id, "")
            other.focus()
            self._render_page()
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
        rows = self._rows(self.page)
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
        self.forward()

    # the footer's bindings name the keys; ``on_key`` runs them (these run a click on the footer)
    def action_wizard_enter(self) -> None:
        if self.on_review:
            self.submit()
        else:
            self.enter()

    def action_wizard_move(self) -> None:
        self.move(1)

    def action_wizard_next(self) -> None:
        self.forward()

    def action_wizard_back(self) -> None:
        if self.page:
            self.goto(self.page - 1)

    def action_wizard_skip(self) -> None:
        if not self.on_review:
            self.skipped.add(self.questions[self.page].id)
            self.next_page()

    def action_wizard_submit(self) -> None:
        if self.on_review:
            self.submit()

    def action_wizard_decline(self) -> None:
        if self.on_review:
            self.answer(ApprovalConfirm(approved=False), "declined")

    def action_wizard_leave_field(self) -> None:
        self.leave_field()

    def leave_field(self) -> None:
        """Esc in the text field: the keys go to the card (the page's keys work again)."""
        self.other_open = False
        if not self.on_review and not self._needs_text(self.page):
            self.query_one("#other", Input).display = bool(self.custom.get(self.questions[self.page].id))
        self.focus()
        self.call_after_refresh(self._render_page)

    def submit(self) -> None:
        self.answer(QuestionsConfirm(answers=self.answers()), "answered")

    def _is(self, binding_id: str, key: str) -> bool:
        return card_keys(self).matches(binding_id, key)

    def on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if isinstance(focused, Input):
            if self._is("wizard-leave-field", event.key):
                event.stop()
                self.leave_field()
            return
        if self.in_grace or self.answered:
            if event.key not in ("tab", "shift+tab", "escape"):
                event.stop()
                event.prevent_default()
            return
        key = event.key
        handled = True
        review = self.on_review
        if event.key == "escape" and self.stray:
            self._stray_to_prompt()
            return  # Esc goes on: back to the prompt, where the text now is
        if key.isdigit() and key != "0" and not review:
            self.choose(int(key))
        elif self._is("wizard-back", key):
            self.action_wizard_back()
        elif review and self._is("wizard-submit", key):
            self.submit()
        elif review and self._is("wizard-decline", key):
            self.action_wizard_decline()
        elif not review and self._is("wizard-next", key):
            self.forward()
        elif not review and self._is("wizard-skip", key):
            self.action_wizard_skip()
        elif not review and self._is("wizard-move", key):
            self.move(-1 if key == "up" else 1)
        elif not review and self._is("wizard-enter", key):
            self.enter()
        elif event.is_printable and event.character and len(self.stray) < STRAY_LIMIT:
            self.stray += event.character  # no key here: shown, never dropped
            self._render_page()
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    def _stray_to_prompt(self) -> None:
        """Esc with letters typed here: they go to the prompt, where the keys go back to."""
        text, self.stray = self.stray, ""
        prompt = self.screen.query("#prompt").first() if self.screen.query("#prompt") else None
        insert = getattr(prompt, "insert", None)
        if callable(insert):
            insert(text)
        self._render_page()

    def on_paste(self, event: events.Paste) -> None:
        """A paste on a page without a field is kept like typed letters."""
        if isinstance(self.screen.focused, Input) or self.answered:
            return
        event.stop()
        self.stray = (self.stray + event.text)[:STRAY_LIMIT]
        self._render_page()

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
        elif self.other_open:  # "Other…" left empty: ask for the words, the keys stay in the field
            self.ask("Type an answer, or leave the field (Esc) and choose an option.")
            return
        else:
            self.custom.pop(q.id, None)
        self.forward()  # an empty answer asks for one (it recorded "(no answer)")
