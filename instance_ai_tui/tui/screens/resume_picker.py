"""``instance-ai --resume``: pick one of the recent threads, with search, before anything opens.

``ResumePicker(threads)`` is a modal screen that dismisses with the chosen thread's id, or
``None`` for a new thread (Esc, or the "New thread" row). Typing filters by every word of the
query against the title and the id (case-insensitive) at once, and — given the client's
``search_threads`` — the threads whose message text matches too, as the thread list's search does
(listed after the title matches, marked "in messages"); ↑/↓ move, Enter opens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label, OptionList
from textual.widgets.option_list import Option

from ...client.base import ClientError
from ...protocol.api import ThreadInfo
from .. import keymap
from ..deferred import Deferred

#: the id of the "start a new thread" row
NEW_THREAD = "\x00new"


def _age(when: datetime, now: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = max(0, int((now - when).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


class ResumePicker(ModalScreen[str | None]):
    """Recent threads, newest first, filtered as you type."""

    DEFAULT_CSS = """
    ResumePicker { align: center middle; }
    ResumePicker > Vertical {
        width: 90; max-width: 100%; height: auto; max-height: 90%;
        padding: 1 2; border: round $primary; background: $surface;
    }
    ResumePicker OptionList { height: auto; max-height: 20; margin-top: 1; }
    ResumePicker .hint { color: $text-muted; }
    """
    KEY_SCOPES = ("resume",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("resume")]

    #: seconds of no typing before the message text is searched
    SEARCH_DELAY = 0.15

    def __init__(self, threads: list[ThreadInfo],
                 search: Callable[[str], Awaitable[list[ThreadInfo]]] | None = None) -> None:
        super().__init__()
        self.threads = sorted(threads, key=lambda t: t.updated_at, reverse=True)
        self._search_text = search
        #: threads whose messages match the query (not their title), and the query they answer
        self.content_matches: list[ThreadInfo] = []
        self._content_query = ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Resume a thread", classes="title")
            yield Input(placeholder="Search threads…", id="resume-search")
            yield OptionList(id="resume-list")
            yield Label("↑/↓ choose · Enter opens · Esc starts a new thread", classes="hint")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _fill(self, query: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        now = datetime.now(UTC)
        shown = [t for t in self.threads if t.matches(query)]
        for thread in shown:
            label = Text.assemble(
                (thread.title or "Untitled thread", "bold"), "  ", (_age(thread.updated_at, now), "dim")
            )
            options.add_option(Option(label, id=thread.id))
        if query.strip() and query == self._content_query:
            ids = {t.id for t in shown}
            for thread in self.content_matches:
                if thread.id not in ids:
                    label = Text.assemble((thread.title or "Untitled thread", "bold"), "  ",
                                          ("in messages", "italic"), "  ", (_age(thread.updated_at, now), "dim"))
                    options.add_option(Option(label, id=thread.id))
        options.add_option(Option(Text("+ New thread", style="italic"), id=NEW_THREAD))
        options.highlighted = 0

    @on(Input.Changed, "#resume-search")
    def _search(self, event: Input.Changed) -> None:
        self._fill(event.value)
        if self._search_text is not None and event.value.strip():
            self.run_worker(Deferred(self._search_messages, event.value), group="resume-search", exclusive=True,
                            exit_on_error=False)

    async def _search_messages(self, query: str) -> None:
        """The client's search (titles and message text), after a short pause in typing."""
        await asyncio.sleep(self.SEARCH_DELAY)
        assert self._search_text is not None
        try:
            found = await self._search_text(query)
        except ClientError as exc:
            self.notify(f"Searching messages failed: {exc}", severity="warning")
            return
        if self.query_one("#resume-search", Input).value != query:
            return  # typed on meanwhile: that search is on its way
        known = {t.id: t for t in self.threads}
        self.content_matches = [known.get(t.id, t) for t in found]
        self._content_query = query
        self._fill(query)

    @on(Input.Submitted, "#resume-search")
    def action_open(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self._choose(options.get_option_at_index(options.highlighted).id)

    @on(OptionList.OptionSelected, "#resume-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._choose(event.option.id)

    def _choose(self, option_id: str | None) -> None:
        self.dismiss(None if option_id in (None, NEW_THREAD) else option_id)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if options.option_count:
            current = options.highlighted if options.highlighted is not None else 0
            options.highlighted = max(0, min(options.option_count - 1, current + step))

    def action_new_thread(self) -> None:
        self.dismiss(None)
