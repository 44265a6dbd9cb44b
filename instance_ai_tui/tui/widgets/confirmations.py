"""Confirmation cards, shown inline on the tool call they gate.

* ``ApprovalCard`` — approve (``y``/Enter), deny (``n``), always allow in this thread (``a``,
  then Enter: two different keys); also used for domain-access, resource-decision and
  ``continue`` requests.
* ``TextCard`` — ``inputType: text``: a text field, Enter sends; a Decline button.
* ``QuestionsCard`` (``questions_card``) — ``inputType: questions``: a wizard, one question at a time; digits
  pick options (toggle for multi-select), the last number is a free-text "other", ``s``
  skips, Left goes back; a review page before submit.
* ``PlanReviewCard`` — ``inputType: plan-review``: the plan; approve, request changes with
  feedback, or reject.

The keyboard model (``docs/keyboard.md``, ``tui.cards``): a card never takes the keyboard by
itself. It answers keys only once the person went to it (Ctrl+G, Tab, a click), and says so on
its last line ("▶ keys: this card · Esc back to the prompt"; before that: how to reach it).
Every card also ignores keys for ``GRACE_SECONDS`` after it is drawn. A grant that lasts
("always allow", a domain "from now on") is never one key: ``ask_always`` first says what it
grants and for how long, and only a second, different key (Enter) grants it; any other key goes
back. A card answers by posting ``ConfirmationAnswered``; the app sends it through
``Client.confirm``. Which card a confirmation gets is ``card_factory.build_card`` (it knows the
n8n cards and ``questions_card``, which build on this module; this module imports neither).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static

from ...protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    PlanDenyConfirm,
    ResourceDecisionConfirm,
)
from ...protocol.tree import Confirmation, ToolCallState
from .. import keymap
from ..themes.glyphs import SEVERITY
from .tasks_panel import render_tasks

GRACE_SECONDS = 0.5


_DEFAULT_KEYS: keymap.KeyMap | None = None


def card_keys(node: Any) -> keymap.KeyMap:
    """The user's key map (the app's), or the defaults for a card built outside an app."""
    global _DEFAULT_KEYS
    try:
        km = getattr(node.app, "keys", None)
    except Exception:  # noqa: BLE001 - no app yet (a card built outside an app)
        km = None
    if isinstance(km, keymap.KeyMap):
        return km
    if _DEFAULT_KEYS is None:
        _DEFAULT_KEYS = keymap.KeyMap()
    return _DEFAULT_KEYS


def key_label(node: Any, binding_id: str) -> str:
    """The first key of ``binding_id`` as the user's key map has it (``y``, ``Ctrl+Y``): card
    buttons and hints read their keys from here, never from the defaults."""
    return keymap.display_keys(card_keys(node).keys(binding_id)[0])


#: the second step of "always allow": the card's line and the footer say the same (``keymap.Hint``)
ALWAYS_HINTS = (keymap.Hint("confirm-always"), keymap.Hint("cancel-always"))


#: the plan review's "deny" is a rejection of the plan: the same word on its button, in the
#: footer (the binding's description) and in help
REJECT_PLAN = "Reject plan"
_PLAN_WORDS = {"deny": REJECT_PLAN}



@dataclass
class ConfirmationAnswered(Message):
    """A card was answered; the app sends ``body`` to ``Client.confirm(request_id, …)``."""

    card: ConfirmCard
    request_id: str
    body: ConfirmBody
    summary: str


def short_json(value: Any, limit: int = 200) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ConfirmCard(Vertical, can_focus=True):
    """Base of every card: severity class, grace period, one-shot answer, the two-step grant,
    and the line that says whether the card has the keys."""

    KEY_SCOPE = "card"
    KEY_SCOPES: tuple[str, ...] = ("card_always",)  # the second step of "always allow" (Enter grants) is the card's own
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("card_always")]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every card keeps the bindings of its bases: Textual merges a subclass's ``BINDINGS``
        key by key, so a card's ``enter`` (approve) hid the base's ``enter`` (grant always
        allow) and the footer of the second step named the tool card's "⏎ Expand" instead."""
        super().__init_subclass__(**kwargs)
        seen: set[tuple[str | None, str, str]] = set()
        merged: list[Binding] = []
        for base in cls.__mro__:  # the subclass's own first: of two enabled bindings of a key, its wins
            for _key, binding in BindingsMap(base.__dict__.get("BINDINGS", [])):
                name = (binding.id, binding.key, binding.action)
                if name not in seen:
                    seen.add(name)
                    merged.append(binding)
        cls._merged_bindings = BindingsMap(merged)

    DEFAULT_CSS = """
    ConfirmCard {
        height: auto;
        margin: 0 0 0 2;
        padding: 0 1;
        border-left: thick $warning;
        background: $warning 10%;
        &.-destructive { border-left: thick $error; background: $error 10%; }
        &.-info { border-left: thick $primary; background: $primary 8%; }
        &:focus-within { background-tint: $foreground 6%; }
        &.-answered { opacity: 70%; }
        .card-title { text-style: bold; }
        .card-keys { color: $text-muted; }
        .card-buttons { height: auto; margin-top: 1; }
        .card-buttons Button { margin-right: 1; }
        /* too narrow for the buttons side by side (a card beside both side panels): one a row */
        .card-buttons.-stacked { layout: vertical; }
        /* ... their labels in one column, a list of choices (centred, each in its own width, they
           read as a staircase) */
        .card-buttons.-stacked Button { text-align: left; content-align: left middle; }
        .card-always { height: auto; margin-top: 1; padding: 0 1; border-left: double $error; }
        .card-focus { color: $text-muted; }
        &:focus-within .card-focus { color: $text; text-style: bold; }
        Input { margin: 1 0 0 0; }
    }
    """

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(classes=f"-{confirmation.severity}")
        self.tool = tool
        self.confirmation = confirmation
        self.request_id = confirmation.request_id
        self.shown_at = time.monotonic()
        self._grace_restarted = False
        self.answered = False
        #: step one of a lasting grant was taken: (body, summary) wait for the second key
        self.armed: tuple[ConfirmBody, str] | None = None
        self.outcome = Static("", classes="card-outcome", markup=False)
        self.outcome.display = False
        self.always_line = Static("", classes="card-always", markup=False)
        self.always_line.display = False
        self.focus_line = Static("", classes="card-focus", markup=False)

    def on_mount(self) -> None:
        self.shown_at = time.monotonic()
        self.mount(self.always_line, self.outcome, self.focus_line)
        self._show_focus()

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._fit_buttons)

    def _fit_buttons(self) -> None:
        """A row of answer buttons wider than the card stacks them, one a row, instead of cutting
        the last one ("a Always allo" at 120 columns with both side panels)."""
        for row in self.query(".card-buttons"):
            buttons = list(row.query(Button))
            if not buttons or not row.size.width:
                continue
            needed = sum(button.outer_size.width + button.styles.margin.right for button in buttons)
            row.set_class(needed > row.size.width, "-stacked")

    def reveal(self) -> None:
        """Scroll the whole card into view once it is laid out (unless the conversation
        follows the newest output, which already shows a new card at the bottom)."""
        view = self._conversation()
        if view is not None and getattr(view, "following", False):
            return
        self.call_after_refresh(self._scroll_into_view)

    def _scroll_into_view(self) -> None:
        """The card, and then its last line: a card taller than the screen (a diff on 80x24)
        shows its end — the choices and the line that says who has the keys."""
        if not self.is_attached:
            return
        self.scroll_visible(animate=False)
        if self.focus_line.is_attached and self.focus_line.display:
            self.focus_line.scroll_visible(animate=False)

    def _conversation(self) -> Any:
        node = self.parent
        while node is not None and getattr(type(node), "KEY_SCOPE", None) != "conversation":
            node = node.parent
        return node

    # ------------------------------------------------------------------ who has the keys
    @property
    def has_keys(self) -> bool:
        """Keys typed now come to this card (it, or a field or button of it, has focus)."""
        return self.is_attached and self.has_focus_within

    def _show_focus(self) -> None:
        """The last line says whether the card has the keys, and how to reach or leave it."""
        if not self.is_attached:
            return
        line = self.focus_line
        if self.answered:
            line.display = False
            return
        line.display = True
        if self.has_keys:
            back = key_label(self, "conversation-back")
            line.update(Content.assemble(("▶ keys: this card", "bold"), f" · {back} back to the prompt"))
        else:
            go = key_label(self, "next-pending-card")
            line.update(f"◇ {go} (or Tab, or a click) to answer here · until then your keys go to the prompt")

    def _focus_changed(self) -> None:
        self.call_later(self._show_focus)
        if self.armed is not None and not self.has_keys:
            self.call_later(self._disarm_if_left)

    def _disarm_if_left(self) -> None:
        if self.armed is not None and not self.has_keys:
            self.action_cancel_always()

    def on_focus(self) -> None:
        self.reveal()
        self._focus_changed()

    def on_blur(self) -> None:
        self._focus_changed()

    def on_descendant_focus(self) -> None:
        self.reveal()
        self._focus_changed()

    def on_descendant_blur(self) -> None:
        self._focus_changed()

    def intro(self) -> str | None:
        """The intro text, unless it only repeats the message."""
        text = (self.confirmation.intro_message or "").strip()
        return text if text and text != (self.confirmation.message or "").strip() else None

    def restart_grace(self) -> None:
        """The card was just brought to the user's eyes: keys wait again.

        Only the first time: after that the user has seen it."""
        if not self._grace_restarted:
            self._grace_restarted = True
            self.shown_at = time.monotonic()

    @property
    def in_grace(self) -> bool:
        return time.monotonic() - self.shown_at < GRACE_SECONDS

    def answer(self, body: ConfirmBody, summary: str) -> bool:
        """Post the answer once. Returns False (and does nothing) during the grace period."""
        if self.answered or self.in_grace:
            return False
        self.armed = None
        self.always_line.display = False
        self.answered = True
        self.add_class("-answered")
        self.outcome.update(Content.styled(f"→ {summary} — sending…", "italic $text-muted"))
        self.outcome.display = True
        self._show_focus()
        self.refresh_bindings()
        self.post_message(ConfirmationAnswered(self, self.request_id, body, summary))
        return True

    # ------------------------------------------------------------------ a grant that lasts: two keys
    def ask_always(self, grant: str, body: ConfirmBody, summary: str) -> bool:
        """Step one of a lasting grant: say what ``grant`` allows and for how long; only the
        second, different key (``confirm-always``, Enter) answers with ``body``."""
        if self.answered or self.in_grace:
            return False
        self.armed = (body, summary)
        self.always_line.update(Content.assemble(
            ("Always allow? ", "bold"), grant, "\n",
            (card_keys(self).hint_line(ALWAYS_HINTS), "bold"), " (any other key goes back too)",
        ))
        self.always_line.display = True
        self.refresh_bindings()
        self.call_after_refresh(self.always_line.scroll_visible, animate=False)
        return True

    def action_confirm_always(self) -> None:
        armed = self.armed
        if armed is None:
            return
        self.armed = None
        self.always_line.display = False
        self.refresh_bindings()
        self.answer(*armed)

    def action_cancel_always(self) -> None:
        if self.armed is None:
            return
        self.armed = None
        self.always_line.display = False
        self.refresh_bindings()

    def armed_key(self, event: events.Key) -> bool:
        """While a grant waits for its second key, every key is the card's: the grant key
        grants, any other key goes back (and is used up). True when the key was used here."""
        if self.armed is None:
            return False
        event.stop()
        event.prevent_default()
        keys = getattr(self.app, "keys", None)
        confirm = keys.matches("confirm-always", event.key) if isinstance(keys, keymap.KeyMap) else event.key == "enter"
        if confirm:
            self.action_confirm_always()
        else:
            self.action_cancel_always()
        return True

    def on_key(self, event: events.Key) -> None:
        self.armed_key(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("confirm_always", "cancel_always"):
            return self.armed is not None
        if self.armed is not None and action in ("approve", "deny", "always_allow", "request_changes"):
            return False
        return True

    def settle(self, summary: str) -> None:
        """The answer was accepted: say so until the tool call finishes."""
        self.outcome.update(Content.styled(f"→ {summary}", "italic $text-muted"))

    def reopen(self) -> None:
        """The confirm call failed: let the user answer again."""
        self.answered = False
        self.remove_class("-answered")
        self.outcome.display = False
        self._show_focus()
        self.refresh_bindings()

    def title(self) -> Content:
        mark = SEVERITY.get(self.confirmation.severity, SEVERITY["warning"])
        return Content.assemble(
            (f"{mark.glyph} {mark.label.upper()}", f"bold ${mark.variable}"),
            "  ",
            self.confirmation.message or "Confirmation required",
        )

    def focus_default(self, scroll_visible: bool = True) -> None:
        self.focus(scroll_visible=scroll_visible)


class ApprovalCard(ConfirmCard):
    HELP = """
## Approval

The agent wants to run this tool. **{key:approve}** approve · **{key:deny}** deny ·
**{key:always-allow}** then **{key:confirm-always}** always allow this tool for the rest of
the thread (two keys: the first says what it grants; `/permissions` lists and revokes such
grants). The card answers only once you go to it (**{key:next-pending-card}**, Tab or a
click); **{key:conversation-back}** goes back to the prompt. Keys are ignored for half a second
after the card appears.
"""

    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("card")]

    def compose(self) -> ComposeResult:
        c = self.confirmation
        yield Static(self.title(), classes="card-title", markup=False)
        details = ""  # the tool card above shows the tool and its arguments
        if c.domain_access is not None:
            details = f"access {c.domain_access.host or c.domain_access.url}"
        elif c.resource_decision is not None:
            rd = c.resource_decision
            # n8n's message is the decision's description: the title says it already
            said = (rd.description or "").strip()
            # (n8n 2.41's message is "TOOL: DESCRIPTION": the sentence is not said twice)
            extra = "" if not said or said in (c.message or "") else f" {said}"
            details = f"{rd.tool_group}: {rd.resource}{extra}".strip()
        if details:
            yield Static(details, markup=False, classes="card-details")
        if c.preview is not None:  # what the call would change: a diff of the file or workflow
            from .diff_view import ChangePreviewView

            yield ChangePreviewView(c.preview)
        with Horizontal(classes="card-buttons"):
            yield Button(f"{key_label(self, 'approve')} Approve", id="approve", variant="success", compact=True)
            yield Button(f"{key_label(self, 'deny')} Deny", id="deny", variant="error", compact=True)
            if self._supports_always():
                yield Button(f"{key_label(self, 'always-allow')} Always allow…", id="always", variant="primary",
                             compact=True, tooltip="Asks again: what it grants, then Enter grants it")

    def _supports_always(self) -> bool:
        c = self.confirmation
        if c.severity == "destructive":
            # never a lasting grant for what cannot be undone (n8n 2.41's own card offers only
            # approve and deny for a destructive request: ``InstanceAiConfirmationPanel``)
            return False
        if c.effective_input_type == "resource-decision" and c.resource_decision is not None:
            # only the decisions the gateway offers (n8n's GatewayResourceDecision.vue shows just those)
            return "allowForSession" in (c.resource_decision.options or [])
        return c.effective_input_type in ("approval", "resource-decision") or c.domain_access is not None

    def _body(self, verdict: str) -> ConfirmBody:
        c = self.confirmation
        if c.domain_access is not None:
            if verdict == "deny":
                return DomainAccessDenyConfirm()
            if verdict == "always":
                return DomainAccessApproveConfirm(domain_access_action="allow_domain")
            return DomainAccessApproveConfirm(domain_access_action="allow_once")
        if c.effective_input_type == "resource-decision":
            decision = {"approve": "allowOnce", "deny": "denyOnce", "always": "allowForSession"}[verdict]
            return ResourceDecisionConfirm(resource_decision=decision)  # type: ignore[arg-type]
        if verdict == "always":
            return ApprovalConfirm(approved=True, scope="session")
        return ApprovalConfirm(approved=verdict == "approve")

    def action_approve(self) -> None:
        self.answer(self._body("approve"), "approved")

    def action_deny(self) -> None:
        self.answer(self._body("deny"), "denied")

    def grant_words(self) -> str:
        """What "always" grants, and for how long (the first step of the grant says it)."""
        c = self.confirmation
        if c.domain_access is not None:
            host = c.domain_access.host or c.domain_access.url or "this domain"
            return f"the agent fetches from {host} without asking, for the rest of this thread."
        if c.effective_input_type == "resource-decision" and c.resource_decision is not None:
            return (f"{c.resource_decision.tool_group} on {c.resource_decision.resource} without asking, "
                    "for the rest of this session.")
        return (f"“{self.tool.tool_name}” runs without asking, for the rest of this thread "
                "(until you revoke it with /permissions).")

    def action_always_allow(self) -> None:
        if self._supports_always():
            self.ask_always(self.grant_words(), self._body("always"), "always allowed")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "always_allow" and not self._supports_always():
            return False  # not in the footer or the help of a card that does not offer it
        return super().check_action(action, parameters)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = {"approve": self.action_approve, "deny": self.action_deny,
                  "always": self.action_always_allow}.get(event.button.id or "")
        if action is not None:
            action()


