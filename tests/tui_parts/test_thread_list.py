from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from rich.console import Console
from textual.app import App, ComposeResult
from textual.message import Message
from textual.widgets import Input, Label, OptionList

from instance_ai_tui.protocol.api import ThreadInfo
from instance_ai_tui.tui.widgets.thread_list import (
    ConfirmDeleteScreen,
    RenameThreadScreen,
    ThreadList,
    format_age,
)

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)  # the conftest's clock


class ListApp(App[None]):
    def __init__(self, threads: list[ThreadInfo]) -> None:
        super().__init__()
        self.threads = threads
        self.messages: list[Message] = []

    def compose(self) -> ComposeResult:
        yield ThreadList(self.threads, clock=lambda: NOW)

    def on_mount(self) -> None:
        self.query_one("#thread-options").focus()

    def on_thread_list_selected(self, message: ThreadList.Selected) -> None:
        self.messages.append(message)

    def on_thread_list_new_requested(self, message: ThreadList.NewRequested) -> None:
        self.messages.append(message)

    def on_thread_list_rename_requested(self, message: ThreadList.RenameRequested) -> None:
        self.messages.append(message)

    def on_thread_list_delete_requested(self, message: ThreadList.DeleteRequested) -> None:
        self.messages.append(message)


def option_texts(app: App[None]) -> list[str]:
    options = app.query_one("#thread-options", OptionList)
    console = Console(width=50, color_system=None)
    lines = []
    for index in range(options.option_count):
        with console.capture() as capture:
            console.print(options.get_option_at_index(index).prompt)
        lines.append(capture.get().rstrip("\n").rstrip())
    return lines


