"""The scrolling conversation: a bounded window over the thread's messages.

Only the newest messages are mounted when a thread opens: at most ``TAIL`` of them and no
more than ``TAIL_COST`` (a cost per message that grows with its timeline, so one long agent
turn counts like many short ones). Scrolling to the top (or Enter/click on the "earlier
messages" line) mounts ``BATCH`` older ones. While the user follows the bottom, messages
beyond ``MAX_MOUNTED`` / ``MAX_COST`` are unmounted from the top again.

The view is anchored to the bottom. When the user scrolls up while output streams,
``following`` turns false and the app shows a "new output below" badge; End (or scrolling
back down) re-anchors.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from .. import keymap
from ..textual_internals import BlankRows

if TYPE_CHECKING:
    from ...protocol.conversation import Conversation, ConversationChanges, ConversationMessage
    from .tool_card import ToolCallCard
    from .turns import AssistantTurn, Frame


def message_cost(msg: ConversationMessage) -> int:
    """Mounting cost of a message: about two units per timeline entry it would show."""
    reducer = msg.reducer
    if reducer is None:
        return 1
    return 2 + 2 * min(reducer.timeline_length(reducer.root_id), 40)


def _turns() -> Any:
    """The turn widgets' module (imported on first use: it pulls in Markdown and the cards)."""
    from . import turns

    return turns


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)$")


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced code blocks of ``markdown`` as (language, code); an unclosed last fence
    (text still streaming) counts up to the end."""
    blocks: list[tuple[str, str]] = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, language = match.group("fence"), match.group("info").strip().split(" ")[0]
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if closing and closing.group("fence")[0] == fence[0] and len(closing.group("fence")) >= len(fence) \
                    and not closing.group("info").strip():
                break
            body.append(lines[index])
            index += 1
        blocks.append((language, "\n".join(body)))
        index += 1
    return blocks


class OlderLine(Static, can_focus=True):
    KEY_SCOPES = ("earlier_turns",)
    BINDINGS = keymap.bindings("earlier_turns")

    def action_load(self) -> None:
        self.post_message(ConversationView.LoadOlder())

    def on_click(self) -> None:
        self.post_message(ConversationView.LoadOlder())


class ConversationView(BlankRows, VerticalScroll):
    HELP = """
## Conversation