class TextCard(ConfirmCard):
    HELP = """
## The agent asks for text

Type the answer and press **Enter** to send it; the **Decline** button (Tab to it, Enter)
declines; **Esc** goes back to the prompt without answering. The field opens half a second
after the card appears, and only when you went to the card (**{key:next-pending-card}**, Tab or
a click), so text typed for the prompt never lands in it.
"""

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.field = Input(placeholder="Your answer — Enter sends, Esc back to the prompt", id="answer", disabled=True)

    def compose(self) -> ComposeResult:
        yield Static(self.title(), classes="card-title", markup=False)
        if self.intro():
            yield Static(self.intro() or "", markup=False)
        yield self.field
        with Horizontal(classes="card-buttons"):
            yield Button("Decline", id="decline", variant="error", compact=True)

    def on_mount(self) -> None:
        super().on_mount()
        self._open_field_later()

    def _open_field_later(self) -> None:
        if not self.is_attached:
            return
        remaining = GRACE_SECONDS - (time.monotonic() - self.shown_at)
        if remaining > 0:
            self.set_timer(remaining + 0.01, self._open_field_later)
            return
        field = self.field
        if field.disabled and not self.answered:
            field.disabled = False
            if self.has_focus:
                field.focus()

    def restart_grace(self) -> None:
        """The field closes again for the new grace period (focus came by itself)."""
        first = not self._grace_restarted
        super().restart_grace()
        if first and not self.answered and self.is_attached:
            self.field.disabled = True
            self._open_field_later()

    def focus_default(self, scroll_visible: bool = True) -> None:
        field = self.field
        if field.disabled:
            self.focus(scroll_visible=scroll_visible)  # the field takes over after the grace period
        else:
            field.focus(scroll_visible=scroll_visible)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.answer(ApprovalConfirm(approved=True, user_input=event.value), f"answered: {event.value}")

    @on(Button.Pressed, "#decline")
    def _decline(self, event: Button.Pressed) -> None:
        event.stop()
        self.answer(ApprovalConfirm(approved=False), "declined")


