"""What the app's screen is made of, and in which order it appears.

The first frame shows the thread list, the conversation, the prompt and the status line (and
the demo banner when the settings are known to be the demo's); ``mount_hidden`` adds what is
hidden at start (find bar, new-output badge, n8n activity, connection banner, queue, tasks
panel) right after it, since styling them and reading their CSS would delay it by ~10 ms, or
before the first key or click if one comes sooner (``InstanceAiApp.on_event``). ``MainScreen``
focuses the prompt as it is composed, so keys typed while the app starts go there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

if TYPE_CHECKING:
    from textual.css.query import DOMQuery
    from textual.widget import AwaitMount, Widget

    from .connection import ConnectionWatcher
    from .widgets.conversation_view import ConversationView
    from .widgets.find_bar import FindBar
    from .widgets.n8n_activity import N8nActivity
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusInfo, StatusLine
    from .widgets.tasks_panel import TasksPanel
    from .widgets.thread_list import ThreadList


class LayoutHost(Protocol):
    """The widgets the screen is made of (created by the app), and where they are mounted."""

    hidden_mounted: bool
    status_info: StatusInfo
    thread_list: ThreadList
    view: ConversationView
    prompt: PromptInput
    status_line: StatusLine
    find_bar: FindBar
    badge: Static
    n8n_activity: N8nActivity
    tasks_panel: TasksPanel
    connection: ConnectionWatcher

    def query_one(self, selector: str) -> Widget: ...

    def query(self, selector: str) -> DOMQuery[Widget]: ...

    def mount(self, *widgets: Widget, before: int | str | Widget | None = None,
              after: int | str | Widget | None = None) -> AwaitMount: ...


class MainScreen(Screen[Any]):
    """The app's screen; it focuses the prompt (Textual's default is the first focusable widget,
    the thread list's search, until ``on_mount``'s focus has run)."""

    AUTO_FOCUS = "#prompt"


def compose(app: LayoutHost) -> ComposeResult:
    """What the first frame shows."""
    yield app.thread_list
    with Vertical(id="main"):
        if app.status_info.demo:
            yield demo_banner()
        yield app.view
        yield app.prompt
        yield app.status_line
    yield Footer()


def mount_hidden(app: LayoutHost) -> AwaitComplete | None:
    """Mount what is hidden at start (see the module docstring). Once; ``None`` after that."""
    if app.hidden_mounted:
        return None
    app.hidden_mounted = True
    main = app.query_one("#main")
    return AwaitComplete(
        main.mount(app.find_bar, before=app.view),
        main.mount_all([app.badge, app.n8n_activity, app.connection.banner, app.connection.queued_bar],
                       before=app.prompt),
        app.mount(app.tasks_panel, after=main),
    )


def demo_banner() -> Horizontal:
    """The offline demo model answers: a banner says so, above the conversation."""
    return Horizontal(
        Static(" DEMO MODE ", classes="demo-label", markup=False),
        Static(
            "offline scripted model — canned answers, a simulated n8n instance; nothing real is changed.",
            classes="demo-text",
            markup=False,
        ),
        id="demo-banner",
    )


def show_demo_banner(app: LayoutHost) -> None:
    """Mount the demo banner once the app knows the demo answers (after the settings are read, and
    again once a server by ``--url`` has said which model it runs)."""
    if app.status_info.demo and not app.query("#demo-banner"):
        app.query_one("#main").mount(demo_banner(), before=0)
