"""A tool call as a card: a one-line header and, when expanded, args and result.

The header shows a status glyph (spinner while running, ✓ done, ✗ failed or denied, ◷ waiting
for approval / your answer / your plan review, ⊘ not run, expired or not resolved) *and* a word
— both decided by ``protocol.display_state``, the one rule shared with export and ``run`` —
then the tool name, a short form of the arguments or the result, and the duration. The body is only
mounted while the card is expanded; results are
pretty-printed JSON with syntax highlighting, folded after ``FOLD_LINES`` lines.

Expansion follows the state until the user toggles it: expanded when it fails or waits for
approval; collapsed while running (the header shows the arguments) and once it succeeds
(the header shows a summary of the result).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from ...protocol.display_state import AUTO_APPROVED_LABEL, PLAN_CHANGES, DisplayState, display_state
from ...protocol.safe_text import visible
from ...protocol.text_render import content_text, text_summary
from ...protocol.tree import ToolCallState
from .. import keymap
from ..themes.glyphs import GLYPH_COLLAPSED, GLYPH_EXPANDED, TOOL_STATUS
from .card_factory import build_card
from .confirmations import ConfirmCard, short_json
from .status_line import SPINNER

FOLD_LINES = 14


def pretty(value: Any) -> tuple[str, str]:
    """``(text, language)`` for a result or args: JSON if it is (or parses as) JSON."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") :
            try:
                value = json.loads(stripped)
            except ValueError:
                return value, "text"
        else:
            return value, "text"
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str), "json"
    except (TypeError, ValueError):
        return str(value), "text"


def highlighted(text: str, language: str) -> Content:
    if language != "json":
        return Content(text)
    from textual.highlight import highlight  # pygments: only when a body is shown

    return highlight(text, language="json")


#: the longest summary put in a header (the header itself is cut at the card's width)
SUMMARY_LIMIT = 400


def result_summary(value: Any, limit: int = SUMMARY_LIMIT) -> str:
    """A few words about a result for the header."""
    if value is None:
        return ""
    text = content_text(value)  # an MCP tool's text (read_file): its line, or how many lines it has
    if text is not None:
        return text_summary(text, limit)
    if isinstance(value, str):
        line = value.strip().splitlines()[0] if value.strip() else ""
        return line if len(line) <= limit else line[: limit - 1] + "…"
    if isinstance(value, list):
        return f"{len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        named = _named_object(value)
        if named:
            return named if len(named) <= limit else named[: limit - 1] + "…"
        for key, val in value.items():
            if isinstance(val, list):
                return f"{len(val)} {key}{_progress(val)}"
        return short_json(value, limit)
    return short_json(value, limit)


#: statuses of a finished step (ours and the seed's words)
_DONE = frozenset({"done", "completed"})


def _progress(items: list[Any]) -> str:
    """How far a list of steps has come (' · 1 done', ' · all done'): a checklist's updates read
    apart ('3 tasks', '3 tasks · 1 done', '3 tasks · all done'), not as the same line three times.
    Nothing for items without a status."""
    statuses = [item.get("status") for item in items if isinstance(item, dict)]
    if not items or len(statuses) != len(items) or not all(isinstance(status, str) for status in statuses):
        return ""
    done = sum(status in _DONE for status in statuses)
    return " · all done" if done == len(items) else (f" · {done} done" if done else "")


def args_summary(tool_name: str, args: dict[str, Any], limit: int = SUMMARY_LIMIT) -> str:
    """A running call's arguments for its header: a delegation's sub-agent and task in words
    ("◆ workflow builder: Build a workflow named …"; its JSON was '{"role": "workflow builder",
    "instructions": …'), any other tool's arguments as JSON."""
    if tool_name == "delegate":
        role, task = args.get("role"), args.get("instructions")
        words = [f"◆ {visible(' '.join(role.split()))}" if isinstance(role, str) and role.strip() else "",
                 visible(" ".join(task.split())) if isinstance(task, str) and task.strip() else ""]
        text = ": ".join(word for word in words if word)
        if text:
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return short_json(args, limit)


