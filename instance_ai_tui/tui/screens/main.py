"""``MainScreen``: the app's default screen. It makes its widgets and says in which order they appear.

The first frame shows the thread list, the conversation, the prompt and the status line (and
the demo banner when the settings are known to be the demo's); ``mount_hidden`` adds what is
hidden at start (find bar, new-output badge, n8n activity, connection banner, queue, notice
line, tasks panel) right after it, since styling them and reading their CSS would delay it by ~10 ms, or
before the first key or click if one comes sooner (``InstanceAiApp.on_event``). The screen
focuses the prompt as it is composed, so keys typed while the app starts go there.

It is also the frame sink (``ports.FrameSink``): what the projection reports after folding and
drawing (a run started or finished, cards, tasks, title, messages, streaming, new output below) goes
to the room that draws it (``connect``), and every frame that changed something goes to the
``followers`` (``changed``): the workflow panel follows the open thread's tool calls that way,
without a timer of its own (``screens.workflow.Workflows`` registers its follower).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.await_complete import AwaitComplete
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..textual_internals import keep_reflow_baseline, split_partial_updates
from ..widgets.conversation_view import ConversationView
from ..widgets.find_bar import FindBar
from ..widgets.key_footer import KeyFooter
from ..widgets.n8n_activity import N8nActivity
from ..widgets.notice_line import NoticeLine
from ..widgets.prompt import PromptInput
from ..widgets.status_line import StatusInfo, StatusLine
from ..widgets.tasks_panel import TasksPanel
from ..widgets.thread_list import ThreadList

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.widget import Widget

    from ...client.base import Client
    from ...protocol.conversation import Conversation, ConversationChanges
    from ...protocol.events import RunFinishEvent
    from ..cards import Cards
    from ..heap import HeapPolicy
    from ..open_thread import OpenThread
    from ..run_status import RunStatus
    from ..threads import Threads
    from ..widgets.turns import Frame


class MainScreen(Screen[Any]):
    """The thread list, the conversation, the prompt, the status line and what is hidden at start.

    ``pending``: the cards waiting (shared with ``tui.cards``); ``client``: the n8n panel's (the
    real one replaces the starting one: ``InstanceAiApp.attach``)."""

    #: the prompt has the keys from the start (Textual's default is the first focusable widget,
    #: the thread list's search, until ``on_mount``'s focus has run)
    AUTO_FOCUS = "#prompt"

    def __init__(self, *, status_info: StatusInfo, pending: set[str], client: Client, placeholder: str) -> None:
        super().__init__(id="_default")
        split_partial_updates(self)  # a footer or title row dirty beside the answer: not the whole screen
        keep_reflow_baseline(self)  # a widget placed between two layouts gets its Resize and its paint
        self.status_info = status_info
        self.view = ConversationView(pending, id="conversation")
        self.badge = Static("", id="new-output", markup=False)
        self.find_bar = FindBar()
        self.prompt = PromptInput(placeholder=placeholder, id="prompt")
        self.status_line = StatusLine(status_info, id="status")
        #: the notifications, in the layout above the status line (never over a card or the canvas)
        self.notices = NoticeLine(id="notices")
        self.tasks_panel = TasksPanel(id="tasks")
        #: n8n's background tasks, setup items, archived workflows, quota banner (``n8n_activity``)
        self.n8n_activity = N8nActivity(client, id="n8n-activity")
        self.thread_list = ThreadList(id="threads")
        #: the widgets hidden at start are mounted (``mount_hidden``)
        self.hidden_mounted = False
        #: what follows each frame's changes of the open thread (``changed``; ``screens.workflow.FrameFollowers``:
        #: the workflow follower registers here)
        self.followers: list[Callable[[Conversation, ConversationChanges], None]] = []
        self._rooms: _Rooms | None = None

    def compose(self) -> ComposeResult:
        """What the first frame shows."""
        yield self.thread_list
        with Vertical(id="main"):
            if self.status_info.demo:
                yield demo_banner()
            yield self.view
            yield self.prompt
            yield self.status_line
        yield KeyFooter()  # fitted to the width (issue 45: at 160 columns its last keys fell off)

    def on_screen_suspend(self) -> None:
        """A screen on top (a dialog, Textual's command palette): the bottom row shows no keys of this
        screen (the palette has no footer; "⏎ Send the message" showed under it). Hidden, not removed:
        the conversation is not laid out again."""
        for footer in self.query(Footer):
            footer.styles.visibility = "hidden"

    def on_screen_resume(self) -> None:
        for footer in self.query(Footer):
            footer.styles.visibility = "visible"

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
            main.mount(self.notices, before=self.status_line),
            self.mount(self.tasks_panel, after=main),
        )

    def show_demo_banner(self) -> None:
        """The demo banner when the demo answers, none when not: once the settings are read, once a
        server by ``--url`` has said which model it runs, and again after each reconnect."""
        shown = self.query("#demo-banner")
        if self.status_info.demo and not shown:
            self.query_one("#main").mount(demo_banner(), before=0)
        elif not self.status_info.demo and shown:
            shown.remove()


    # ----------------------------------------------------------------- the frame sink
    def connect(self, *, thread: OpenThread, run_status: RunStatus, cards: Cards, threads: Threads,
                heap: HeapPolicy, idle: Callable[[], bool]) -> None:
        """The rooms the frame's news go to. ``idle``: nothing streams and the ingest waits (the heap
        settles then)."""
        self._rooms = _Rooms(thread, run_status, cards, threads, heap, idle)

    def changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        for follower in list(self.followers):
            follower(conversation, changes)

    def run_started(self, conversation: Conversation, run_id: str) -> None:
        """A run nobody here started (another client): fetch its user message (n8n's ``run-start``
        carries none) — unless it is this app's own message, still on its way (``Outbox.sending``)."""
        from ..connection import lacks_user_message, show_foreign_user_message

        rooms = self._room()
        if not rooms.thread.outbox.sending and lacks_user_message(conversation, run_id):
            self.app.run_worker(show_foreign_user_message(rooms.thread, conversation, run_id), group="foreign",
                                exit_on_error=False)

    def run_finished(self, event: RunFinishEvent) -> None:
        rooms = self._room()
        rooms.run_status.note_run_finish(event)
        if rooms.heap.enabled:
            self.set_timer(1.0, self._settle_heap_if_idle)

    def _settle_heap_if_idle(self) -> None:
        rooms = self._room()
        if rooms.idle():
            rooms.heap.settle(collect_young=True)

    def stream_failed(self, message: str) -> None:
        self.notify(message, severity="error", timeout=10)

    def cards_changed(self, conversation: Conversation, frame: Frame) -> None:
        rooms = self._room()
        if rooms.cards.refresh(frame):
            rooms.run_status.update_tasks(conversation)  # a plan review answered: rejected plans leave

    def focus_new_cards(self) -> None:
        self._room().cards.focus_new()

    def tasks_changed(self, conversation: Conversation) -> None:
        self._room().run_status.update_tasks(conversation)

    def title_changed(self, conversation: Conversation) -> None:
        self._room().threads.show_title(conversation)

    def messages_changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        self._room().run_status.update_status_message(conversation, changes)

    def streaming_changed(self, conversation: Conversation) -> None:
        rooms = self._room()
        rooms.run_status.streaming_changed(conversation)
        if not conversation.is_streaming:
            rooms.threads.refresh_soon()
            rooms.thread.outbox.flush_soon()  # a queued message goes now
        self.app.refresh_bindings()

    def run_state(self) -> None:
        self._room().thread.refresh_run_state()

    def new_output(self) -> None:
        self._room().run_status.show_new_output_badge()

    def _room(self) -> _Rooms:
        assert self._rooms is not None, "MainScreen.connect first"
        return self._rooms


class _Rooms:
    """The rooms ``MainScreen.connect`` was given."""

    __slots__ = ("cards", "heap", "idle", "run_status", "thread", "threads")

    def __init__(self, thread: OpenThread, run_status: RunStatus, cards: Cards, threads: Threads, heap: HeapPolicy,
                 idle: Callable[[], bool]) -> None:
        self.thread = thread
        self.run_status = run_status
        self.cards = cards
        self.threads = threads
        self.heap = heap
        self.idle = idle


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
