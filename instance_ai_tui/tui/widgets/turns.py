"""Conversation turns: the user's messages and the assistant's live agent activity tree.

An ``AssistantTurn`` draws one message group's ``RunReducer`` as the seed's "Frontend
Rendering" tree: the orchestrator's timeline in order — text segments as streamed
Markdown (``MarkdownStream``; a long segment in chunks, ``long_markdown``), reasoning
dimmed and collapsible, tool calls as cards, sub-agents as collapsible sections with their
own timelines.

Nothing here reads events. ``AssistantTurn.apply(changes, frame)`` projects a
``ReducerChanges`` (what changed since the last frame) onto the widgets, touching only
what changed; the app calls it from its frame timer inside one batched update.

The number of mounted widgets is bounded: each agent section mounts at most the last
``AgentSection.WINDOW`` entries of its timeline (older ones on demand), reasoning and
sub-agent bodies are only mounted while expanded, and a completed sub-agent collapses to
its summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from ...protocol.command_turns import command_line, is_command_turn
from ...protocol.reducer import ReducerChanges, RunReducer, SegmentChange
from .. import keymap
from ..textual_internals import BlankRows
from ..themes.glyphs import GLYPH_COLLAPSED, GLYPH_EXPANDED, TOOL_STATUS
from .agent_info import AgentInfo, agent_info
from .compacted_row import CompactedRow
from .frame import Frame as Frame  # (the projection's tick; where it was, for its users)
from .long_markdown import ChunkedMarkdown, ShowEarlierLine
from .status_line import SPINNER
from .tool_card import ToolCallCard

if TYPE_CHECKING:
    from ...protocol.conversation import ConversationMessage


# --------------------------------------------------------------------------- timeline entries


class TextBlock(ChunkedMarkdown):
    HELP = """
## Agent text

**c** copies this text to the clipboard. A long text shows its newest part; Enter on the
"earlier characters" line above it shows more.
"""

    def __init__(self, content: str, *, index: int, live: bool = True) -> None:
        super().__init__(content, classes="text-block", chunk_classes="text-chunk", live=live)
        self.index = index

    def copy_text(self) -> tuple[str, str]:
        """(text, what) for the copy-block key."""
        return self.target, "the text"

    def set_live(self, live: bool) -> None:
        if not live:
            self.finish()

    def detach(self) -> None:
        self.release()


class ReasoningBlock(Vertical, can_focus=True):
    """Dimmed reasoning; expanded while it is being streamed, collapsed once the agent
    moves on (unless the user toggled it). The body is only mounted while expanded."""

    HELP = """
## Reasoning