class PlanReviewCard(ConfirmCard):
    HELP = """
## Plan review

**{key:approve}** approve the plan · **{key:request-changes}** request changes (type
feedback, Enter sends) · **{key:deny}** or **{key:reject-plan}** reject the plan outright.
"""

    #: approve (y/Enter) approves the plan, deny (n) rejects it; ``r`` asks for changes
    KEY_SCOPES = ("plan",)
    #: the card's own word for the shared ``deny`` binding (footer and help alike)
    BINDING_DESCRIPTIONS: ClassVar[dict[str, str]] = _PLAN_WORDS
    BINDINGS: ClassVar[list[BindingType]] = [
        *(replace(b, description=_PLAN_WORDS[b.id]) if isinstance(b, Binding) and b.id in _PLAN_WORDS else b
          for b in keymap.bindings("card")),
        *keymap.bindings("plan"),
    ]

    def compose(self) -> ComposeResult:
        c = self.confirmation
        yield Static(Content.assemble(("📋 Plan review  ", "bold"), c.message or ""), markup=False)
        if self.intro():
            yield Static(self.intro() or "", markup=False)
        if c.tasks is not None and c.tasks.tasks:
            yield Static(render_tasks(c.tasks), markup=False, classes="plan-tasks")
        elif c.plan_items:
            yield Static("\n".join(f"○ {p.title or p.id}" for p in c.plan_items), markup=False, classes="plan-tasks")
        feedback = Input(placeholder="What should change? Enter sends, Esc cancels", id="feedback")
        feedback.display = False
        yield feedback
        with Horizontal(classes="card-buttons"):
            yield Button(f"{key_label(self, 'approve')} Approve", id="approve", variant="success", compact=True)
            yield Button(f"{key_label(self, 'request-changes')} Request changes", id="changes", variant="primary",
                         compact=True)
            yield Button(f"{key_label(self, 'deny')} {REJECT_PLAN}", id="reject", variant="error", compact=True)

    def action_approve(self) -> None:
        self.answer(ApprovalConfirm(approved=True), "plan approved")

    def action_request_changes(self) -> None:
        if self.in_grace or self.answered:
            return
        feedback = self.query_one("#feedback", Input)
        feedback.display = True
        feedback.focus()

    def action_deny(self) -> None:
        self.answer(PlanDenyConfirm(), "plan rejected")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "always_allow":
            return False
        return super().check_action(action, parameters)

    @on(Input.Submitted, "#feedback")
    def _feedback(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            self.notify("Type what should change, or press Esc.", severity="warning")
            return
        self.answer(ApprovalConfirm(approved=False, user_input=text), "changes requested")

    def on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if event.key == "escape" and isinstance(focused, Input) and focused.id == "feedback":
            event.stop()
            focused.display = False
            self.focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = {"approve": self.action_approve, "changes": self.action_request_changes,
                  "reject": self.action_deny}.get(event.button.id or "")
        if action is not None:
            action()
