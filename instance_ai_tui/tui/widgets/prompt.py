"""The multi-line prompt.

Its keys come from the key map (scope ``input``): ``send`` (Enter) and ``newline``
(Shift+Enter, and Ctrl+J for terminals that cannot tell Shift+Enter from Enter); with
``ui.enter_sends = false`` the app's key map swaps them. Both are priority bindings, so they
run before ``TextArea`` would insert the Enter itself. A priority binding runs as soon as the
app reads the key, while the characters typed just before it may still wait in this widget's
queue (a fast typist, a paste, tmux ``send-keys``); so the actions only post a message to this
widget and do their work when it arrives, after those characters. Up/Down on the first/last line walk
the history of sent prompts; End in an empty prompt jumps the conversation to the newest
output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.binding import BindingType
from textual.message import Message
from textual.strip import Strip
from textual.widgets import TextArea

from .. import commands, keymap

if TYPE_CHECKING:
    from ..mcp_prompts import Completer

#: a paste longer than this many lines (or characters) is folded to a token in the prompt
PASTE_FOLD_LINES = 12
PASTE_FOLD_CHARS = 2000


def normalize_line_ends(text: str) -> str:
    """CRLF and a lone CR become LF (a paste keeps its line breaks whatever their kind)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def fit_placeholder(text: str, width: int) -> str:
    """``text`` on one row of ``width`` cells: whole; else without its parenthesis ("Message Instance AI…
    (Enter sends, …)" -> "Message Instance AI…"); else cut with "…". (Textual wraps a placeholder, and the
    one-row prompt showed its first row, cut mid-phrase.)"""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    short = text.split("  (", 1)[0].rstrip()
    if cell_len(short) <= width:
        return short
    from textual.content import Content

    return Content(short).truncate(max(1, width), ellipsis=True).plain