**Enter**/**Space** expand or collapse · **c** copy the reasoning.
"""

    KEY_SCOPES = ("block",)
    BINDINGS = keymap.bindings("block")

    def __init__(self, content: str, *, index: int, live: bool) -> None:
        super().__init__(classes="reasoning")
        self.index = index
        self.content = content
        self.live = live
        self._user_expanded: bool | None = None
        self._body: ChunkedMarkdown | None = None
        self.header = Static("", classes="reasoning-header", markup=False)
        self._started = False

    def on_mount(self) -> None:
        self._started = True

    @property
    def expanded(self) -> bool:
        return self._user_expanded if self._user_expanded is not None else self.live

    def compose(self) -> ComposeResult:
        self.header.update(self._header())
        yield self.header
        if self.expanded:
            self._body = self._new_body()
            yield self._body

    def _new_body(self) -> ChunkedMarkdown:
        return ChunkedMarkdown(self.content, classes="reasoning-body", chunk_classes="reasoning-chunk", live=self.live)

    def _header(self) -> Content:
        arrow = GLYPH_EXPANDED if self.expanded else GLYPH_COLLAPSED
        if self.live:
            return Content.assemble((f"{arrow} ∴ ", "$reasoning-text"), ("Thinking…", "italic $reasoning-text"))
        words = len(self.content.split()) if len(self.content) < 20_000 else len(self.content) // 6
        return Content.assemble((f"{arrow} ∴ ", "$reasoning-text"), (f"Reasoning · {words} words", "italic $reasoning-text"))

    def _sync(self, frame: Frame | None) -> None:
        if not self._started:
            return
        self.header.update(self._header(), layout=False)
        if self.expanded:
            if self._body is None:
                self._body = self._new_body()
                self.mount(self._body)
            else:
                if self._body.set_target(self.content):
                    if frame is not None:
                        frame.add_flush(self._body)
                    else:
                        self.call_later(self._body.flush)
                if not self.live:
                    self._body.finish()
        elif self._body is not None:
            self._body.release()
            self._body.remove()
            self._body = None

    def set_content(self, content: str, frame: Frame) -> None:
        """New reasoning text; drawn while expanded, counted in the header when folded (a frame can fold it first)."""
        self.content = content
        if self._body is not None and self._body.set_target(content):
            frame.add_flush(self._body)
        if not self.live and self._started:
            self.header.update(self._header(), layout=False)

    def set_live(self, live: bool) -> None:
        if live == self.live:
            return
        self.live = live
        self._sync(None)

    def action_toggle_block(self) -> None:
        self._user_expanded = not self.expanded
        self._sync(None)

    def copy_text(self) -> tuple[str, str]:
        return self.content, "the reasoning"

    def on_click(self) -> None:
        self.action_toggle_block()

    def detach(self) -> None:
        if self._body is not None:
            self._body.release()

    @property
    def settled(self) -> bool:
        return self._body is None or self._body.settled


class SubAgentSection(Vertical, can_focus=True):
    """A sub-agent: a header (role, status, summary) and, while expanded, its timeline."""

    HELP = """
## Sub-agent

**Enter**/**Space** expand or collapse · **c** copy the sub-agent's result.
A sub-agent collapses to its summary when it completes.
"""

    KEY_SCOPES = ("block",)
    BINDINGS = keymap.bindings("block")

    def __init__(self, turn: AssistantTurn, info: AgentInfo, *, index: int) -> None:
        super().__init__(classes="subagent")
        self.turn = turn
        self.info = info
        self.index = index
        self.agent_id = info.agent_id
        self._user_expanded: bool | None = None
        self.body: AgentSection | None = None
        self._frame = 0
        self.header = Static("", classes="subagent-header", markup=False)
        self._started = False

    def on_mount(self) -> None:
        self._started = True
        self._sync()

    @property
    def expanded(self) -> bool:
        if self._user_expanded is not None:
            return self._user_expanded
        return self.info.status == "active"

    def compose(self) -> ComposeResult:
        self.header.update(self._header())
        yield self.header
        if self.expanded:
            self.body = AgentSection(self.turn, self.agent_id, active=self.info.status == "active")
            yield self.body

    def _header(self) -> Content:
        info = self.info
        arrow = GLYPH_EXPANDED if self.expanded else GLYPH_COLLAPSED
        status = info.status
        if status == "active":
            glyph, style, word = SPINNER[self._frame % len(SPINNER)], "$tool-running", "working"
        else:
            mark = {"completed": TOOL_STATUS["done"], "cancelled": TOOL_STATUS["cancelled"]}.get(
                status, TOOL_STATUS["failed"]
            )
            glyph, style, word = mark.glyph, f"${mark.variable}", mark.label
        parts: list[tuple[str, str] | str] = [
            (f"{arrow} ", "$text-muted"),
            ("◆ ", "$subagent-border"),
            (info.label, "bold $text-secondary"),
            (f"  {glyph} {word}", style),
        ]
        if status == "active" and info.status_message:
            parts.append((f"  {info.status_message}", "italic $text-muted"))
        summary = info.error if status == "error" and info.error else info.result
        if summary and status != "active":
            line = summary.strip().splitlines()[0] if summary.strip() else ""
            if len(line) > 90:
                line = line[:89] + "…"
            parts.append(("  → ", "$text-muted"))
            parts.append((line, "$text-error" if status == "error" else ""))
        return Content.assemble(*parts)

    def refresh_info(self, info: AgentInfo) -> None:
        self.info = info
        self._sync()

    def tick(self) -> None:
        if self.info.status == "active" and self._started:
            self._frame += 1
            self.header.update(self._header(), layout=False)

    def _sync(self) -> None:
        if not self._started:
            return
        self.header.update(self._header(), layout=False)
        if self.expanded and self.body is None:
            self.body = AgentSection(self.turn, self.agent_id, active=self.info.status == "active")
            self.mount(self.body)
        elif not self.expanded and self.body is not None:
            self.body.detach()
            self.body.remove()
            self.body = None
        elif self.body is not None:
            self.body.set_active(self.info.status == "active")

    def action_toggle_block(self) -> None:
        self._user_expanded = not self.expanded
        self._sync()

    def copy_text(self) -> tuple[str, str]:
        return self.info.result or self.info.error or "", f"the result of {self.info.label}"

    def on_click(self, event: events.Click) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and widget.has_class("subagent-header"):
            event.stop()
            self.action_toggle_block()

    def detach(self) -> None:
        if self.body is not None:
            self.body.detach()

    def set_live(self, live: bool) -> None:
        """Liveness of a sub-agent comes from its own status."""


class MoreLine(ShowEarlierLine):
    """'… N earlier steps' at the top of a windowed timeline; Enter/click shows more."""

    KEY_SCOPES = ("more_steps",)
    BINDINGS = keymap.bindings("more_steps")

    def set_count(self, hidden: int) -> None:
        self.say(f"{hidden} earlier step{'s' if hidden != 1 else ''}")


def entry_cost(widget: Widget | None) -> int:
    """Frame-budget units of a timeline entry: a text block costs by its chunks
    (``ChunkedMarkdown.cost``); the others are a line or two."""
    if isinstance(widget, TextBlock):
        return widget.cost
    return 1


class AgentSection(BlankRows, Vertical):
    """The timeline of one agent, windowed to its last ``WINDOW`` entries."""

    WINDOW = 40

    DEFAULT_CSS = "AgentSection { height: auto; }"

    def __init__(self, turn: AssistantTurn, agent_id: str, *, active: bool) -> None:
        super().__init__(classes="agent-section")
        self.turn = turn
        self.agent_id = agent_id
        self.active = active
        self.entries: dict[int, Widget] = {}
        #: mounted range is [first, length); the window wants [target_first, timeline length)
        self.first = 0
        self.length = 0
        self.target_first = 0
        self.window = self.WINDOW
        self.more = MoreLine(self.show_earlier, "more-line")

    @property
    def reducer(self) -> RunReducer:
        return self.turn.reducer

    def compose(self) -> ComposeResult:
        # the newest few entries at once; the rest of the window is back-filled over the
        # next frames (within their budget), so opening a long thread never stalls
        self.turn.sections[self.agent_id] = self
        self.length = self.reducer.timeline_length(self.agent_id)
        self.target_first = max(0, self.length - self.window)
        widgets: list[Widget] = []
        budget = Frame.BUDGET
        index = self.length
        while index > self.target_first and budget > 0:
            index -= 1
            widget = self._make(index)
            budget -= entry_cost(widget)
            if widget is not None:
                widgets.append(widget)
        self.first = index
        if self.first > self.target_first:
            self.turn.behind.add(self)
        self._update_more()
        yield self.more
        yield from reversed(widgets)

    def _update_more(self) -> None:
        self.more.display = self.first > 0
        if self.first > 0:
            self.more.set_count(self.first)

    # ------------------------------------------------------------------ entries
    def _live(self, index: int) -> bool:
        return self.active and self.turn.live and index == self.length - 1

    def _make(self, index: int) -> Widget | None:
        entry = self.reducer.timeline_entry(self.agent_id, index)
        if entry is None:
            return None
        kind = entry.get("type")
        widget: Widget | None
        if kind == "text":
            widget = TextBlock(str(entry.get("content", "")), index=index, live=self._live(index))
        elif kind == "reasoning":
            widget = ReasoningBlock(str(entry.get("content", "")), index=index, live=self._live(index))
        elif kind == "tool-call":
            tc = self.reducer.tool_call(str(entry.get("toolCallId", "")))
            if tc is None:
                return None
            card = ToolCallCard(tc)
            card.index = index
            conf = tc.confirmation
            card._pending = conf is not None and conf.request_id in self.turn.pending
            card.run_active = self.turn.live
            self.turn.cards[tc.tool_call_id] = card
            widget = card
        elif kind == "context-compacted":
            widget = CompactedRow(entry)
        elif kind == "child":
            info = agent_info(self.reducer, str(entry.get("agentId", "")))
            if info is None:
                return None
            widget = SubAgentSection(self.turn, info, index=index)
            self.turn.subagents[info.agent_id] = widget
        else:
            return None
        self.entries[index] = widget
        return widget

    def catch_up(self, frame: Frame) -> None:
        """Mount what the timeline and the window want, within the frame's budget: new
        entries first (the newest matter most), then older ones above."""
        self.append_entries(frame)
        if self.first > self.target_first and frame.budget > 0:
            widgets: list[Widget] = []
            index = self.first
            while index > self.target_first and frame.budget > 0:
                index -= 1
                widget = self._make(index)
                frame.budget -= entry_cost(widget)
                if widget is not None:
                    widgets.append(widget)
            self.first = index
            if widgets:
                widgets.reverse()
                self.mount_all(widgets, after=self.more)
            self._update_more()
        if self.first > self.target_first or self.length < self.reducer.timeline_length(self.agent_id):
            self.turn.behind.add(self)
        else:
            self.turn.behind.discard(self)

    def append_entries(self, frame: Frame) -> None:
        """Mount the entries added to the timeline since the last frame, within the frame's
        budget; entries that would fall out of the window at once are never mounted."""
        new_length = self.reducer.timeline_length(self.agent_id)
        if new_length <= self.length:
            return
        if frame.budget <= 0:
            self.turn.behind.add(self)
            return
        previous_last = self.entries.get(self.length - 1)
        if previous_last is not None:
            previous_last.set_live(False)  # type: ignore[attr-defined]
        index = max(self.length, new_length - self.window)
        self.length = index
        self._prune()
        widgets: list[Widget] = []
        while index < new_length and frame.budget > 0:
            self.length = index + 1
            widget = self._make(index)
            frame.budget -= entry_cost(widget)
            if widget is not None:
                widgets.append(widget)
                if isinstance(widget, ToolCallCard):
                    frame.new_cards.append(widget)
            index += 1
        self._prune()
        # only the very last entry of the timeline can be live
        for widget in widgets[:-1] if self.length == new_length else widgets:
            widget.set_live(False)  # type: ignore[attr-defined]
        if widgets:
            self.mount_all(widgets)
        if self.length < new_length:
            self.turn.behind.add(self)

    def _prune(self) -> None:
        """Keep at most ``window`` entries in the mounted range (drop the oldest)."""
        self.target_first = max(self.target_first, self.length - self.window)
        new_first = max(self.first, self.target_first)
        if new_first > self.length:
            new_first = self.length
        if new_first <= self.first:
            return
        doomed: list[Widget] = []
        for index in range(self.first, new_first):
            widget = self.entries.pop(index, None)
            if widget is not None:
                self._forget(widget)
                doomed.append(widget)
        self.first = new_first
        if doomed:
            self.remove_children(doomed)
        self._update_more()

    def show_earlier(self) -> None:
        """Widen the window by ``WINDOW`` older entries (mounted over the next frames)."""
        if self.target_first == 0:
            return
        self.window += self.WINDOW
        self.target_first = max(0, self.length - self.window)
        self.turn.behind.add(self)

    def take_segment_change(self, change: SegmentChange, reducer: RunReducer, frame: Frame) -> None:
        """The reducer's change of a text entry: only the appended text goes to the widget (no re-diff of
        the whole text); a widget built after the drain, or a reasoning entry, gets the whole content."""
        widget = self.entries.get(change.index)
        if isinstance(widget, TextBlock):
            taken = widget.take_change(change.text, change.replaced, change.length)
            if taken:
                frame.add_flush(widget)
                return
            if taken is False:
                return
        self.set_segment(change.index, reducer.segment_text(change.agent_id, change.index), frame)

    def set_segment(self, index: int, text: str, frame: Frame) -> None:
        """The whole current content of a text/reasoning entry."""
        widget = self.entries.get(index)
        if isinstance(widget, TextBlock):
            if widget.set_target(text):
                frame.add_flush(widget)
        elif isinstance(widget, ReasoningBlock):
            widget.set_content(text, frame)

    def set_active(self, active: bool) -> None:
        if active == self.active:
            return
        self.active = active
        if not active:
            self.end_live()

    def end_live(self) -> None:
        last = self.entries.get(self.length - 1)
        if last is not None:
            last.set_live(False)  # type: ignore[attr-defined]

    def _forget(self, widget: Widget) -> None:
        if isinstance(widget, ToolCallCard):
            self.turn.cards.pop(widget.tool_call_id, None)
        elif isinstance(widget, SubAgentSection):
            self.turn.subagents.pop(widget.agent_id, None)
        detach = getattr(widget, "detach", None)
        if detach is not None:
            detach()

    def detach(self) -> None:
        """This section is about to be removed: unregister it and everything in it."""
        if self.turn.sections.get(self.agent_id) is self:
            del self.turn.sections[self.agent_id]
        self.turn.behind.discard(self)
        for widget in self.entries.values():
            self._forget(widget)
        self.entries.clear()

    def markdown_blocks(self) -> list[ChunkedMarkdown]:
        out: list[ChunkedMarkdown] = []
        for widget in self.entries.values():
            if isinstance(widget, ChunkedMarkdown):
                out.append(widget)
            elif isinstance(widget, ReasoningBlock) and widget._body is not None:
                out.append(widget._body)
        return out


# --------------------------------------------------------------------------- turns


#: a user message longer than this many lines is folded (a long paste stays one screen)
USER_FOLD_LINES = 12
#: how many lines a folded user message shows
USER_FOLD_HEAD = 6
#: ... and a message longer than this many characters is folded too (one very long line)
USER_FOLD_CHARS = 2000


class UserMessage(Static, can_focus=True):
    HELP = """
