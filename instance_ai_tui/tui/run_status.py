"""What the status line and the side panels say about the open thread.

The run's state (idle, running, cancelling, awaiting approval, error), the status message of
the agent that speaks last, the thread's title, token and cost totals (``run-finish``
``payload.usage`` and the thread's ``metadata.usage``), the task checklist, the side panels
that hide on a narrow terminal, and the "new output below" badge. The frame calls these with
what changed in the model; nothing here reads the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.content import Content

from .ports import Ui

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.widgets import Static

    from ..config import Settings
    from ..protocol.conversation import Conversation
    from .cards import Cards
    from .connection import ConnectionWatcher
    from .widgets.conversation_view import ConversationView
    from .widgets.status_line import StatusInfo
    from .widgets.tasks_panel import TasksPanel
    from .widgets.thread_list import ThreadList

#: below this many columns the side panels hide by themselves (the conversation keeps the width)
PANELS_MIN_WIDTH = 100
#: the thread list is shown from the start (and comes back after a narrow spell) from this width
THREADS_MIN_WIDTH = 120


#: the kinds of request that ask the person for an answer rather than an approval
ANSWER_KINDS = frozenset({"questions", "plan-review", "text"})


class RunStatusHost(Ui, Protocol):
    """What the run's status uses of the app: the panels, the badge, the status line's info."""

    conversation: Conversation | None
    thread_id: str | None
    pending: set[str]
    settings: Settings
    sub_title: str
    status_info: StatusInfo
    view: ConversationView
    badge: Static
    tasks_panel: TasksPanel
    thread_list: ThreadList
    cards: Cards
    connection: ConnectionWatcher

    @property
    def size(self) -> Size: ...

    def refresh_threads_soon(self) -> None: ...


class RunStatus:
    def __init__(self, app: RunStatusHost) -> None:
        self.app = app
        #: a cancel was asked for and the run has not ended yet
        self.cancelling = False
        self._status_source: tuple[str, str] | None = None
        #: the run the thread's usage total ended with when it was read (``assistant.usage``)
        self._usage_counted_run: str | None = None
        self._user_toggled_tasks = False
        self._narrow = False
        self._threads_auto_hidden = False

    def reset(self) -> None:
        """A thread opens: nothing of the previous one's run or totals is shown."""
        info = self.app.status_info
        self.cancelling = False
        self._status_source = None
        info.message = ""
        info.input_tokens = info.output_tokens = 0
        info.cost = None
        info.context_tokens = 0
        self._usage_counted_run = None

    # ----------------------------------------------------------------- usage
    def count_thread_usage(self, usage: Any) -> None:
        """The thread's total as read when it opened (its last run is not counted twice)."""
        self.add_usage(usage)
        if isinstance(usage, dict) and isinstance(usage.get("lastRunId"), str):
            self._usage_counted_run = usage["lastRunId"]  # its run-finish may still arrive: not twice

    def note_run_finish(self, event: Any) -> None:
        """Tokens and cost, when the backend reports them: ``run-finish`` ``payload.usage``."""
        if self._usage_counted_run is not None and event.run_id == self._usage_counted_run:
            return  # already in the thread total read when the thread opened
        extra = getattr(event.payload, "model_extra", None) or {}
        self.add_usage(extra.get("usage"))

    def add_usage(self, usage: Any) -> None:
        """Add ``{inputTokens, outputTokens, cost}`` (a run's, or a thread's metadata) to the
        status line's totals."""
        if isinstance(usage, dict):
            info = self.app.status_info
            info.input_tokens += int(usage.get("inputTokens", usage.get("input_tokens", 0)) or 0)
            info.output_tokens += int(usage.get("outputTokens", usage.get("output_tokens", 0)) or 0)
            cost = usage.get("cost")
            if isinstance(cost, (int, float)):
                info.cost = (info.cost or 0.0) + float(cost)
            context = usage.get("contextTokens")
            if isinstance(context, int) and not isinstance(context, bool) and context > 0:
                info.context_tokens = context  # the latest, not a sum: how full the context is now

    # ----------------------------------------------------------------- run state, title, message
    def update_run_state(self) -> None:
        app = self.app
        conversation = app.conversation
        info = app.status_info
        if conversation is None:
            return
        if app.pending:
            # a question, a plan or a text request asks for an answer, not an approval
            kinds = {p.input_type for rid, p in app.cards.by_id.items() if rid in app.pending}
            state = "awaiting your answer" if kinds and kinds <= ANSWER_KINDS else "awaiting approval"
        elif conversation.is_streaming:
            state = "cancelling" if self.cancelling else "running"
        elif info.run_state in ("awaiting approval", "awaiting your answer") and not conversation.messages:
            state = info.run_state
        else:
            last = next((m for m in reversed(conversation.messages) if m.reducer is not None), None)
            state = "error" if last is not None and last.reducer is not None and last.reducer.status == "error" else "idle"
        info.run_state = state

    def update_title(self, conversation: Conversation) -> None:
        app = self.app
        title = conversation.title or ""
        app.connection.titles.note(app.thread_id, title)
        app.status_info.thread_title = title
        app.sub_title = title
        if app.thread_id is not None:
            app.thread_list.update_title(app.thread_id, title)

    def update_status_message(self, conversation: Conversation, changes: Any) -> None:
        from .widgets.agent_info import agent_info

        info = self.app.status_info
        for message_id, reducer_changes in changes.messages.items():
            if not reducer_changes.agents:
                continue
            msg = conversation.message(message_id)
            if msg is None or msg.reducer is None:
                continue
            for agent_id in reducer_changes.agents:
                agent = agent_info(msg.reducer, agent_id)
                if agent is None:
                    continue
                if agent.status_message:
                    info.message = agent.status_message
                    self._status_source = (message_id, agent_id)
                elif self._status_source == (message_id, agent_id):
                    info.message = ""
                    self._status_source = None

    def streaming_changed(self, conversation: Conversation) -> None:
        app = self.app
        if not conversation.is_streaming:
            self.cancelling = False
            app.status_info.message = ""
            self._status_source = None
            app.refresh_threads_soon()
            self.update_tasks(conversation)  # a stopped run's unfinished tasks
            app.connection.flush_soon()  # a queued message goes now
        app.refresh_bindings()

    # ----------------------------------------------------------------- panels
    def update_tasks(self, conversation: Conversation) -> None:
        from .widgets.tasks_panel import checklist

        app = self.app
        tasks = conversation.latest_tasks
        if tasks is None:
            tasks = tasks_from_history(conversation)
        # a rejected plan is not the checklist; a stopped run's unfinished tasks show stopped
        last = next((m for m in reversed(conversation.messages) if m.reducer is not None), None)
        run_status = None if last is None or last.reducer is None or last.is_streaming else last.reducer.status
        reviews = [call for m in conversation.messages if m.reducer is not None
                   for _agent, call in m.reducer.confirmation_calls()
                   if call.confirmation is not None and call.confirmation.effective_input_type == "plan-review"]
        tasks, note = checklist(tasks, run_status=run_status, plan_reviews=reviews)
        panel = app.tasks_panel
        panel.set_tasks(tasks, note)
        if not self._user_toggled_tasks:
            wide_enough = app.size.width >= PANELS_MIN_WIDTH
            panel.display = bool(tasks is not None and tasks.tasks and app.settings.ui.show_tasks and wide_enough)

    def toggle_tasks(self) -> None:
        self._user_toggled_tasks = True
        self.app.tasks_panel.display = not self.app.tasks_panel.display

    def fit_panels(self, width: int, *, initial: bool = False) -> None:
        """Small terminals keep the conversation: below ``PANELS_MIN_WIDTH`` columns the side
        panels hide by themselves (Ctrl+B / Ctrl+T still open them); the thread list comes back
        by itself at ``THREADS_MIN_WIDTH`` unless the user hid it."""
        app = self.app
        narrow = width < PANELS_MIN_WIDTH
        if initial:
            app.thread_list.display = width >= THREADS_MIN_WIDTH
            self._narrow = narrow
            return
        if narrow == self._narrow:
            return
        self._narrow = narrow
        if narrow:
            if app.thread_list.display and not app.thread_list.has_focus_within:
                app.thread_list.display = False
                self._threads_auto_hidden = True
            if app.tasks_panel.display:
                app.tasks_panel.display = False
                self._user_toggled_tasks = False
        else:
            if self._threads_auto_hidden and width >= THREADS_MIN_WIDTH:
                app.thread_list.display = True
                self._threads_auto_hidden = False
            if app.conversation is not None:
                self.update_tasks(app.conversation)

    def show_new_output_badge(self) -> None:
        """After layout: if the user is scrolled up and output landed below, say so."""
        app = self.app

        def check() -> None:
            view = app.view
            if view.following or view.scroll_y >= view.max_scroll_y - 1 or app.badge.display:
                return
            app.badge.update(
                Content.styled("↓ new output below — press End (or click here) to follow", "bold $text-accent")
            )
            app.badge.display = True

        app.call_after_refresh(check)


def tasks_from_history(conversation: Conversation) -> Any:
    """The newest task list in the restored messages (their root agents' ``tasks``)."""
    from ..protocol.events import TaskList
    from .widgets.agent_info import reducer_root_field

    for msg in reversed(conversation.messages):
        reducer = msg.reducer
        if reducer is None:
            continue
        tasks = reducer_root_field(reducer, "tasks")
        if tasks:
            try:
                return TaskList.model_validate(tasks)
            except ValueError:
                return None
    return None
