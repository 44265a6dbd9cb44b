"""The notice line: the app's notifications, in the layout above the status line.

Textual draws a notification as a toast floating over the screen; at 80x24 two of them
covered some 11 rows by 40 columns of the conversation (a card's text included) for seconds,
and at 160x48 the workflow canvas's first row of boxes. On the main screen the toasts are not
drawn (``MainScreen Toast { visibility: hidden }``: Textual still keeps and expires them) and
this line shows them instead, stacked on one line, newest first, a glyph and a word per
severity: it takes its rows from the conversation while a notice is live, so it covers
nothing — no card, no prompt, no canvas. At most ``MAX_ROWS`` rows; a click dismisses them.
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.content import Content
from textual.widgets import Static

from ..textual_internals import live_notifications

#: how often the line looks for expired notifications and ones it was not told of (seconds); the
#: app's ``notify`` has it ``sync`` right after a notification is added
POLL_SECONDS = 0.25
MAX_ROWS = 6
_SEVERITY = {"information": ("ℹ", "$text-success"), "warning": ("⚠", "$text-warning"), "error": ("✗", "$text-error")}


def _message(notification: Any) -> Content:
    text = str(notification.message)
    if getattr(notification, "markup", False):
        try:
            return Content.from_markup(text)
        except Exception:  # noqa: BLE001 - a message that is not valid markup shows as written
            return Content(text)
    return Content(text)


def render_notices(notifications: list[Any]) -> Content:
    """The notifications, newest first, on one line (wrapped when long): glyph, title, message."""
    parts: list[Content | tuple[str, str] | str] = []
    for n, notification in enumerate(reversed(notifications)):
        glyph, style = _SEVERITY.get(notification.severity, _SEVERITY["information"])
        if n:
            parts.append(("  │  ", "$text-muted"))
        parts.append((f"{glyph} ", f"bold {style}"))
        if notification.title:
            parts.append((f"{notification.title}: ", f"bold {style}"))
        parts.append(_message(notification))
    return Content.assemble(*parts)


class NoticeLine(Static):
    """The live notifications on the main screen (see the module docstring)."""

    #: the rule that hides the main screen's toasts is not about this widget's own children
    SCOPED_CSS = False
    DEFAULT_CSS = f"""
    NoticeLine {{
        display: none;
        height: auto;
        max-height: {MAX_ROWS};
        padding: 0 1;
        background: $boost;
        text-overflow: ellipsis;
    }}
    MainScreen Toast {{ visibility: hidden; }}
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self._shown: tuple[int, ...] = ()

    def on_mount(self) -> None:
        self.sync()
        self.set_interval(POLL_SECONDS, self.sync)

    def sync(self) -> None:
        """Show the live notifications (only when they changed)."""
        if not self.is_attached:
            return  # (its ``on_mount`` shows what is live then)
        notes = live_notifications(self.app)
        shown = tuple(id(n) for n in notes)
        if shown == self._shown:
            return
        self._shown = shown
        if notes:
            self.update(render_notices(notes))
        self.display = bool(notes)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.app.clear_notifications()
        self.sync()
