"""``ScreenUpdates``: the screen's side of ``ports.FrameSink`` — what the projection reports, drawn
by the room that owns it (``run_status`` the status line, title, tasks and badge; ``cards`` the
waiting cards; ``connection`` a run another client started). The projection knows none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .connection import show_foreign_user_message

if TYPE_CHECKING:
    from ..protocol.conversation import Conversation, ConversationChanges
    from ..protocol.events import RunFinishEvent
    from .cards import Cards
    from .connection import ConnectionWatcher, ForeignMessageHost
    from .heap import HeapPolicy
    from .run_status import RunStatus
    from .widgets.turns import Frame


class ScreenUpdates:
    """Implements ``ports.FrameSink``. ``idle``: nothing is streaming and the ingest waits (the
    heap settles then)."""

    def __init__(self, ui: ForeignMessageHost, *, run_status: RunStatus, cards: Cards,
                 connection: ConnectionWatcher, heap: HeapPolicy, idle: Callable[[], bool]) -> None:
        self.ui = ui
        self.run_status = run_status
        self.cards = cards
        self.connection = connection
        self.heap = heap
        self.idle = idle
        #: what follows the frame's changes of the open thread (the workflow follower registers here)
        self.followers: list[Callable[[Conversation, ConversationChanges], None]] = []

    def run_started(self, conversation: Conversation, run_id: str) -> None:
        """A run nobody here started (another client): fetch its user message (n8n's
        ``run-start`` carries none)."""
        if self.connection.lacks_user_message(conversation, run_id):
            self.ui.run_worker(show_foreign_user_message(self.ui, conversation, run_id), group="foreign",
                               exit_on_error=False)

    def run_finished(self, event: RunFinishEvent) -> None:
        self.run_status.note_run_finish(event)
        if self.heap.enabled:
            self.ui.set_timer(1.0, self._settle_heap_if_idle)

    def _settle_heap_if_idle(self) -> None:
        if self.idle():
            self.heap.settle(collect_young=True)

    def stream_failed(self, message: str) -> None:
        self.ui.show_error(message)

    def cards_changed(self, conversation: Conversation, frame: Frame) -> None:
        if self.cards.refresh(frame):
            self.run_status.update_tasks(conversation)  # a plan review answered: rejected plans leave

    def focus_new_cards(self) -> None:
        self.cards.focus_new()

    def tasks_changed(self, conversation: Conversation) -> None:
        self.run_status.update_tasks(conversation)

    def title_changed(self, conversation: Conversation) -> None:
        self.run_status.update_title(conversation)

    def messages_changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        self.run_status.update_status_message(conversation, changes)

    def streaming_changed(self, conversation: Conversation) -> None:
        self.run_status.streaming_changed(conversation)

    def run_state(self) -> None:
        self.run_status.update_run_state()

    def new_output(self) -> None:
        self.run_status.show_new_output_badge()

    def changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        for follower in self.followers:
            follower(conversation, changes)