def _named_object(value: dict[str, Any]) -> str | None:
    """An object with a name and an id (a workflow, a credential, an execution's workflow) in
    words: 'Daily digest (wf-104) · active', not its JSON ('{"id": "wf-104", …')."""
    name, ident = value.get("name"), value.get("id")
    if not isinstance(name, str) or not name.strip() or isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return None
    words = [f"{visible(name.strip())} ({visible(str(ident))})"]
    active, status = value.get("active"), value.get("status")
    if isinstance(active, bool):
        words.append("active" if active else "inactive")
    if isinstance(status, str) and status.strip():
        words.append(visible(status.strip()))
    return " · ".join(words)


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _short(seconds: float) -> str:
    """A running time: "400 ms", "12.3 s", then as a wait is said ("15 min", "1.2 h": not "920.3 s")."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s" if seconds < 60 else _wait(seconds)


def _wait(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def duration(started: str | None, completed: str | None, asked: str | None = None, answered: str | None = None) -> str:
    """The tool's own running time. A call that asked the person first (``asked`` .. ``answered``:
    the tree's ``askedAt``/``answeredAt``) does not count their thinking time: "0.4 s (waited 9 min
    for you)". Without the answer's time (n8n's stream has none) the whole span says it includes it."""
    total = _seconds_between(started, completed)
    if total is None:
        return ""
    if not asked:
        return _short(total)
    waited = _seconds_between(asked, answered)
    if waited is None or waited > total:
        return f"{_short(total)} incl. your answer"
    ran = total - waited
    return f"{_short(ran)} (waited {_wait(waited)} for you)" if waited >= 1 else _short(ran)


def call_duration(tc: ToolCallState) -> str:
    """``duration`` of one call of the tree (the same words live, restored and exported)."""
    extra = tc.model_extra or {}
    asked, answered = extra.get("askedAt"), extra.get("answeredAt")
    return duration(tc.started_at, tc.completed_at, asked if isinstance(asked, str) else None,
                    answered if isinstance(answered, str) else None)


#: glyph and colour of each display state (the word comes from ``display_state``)
_STATE_MARK = {
    "awaiting": TOOL_STATUS["waiting"],
    "done": TOOL_STATUS["done"],
    "failed": TOOL_STATUS["failed"],
    "denied": TOOL_STATUS["failed"],
    "not-run": TOOL_STATUS["cancelled"],
    "expired": TOOL_STATUS["cancelled"],
    "unresolved": TOOL_STATUS["cancelled"],
}


#: a plan review answered "request changes": sent back to the agent, neither done nor failed
PLAN_SENT_BACK_GLYPH = "↺"


def named_in(args: Any, message: str) -> bool:
    """Every value of ``args`` is written in ``message`` (an approval's question that names them all:
    its arguments only repeat it). A flag, ``null`` or an empty value is never "named"."""
    if isinstance(args, dict):
        return bool(args) and all(named_in(value, message) for value in args.values())
    if isinstance(args, list):
        return bool(args) and all(named_in(value, message) for value in args)
    if args is None or isinstance(args, bool):
        return False
    text = str(args)
    return bool(text.strip()) and text in message


