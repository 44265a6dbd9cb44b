"""Ctrl+F: find text in the open conversation.

``find_matches(conversation, query)`` lists the places ``query`` is found (case-insensitive) in
the messages that contain every word of it — each place of the whole query as written, else of
its first word: your messages, the answers' text and reasoning, tool names, arguments and
results, sub-agents included. The count is of those places. ``FindBar`` is the search field docked over the conversation: typing
searches, Enter (or F3) goes to the next match, Shift+Enter (or Shift+F3) to the previous one,
Esc closes it. It posts ``FindBar.Show(match)``; the app scrolls to the message — loading older
turns first when the match is above the loaded window — and marks it ``-find-hit``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from .. import keymap

if TYPE_CHECKING:
    from ...protocol.conversation import Conversation, ConversationMessage


@dataclass(frozen=True, slots=True)
class FindMatch:
    """One place the query was found: the count and Enter go match by match, not message by
    message (``workflow`` read "2/2" with seven hits on the screen)."""

    message_id: str
    #: where in the conversation (0-based message index), for ordering and for loading older turns
    index: int
    snippet: str
    #: which of the message's matches (0-based)
    occurrence: int = 0


def _searchable(message: ConversationMessage) -> str:
    if message.role == "user":
        return message.content
    reducer = message.reducer
    if reducer is None:
        return message.content
    parts = [reducer.text(), reducer.reasoning()]
    stack: list[dict[str, Any]] = [reducer.tree_dict()]  # wire form: no validation per search
    while stack:
        node = stack.pop()
        for call in node.get("toolCalls") or []:
            parts.append(str(call.get("toolName") or ""))
            for key in ("args", "result"):
                value = call.get(key)
                if value is not None:
                    parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
            if call.get("error"):
                parts.append(str(call["error"]))
        for child in node.get("children") or []:
            parts.append(str(child.get("textContent") or ""))
            stack.append(child)
    return "\n".join(p for p in parts if p)


#: searchable text of finished messages, by message id (a finished message does not change)
_CACHE: dict[str, str] = {}


def searchable_text(message: ConversationMessage) -> str:
    if message.is_streaming:
        return _searchable(message)
    text = _CACHE.get(message.id)
    if text is None:
        if len(_CACHE) > 20_000:
            _CACHE.clear()
        text = _CACHE[message.id] = _searchable(message)
    return text


def _snippet(text: str, word: str, width: int = 60, at: int | None = None) -> str:
    at = text.casefold().find(word) if at is None else at
    start = max(0, at - width // 3)
    piece = " ".join(text[start : start + width].split())
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def find_matches(conversation: Conversation, query: str) -> list[FindMatch]:
    words = query.casefold().split()
    if not words:
        return []
    phrase = " ".join(words)
    found: list[FindMatch] = []
    for index, message in enumerate(conversation.messages):
        text = searchable_text(message)
        folded = text.casefold()
        if not all(word in folded for word in words):
            continue
        # each place of the whole query when it is there as written, else of its first word
        needle = phrase if phrase in folded else words[0]
        at = folded.find(needle)
        occurrence = 0
        while at >= 0:
            found.append(FindMatch(message.id, index, _snippet(text, needle, at=at), occurrence))
            occurrence += 1
            at = folded.find(needle, at + len(needle))
    return found


class FindBar(Horizontal):
    """The search field of Ctrl+F (hidden until then)."""

    KEY_SCOPE = "find"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("find")]
    DEFAULT_CSS = """
    FindBar {
        dock: top;
        height: 3;
        display: none;
        background: $surface;
        &.-open { display: block; }
        Input { width: 1fr; }
        .find-count { width: auto; min-width: 16; padding: 1 1 0 1; color: $text-muted; }
    }
    """
    HELP = """
## Find in the conversation

Type to search your messages, the answers, reasoning and tool calls. **Enter**/**F3** next match,
**Shift+Enter**/**Shift+F3** previous, **Esc** closes. Older turns load when a match is above them.
"""

    @dataclass
    class Show(Message):
        """Go to this match (``None``: no match; clear the mark)."""

        match: FindMatch | None

    @dataclass
    class Closed(Message):
        """The find bar closed (the keys go back to the prompt)."""

    def __init__(self) -> None:
        super().__init__(id="find-bar")
        self.conversation: Conversation | None = None
        self.matches: list[FindMatch] = []
        self.current = -1

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Find in this conversation…", id="find-input")
        yield Static("", classes="find-count", markup=False)

    def open(self, conversation: Conversation | None) -> None:
        self.conversation = conversation
        self.add_class("-open")
        field = self.query_one(Input)
        field.focus()
        if field.value:
            self._search(field.value, keep_position=False)

    def close(self) -> None:
        self.remove_class("-open")
        self.post_message(self.Show(None))
        self.post_message(self.Closed())

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._search(event.value, keep_position=False)

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_next()

    def _search(self, query: str, *, keep_position: bool) -> None:
        self.matches = find_matches(self.conversation, query) if self.conversation is not None else []
        if not self.matches:
            self.current = -1
            self._count("no matches" if query.strip() else "")
            self.post_message(self.Show(None))
            return
        # start from the newest match (the conversation is read from the bottom)
        self.current = len(self.matches) - 1 if not keep_position else min(self.current, len(self.matches) - 1)
        self._go()

    def _go(self) -> None:
        match = self.matches[self.current]
        self._count(f"{self.current + 1}/{len(self.matches)}")
        self.post_message(self.Show(match))

    def _count(self, text: str) -> None:
        self.query_one(".find-count", Static).update(text)

    def action_next(self) -> None:
        if self.matches:
            self.current = (self.current + 1) % len(self.matches)
            self._go()

    def action_previous(self) -> None:
        if self.matches:
            self.current = (self.current - 1) % len(self.matches)
            self._go()

    def action_close(self) -> None:
        self.close()


def matched_widget(view: Any, match: FindMatch) -> Any:
    """The widget of ``match`` in the conversation view, loading older turns until it is mounted."""
    while match.message_id not in view.turns and view.first_index > match.index and view.load_older(keep_position=False):
        pass
    return view.turns.get(match.message_id)
