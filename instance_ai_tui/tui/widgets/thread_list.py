"""The thread sidebar: titles newest first, live title updates, search, new/rename/delete.

Widget
------
``ThreadList(threads=(), *, clock=None, id=None, classes=None)`` - a ``Vertical`` holding a
search ``Input`` (``#thread-search``) over an ``OptionList`` (``#thread-options``, line
virtualised, cheap for thousands of threads). ``KEY_SCOPE = "thread_list"``; its bindings
come from ``keymap.bindings("thread_list")`` (search-threads ``/``, rename-thread ``F2``,
delete-thread ``Del``, threads-back ``Esc``: back to the prompt). No letter acts on a thread: a
printable key typed in the list goes to the search field, visibly (the keyboard model,
``docs/keyboard.md``). ``clock`` returns "now" for the age column (tests pin it).

Data (call these from the app; none of them does I/O):

- ``set_threads(threads)``: the main section (``source="local"``, no header).
- ``set_section(source, threads, *, title=None, read_only=False)``: another section, e.g.
  ``set_section("redis", sessions, title="Redis sessions", read_only=True)``. Sections keep
  the order they were first set in; each shows a header when there is more than one.
  Read-only items are marked ⊡ and cannot be renamed or deleted.
- ``upsert_thread(thread, source="local")``: add or replace one (e.g. after ``create_thread``
  or when ``updated_at`` moved); the list re-sorts newest first.
- ``update_title(thread_id, title) -> bool``: live ``thread-title-updated``.
- ``remove_thread(thread_id, source=None) -> bool``: after a successful delete.
- ``active_thread_id`` (reactive ``str | None``): the open thread, marked ▸ and bold.
- the search field ``#thread-search``: every word must occur in the title or id (case folded,
  ``ThreadInfo.matches``); and threads whose messages match, from ``set_content_matches(query, ids)``,
  the app's answer to ``SearchRequested``. ``visible_thread_ids()``, ``highlighted_thread_id``, ``focus_search()``,
  ``focus_list()``, ``thread(thread_id) -> ThreadInfo | None``, ``label(thread_id)``: the title
  with ``(n)`` when threads of its section share it (the row shows the same).

Messages (``control`` is the ``ThreadList``):

- ``ThreadList.Selected(thread_id, source)``: Enter or click on a thread. ``active_thread_id``
  is set at once; the app then switches.
- ``ThreadList.NewRequested()``: the "+ New thread" row.
- ``ThreadList.RenameRequested(thread_id, title, source)``: after the rename dialog
  (``RenameThreadScreen``, non-empty, at most 255 characters, changed). The list is not
  changed: call ``update_title`` when the rename succeeded.
- ``ThreadList.DeleteRequested(thread_id, source)``: after the confirmation dialog
  (``ConfirmDeleteScreen``: it opens on Cancel; Enter on the Delete button after moving to it,
  or Ctrl+D, deletes — never a letter). Call ``remove_thread`` when done.

Keys inside the search box: typing filters, Down goes to the list, Enter opens the
highlighted thread, Esc clears the search (or, when empty, goes to the list).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList
from textual.widgets.option_list import Option

from ...protocol.safe_text import visible
from .. import keymap
from ..themes.glyphs import GLYPH_ACTIVE, GLYPH_READ_ONLY

if TYPE_CHECKING:  # the wire models load after the app's first frame (start-up time)
    from ...protocol.api import ThreadInfo

__all__ = ["ConfirmDeleteScreen", "RenameThreadScreen", "ThreadList", "format_age"]

LOCAL = "local"
MAX_TITLE = 255
_NEW_OPTION = "new-thread"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def format_age(moment: datetime, now: datetime) -> str:
    """Short age: ``now``, ``5m``, ``3h``, ``2d``, ``Mar 04`` (this year), ``2024-03-04``."""
    moment, now = _aware(moment), _aware(now)
    seconds = (now - moment).total_seconds()
    if seconds < 60:
        return "now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h"
    if seconds < 7 * 86400:
        return f"{int(seconds // 86400)}d"
    if moment.year == now.year:
        return moment.strftime("%b %d")
    return moment.strftime("%Y-%m-%d")


def _visible_thread(thread: ThreadInfo) -> ThreadInfo:
    """A thread as a server sent it, with its title made visible (``protocol.safe_text``)."""
    title = visible(thread.title)
    return thread if title is thread.title else thread.model_copy(update={"title": title})


def _title_of(thread: ThreadInfo) -> str:
    return thread.title.strip() or "Untitled thread"


def _twin_marks(section: _Section) -> dict[str, str]:
    """`` (n)`` for each thread of ``section`` whose title another thread there has too: its rank
    by creation among them (one pass over the section)."""
    by_title: dict[str, list[ThreadInfo]] = {}
    for thread in section.threads.values():
        by_title.setdefault(_title_of(thread).casefold(), []).append(thread)
    marks: dict[str, str] = {}
    for twins in by_title.values():
        if len(twins) > 1:
            twins.sort(key=lambda t: (_aware(t.created_at), t.id))
            marks.update({t.id: f" ({n})" for n, t in enumerate(twins, 1)})
    return marks


@dataclass
class _Section:
    source: str
    title: str | None
    read_only: bool
    threads: dict[str, ThreadInfo] = field(default_factory=dict)

    def ordered(self) -> list[ThreadInfo]:
        return sorted(
            self.threads.values(),
            key=lambda t: (_aware(t.updated_at), _aware(t.created_at)),
            reverse=True,
        )


class _SearchInput(Input):
    KEY_SCOPES = ("thread_search",)
    BINDINGS = keymap.bindings("thread_search")

    def action_leave_to_list(self) -> None:
        parent = self.parent
        if isinstance(parent, ThreadList):
            parent.focus_list()

    def action_clear_or_leave(self) -> None:
        if self.value:
            self.value = ""
        else:
            self.action_leave_to_list()


class RenameThreadScreen(ModalScreen[str | None]):
    """Asks for a new title. Dismisses with the stripped title, or ``None`` when cancelled."""

    DEFAULT_CSS = """
    RenameThreadScreen { align: center middle; }
    RenameThreadScreen > Vertical {
        width: 60; height: auto; padding: 1 2;
        border: round $primary; background: $surface;
    }
    RenameThreadScreen #rename-error { color: $text-error; height: auto; }
    RenameThreadScreen .hint { color: $text-muted; }
    """
    KEY_SCOPES = ("thread_rename",)
    BINDINGS = keymap.bindings("thread_rename")

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Rename thread")
            yield Input(value=self.current, id="rename-input", placeholder="Thread title")
            yield Label("", id="rename-error")
            yield Label("Enter to save · Esc to cancel", classes="hint")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        self.query_one("#rename-input", Input).focus()

    @on(Input.Submitted, "#rename-input")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    def action_save(self) -> None:
        title = self.query_one("#rename-input", Input).value.strip()
        error = self.query_one("#rename-error", Label)
        if not title:
            error.update("✗ The title must not be empty.")
            return
        if len(title) > MAX_TITLE:
            error.update(f"✗ The title is {len(title)} characters long; at most {MAX_TITLE} fit.")
            return
        self.dismiss(title)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmDeleteScreen(ModalScreen[bool]):
    """Asks "Delete thread …?". Focus starts on Cancel; Enter on Delete (after Tab or → to it)
    or Ctrl+D confirms — no letter does; Esc or Enter on Cancel cancels."""

    DEFAULT_CSS = """
    ConfirmDeleteScreen { align: center middle; }
    ConfirmDeleteScreen > Vertical {
        width: 64; max-width: 100%; height: auto; padding: 1 2;
        border: round $error; background: $surface;
    }
    ConfirmDeleteScreen Label { width: 1fr; }
    ConfirmDeleteScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmDeleteScreen Button { margin-right: 2; }
    ConfirmDeleteScreen Button:focus { text-style: bold reverse; }
    ConfirmDeleteScreen .hint { color: $text-muted; margin-top: 1; }
    """
    KEY_SCOPES = ("thread_delete",)
    BINDINGS = keymap.bindings("thread_delete")

    def __init__(self, title: str) -> None:
        super().__init__()
        self.thread_title = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text.assemble("‼ Delete thread ", (self.thread_title, "bold"), "?"))
            yield Label("Its messages and events are removed. This cannot be undone.")
            with Horizontal():
                yield Button("Cancel", id="cancel-delete")
                yield Button(f"Delete ({self._key('delete-confirm')})", variant="error", id="confirm-delete")
            yield Label(f"Enter on a button · Tab or ←/→ moves · {self._key('delete-confirm')} deletes · "
                        f"{self._key('delete-cancel')} cancels", classes="hint")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def _key(self, binding_id: str) -> str:
        km = getattr(self.app, "keys", None)
        keys = km.keys(binding_id) if isinstance(km, keymap.KeyMap) else tuple(keymap.spec(binding_id).keys.split(","))
        return keymap.display_keys(keys[0])

    def on_mount(self) -> None:
        self.query_one("#cancel-delete", Button).focus()

    def on_key(self, event: events.Key) -> None:
        if event.key in ("left", "right"):
            event.stop()
            if event.key == "right":
                self.focus_next()
            else:
                self.focus_previous()

    @on(Button.Pressed, "#confirm-delete")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel-delete")
    def action_cancel(self) -> None:
        self.dismiss(False)


class _ThreadOptions(OptionList):
    """The list's rows; the cursor stops at the first and the last row. (Textual's OptionList goes round:
    one Down too many at the oldest thread went to "+ New thread", and Enter there made a thread.)"""

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_cursor_up(self) -> None:
        self._step(-1)

    def _step(self, direction: int) -> None:
        if self.highlighted is None:
            super().action_cursor_down() if direction > 0 else super().action_cursor_up()
            return
        index = self.highlighted + direction
        while 0 <= index < self.option_count:
            if not self.get_option_at_index(index).disabled:
                self.highlighted = index
                return
            index += direction


@dataclass
class ThreadListMessage(Message):
    """What the thread list asks the app for (``ThreadList.Selected``, ``.SearchRequested``, ...)."""

    thread_list: ThreadList

    @property
    def control(self) -> ThreadList:
        return self.thread_list


class ThreadList(Vertical):
    """The thread sidebar. See the module docstring for the API."""

    KEY_SCOPE = "thread_list"
    BINDINGS = keymap.bindings("thread_list")

    DEFAULT_CSS = """
    ThreadList { width: 34; height: 1fr; }
    ThreadList > #thread-search { margin: 0 0 1 0; }
    ThreadList > #thread-options { height: 1fr; border: none; padding: 0; }
    """

    active_thread_id: reactive[str | None] = reactive(None, init=False)

    @dataclass
    class Selected(ThreadListMessage):
        thread_id: str
        source: str

    @dataclass
    class SearchRequested(ThreadListMessage):
        """The search text changed: the app may search message text (``set_content_matches``)."""

        text: str

    @dataclass
    class NewRequested(ThreadListMessage):
        pass

    @dataclass
    class RenameRequested(ThreadListMessage):
        thread_id: str
        title: str
        source: str

    @dataclass
    class DeleteRequested(ThreadListMessage):
        thread_id: str
        source: str

    def __init__(
        self,
        threads: Iterable[ThreadInfo] = (),
        *,
        clock: Callable[[], datetime] | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._sections: dict[str, _Section] = {LOCAL: _Section(LOCAL, None, False)}
        self._targets: dict[str, tuple[str, str]] = {}  # option id -> (source, thread id)
        self._filter = ""
        #: threads whose messages match the search ``_content_query`` (full text, from the client)
        self._content_query = ""
        self._content_ids: set[str] = set()
        self._ready = False  # children composed and mounted
        #: a thread is on screen before the threads are listed (``expect_threads``)
        self._expecting = False
        #: thread id -> answers waiting in it (a marker on its row: glyph and word)
        self._pending: dict[str, int] = {}
        #: `` (n)`` of the threads whose title others share, by section (``_twin_marks``)
        self._twin_marks: dict[str, dict[str, str]] = {}
        for thread in threads:
            self._sections[LOCAL].threads[thread.id] = _visible_thread(thread)

    def compose(self) -> ComposeResult:
        yield _SearchInput(placeholder="Search threads  /", id="thread-search", select_on_focus=False)
        yield _ThreadOptions(id="thread-options")

    def on_mount(self) -> None:
        self._ready = True
        self._rebuild()

    # ----------------------------------------------------------------- data
    def set_threads(self, threads: Iterable[ThreadInfo]) -> None:
        self.set_section(LOCAL, threads)

    def expect_threads(self) -> None:
        """The first frame shows the last thread kept from the previous run (``tui.screen_cache``)
        before the threads are read: until they are (``set_threads``), the list says so, not
        "No threads yet" beside a thread on screen."""
        self._expecting = True
        self._rebuild()

    def set_section(
        self,
        source: str,
        threads: Iterable[ThreadInfo],
        *,
        title: str | None = None,
        read_only: bool = False,
    ) -> None:
        section = self._sections.get(source)
        if section is None:
            section = self._sections[source] = _Section(source, title, read_only)
        else:
            section.title = title if title is not None else section.title
            section.read_only = read_only
        section.threads = {thread.id: _visible_thread(thread) for thread in threads}
        if source == LOCAL:
            self._expecting = False
        self._rebuild()

    def upsert_thread(self, thread: ThreadInfo, source: str = LOCAL) -> None:
        section = self._sections.get(source)
        if section is None:
            section = self._sections[source] = _Section(source, source, False)
        section.threads[thread.id] = _visible_thread(thread)
        self._rebuild()

    def update_title(self, thread_id: str, title: str) -> bool:
        changed = False
        title = visible(title)
        for section in self._sections.values():
            thread = section.threads.get(thread_id)
            if thread is not None and thread.title != title:
                section.threads[thread_id] = thread.model_copy(update={"title": title})
                changed = True
        if changed:
            self._rebuild()
        return changed

    def remove_thread(self, thread_id: str, source: str | None = None) -> bool:
        removed = False
        for key, section in self._sections.items():
            if (source is None or key == source) and section.threads.pop(thread_id, None) is not None:
                removed = True
        if removed:
            if self.active_thread_id == thread_id:
                self.active_thread_id = None
            self._rebuild()
        return removed

    def thread(self, thread_id: str) -> ThreadInfo | None:
        for section in self._sections.values():
            if thread_id in section.threads:
                return section.threads[thread_id]
        return None

    # ----------------------------------------------------------------- search
    def _matches(self, thread: ThreadInfo) -> bool:
        return thread.matches(self._filter) or self._content_matches(thread)

    def _content_matches(self, thread: ThreadInfo) -> bool:
        return bool(self._filter.strip()) and self._content_query == self._filter and thread.id in self._content_ids

    def set_content_matches(self, query: str, thread_ids: Iterable[str]) -> None:
        """Threads whose messages match ``query`` (an answer to ``SearchRequested``); ignored
        when the search has changed since. They are listed with an "in messages" mark."""
        if query != self._filter:
            return
        self._content_query = query
        self._content_ids = set(thread_ids)
        self._rebuild()

    def visible_thread_ids(self) -> list[str]:
        return [thread_id for _source, thread_id in self._targets.values()]

    @property
    def highlighted_thread_id(self) -> str | None:
        if not self._ready:
            return None
        option = self.query_one("#thread-options", OptionList).highlighted_option
        if option is None or option.id not in self._targets:
            return None
        return self._targets[option.id][1]

    def set_pending(self, counts: dict[str, int]) -> None:
        """Mark the rows of threads with answers waiting (``{thread_id: count}``)."""
        counts = {k: v for k, v in counts.items() if v}
        if counts != self._pending:
            self._pending = counts
            self._rebuild()

    @property
    def pending_marks(self) -> dict[str, int]:
        return dict(self._pending)

    def row_text(self, thread_id: str, width: int = 60) -> str:
        """The row of ``thread_id`` as plain text (what a screen reader or a test reads)."""
        from rich.console import Console

        for _option, (source, target) in self._targets.items():
            if target == thread_id:
                import io

                out = io.StringIO()
                console = Console(width=width, color_system=None, file=out)
                console.print(self._prompt(self._sections[source].threads[thread_id], self._sections[source],
                                           self._clock()))
                return out.getvalue().strip()
        return ""

    def label(self, thread_id: str) -> str:
        """The thread's title as this list names it: with ``(n)`` — its rank by creation among
        the threads of its section that have the same title — when it has twins, so that
        "1 in “Data workflow”, 1 in “Data workflow”" cannot happen ("Untitled thread" when it
        has no title, "" when the list does not know it)."""
        for section in self._sections.values():
            thread = section.threads.get(thread_id)
            if thread is not None:
                return _title_of(thread) + self._twin_mark(thread, section)
        return ""

    def _twin_mark(self, thread: ThreadInfo, section: _Section) -> str:
        marks = self._twin_marks.get(section.source)
        if marks is None:  # (forgotten at each change of the threads: ``_changed``)
            marks = self._twin_marks[section.source] = _twin_marks(section)
        return marks.get(thread.id, "")

    def local_threads(self) -> list[ThreadInfo]:
        """This client's threads, newest first (what the pending watch asks about)."""
        return self._sections[LOCAL].ordered()

    def focus_search(self) -> None:
        self.query_one("#thread-search", Input).focus()

    def focus_list(self) -> None:
        self.query_one("#thread-options", OptionList).focus()

    # ----------------------------------------------------------------- rendering
    def _prompt(self, thread: ThreadInfo, section: _Section, now: datetime) -> Table:
        active = thread.id == self.active_thread_id
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(f"{GLYPH_ACTIVE} " if active else "  ", style="bold" if active else "")
        waiting = self._pending.get(thread.id, 0)
        if waiting:  # first, so a long title cannot push it out of sight
            title.append(f"◷ {waiting} waiting · " if waiting > 1 else "◷ waiting · ", style="bold yellow")
        title.append(_title_of(thread), style="bold" if active else "")
        if section.read_only:
            title.append(f" {GLYPH_READ_ONLY}", style="dim")

        if self._filter.strip() and not thread.matches(self._filter):
            title.append(" · in messages", style="dim italic")
        twin = self._twin_mark(thread, section).strip()
        if not twin:
            grid = Table.grid(expand=True, padding=(0, 0, 0, 1))
            grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
            grid.add_column(justify="right", no_wrap=True, style="dim")
            grid.add_row(title, format_age(thread.updated_at, now))
            return grid
        # a twin's number in a column of its own: a title cut at the list's width keeps what tells
        # it from its twins ("Data w… (1)", where both rows read "Data workf…" at 27 columns). The
        # title's column alone gives way (the others cannot wrap); a blank column takes the rest
        grid = Table.grid(expand=True, padding=(0, 0, 0, 1))
        grid.add_column(overflow="ellipsis")
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(ratio=1, no_wrap=True)
        grid.add_column(justify="right", no_wrap=True, style="dim")
        grid.add_row(title, twin, "", format_age(thread.updated_at, now))
        return grid

    def _rebuild(self, *, highlight_first: bool = False) -> None:
        self._twin_marks.clear()  # (every change of the threads comes through here)
        if not self._ready:
            return
        found = self.query("#thread-options").results(OptionList)
        options_widget = next(found, None)
        if options_widget is None:
            return  # being torn down (the app is closing): a late title update has nowhere to go
        keep = None if highlight_first else self.highlighted_thread_id
        now = self._clock()
        options: list[Option] = [Option(Text("+ New thread", style="bold"), id=_NEW_OPTION)]
        self._targets = {}
        sections = [s for s in self._sections.values() if s.threads or s.source != LOCAL]
        show_headers = len(sections) > 1 or any(s.source != LOCAL for s in sections)
        total_visible = 0
        for section in sections:
            visible = [thread for thread in section.ordered() if self._matches(thread)]
            if show_headers:
                header = section.title or ("Threads" if section.source == LOCAL else section.source)
                suffix = " (read-only)" if section.read_only else ""
                options.append(Option(Text(f"{header}{suffix}", style="bold underline"), disabled=True))
            for thread in visible:
                option_id = f"t{len(self._targets)}"
                self._targets[option_id] = (section.source, thread.id)
                options.append(Option(self._prompt(thread, section, now), id=option_id))
            total_visible += len(visible)
        if total_visible == 0:
            if self._filter.strip():
                message = f"No threads match {self._filter!r}"
            else:
                message = "Reading the threads…" if self._expecting else "No threads yet"
            options.append(Option(Text(message, style="dim italic"), disabled=True))
        options_widget.set_options(options)
        target = keep if keep is not None and keep in self.visible_thread_ids() else None
        if target is None and (highlight_first or keep is None):
            target = self.active_thread_id if not self._filter and self.active_thread_id else None
            if target is None and self._targets:
                target = next(iter(self._targets.values()))[1]
        if target is not None:
            for option_id, (_source, thread_id) in self._targets.items():
                if thread_id == target:
                    options_widget.highlighted = options_widget.get_option_index(option_id)
                    break
        elif not self._targets:
            options_widget.highlighted = 0  # the "New thread" row

    def watch_active_thread_id(self, _old: str | None, _new: str | None) -> None:
        self._rebuild()

    # ----------------------------------------------------------------- events
    def on_key(self, event: events.Key) -> None:
        """A printable key typed in the list goes to the search field (shown, focused): letters
        never act on a thread. Keys the key map binds here (``/`` search) keep their meaning."""
        character = event.character
        if not event.is_printable or not character or event.key == "enter":
            return
        options = self.query("#thread-options").results(OptionList)
        target = next(options, None)
        if target is None or self.screen.focused is not target:
            return
        km = getattr(self.app, "keys", None)
        for binding in ("search-threads", "rename-thread", "delete-thread"):
            keys = km.keys(binding) if isinstance(km, keymap.KeyMap) else keymap.spec(binding).keys.split(",")
            if event.key in keys:
                return  # bound here on purpose (the key map): it keeps its meaning
        event.stop()
        event.prevent_default()
        search = self.query_one("#thread-search", Input)
        search.focus()
        search.insert_text_at_cursor(character)

    @on(Input.Changed, "#thread-search")
    def _on_search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._filter = event.value
        self._rebuild(highlight_first=True)
        if event.value.strip():
            self.post_message(self.SearchRequested(self, event.value))

    @on(Input.Submitted, "#thread-search")
    def _on_search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        thread_id = self.highlighted_thread_id
        if thread_id is not None:
            self._select(thread_id)

    @on(OptionList.OptionSelected, "#thread-options")
    def _on_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        option_id = event.option.id
        if option_id == _NEW_OPTION:
            self.post_message(self.NewRequested(self))
        elif option_id in self._targets:
            self._select(self._targets[option_id][1])

    def _select(self, thread_id: str) -> None:
        source = self._source_of(thread_id)
        self.active_thread_id = thread_id
        self.post_message(self.Selected(self, thread_id, source))

    def _source_of(self, thread_id: str) -> str:
        for _option, (source, target) in self._targets.items():
            if target == thread_id:
                return source
        for key, section in self._sections.items():
            if thread_id in section.threads:
                return key
        return LOCAL

    def _editable_target(self, verb: str) -> tuple[str, str] | None:
        option = self.query_one("#thread-options", OptionList).highlighted_option
        if option is None or option.id not in self._targets:
            self.notify(f"Highlight a thread to {verb} it.", severity="warning")
            return None
        source, thread_id = self._targets[option.id]
        if self._sections[source].read_only:
            self.notify(f"{self._sections[source].title or source} are read-only.", severity="warning")
            return None
        return source, thread_id

    # ----------------------------------------------------------------- actions
    def action_search_threads(self) -> None:
        self.focus_search()

    def action_rename_thread(self) -> None:
        target = self._editable_target("rename")
        if target is None:
            return
        source, thread_id = target
        thread = self.thread(thread_id)
        current = thread.title if thread is not None else ""

        def done(title: str | None) -> None:
            if title is not None and title != current:
                self.post_message(self.RenameRequested(self, thread_id, title, source))

        self.app.push_screen(RenameThreadScreen(current), done)

    def action_delete_thread(self) -> None:
        target = self._editable_target("delete")
        if target is None:
            return
        source, thread_id = target
        thread = self.thread(thread_id)
        title = _title_of(thread) if thread is not None else thread_id

        def done(confirmed: bool | None) -> None:
            if confirmed:
                self.post_message(self.DeleteRequested(self, thread_id, source))

        self.app.push_screen(ConfirmDeleteScreen(title), done)
