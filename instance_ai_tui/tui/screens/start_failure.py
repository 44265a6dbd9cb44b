"""The start-failure screen (issue 26): the app cannot start, and says why instead of hanging.

Shown by ``tui.startup`` when the storage cannot open (a corrupt, locked, read-only or too new
database file: ``client.base.StorageError``), when opening the client fails in a way no dialog
can fix, or when ``--thread`` names a thread that does not exist. It names the part, what
happened and the fix (its words come from the error classes: ``store.errors``), and the app
exits with code 2 when it is closed (``cli/tui.py`` prints the same line on the terminal).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from .. import keymap


class StartFailureScreen(Screen[None]):
    """A whole screen: a title, what failed (with the fix) and how to leave. Any of q, Esc,
    Enter or Ctrl+C closes the app with exit code 2."""

    DEFAULT_CSS = """
    StartFailureScreen { align: center middle; }
    StartFailureScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 100%;
                                          border: round $error; padding: 1 2; background: $surface; }
    StartFailureScreen .title { text-style: bold; color: $text-error; margin-bottom: 1; }
    StartFailureScreen .hint { color: $text-muted; margin-top: 1; }
    """

    KEY_SCOPES = ("start_failure",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("start_failure")]

    def __init__(self, title: str, message: str, *, exit_code: int = 2) -> None:
        super().__init__()
        self.title_text = title
        self.message = message
        self.exit_code = exit_code

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Label(self.title_text, classes="title", id="start-failure-title")
            yield Static(self.message, id="start-failure-message", markup=False)
            yield Label("Press q, Esc or Enter to quit.", classes="hint")

    def action_leave(self) -> None:
        self.app.exit(return_code=self.exit_code)


def failure_title(code: str | None) -> str:
    """The screen's title for a failure class (``store.errors`` codes; else a general one)."""
    return {
        "storage_corrupt": "The database is damaged",
        "storage_locked": "The database is in use by another program",
        "storage_read_only": "The database cannot be written",
        "storage_full": "The disk is full",
        "storage_schema": "The database is from a newer version",
        "thread_not_found": "No such thread",
        "startup_failed": "The start-up failed",
    }.get(code or "", "instance-ai cannot start")