class PromptInput(TextArea):
    """Where the user types. Posts ``PromptInput.Submitted`` with the text."""

    KEY_SCOPE = "input"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("input")]

    def render_line(self, y: int) -> Strip:
        """Textual's line, except with no room at all for the placeholder: the prompt laid out 0 cells wide
        for a frame (a whole-width panel beside it) made Rich divide the placeholder by a width of 0 and
        the app crashed (``range() arg 3 must not be zero``, seen in CI)."""
        if not self.text and self.placeholder and self.content_size.width <= 0:
            return Strip.blank(self.size.width)
        placeholder = self.placeholder
        if self.text or not placeholder:
            return super().render_line(y)
        fitted = fit_placeholder(str(placeholder), self.content_size.width)
        if fitted == placeholder:
            return super().render_line(y)
        # Textual's placeholder drawing (style, cursor) on the fitted words; what was asked for is kept
        self.set_reactive(TextArea.placeholder, fitted)
        try:
            return super().render_line(y)
        finally:
            self.set_reactive(TextArea.placeholder, placeholder)

    HELP = f"""
## Prompt

Type a message for the agent. **Enter** sends; **Ctrl+J**, or `\\` then **Enter**, starts a
new line in every terminal (**Shift+Enter** too where the terminal reports it) — swapped when
`ui.enter_sends = false`. **Ctrl+C** clears the prompt first, always (with an empty prompt
it stops a running agent). **End** in an empty prompt jumps to the newest output.
**Up/Down** on the first/last line recall earlier prompts. A long paste shows as
`[pasted N lines]` and is sent whole; **Ctrl+O** shows it in full. **Tab** completes
`@server:uri` (an MCP server's resource, sent with the message) and `/mcp__server__prompt`.

Slash commands: {commands.inline_list()}.
"""

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $border-blurred;
        padding: 0 1;
        &:focus { border: tall $border; }
    }
    """

    @dataclass
    class JumpToEnd(Message):
        """End pressed in an empty prompt."""

    @dataclass
    class Page(Message):
        """PageUp (-1) or PageDown (1) in the prompt: the conversation scrolls a page."""

        direction: int

    @dataclass
    class Submitted(Message):
        """Enter (or the send key): ``text`` is to be sent or run as a slash command."""

        prompt: PromptInput
        text: str

        @property
        def control(self) -> PromptInput:
            return self.prompt

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(
            "",
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            highlight_cursor_line=False,
            placeholder=placeholder,
        )
        #: completes ``@server:uri`` and ``/mcp__…`` at the cursor on Tab (``tui.mcp_prompts``)
        self.completer: Completer | None = None
        self.sent_history: list[str] = []
        self._history_index: int | None = None
        #: long pastes, folded to a token in the prompt: token -> the pasted text
        self.pastes: dict[str, str] = {}

    async def _on_paste(self, event: events.Paste) -> None:
        """A long paste becomes one ``[pasted N lines #k]`` token (Ctrl+O shows it in full);
        the text is sent whole. Short pastes are inserted as they are. Line ends are made
        ``\n`` first, whatever the terminal sent (tmux pastes with CR, Windows text has CRLF),
        so the lines stay lines and the label counts them."""
        if self.read_only:
            return
        text = normalize_line_ends(event.text)
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)  # a last line break ends a line
        event.prevent_default()
        event.stop()
        if lines <= PASTE_FOLD_LINES and len(text) <= PASTE_FOLD_CHARS:
            if result := self._replace_via_keyboard(text, *self.selection):
                self.move_cursor(result.end_location)
            return
        token = f"[pasted {lines} lines #{len(self.pastes) + 1}]"
        self.pastes[token] = text
        if result := self._replace_via_keyboard(token, *self.selection):
            self.move_cursor(result.end_location)

    def expanded_text(self) -> str:
        """The prompt's text with every paste token replaced by what was pasted."""
        text = self.text
        for token, pasted in self.pastes.items():
            text = text.replace(token, pasted)
        return text

    def action_expand_pastes(self) -> None:
        if self.pastes:
            text = self.expanded_text()
            self.pastes.clear()
            self.load_text(text)
            self.move_cursor(self.document.end)

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "tab" and self.completer is not None and await self._complete():
            event.stop()
            event.prevent_default()
            return
        if key in ("up", "down") and self._walk_history(key):
            event.stop()
            event.prevent_default()
            return
        if key == "end" and not self.text:
            event.stop()
            event.prevent_default()
            self.post_message(self.JumpToEnd())
        # anything else: TextArea's own key handler runs next (handlers run along the MRO)

    async def _complete(self) -> bool:
        """Tab on ``@server:uri`` or ``/mcp__…``: complete it (several matches: said, Tab again the
        next). False: nothing to complete here (Tab moves the focus as usual)."""
        assert self.completer is not None
        row, column = self.cursor_location
        completion = await self.completer.complete(self.document.get_line(row), column)
        if completion is None:
            return False
        result = self._replace_via_keyboard(completion.text, (row, completion.start), (row, column))
        if result is not None:
            self.move_cursor(result.end_location)
        if len(completion.matches) > 1:
            from ..mcp_prompts import said

            self.notify(said(completion.matches), timeout=4)
        return True

    @dataclass
    class _Queued(Message):
        """A key action, queued behind the keys that came before it."""

        action: str

    def action_page(self, direction: int) -> None:
        self.post_message(self.Page(direction))

    def action_send(self) -> None:
        self.post_message(self._Queued("send"))

    def action_newline(self) -> None:
        self.post_message(self._Queued("newline"))

    @on(_Queued)
    def _run_queued(self, message: _Queued) -> None:
        message.stop()
        if message.action == "send":
            if self._continued_line():
                return
            self.submit()
        else:
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)

    def _continued_line(self) -> bool:
        """``\\`` + Enter starts a new line in any terminal (as in a shell): the backslash
        right before the cursor becomes the line break instead of sending."""
        start, end = self.selection
        if start != end:
            return False
        row, column = end
        line = self.document.get_line(row)
        if column == 0 or line[column - 1] != "\\":
            return False
        self._replace_via_keyboard("\n", (row, column - 1), end)
        return True

    def submit(self) -> None:
        text = self.expanded_text()
        if not text.strip():
            return
        self.pastes.clear()
        if not self.sent_history or self.sent_history[-1] != text:
            self.sent_history.append(text)
        self._history_index = None
        self.clear()
        self.post_message(self.Submitted(self, text))

    def _walk_history(self, key: str) -> bool:
        """Recall history when the cursor is on the first (up) / last (down) line."""
        if not self.sent_history:
            return False
        row, _ = self.cursor_location
        if key == "up":
            if row != 0 or (self.text and self._history_index is None):
                return False
            index = len(self.sent_history) - 1 if self._history_index is None else max(0, self._history_index - 1)
        else:
            if self._history_index is None or row != self.document.line_count - 1:
                return False
            index = self._history_index + 1
            if index >= len(self.sent_history):
                self._history_index = None
                self.clear()
                return True
        self._history_index = index
        self.load_text(self.sent_history[index])
        self.move_cursor(self.document.end)
        return True