## Your message

**c** copies it to the clipboard. A long message is folded: **Enter**/**Space** unfolds it.
**e** goes back to it: it and every later turn leave the agent's memory (they stay in the
thread's history) and its text comes back to the prompt to be edited and sent again.
"""
    KEY_SCOPE = "block"
    KEY_SCOPES = ("user_message",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("block"), *keymap.bindings("user_message")]

    @dataclass
    class EditRequested(Message):
        """``e`` on a user message: rewind to it and edit it."""

        message_id: str

    def action_edit_message(self) -> None:
        self.post_message(self.EditRequested(self.message_id))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "edit_message" and self.command)  # /compact's record: nothing to edit

    def __init__(self, message_id: str, text: str) -> None:
        self.command = is_command_turn(text)
        super().__init__("", classes="user-message -command" if self.command else "user-message", markup=False)
        self.message_id = message_id
        self.text = text
        self.foldable = text.count("\n") + 1 > USER_FOLD_LINES or len(text) > USER_FOLD_CHARS
        self.folded = self.foldable
        self.update(self._shown())

    def set_text(self, text: str) -> None:
        """Its text, once more is known of it (the attachments the server read, listed under it)."""
        self.text = text
        self.foldable = text.count("\n") + 1 > USER_FOLD_LINES or len(text) > USER_FOLD_CHARS
        self.folded = self.folded and self.foldable
        self.update(self._shown())

    def _shown(self) -> str:
        if self.command:
            return command_line(self.text)
        if not self.folded:
            return self.text
        head = "\n".join(self.text.split("\n")[:USER_FOLD_HEAD])[: USER_FOLD_CHARS // 4]
        lines, chars = self.text.count("\n") + 1, len(self.text)
        return f"{head}\n… folded: {lines} lines, {chars:,} characters (Enter shows all)"

    def action_toggle_block(self) -> None:
        if self.foldable:
            self.folded = not self.folded
            self.update(self._shown())

    def copy_text(self) -> tuple[str, str]:
        return self.text, "your message"

    def apply(self, changes: ReducerChanges, frame: Frame) -> None:
        """User messages do not change."""

    @property
    def settled(self) -> bool:
        return True

    def detach(self) -> None:
        """Nothing to release."""


def _footer() -> Static:
    """A turn's footer (a cancelled or failed run says so there): hidden until it has words. Shown
    empty at first, it gave the turn a row its layout kept once the footer was hidden (Textual lays
    out a container whose descendant changed once per pass): an empty row under a waiting answer,
    there or not by chance."""
    footer = Static("", classes="turn-footer", markup=False)
    footer.display = False
    return footer


class AssistantTurn(BlankRows, Vertical):
    """One assistant message (message group): its agent tree, projected incrementally."""

    DEFAULT_CSS = """
    AssistantTurn { height: auto; }
    """

    def __init__(self, message: ConversationMessage, pending: set[str]) -> None:
        super().__init__(classes="assistant-turn")
        self.message = message
        self.message_id = message.id
        assert message.reducer is not None
        self.reducer: RunReducer = message.reducer
        self.pending = pending
        self.sections: dict[str, AgentSection] = {}
        self.cards: dict[str, ToolCallCard] = {}
        self.subagents: dict[str, SubAgentSection] = {}
        #: sections with entries left to mount (frame budget ran out, or back-fill)
        self.behind: set[AgentSection] = set()
        self.root: AgentSection | None = None
        self.footer = _footer()
        self._footer_state: tuple[object, ...] | None = None
        self._started = False

    @property
    def live(self) -> bool:
        return self.message.is_streaming

    def compose(self) -> ComposeResult:
        self.root = AgentSection(self, self.reducer.root_id, active=True)
        yield self.root
        yield self.footer

    def on_mount(self) -> None:
        self._started = True
        self._render_footer()

    def rebuild(self) -> None:
        """The tree was replaced (run-sync): draw it again from the reducer."""
        self.reducer = self.message.reducer or self.reducer
        for section in list(self.sections.values()):
            section.detach()
        self.sections.clear()
        self.cards.clear()
        self.subagents.clear()
        self.behind.clear()
        self.remove_children()
        self.root = AgentSection(self, self.reducer.root_id, active=True)
        self.footer = _footer()
        self._footer_state = None
        self.mount_all([self.root, self.footer])
        self.call_after_refresh(self._render_footer)

    def apply(self, changes: ReducerChanges, frame: Frame) -> None:
        if self.message.reducer is not self.reducer or changes.reset:
            self.rebuild()
            return
        reducer = self.reducer
        for agent_id in changes.timeline_appends:
            section = self.sections.get(agent_id)
            if section is not None:
                section.catch_up(frame)
        for seg in changes.segments:
            section = self.sections.get(seg.agent_id)
            if section is not None and seg.index in section.entries:
                section.take_segment_change(seg, reducer, frame)
        for call_id in changes.tool_calls:
            card = self.cards.get(call_id)
            if card is not None:
                tc = reducer.tool_call(call_id)
                if tc is not None:
                    conf = tc.confirmation
                    if card.sync(tc, conf is not None and conf.request_id in self.pending) and conf is not None:
                        frame.new_cards.append(card)
        for agent_id in changes.agents:
            sub = self.subagents.get(agent_id)
            if sub is not None:
                info = agent_info(reducer, agent_id)
                if info is not None:
                    sub.refresh_info(info)
        if changes.run_status or changes.agents:
            self.sync_live()

    def sync_live(self) -> None:
        """Run started/finished: (un)mark the live blocks and redraw the footer."""
        if self.root is not None:
            self.root.set_active(self.live)
            if self.live:
                self.root.active = True
        if not self.live:
            for section in list(self.sections.values()):
                section.end_live()
        for card in list(self.cards.values()):
            card.set_run_active(self.live)  # display_state: loading calls of an ended run
        self._render_footer()

    def refresh_pending(self, changed: set[str]) -> list[ToolCallCard]:
        """Re-sync the cards of tool calls whose confirmation state changed."""
        touched: list[ToolCallCard] = []
        for card in list(self.cards.values()):
            conf = card.tc.confirmation
            if conf is not None and conf.request_id in changed:
                tc = self.reducer.tool_call(card.tool_call_id) or card.tc
                card.sync(tc, conf.request_id in self.pending)
                touched.append(card)
        return touched

    def _render_footer(self) -> None:
        if not self._started:
            return
        info = agent_info(self.reducer, self.reducer.root_id)
        status = self.reducer.status
        state = (status, self.live, info.error if info else None, info.cancellation_reason if info else None)
        if state == self._footer_state:
            return
        self._footer_state = state
        text: Content | None = None
        if status == "cancelled":
            reason = f" ({info.cancellation_reason})" if info and info.cancellation_reason else ""
            text = Content.styled(f"⊘ Cancelled{reason}", "$text-warning italic")
        elif status == "error":
            # an error event is already drawn in the answer ("*Error: …*", as n8n does): say it once
            shown = bool(info and info.error and f"Error: {info.error}" in self.reducer.text())
            detail = f": {info.error}" if info and info.error and not shown else " (see above)" if shown else ""
            text = Content.styled(f"✗ The run failed{detail}", "$text-error")
        self.footer.display = text is not None
        if text is not None:
            self.footer.update(text)

    def catch_up(self, frame: Frame) -> None:
        """Give the frame's remaining budget to the sections that are behind."""
        for section in list(self.behind):
            if frame.budget <= 0:
                return
            if section.is_attached and self.sections.get(section.agent_id) is section:
                section.catch_up(frame)
            else:
                self.behind.discard(section)

    def tick(self) -> None:
        for card in self.cards.values():
            if card.state == "running":
                card.tick()
        for sub in self.subagents.values():
            sub.tick()

    def detach(self) -> None:
        for section in list(self.sections.values()):
            section.detach()

    @property
    def settled(self) -> bool:
        if self.behind or self.root is None or self.root.agent_id not in self.sections:
            return False  # (not composed yet; the root section registers itself when it composes its entries)
        return all(md.settled for section in self.sections.values() for md in section.markdown_blocks())

    def answer_text(self) -> str:
        return self.reducer.text()