**End** jumps to the newest output and follows it again · **Home** goes to the top and
loads earlier messages · **Alt+↑/↓** (or **Tab**) move a block cursor through the messages, tool
calls and texts; on a block **Enter** expands it, **c** copies it and **k** copies its code blocks
one at a time · **Ctrl+F** finds text.
"""

    KEY_SCOPE = "conversation"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("conversation")]

    DEFAULT_CSS = """
    ConversationView {
        height: 1fr;
        layout: stream;
        padding: 0 1;
        scrollbar-gutter: stable;
    }
    """

    TAIL = 12
    TAIL_COST = 60
    BATCH = 10
    MAX_MOUNTED = 40
    MAX_COST = 160

    @dataclass
    class LoadOlder(Message):
        """Mount older messages."""

    @dataclass
    class WholeThreadWanted(Message):
        """The user asked for messages older than the page the thread opened with."""

    def __init__(self, pending: set[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pending = pending
        self.conversation: Conversation | None = None
        self.turns: dict[str, Widget] = {}
        self.first_index = 0
        #: the thread opened with its newest page: older messages are on the server
        self.more_on_server = False
        self.following = True
        self.older = OlderLine("", classes="older-line", markup=False)
        self.older.display = False
        self.placeholder = Static("", classes="conversation-empty", markup=False)
        self._loading_older = False
        #: code-block copy: which block of the focused widget was copied last
        self._code_cursor: dict[int, int] = {}
        #: no automatic "load older" before this time (right after a load or a jump)
        self._quiet_until = 0.0

    def compose(self) -> ComposeResult:
        yield self.older
        yield self.placeholder

    def on_mount(self) -> None:
        self.anchor()

    # ------------------------------------------------------------------ building
    def _widget_for(self, msg: ConversationMessage) -> Widget | None:
        from .turns import AssistantTurn, UserMessage

        if msg.role == "user":
            return UserMessage(msg.id, msg.content)
        if msg.reducer is not None:
            return AssistantTurn(msg, self.pending)
        return None

    def set_placeholder(self, text: str | Content) -> None:
        self.placeholder.update(text)

    def load(self, conversation: Conversation) -> None:
        """Show ``conversation`` from scratch: mount its newest messages."""
        for widget in self.turns.values():
            getattr(widget, "detach", lambda: None)()
        # the screen kept from the last quit (``tui.screen_cache``) stays until this thread's turns
        # have mounted and laid out: taken away first, the view showed nothing for a frame or two
        kept = [w for w in self.children if w.has_class("cached-screen")]
        to_remove = [w for w in self.children if w is not self.older and w is not self.placeholder and w not in kept]
        if to_remove:
            self.remove_children(to_remove)
        self.turns = {}
        self.conversation = conversation
        messages = conversation.messages
        self.first_index = self._tail_start(len(messages), self.TAIL, self.TAIL_COST)
        widgets: list[Widget] = []
        for msg in messages[self.first_index :]:
            made = self._widget_for(msg)
            if made is not None:
                self.turns[msg.id] = made
                widgets.append(made)
        self.placeholder.display = not messages
        self._update_older()
        if widgets and kept:
            for widget in widgets:
                widget.display = False
            mounted = self.mount_all(widgets)

            async def reveal() -> None:
                await mounted
                self.call_after_refresh(self._replace_kept, widgets, kept)

            self.call_later(reveal)
        elif widgets:
            self.mount_all(widgets)
        if kept and not widgets:
            self.remove_children(kept)
        self.following = True
        self.anchor()

    def _replace_kept(self, widgets: list[Widget], kept: list[Widget]) -> None:
        """This thread's turns have mounted: they take the place of the kept screen in one update."""
        with self.app.batch_update():
            for widget in widgets:
                if widget.is_attached:
                    widget.display = True
            self.remove_children([w for w in kept if w.is_attached])
            self.anchor()

    def _update_older(self) -> None:
        hidden = self.first_index
        self.older.display = hidden > 0 or self.more_on_server
        if not hidden and self.more_on_server:
            self.older.update(
                Content.styled("▲ earlier messages — Home, or Enter here, to load the whole thread", "italic $text-muted")
            )
        elif hidden:
            self.older.update(
                Content.styled(
                    f"▲ {hidden} earlier message{'s' if hidden != 1 else ''} — scroll up, Home, or Enter here to load",
                    "italic $text-muted",
                )
            )

    # ------------------------------------------------------------------ projection
    def apply(self, changes: ConversationChanges, frame: Frame) -> bool:
        """Project one batch of model changes. Returns True if content was added or grew."""
        conversation = self.conversation
        if conversation is None:
            return False
        if changes.reset:
            self.load(conversation)
            return True
        grew = False
        if changes.added:
            grew = self._mount_added(conversation, set(changes.added))
        if changes.inserted:  # (after the added: the answer a message is put above may be new in this frame)
            grew = self._mount_inserted(conversation, changes.inserted) or grew
        for message_id, reducer_changes in changes.messages.items():
            widget = self.turns.get(message_id)
            if isinstance(widget, _turns().AssistantTurn):
                widget.apply(reducer_changes, frame)
                grew = True
        for message_id in changes.users:  # a user message's text grew (its attachments, read by the server)
            widget = self.turns.get(message_id)
            message = next((m for m in reversed(conversation.messages) if m.id == message_id), None)
            if isinstance(widget, _turns().UserMessage) and message is not None:
                widget.set_text(message.content)
        if changes.streaming:
            for widget in self.turns.values():
                if isinstance(widget, _turns().AssistantTurn):
                    widget.sync_live()
        if self.following:
            self._prune()
        return grew

    def refresh_pending(self, changed: set[str]) -> list[ToolCallCard]:
        cards: list[ToolCallCard] = []
        for widget in self.turns.values():
            if isinstance(widget, _turns().AssistantTurn):
                cards.extend(widget.refresh_pending(changed))
        return cards

    def _mount_inserted(self, conversation: Conversation, inserted: list[str]) -> bool:
        """Mount messages put above an existing one, each right before its neighbour below; the other
        widgets stay (rebuilt, a focused card would lose the focus and the key typed at it). One above
        the mounted window only moves the window's start."""
        messages = conversation.messages
        grew = False
        for message_id in inserted:
            index = next((i for i, m in enumerate(messages) if m.id == message_id), None)
            if index is None or message_id in self.turns:
                continue
            below = self.turns.get(messages[index + 1].id) if index + 1 < len(messages) else None
            if index < self.first_index or (below is None and index + 1 < len(messages)):
                if index <= self.first_index:
                    self.first_index += 1  # the window starts at the same message as before
                continue
            widget = self._widget_for(messages[index])
            if widget is None:
                continue
            self.turns[message_id] = widget
            if below is not None and below.parent is self:
                self.mount(widget, before=below)
            else:
                self.mount(widget)
            grew = True
        return grew

    def _mount_added(self, conversation: Conversation, added: set[str]) -> bool:
        """Mount new messages (they are at the end). While following, keep the window
        bounded: beyond ``MAX_MOUNTED`` the oldest are unmounted (down to
        ``MAX_MOUNTED - BATCH``) and new ones that would fall out at once are never mounted."""
        messages = conversation.messages
        if self.following:
            if len(added) > 2:
                # a burst (a replayed log): like opening the thread, only the newest tail
                keep_from = self._tail_start(len(messages), self.TAIL, self.TAIL_COST)
            elif self._tail_start(len(messages), self.MAX_MOUNTED, self.MAX_COST) > self.first_index:
                keep_from = self._tail_start(len(messages), self.MAX_MOUNTED - self.BATCH, self.MAX_COST // 2)
            else:
                keep_from = self.first_index
            self._unmount_before(keep_from)
        widgets: list[Widget] = []
        for msg in messages[self.first_index :]:
            if msg.id in added and msg.id not in self.turns:
                widget = self._widget_for(msg)
                if widget is not None:
                    self.turns[msg.id] = widget
                    widgets.append(widget)
        if widgets:
            self.placeholder.display = False
            self.mount_all(widgets)
        return bool(widgets)

    def _prune(self) -> None:
        if self.conversation is None:
            return
        count = len(self.conversation.messages)
        if self._tail_start(count, self.MAX_MOUNTED, self.MAX_COST) > self.first_index:
            self._unmount_before(self._tail_start(count, self.MAX_MOUNTED - self.BATCH, self.MAX_COST // 2))

    def _tail_start(self, end: int, count: int, cost: int) -> int:
        """Index of the first message of the newest run of messages (before ``end``) that
        fits in ``count`` messages and ``cost`` units; always at least the last two."""
        assert self.conversation is not None
        messages = self.conversation.messages
        index, total = end, 0
        while index > 0 and end - index < count:
            total += message_cost(messages[index - 1])
            if total > cost and end - index >= 2:
                break
            index -= 1
        return index

    def _unmount_before(self, index: int) -> None:
        """Unmount the messages before position ``index``; they can be loaded again."""
        if self.conversation is None or index <= self.first_index:
            return
        doomed: list[Widget] = []
        for msg in self.conversation.messages[self.first_index : index]:
            widget = self.turns.pop(msg.id, None)
            if widget is not None:
                getattr(widget, "detach", lambda: None)()
                doomed.append(widget)
        self.first_index = index
        if doomed:
            self.remove_children(doomed)
        self._update_older()

    def load_older(self, keep_position: bool = True) -> bool:
        """Mount up to ``BATCH`` older messages above the current first one (and keep what was
        first where it was on screen, unless the caller scrolls somewhere itself)."""
        if self.conversation is None or self.first_index == 0:
            return False
        self._quiet_until = time.monotonic() + 0.4
        messages = self.conversation.messages
        new_first = max(0, self.first_index - self.BATCH)
        anchor_widget = next((self.turns[m.id] for m in messages[self.first_index :] if m.id in self.turns), None)
        widgets: list[Widget] = []
        for msg in messages[new_first : self.first_index]:
            widget = self._widget_for(msg)
            if widget is not None:
                self.turns[msg.id] = widget
                widgets.append(widget)
        self.first_index = new_first
        self._update_older()
        if widgets:
            self.mount_all(widgets, after=self.older)
        if anchor_widget is not None and keep_position:
            self.call_after_refresh(self._keep_in_view, anchor_widget)
        return True

    def _keep_in_view(self, widget: Widget) -> None:
        """After mounting older messages, keep the previously first one where it was."""
        self._quiet_until = time.monotonic() + 0.4
        self.scroll_to_widget(widget, animate=False, top=True, immediate=True)

    def catch_up(self, frame: Frame) -> bool:
        """Let turns that are behind mount more (within the frame budget). True if any was."""
        behind = [t for t in self.assistant_turns() if t.behind]
        for turn in behind:
            turn.catch_up(frame)
        return bool(behind)

    @property
    def behind(self) -> bool:
        return any(t.behind for t in self.assistant_turns())

    def ticks(self) -> None:
        for widget in self.turns.values():
            if isinstance(widget, _turns().AssistantTurn) and widget.live:
                widget.tick()

    @property
    def settled(self) -> bool:
        return all(getattr(w, "settled", True) for w in self.turns.values())

    def assistant_turns(self) -> list[AssistantTurn]:
        """The mounted assistant turns, top to bottom."""
        if self.conversation is None:
            return []
        turns = self.turns
        widgets = (turns.get(m.id) for m in self.conversation.messages[self.first_index :])
        return [w for w in widgets if isinstance(w, _turns().AssistantTurn)]

    # ------------------------------------------------------------------ following
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A block the user moves to stays where it is: following the newest output (which
        scrolls as it grows) stops, so expanding the block keeps its header in view; End
        follows again."""
        from textual.widgets import Button

        if self.following and not isinstance(event.widget, Button) and self.max_scroll_y > 0:
            self.release_anchor()

    def release_anchor(self) -> None:
        super().release_anchor()
        self.following = False

    def on_resize(self, event: events.Resize) -> None:
        """The view got shorter or taller (a notice came or went above the status line, the status
        line took a second row): while it follows, the newest output stays at its bottom. Textual
        keeps an anchored view at the end with the height it had before the resize, for one
        frame; with nothing drawn after it, the last rows stayed hidden under the prompt."""
        if self.following:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value >= self.max_scroll_y and not self.following:
            self.following = True
            self.post_message(self.Followed())
        if (
            new_value <= 0
            and old_value > 0
            and not self.following  # the user scrolled up (a relayout does not count)
            and self.first_index > 0
            and not self._loading_older
            and time.monotonic() >= self._quiet_until
        ):
            self._loading_older = True
            self.call_later(self._load_older_later)

    def _load_older_later(self) -> None:
        self._loading_older = False
        self.load_older()

    @dataclass
    class Followed(Message):
        """The user is at the bottom again."""

    @dataclass
    class CopyWanted(Message):
        """Copy ``text`` (``what`` names it: "the message", "code block 1 of 2"); the app copies it
        and says truthfully where the copy went (``tui.actions``, ``tui.clipboard``)."""

        text: str
        what: str

    def action_scroll_to_end(self) -> None:
        self.follow()

    def action_copy_block(self) -> None:
        """Copy the focused block (message, text, reasoning, tool result, sub-agent result)."""
        node: Any = self.screen.focused
        while node is not None and node is not self:
            copy_text = getattr(node, "copy_text", None)
            if callable(copy_text):
                text, what = copy_text()
                self.post_message(self.CopyWanted(text, what))
                return
            node = node.parent
        self.notify("Focus a block first (Tab), then press the copy key.", severity="warning", timeout=3)

    def action_copy_code(self) -> None:
        """Copy the focused block's code blocks one at a time: the first press the first one,
        the next press the next one (the count says which)."""
        node: Any = self.screen.focused
        while node is not None and node is not self and not callable(getattr(node, "copy_text", None)):
            node = node.parent
        if node is None or node is self:
            self.notify("Focus a block first (Alt+↑/↓ or Tab), then press the key again.", severity="warning")
            return
        text, _what = node.copy_text()
        blocks = code_blocks(text)
        if not blocks:
            self.notify("This block has no code block; c copies all of it.", severity="warning", timeout=3)
            return
        last = self._code_cursor.get(id(node), -1)
        index = (last + 1) % len(blocks)
        self._code_cursor = {id(node): index}
        language, code = blocks[index]
        label = f"code block {index + 1} of {len(blocks)}" + (f" ({language})" if language else "")
        self.post_message(self.CopyWanted(code, label))

    def blocks(self) -> list[Widget]:
        """The focusable blocks of the conversation, top to bottom (no buttons or fields)."""
        from textual.widgets import Button, Input

        return [w for w in self.query("*") if w.focusable and not isinstance(w, (Button, Input)) and w.display]

    def move_block(self, step: int) -> Widget | None:
        """The block cursor: focus the block ``step`` away from the focused one (from the
        bottom, or the top, when focus is elsewhere) and bring its first line into view."""
        blocks = self.blocks()
        if not blocks:
            return None
        node: Any = self.screen.focused
        while node is not None and node not in blocks:
            node = node.parent if node is not self else None
        if node is None:
            target = blocks[-1] if step < 0 else blocks[0]
        else:
            target = blocks[max(0, min(len(blocks) - 1, blocks.index(node) + step))]
        self.following = False
        self.release_anchor()
        target.focus(scroll_visible=False)
        self.scroll_to_widget(target, animate=False, top=False, immediate=True)
        return target

    def follow(self) -> None:
        self.following = True
        self.anchor()
        self.scroll_end(animate=False, immediate=True)
        self.post_message(self.Followed())

    def want_older(self) -> bool:
        """The user asked for older messages: mount the previous batch, or, at the first one
        this page has, ask for the whole thread (``WholeThreadWanted``)."""
        if self.load_older():
            return True
        if self.first_index == 0 and self.more_on_server:
            self.post_message(self.WholeThreadWanted())
        return False

    def action_load_older(self) -> None:
        """Home: load the previous batch and show the top."""
        self.release_anchor()
        self.want_older()
        self.call_after_refresh(self._scroll_home_quietly)

    def _scroll_home_quietly(self) -> None:
        self._quiet_until = time.monotonic() + 0.4
        self.scroll_home(animate=False, immediate=True)

    def on_conversation_view_load_older(self, event: LoadOlder) -> None:
        event.stop()
        self.release_anchor()
        self.want_older()