async def test_newest_first_and_first_thread_highlighted(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        assert thread_list.visible_thread_ids() == ["thread-2", "thread-1", "thread-3", "thread-4"]
        assert thread_list.highlighted_thread_id == "thread-2"
        texts = option_texts(app)
        assert texts[0] == "+ New thread"
        assert texts[1] == "  Build a Slack digest workflow                 3m"
        assert texts[2].endswith(" 1h") and texts[4].endswith(" Mar 22")
        assert texts[3].split() == ["Untitled", "thread", "1d"]
        await pilot.press("down", "enter")
        assert [type(m) for m in app.messages] == [ThreadList.Selected]
        assert app.messages[0].thread_id == "thread-1" and app.messages[0].source == "local"
        assert thread_list.active_thread_id == "thread-1"
        assert option_texts(app)[2].startswith("▸ Fix the failing webhook")


async def test_new_row_posts_new_requested(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        await pilot.press("up", "enter")
        assert [type(m) for m in app.messages] == [ThreadList.NewRequested]


async def test_search_filters_as_you_type(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press("W")
        assert thread_list.visible_thread_ids() == ["thread-2", "thread-1", "thread-4"]
        await pilot.press("space", *"SHEETS")
        assert thread_list.visible_thread_ids() == ["thread-4"]
        assert thread_list.highlighted_thread_id == "thread-4"
        await pilot.press("enter")
        assert app.messages[-1].thread_id == "thread-4"
        await pilot.press(*"zzz")
        assert thread_list.visible_thread_ids() == []
        assert "No threads match 'W SHEETSzzz'" in option_texts(app)
        await pilot.press("escape")  # clears
        assert app.query_one("#thread-search", Input).value == "" and len(thread_list.visible_thread_ids()) == 4
        await pilot.press("escape")  # back to the list
        assert isinstance(app.focused, OptionList)
        app.query_one("#thread-search", Input).value = "thread-3"  # ids match too
        await pilot.pause()
        assert thread_list.visible_thread_ids() == ["thread-3"]


async def test_search_folds_case_as_unicode_does() -> None:
    """"strasse" finds "Straße" and "STRASSE" finds "straße" (str.casefold; str.lower keeps "ß", so
    neither was found when the list lowered). The resume picker and the clients' default search
    share the same ThreadInfo.matches."""
    threads = [ThreadInfo(id=f"t-{n}", title=title, created_at=NOW, updated_at=NOW)
               for n, title in enumerate(["Straße sperren", "straße räumen", "Weather"])]
    app = ListApp(threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        search = app.query_one("#thread-search", Input)
        search.value = "strasse"
        await pilot.pause()
        assert sorted(thread_list.visible_thread_ids()) == ["t-0", "t-1"]
        search.value = "STRASSE SPERREN"
        await pilot.pause()
        assert thread_list.visible_thread_ids() == ["t-0"]
        assert "in messages" not in " ".join(option_texts(app))


async def test_live_title_update_upsert_and_remove(
    sample_threads: list[ThreadInfo], make_thread: Callable[..., ThreadInfo]
) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        await pilot.press("down")  # highlight thread-1
        assert thread_list.update_title("thread-3", "Named by the agent") is True
        assert thread_list.update_title("thread-3", "Named by the agent") is False
        assert thread_list.update_title("missing", "x") is False
        assert "  Named by the agent                            1d" in option_texts(app)
        assert thread_list.highlighted_thread_id == "thread-1"  # kept across rebuilds
        thread_list.upsert_thread(make_thread(5, "Just created", 0))
        assert thread_list.visible_thread_ids()[0] == "thread-5"
        assert thread_list.highlighted_thread_id == "thread-1"
        thread_list.active_thread_id = "thread-1"
        assert thread_list.remove_thread("thread-1") is True
        assert thread_list.active_thread_id is None
        assert "thread-1" not in thread_list.visible_thread_ids()
        assert thread_list.remove_thread("thread-1") is False


async def test_rename_via_dialog(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        await pilot.press("f2")
        assert isinstance(app.screen, RenameThreadScreen)
        field = app.screen.query_one("#rename-input", Input)
        assert field.value == "Build a Slack digest workflow"
        field.value = "   "
        await pilot.press("enter")
        assert isinstance(app.screen, RenameThreadScreen)
        assert "must not be empty" in str(app.screen.query_one("#rename-error", Label).render())
        field.value = "  Daily Slack digest "
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, RenameThreadScreen)
        message = app.messages[-1]
        assert isinstance(message, ThreadList.RenameRequested)
        assert (message.thread_id, message.title, message.source) == ("thread-2", "Daily Slack digest", "local")
        # Esc cancels; an unchanged title posts nothing
        await pilot.press("f2")
        await pilot.press("escape")
        await pilot.press("f2", "enter")
        await pilot.pause()
        assert len(app.messages) == 1


async def test_rename_refuses_overlong_titles(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        await pilot.press("f2")
        app.screen.query_one("#rename-input", Input).value = "x" * 256
        await pilot.press("enter")
        assert "at most 255" in str(app.screen.query_one("#rename-error", Label).render())


async def test_delete_needs_confirmation(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        await pilot.press("delete")
        assert isinstance(app.screen, ConfirmDeleteScreen)
        assert app.focused is app.screen.query_one("#cancel-delete")  # it opens on Cancel
        await pilot.press(*"yesdy")  # no letter confirms (nor goes anywhere else)
        await pilot.press("escape")
        await pilot.pause()
        assert app.messages == [] and not isinstance(app.screen, ConfirmDeleteScreen)
        await pilot.press("delete")
        await pilot.press("enter")  # focus starts on Cancel: Enter does not delete
        await pilot.pause()
        assert app.messages == []
        await pilot.press("delete", "right", "enter")  # moved to Delete on purpose, then Enter
        await pilot.pause()
        message = app.messages[-1]
        assert isinstance(message, ThreadList.DeleteRequested)
        assert (message.thread_id, message.source) == ("thread-2", "local")
        await pilot.press("down", "delete", "ctrl+d")  # or Ctrl+D in the dialog
        await pilot.pause()
        message = app.messages[-1]
        assert isinstance(message, ThreadList.DeleteRequested)
        assert (message.thread_id, message.source) == ("thread-1", "local")


async def test_letters_typed_in_the_list_go_to_its_search(sample_threads: list[ThreadInfo]) -> None:
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        assert isinstance(app.focused, OptionList)
        for char in "daily report":  # d used to open the delete dialog, r the rename dialog
            await pilot.press("space" if char == " " else char)
        await pilot.pause()
        search = app.query_one("#thread-search", Input)
        assert app.messages == []
        assert not isinstance(app.screen, (ConfirmDeleteScreen, RenameThreadScreen))
        assert search.value == "daily report" and app.focused is search
        assert thread_list.visible_thread_ids() == []  # the list follows it: no title has both words


async def test_read_only_section(
    sample_threads: list[ThreadInfo], make_thread: Callable[..., ThreadInfo]
) -> None:
    app = ListApp(sample_threads[:1])
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        thread_list.set_section("redis", [make_thread(9, "n8n chat session", 10)], title="Redis sessions", read_only=True)
        await pilot.pause()
        texts = option_texts(app)
        assert "Threads" in texts and "Redis sessions (read-only)" in texts
        assert "  n8n chat session ⊡                           10m" in texts
        await pilot.press("down", "delete")
        assert not isinstance(app.screen, ConfirmDeleteScreen)
        await pilot.press("f2")
        assert not isinstance(app.screen, RenameThreadScreen)
        await pilot.press("enter")
        assert app.messages[-1].source == "redis" and app.messages[-1].thread_id == "thread-9"


async def test_empty_list() -> None:
    app = ListApp([])
    async with app.run_test():
        assert option_texts(app) == ["+ New thread", "No threads yet"]


def test_format_age() -> None:
    assert format_age(NOW, NOW) == "now"
    assert format_age(NOW - timedelta(minutes=5), NOW) == "5m"
    assert format_age(NOW - timedelta(hours=3), NOW) == "3h"
    assert format_age(NOW - timedelta(days=2), NOW) == "2d"
    assert format_age(NOW - timedelta(days=40), NOW) == "Mar 22"
    assert format_age(NOW - timedelta(days=400), NOW) == "2025-03-27"
    assert format_age(NOW.replace(tzinfo=None) - timedelta(hours=1), NOW) == "1h"  # naive = UTC


async def test_the_cursor_stops_at_the_ends_of_the_list(sample_threads: list[ThreadInfo]) -> None:
    """Seen in tmux: Down, Down, Enter from the newest of two threads made a new thread: the cursor went round
    from the oldest thread to "+ New thread" (Textual's OptionList wraps). It stops at the last and first rows."""
    app = ListApp(sample_threads)
    async with app.run_test() as pilot:
        thread_list = app.query_one(ThreadList)
        await pilot.press(*["down"] * 7)
        assert thread_list.highlighted_thread_id == "thread-4"  # the oldest, and it stays there
        await pilot.press("enter")
        assert [type(m) for m in app.messages] == [ThreadList.Selected] and app.messages[0].thread_id == "thread-4"
        await pilot.press(*["up"] * 7)
        assert app.query_one("#thread-options", OptionList).highlighted == 0  # "+ New thread", not the oldest
