"""``MainScreen``: the app's default screen. It makes its widgets and says in which order they appear.

The first frame shows the thread list, the conversation, the prompt and the status line (and
the demo banner when the settings are known to be the demo's); ``mount_hidden`` adds what is
hidden at start (find bar, new-output badge, n8n activity, connection banner, queue, tasks
panel) right after it, since styling them and reading their CSS would delay it by ~10 ms, or
before the first key or click if one comes sooner (``InstanceAiApp.on_event``). The screen
focuses the prompt as it is composed, so keys typed while the app starts go there.

The rooms reach the widgets through the app (``app.view``, ``app.prompt``... are the screen's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.await_complete import AwaitComplete
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..widgets.conversation_view import ConversationView
from ..widgets.find_bar import FindBar
from ..widgets.n8n_activity import N8nActivity
from ..widgets.prompt import PromptInput
from ..widgets.status_line import StatusInfo, StatusLine
from ..widgets.tasks_panel import TasksPanel
from ..widgets.thread_list import ThreadList

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.widget import Widget

    from ...client.base import Client


class MainScreen(Screen[Any]):
    """The thread list, the conversation, the prompt, the status line and what is hidden at start.

    ``pending``: the cards waiting (shared with ``tui.cards``); ``client``: the n8n panel's (the
    real one replaces the starting one: ``tui.boot.attach``)."""

    #: the prompt has the keys from the start (Textual's default is the first focusable widget,
    #: the thread list's search, until ``on_mount``'s focus has run)
    AUTO_FOCUS = "#prompt"

    def __init__(self, *, status_info: StatusInfo, pending: set[str], client: Client, placeholder: str) -> None:
        super().__init__(id="_default")
        self.status_info = status_info
        self.view = ConversationView(pending, id="conversation")
        self.badge = Static("", id="new-output", markup=False)
        self.find_bar = FindBar()
        self.prompt = PromptInput(placeholder=placeholder, id="prompt")
        self.status_line = StatusLine(status_info, id="status")
        self.tasks_panel = TasksPanel(id="tasks")
        #: n8n's background tasks, setup items, archived workflows, quota banner (``n8n_activity``)
        self.n8n_activity = N8nActivity(client, id="n8n-activity")
        self.thread_list = ThreadList(id="threads")
        #: the widgets hidden at start are mounted (``mount_hidden``)
        self.hidden_mounted = False

    def compose(self) -> ComposeResult:
        """What the first frame shows."""
        yield self.thread_list
        with Vertical(id="main"):
            if self.status_info.demo:
                yield demo_banner()
            yield self.view
            yield self.prompt
            yield self.status_line
        yield Footer()

    def mount_hidden(self, *, banner: Widget, queued_bar: Widget) -> AwaitComplete | None:
        """Mount what is hidden at start (see the module docstring), with the connection's banner
        and queue (``tui.connection``). Once; ``None`` after that."""
        if self.hidden_mounted:
            return None
        self.hidden_mounted = True
        main = self.query_one("#main")
        return AwaitComplete(
            main.mount(self.find_bar, before=self.view),
            main.mount_all([self.badge, self.n8n_activity, banner, queued_bar], before=self.prompt),
            self.mount(self.tasks_panel, after=main),
        )

    def show_demo_banner(self) -> None:
        """Mount the demo banner once the app knows the demo answers (after the settings are read,
        and again once a server by ``--url`` has said which model it runs)."""
        if self.status_info.demo and not self.query("#demo-banner"):
            self.query_one("#main").mount(demo_banner(), before=0)


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
