"""What the status line and the side panels say about the open thread.

The status message of the agent that speaks last, token and cost totals (``run-finish``
``payload.usage`` and the thread's ``metadata.usage``), the task checklist, the side panels
that hide on a narrow terminal, and the "new output below" badge. The frame calls these with
what changed in the model; nothing here reads the client. (The run's state is the open thread's:
``tui.open_thread``; the title is the thread list's too: ``tui.threads``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.content import Content

if TYPE_CHECKING:
    from textual.widgets import Static

    from ..protocol.conversation import Conversation
    from .open_thread import OpenThread
    from .ports import Ui
    from .widgets.conversation_view import ConversationView
    from .widgets.tasks_panel import TasksPanel
    from .widgets.thread_list import ThreadList

#: below this many columns the side panels hide by themselves (the conversation keeps the width)
PANELS_MIN_WIDTH = 100
#: the thread list is shown from the start (and comes back after a narrow spell) from this width
THREADS_MIN_WIDTH = 120


class RunStatus:
    """The status line's message and totals, the tasks panel, the side panels and the badge of the
    thread on screen (``thread``). ``show_tasks``: the settings' ``ui.show_tasks``; ``width``: the
    terminal's width now."""

    def __init__(self, ui: Ui, thread: OpenThread, *, view: ConversationView, badge: Static,
                 tasks_panel: TasksPanel, thread_list: ThreadList, show_tasks: Callable[[], bool],
                 width: Callable[[], int]) -> None:
        self.ui = ui
        self.thread = thread
        self.info = thread.status
        self.view = view
        self.badge = badge
        self.tasks_panel = tasks_panel
        self.thread_list = thread_list
        self.show_tasks = show_tasks
        self.width = width
        self._status_source: tuple[str, str] | None = None
        #: the run the thread's usage total ended with when it was read (``assistant.usage``)
        self._usage_counted_run: str | None = None
        self._user_toggled_tasks = False
        self._narrow = False
        self._threads_auto_hidden = False

    def reset(self) -> None:
        """A thread opens: nothing of the previous one's run or totals is shown."""
        info = self.info
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
            info = self.info
            info.input_tokens += int(usage.get("inputTokens", usage.get("input_tokens", 0)) or 0)
            info.output_tokens += int(usage.get("outputTokens", usage.get("output_tokens", 0)) or 0)
            cost = usage.get("cost")
            if isinstance(cost, (int, float)):
                info.cost = (info.cost or 0.0) + float(cost)
            context = usage.get("contextTokens")
            if isinstance(context, int) and not isinstance(context, bool) and context > 0:
                info.context_tokens = context  # the latest, not a sum: how full the context is now
                window = usage.get("contextWindow")  # the window the runtime knows now (learned, reported)
                if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                    info.context_window = window

    # ----------------------------------------------------------------- run state, title, message
    def update_status_message(self, conversation: Conversation, changes: Any) -> None:
        from .widgets.agent_info import agent_info

        info = self.info
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
        if not conversation.is_streaming:
            self.info.message = ""
            self._status_source = None
            self.update_tasks(conversation)  # a stopped run's unfinished tasks

    # ----------------------------------------------------------------- panels
    def update_tasks(self, conversation: Conversation) -> None:
        from .widgets.tasks_panel import checklist

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
        panel = self.tasks_panel
        panel.set_tasks(tasks, note)
        if not self._user_toggled_tasks:
            wide_enough = self.width() >= PANELS_MIN_WIDTH
            panel.display = bool(tasks is not None and tasks.tasks and self.show_tasks() and wide_enough)

    def toggle_tasks(self) -> None:
        self._user_toggled_tasks = True
        self.tasks_panel.display = not self.tasks_panel.display

    def fit_panels(self, width: int, *, initial: bool = False) -> None:
        """Small terminals keep the conversation: below ``PANELS_MIN_WIDTH`` columns the side
        panels hide by themselves (Ctrl+B / Ctrl+T still open them); the thread list comes back
        by itself at ``THREADS_MIN_WIDTH`` unless the user hid it."""
        narrow = width < PANELS_MIN_WIDTH
        if initial:
            self.thread_list.display = width >= THREADS_MIN_WIDTH
            self._narrow = narrow
            return
        if narrow == self._narrow:
            return
        self._narrow = narrow
        if narrow:
            if self.thread_list.display and not self.thread_list.has_focus_within:
                self.thread_list.display = False
                self._threads_auto_hidden = True
            if self.tasks_panel.display:
                self.tasks_panel.display = False
                self._user_toggled_tasks = False
        else:
            if self._threads_auto_hidden and width >= THREADS_MIN_WIDTH:
                self.thread_list.display = True
                self._threads_auto_hidden = False
            if self.thread.conversation is not None:
                self.update_tasks(self.thread.conversation)

    def show_new_output_badge(self) -> None:
        """After layout: if the user is scrolled up and output landed below, say so."""
        badge = self.badge

        def check() -> None:
            view = self.view
            if view.following or view.scroll_y >= view.max_scroll_y - 1 or badge.display:
                return
            badge.update(
                Content.styled("↓ new output below — press End (or click here) to follow", "bold $text-accent")
            )
            badge.display = True

        self.ui.call_after_refresh(check)


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