class ToolCallCard(Vertical, can_focus=True):
    """One card per tool call id; ``sync`` projects the model onto it."""

    HELP = """
## Tool call

**Enter**/**Space** expand or collapse · **f** unfold a long result · **c** copy the result
(or error) to the clipboard · **w** the workflow of a workflow tool's call on the canvas.
"""

    KEY_SCOPES = ("tool_card", "block")
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("block"), *keymap.bindings("tool_card")]

    @dataclass
    class WorkflowWanted(Message):
        """``w``: this call's workflow on the canvas (the app's ``screens.workflow.Workflows`` opens it)."""

        workflow_id: str

    DEFAULT_CSS = """
    ToolCallCard {
        height: auto;
        padding: 0 0 0 1;
        & > .tool-header { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & > .tool-body { height: auto; padding: 0 1 0 2; color: $text; background: $boost; }
        & > .tool-error { height: auto; padding: 0 1 0 2; color: $text-error; }
        &:focus { background-tint: $foreground 5%; }
        &.-failed > .tool-header { color: $text-error; }
    }
    """

    def __init__(self, tc: ToolCallState) -> None:
        super().__init__()
        self.tool_call_id = tc.tool_call_id
        self.tc = tc
        self._signature: tuple[object, ...] | None = None
        self._user_expanded: bool | None = None
        self._unfolded = False
        self._frame = 0
        self.state = "running"
        self.shown_state: DisplayState | None = None
        #: the run of this call is going (set by the turn); a loading call of a finished
        #: run is "not resolved", not running
        self.run_active = True
        self.card: ConfirmCard | None = None
        self._body_rendered: tuple[object, ...] | None = None
        self._pending = False
        self.index = -1
        self.header = Static("", classes="tool-header", markup=False)
        self.body: Static | None = None
        self._started = False

    def compose(self) -> ComposeResult:
        yield self.header

    def on_mount(self) -> None:
        self._started = True
        self.sync(self.tc, self._pending, force=True)

    def set_live(self, live: bool) -> None:
        """Cards follow their own state, not the timeline position."""

    def detach(self) -> None:
        """Nothing to release."""

    # ------------------------------------------------------------------ projection
    @property
    def expanded(self) -> bool:
        if self._user_expanded is not None:
            return self._user_expanded
        return self.state in ("awaiting", "failed")

    def sync(self, tc: ToolCallState, confirmation_pending: bool, *, force: bool = False) -> bool:
        """Update from the model. Returns True if anything changed."""
        self.tc = tc
        self._pending = confirmation_pending
        conf = tc.confirmation
        signature = (
            tc.is_loading,
            tc.error,
            id(tc.result),
            tc.result is None,
            len(tc.args),
            conf.request_id if conf else None,
            conf.expired if conf else None,
            tc.confirmation_status,
            confirmation_pending,
            self.run_active,
            (tc.model_extra or {}).get("progress"),
        )
        if not force and signature == self._signature:
            return False
        self._signature = signature
        if not self._started:
            return True
        self.shown_state = display_state(
            tc, run_active=self.run_active or confirmation_pending, resolved=not confirmation_pending
        )
        kind = self.shown_state.kind
        self.state = "awaiting" if kind == "waiting" else kind
        self.set_class(self.state in ("failed", "denied"), "-failed")
        self._render_header()
        self._sync_body()
        self._sync_card(confirmation_pending)
        return True

    def set_run_active(self, active: bool) -> None:
        """The turn's run started or ended: a call still loading in the tree of a finished
        run is shown as not resolved (n8n's tree keeps it loading)."""
        if active != self.run_active:
            self.run_active = active
            self.sync(self.tc, self._pending)

    def tick(self) -> None:
        """Advance the spinner (called by the app's frame timer while running)."""
        if self.state == "running" and self._started:
            self._frame += 1
            self._render_header()

    def _plan_review(self) -> bool:
        conf = self.tc.confirmation
        return conf is not None and conf.effective_input_type == "plan-review"

    def _render_header(self) -> None:
        tc = self.tc
        label = self.shown_state.label if self.shown_state is not None else self.state
        sent_back = self.state == "done" and label == PLAN_CHANGES  # a plan review sent back: no tick
        if self.state == "running":
            glyph, style = SPINNER[self._frame % len(SPINNER)], "$tool-running"
        elif sent_back:
            glyph, style = PLAN_SENT_BACK_GLYPH, "$tool-waiting"
        else:
            mark = _STATE_MARK[self.state]
            glyph, style = mark.glyph, f"${mark.variable}"
        arrow = f"{GLYPH_EXPANDED if self.expanded else GLYPH_COLLAPSED} "
        parts: list[tuple[str, str] | str] = [
            (arrow, "$text-muted"),
            (f"{glyph} ", style),
            (tc.tool_name or "tool", "bold"),
        ]
        took = call_duration(tc)
        if took:  # before the summary: the header is one line, cut at the width with "…"
            parts.append((f"  {took}", "$text-muted"))
        if sent_back:
            # the person's words, not the tool's JSON ({"approved": false, "feedback": …})
            feedback = tc.result.get("feedback") if isinstance(tc.result, dict) else None
            parts.append((f"  {label}", style))
            if isinstance(feedback, str) and feedback.strip():
                parts.append((f": “{result_summary(visible(feedback.strip()))}”", "$text-muted"))
        elif self.state == "done" and label != "done" and self._plan_review():
            parts.append((f"  {label}", style))  # plan approved / a plan review's own outcome
        elif self.state == "done":
            # a delegation's result is its sub-agent's summary, shown on the sub-agent's own row
            # right below: name the sub-agent instead of saying it twice
            role = tc.args.get("role") if tc.tool_name == "delegate" and isinstance(tc.args, dict) else None
            summary = f"◆ {result_summary(role)}" if isinstance(role, str) and role else result_summary(tc.result)
            if summary:
                parts.append(("  → ", "$text-muted"))
                parts.append(summary)
        elif self.state == "failed" and tc.error is None and label.startswith("failed"):
            # n8n's failure given as a result (failed nodes, success: false): display_state's words
            parts.append((f"  {result_summary(label)}", style))
        elif self.state == "failed":
            parts.append(("  failed: ", style))
            parts.append((result_summary(tc.error or "(no message)"), style))
        elif self.state == "denied":
            parts.append(("  denied", style))
            reason = tc.result.get("reason") if isinstance(tc.result, dict) else None
            if isinstance(reason, str) and reason:
                parts.append((f": {result_summary(reason)}", style))
        elif self.state in ("not-run", "expired", "unresolved"):
            parts.append((f"  {label}", style))
        elif self.state == "awaiting":
            parts.append((f"  {label}", "$tool-waiting"))
        elif isinstance(progress := (tc.model_extra or {}).get("progress"), str) and progress:
            parts.append(("  " + visible(progress), "$text-muted italic"))  # an MCP tool's progress
        elif tc.args:
            parts.append(("  " + args_summary(tc.tool_name, tc.args), "$text-muted"))
        if self.shown_state is not None and self.shown_state.auto_approved:
            parts.append((f"  · {AUTO_APPROVED_LABEL}", "$text-muted italic"))
        self.header.update(Content.assemble(*parts), layout=False)

    def _body_content(self) -> Content:
        tc = self.tc
        parts: list[Content | tuple[str, str] | str] = []
        if tc.args:
            text, language = pretty(tc.args)
            parts += [("args\n", "$text-muted italic"), highlighted(text, language)]
        if tc.error is not None:
            if parts:
                parts.append("\n")
            parts += [("error\n", "$text-error italic"), (tc.error or "(no message)", "$text-error")]
        elif tc.result is not None:
            text, language = pretty(tc.result)
            lines = text.splitlines()
            folded = len(lines) > FOLD_LINES and not self._unfolded
            if folded:
                text = "\n".join(lines[:FOLD_LINES])
            if parts:
                parts.append("\n")
            parts += [("result\n", "$text-muted italic"), highlighted(text, language)]
            if folded:
                parts.append((f"\n… {len(lines) - FOLD_LINES} more lines (f to unfold)", "$text-muted italic"))
        return Content.assemble(*parts) if parts else Content("")

    def _shows_body(self) -> bool:
        tc = self.tc
        if not self.expanded or not (tc.args or tc.result is not None or tc.error is not None):
            return False
        if self.state == "awaiting" and self._user_expanded is None and tc.confirmation is not None:
            # a questions/plan/text card (or one of n8n's own cards) says it all; the arguments only repeat it,
            # as they do beside a change's preview (a write's content above its own diff: the text twice)
            from .n8n_cards import card_kind

            return (tc.confirmation.effective_input_type == "approval" and card_kind(tc.confirmation) is None
                    and tc.confirmation.preview is None
                    # "Activate workflow wf-104?" over {"workflowId": "wf-104"}: the question names them all
                    and not named_in(tc.args, tc.confirmation.message))
        return True

    def _sync_body(self) -> None:
        if not self._shows_body():
            if self.body is not None:
                self.body.remove()
                self.body = None
            self._body_rendered = None
            return
        key = (self._signature, self._unfolded)
        if key == self._body_rendered and self.body is not None:
            return
        self._body_rendered = key
        content = self._body_content()
        if self.body is not None:
            self.body.update(content)
        else:
            self.body = Static(content, classes="tool-body", markup=False)
            self.mount(self.body, after=self.header)

    def _sync_card(self, pending: bool) -> None:
        conf = self.tc.confirmation
        if pending and conf is not None:
            if self.card is None or self.card.request_id != conf.request_id:
                if self.card is not None:
                    self.card.remove()
                self.card = build_card(self.tc, conf)
                self.mount(self.card)
        elif self.card is not None and not self.card.answered:
            self.card.remove()
            self.card = None
        elif self.card is not None and not self.tc.is_loading:
            self.card.remove()
            self.card = None

    # ------------------------------------------------------------------ actions
    def action_toggle_block(self) -> None:
        self._user_expanded = not self.expanded
        self._render_header()
        self._sync_body()

    def action_unfold(self) -> None:
        self._unfolded = not self._unfolded
        self._user_expanded = True
        self._render_header()
        self._sync_body()

    def _workflow_id(self) -> str | None:
        from ...protocol.workflow_graph import is_workflow_tool, workflow_id_of

        tc = self.tc
        return workflow_id_of(tc.result, tc.args) if is_workflow_tool(tc.tool_name, tc.args) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "show_workflow":  # only on a workflow tool's card (the footer hides it elsewhere)
            return self._workflow_id() is not None
        return True

    def action_show_workflow(self) -> None:
        """``w``: the workflow this call created, changed or read, on the canvas (issue 29)."""
        workflow_id = self._workflow_id()
        if workflow_id is None:
            return
        self.post_message(self.WorkflowWanted(workflow_id))

    def copy_text(self) -> tuple[str, str]:
        """(text, what) for the copy-block key: the error, else the result, else the args."""
        tc = self.tc
        if tc.error is not None:
            text = tc.error
        elif tc.result is not None:
            text = pretty(tc.result)[0]
        else:
            text = pretty(tc.args)[0]
        return text, f"the {tc_part(tc)} of {tc.tool_name or 'the tool call'}"

    def on_click(self, event: object) -> None:
        # a click on the header toggles; clicks inside the card's widgets are theirs
        widget = getattr(event, "widget", None)
        if widget is not None and widget.has_class("tool-header"):
            self.action_toggle_block()


def tc_part(tc: ToolCallState) -> str:
    if tc.error is not None:
        return "error"
    return "result" if tc.result is not None else "arguments"
