"""The two seams of the TUI's rooms that are not a room themselves, as ``typing.Protocol`` classes.

The rooms (``threads``, ``cards``, ``actions``, ...) are built from their collaborators by the app
(``tui/app.py``, the one composition root): the open thread (``open_thread.OpenThread``), the
widgets they draw on, the other rooms they call. Two of those are the app and the screen, which
a room never imports:

* ``Ui`` — the Textual services a room asks for (workers, timers, screens, notifications): the
  public methods of ``textual.app.App`` it uses, nothing of ours but ``show_error``;
* ``FrameSink`` — what the projection (``tui.projection``) tells the screen happened: a run started
  or finished, the cards, tasks, title, messages or streaming state changed, a frame was drawn,
  new output arrived out of sight, the stream failed. ``screens.main.MainScreen`` is it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual import Logger
    from textual.geometry import Size
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.theme import Theme
    from textual.timer import Timer
    from textual.widget import Widget
    from textual.worker import Worker

    from ..protocol.conversation import Conversation, ConversationChanges
    from ..protocol.events import RunFinishEvent
    from .widgets.turns import Frame


class Ui(Protocol):
    """The Textual services rooms use (``textual.app.App``'s own, public members)."""

    sub_title: str
    theme: str

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def run_worker(self, work: Any, name: str | None = "", group: str = "default", description: str = "",
                   exit_on_error: bool = True, start: bool = True, exclusive: bool = False,
                   thread: bool = False) -> Worker[Any]: ...

    def push_screen_wait(self, screen: Screen[Any]) -> Awaitable[Any]: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def set_timer(self, delay: float, callback: Any = None, *, name: str | None = None,
                  pause: bool = False) -> Timer: ...

    def batch_update(self) -> AbstractContextManager[None]: ...

    def push_screen(self, screen: Screen[Any], callback: Any = None) -> Any: ...

    def exit(self, result: None = None, return_code: int = 0, message: str | None = None) -> None: ...

    def refresh_bindings(self) -> None: ...

    def set_interval(self, interval: float, callback: Any = None, *, name: str | None = None,
                     repeat: int = 0, pause: bool = False) -> Timer: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None: ...

    def search_themes(self) -> None: ...

    @property
    def available_themes(self) -> dict[str, Theme]: ...

    @property
    def is_web(self) -> bool: ...

    @property
    def size(self) -> Size: ...

    @property
    def screen(self) -> Screen[Any]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    @property
    def log(self) -> Logger: ...

    @property
    def focused(self) -> Widget | None: ...

    def show_error(self, message: str) -> None:
        """An error notification (long enough to read)."""
        ...


class FrameSink(Protocol):
    """What the projection tells the screen (``screens.main.MainScreen``)."""

    def run_started(self, conversation: Conversation, run_id: str) -> None:
        """A ``run-start`` was folded (maybe a run another client started)."""

    def run_finished(self, event: RunFinishEvent) -> None:
        """A ``run-finish`` was folded: usage, and the heap settles once idle."""

    def stream_failed(self, message: str) -> None:
        """The open thread's event stream stopped with an error."""

    def changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        """Every frame that changed something (history loaded: ``changes.reset``; tool calls): what
        follows the open thread's messages looks at it (the workflow canvas's follower)."""

    def cards_changed(self, conversation: Conversation, frame: Frame) -> None:
        """The waiting confirmations changed (or the model was reset)."""

    def focus_new_cards(self) -> None:
        """After a frame: new cards are announced (and reached when the focus rule allows)."""

    def tasks_changed(self, conversation: Conversation) -> None: ...

    def title_changed(self, conversation: Conversation) -> None: ...

    def messages_changed(self, conversation: Conversation, changes: ConversationChanges) -> None: ...

    def streaming_changed(self, conversation: Conversation) -> None: ...

    def run_state(self) -> None:
        """Each drawn frame (and every third idle one): the run's state on the status line."""

    def new_output(self) -> None:
        """Output grew below the view while the person reads above: the badge."""
