"""The app's side of a connection that comes and goes (issue 13), kept out of ``app.py``.

* ``ConnectionWatcher`` follows the client's state: a banner says why the app cannot send and
  what to do; after a reconnect it reads the thread's status and settles any run that ended
  while the app was away ("interrupted by a server restart" when the server has no record of
  its end).
* ``SendQueue`` / ``QueuedBar``: a message sent while the agent works (or while the app
  reconnects) waits in a visible queue; it can be taken back into the prompt to edit, or
  removed, and is sent when the run ends (or the connection is back).
* ``TitleGuard``: a title received by event is never replaced by an older thread-list answer.
* ``show_foreign_user_message``: a run started by another client gets its user message from
  the thread's history.

Everything here sees only a ``Client`` (layer rule) and the app's public attributes.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from textual import events
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Static

from ..client.base import ClientError, ConnectionState, StreamItem
from . import keymap
from .ports import Ui

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.api import ThreadInfo, ThreadStatus
    from ..protocol.conversation import Conversation


class ForeignMessageHost(Ui, Protocol):
    """What ``show_foreign_user_message`` reads: the open thread and the client."""

    client: Client
    thread_id: str | None
    conversation: Conversation | None


class ConnectionHost(ForeignMessageHost, Protocol):
    """What the connection watcher uses of the app."""

    def set_connection(self, state: str, detail: str) -> None: ...

    async def send_message(self, text: str) -> str | None: ...

    def refresh_threads_soon(self) -> None: ...

    def refresh_after_settle(self) -> None: ...

#: the reason shown on a run whose end the server never recorded
INTERRUPTED_REASON = "interrupted by a server restart"
#: after a reconnect, how long the replay gets to deliver a run's real end before it is settled
SETTLE_DELAY = 0.6
#: the client's reconnect detail, ``(attempt N, next try in Ns)`` (``client.sse.format_wait``)
NEXT_TRY = re.compile(r"next try in (\d+(?:\.\d+)?)s")
UNAUTHORIZED = "unauthorized: check --token"
UNAUTHORIZED_HELP = (
    "unauthorized: check --token — the server refused the token. Quit (Ctrl+Q) and start again with the "
    "right --token (or INSTANCE_AI_TOKEN); nothing can be sent meanwhile."
)


# --------------------------------------------------------------------------- interrupted runs


def settle_interrupted(conversation: Conversation, status: ThreadStatus | None) -> list[str]:
    """End every run the conversation still shows as running when the server says none is.

    Returns the ids of the runs ended. A status of ``None`` (unknown) settles nothing.
    """
    if status is None or status.has_active_run or status.is_suspended:
        return []
    from ..protocol.events import RunFinishEvent, RunFinishPayload

    ended: list[str] = []
    background = {t.message_group_id for t in status.background_tasks if t.status == "running"}
    for msg in list(conversation.messages):
        reducer = msg.reducer
        if reducer is None or not msg.run_id or reducer.status != "active":
            continue
        if msg.message_group_id is not None and msg.message_group_id in background:
            continue  # a background task of this message still runs on the server
        event = RunFinishEvent(
            run_id=msg.run_id,
            agent_id=reducer.root_id,
            payload=RunFinishPayload(status="error", reason=INTERRUPTED_REASON),
        )
        conversation.fold([StreamItem(None, event)])
        ended.append(msg.run_id)
    return ended


# --------------------------------------------------------------------------- titles


class TitleGuard:
    """Remembers titles that came by event, so an older list answer cannot put a stale one back."""

    def __init__(self) -> None:
        self._clock = itertools.count(1)
        self._now = 0
        self._titles: dict[str, tuple[str, int]] = {}

    def note(self, thread_id: str | None, title: str) -> None:
        """A title received by event (or set by the user here)."""
        if thread_id and title:
            self._now = next(self._clock)
            self._titles[thread_id] = (title, self._now)

    def mark(self) -> int:
        """Call before a thread-list request; pass the value to ``fix`` with its answer."""
        self._now = next(self._clock)
        return self._now

    def fix(self, info: ThreadInfo, requested_at: int) -> ThreadInfo:
        """``info`` with the event title if that title arrived after the request was sent."""
        known = self._titles.get(info.id)
        if known is None or known[1] < requested_at or known[0] == info.title:
            return info
        return info.model_copy(update={"title": known[0]})


# --------------------------------------------------------------------------- queue


@dataclass
class QueuedMessage:
    id: int
    thread_id: str | None
    text: str


@dataclass
class SendQueue:
    """Messages waiting for the run to end (or for the connection to come back)."""

    items: list[QueuedMessage] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, thread_id: str | None, text: str) -> QueuedMessage:
        item = QueuedMessage(next(self._ids), thread_id, text)
        self.items.append(item)
        return item

    def remove(self, item_id: int) -> QueuedMessage | None:
        for index, item in enumerate(self.items):
            if item.id == item_id:
                return self.items.pop(index)
        return None

    def pop_for(self, thread_id: str | None) -> QueuedMessage | None:
        for index, item in enumerate(self.items):
            if item.thread_id == thread_id:
                return self.items.pop(index)
        return None

    def of(self, thread_id: str | None) -> list[QueuedMessage]:
        return [item for item in self.items if item.thread_id == thread_id]


@dataclass
class QueuedRowMessage(Message):
    """What a queued row asks for ``item_id`` (``QueuedRow.Edit``, ``QueuedRow.Remove``)."""

    item_id: int


class QueuedRow(Horizontal, can_focus=True):
    """One queued message: Enter or E takes it back into the prompt, Delete or X removes it."""

    KEY_SCOPE = "queued"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("queued")]

    @dataclass
    class Edit(QueuedRowMessage):
        """Take the queued message back into the prompt."""

    @dataclass
    class Remove(QueuedRowMessage):
        """Drop the queued message."""

    def __init__(self, item: QueuedMessage) -> None:
        super().__init__(classes="queued-row")
        self.item_id = item.id
        self.text = item.text

    def compose(self) -> Any:
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        more = " …" if len(self.text.strip().splitlines()) > 1 or len(first) > 200 else ""
        yield Static(f"⏳ queued: {first[:200]}{more}", classes="queued-text", markup=False)
        yield Static(" [e] edit  [x] remove", classes="queued-keys", markup=False)

    def action_edit(self) -> None:
        self.post_message(self.Edit(self.item_id))

    def action_remove(self) -> None:
        self.post_message(self.Remove(self.item_id))

    def on_click(self, event: events.Click) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and "queued-keys" in widget.classes:
            x = event.x - widget.region.x if hasattr(widget, "region") else event.x
            self.post_message(self.Remove(self.item_id) if x >= 9 else self.Edit(self.item_id))


class QueuedBar(Static):
    """The queued messages of the open thread, above the prompt (hidden when there are none)."""

    DEFAULT_CSS = """
    QueuedBar { height: auto; max-height: 6; display: none; }
    QueuedBar .queued-row { height: 1; }
    QueuedBar .queued-row:focus { background: $boost; }
    QueuedBar .queued-text { width: 1fr; color: $text-warning; }
    QueuedBar .queued-keys { width: auto; color: $text-muted; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)

    async def show(self, items: list[QueuedMessage]) -> None:
        await self.remove_children()
        if items:
            await self.mount_all([QueuedRow(item) for item in items])
        self.display = bool(items)


class Banner(Static):
    """Why the app cannot send right now and what to do (hidden when it can)."""

    DEFAULT_CSS = """
    Banner { height: auto; display: none; padding: 0 1; color: $text-warning; background: $warning 10%; }
    Banner.-error { color: $text-error; background: $error 10%; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.message = ""

    def say(self, message: str, *, error: bool = False) -> None:
        self.message = message
        self.set_class(error, "-error")
        self.update(message)
        self.display = bool(message)


# --------------------------------------------------------------------------- the watcher


class ConnectionWatcher:
    """Follows the client's connection state for ``app`` (see the module docstring)."""

    def __init__(self, app: ConnectionHost, *, settle_delay: float = SETTLE_DELAY) -> None:
        self.app = app
        self.settle_delay = settle_delay
        self.banner = Banner(id="connection-banner")
        self.queue = SendQueue()
        self.queued_bar = QueuedBar(id="queued")
        self.titles = TitleGuard()
        #: why sending is refused (no model, not logged in, refused token); "" = it is not
        self.blocked = ""
        self._was_away = False
        self._resync_task: asyncio.Task[None] | None = None
        self._flush_lock = asyncio.Lock()
        self.reconnects = 0
        #: ``time.monotonic()`` of the client's next reconnect attempt (the banner counts down to it)
        self._next_try_at: float | None = None
        self._ticker: Any = None

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    # ----------------------------------------------------------------- state
    @property
    def state(self) -> ConnectionState:
        return self.app.client.state

    @property
    def can_send_now(self) -> bool:
        return not self.blocked and self.state in (ConnectionState.CONNECTED, ConnectionState.EMBEDDED)

    def block(self, reason: str) -> None:
        """Refuse every send with ``reason`` (shown in the banner) until ``unblock``."""
        self.blocked = reason
        self._update_banner()

    def unblock(self) -> None:
        self.blocked = ""
        self._update_banner()
        self.flush_soon()

    def on_state(self, state: ConnectionState, detail: str) -> None:
        if state in (ConnectionState.RECONNECTING, ConnectionState.OFFLINE) and detail != "closed":
            self._was_away = self._was_away or state == ConnectionState.RECONNECTING
        if state == ConnectionState.OFFLINE and detail.startswith(UNAUTHORIZED):
            self.blocked = UNAUTHORIZED_HELP
        wait = NEXT_TRY.search(detail) if state == ConnectionState.RECONNECTING else None
        self._next_try_at = time.monotonic() + float(wait.group(1)) if wait else None
        if wait and self._ticker is None:
            self._ticker = self.app.set_interval(1.0, self._tick, name="reconnect-countdown")
        self._update_banner()
        if state == ConnectionState.CONNECTED:
            if self._was_away:
                self._was_away = False
                self.reconnects += 1
                self._start_resync()
            self.flush_soon()

    def _detail(self) -> str:
        """The client's state detail, its "next try in Ns" counted down to now."""
        detail = self.app.client.state_detail
        if self._next_try_at is None:
            return detail
        left = max(0, math.ceil(self._next_try_at - time.monotonic() - 0.05))
        return NEXT_TRY.sub(f"next try in {left}s", detail)

    def _tick(self) -> None:
        if self._next_try_at is None or self.app.client.state != ConnectionState.RECONNECTING:
            return
        self.app.set_connection(self.app.client.state.value, self._detail())
        self._update_banner()

    def lacks_user_message(self, conversation: Conversation, run_id: str) -> bool:
        """The run's answer shows without the user message above it (another client started it)."""
        msg = conversation.message_for_run(run_id)
        if msg is None:
            return False
        index = conversation.messages.index(msg)
        return not (index > 0 and conversation.messages[index - 1].role == "user")

    def _update_banner(self) -> None:
        client = self.app.client
        state, detail = client.state, self._detail()
        if self.blocked:
            self.banner.say(self.blocked, error=True)
        elif state == ConnectionState.RECONNECTING:
            where = getattr(client, "base_url", "the server")
            self.banner.say(
                f"Reconnecting to {where} {detail}. Messages you send now are queued and sent once it is back."
            )
        elif state == ConnectionState.OFFLINE and detail and detail != "closed":
            self.banner.say(f"Offline: {detail}. Messages cannot be sent until the connection is back.", error=True)
        else:
            self.banner.say("")

    # ----------------------------------------------------------------- after a reconnect
    def _start_resync(self) -> None:
        task = self._resync_task
        if task is not None and not task.done():
            task.cancel()
        self._resync_task = asyncio.create_task(self.resync(), name="resync")

    async def resync(self) -> None:
        """Read the thread's status; once the replay had its chance, end runs the server no longer has."""
        app = self.app
        conversation, thread_id = app.conversation, app.thread_id
        if conversation is None or thread_id is None:
            return
        await asyncio.sleep(self.settle_delay)
        if app.conversation is not conversation:
            return
        try:
            status = await app.client.status(thread_id)
        except ClientError:
            return
        if app.conversation is conversation and settle_interrupted(conversation, status):
            app.refresh_after_settle()
        app.refresh_threads_soon()

    # ----------------------------------------------------------------- queue
    def enqueue(self, text: str) -> QueuedMessage:
        item = self.queue.add(self.app.thread_id, text)
        self.show_queue()
        return item

    def adopt_start_queue(self) -> None:
        """The first thread is open: what was queued while the app started is sent there."""
        for item in self.queue.items:
            if item.thread_id is None:
                item.thread_id = self.app.thread_id
        self.show_queue()
        self.flush_soon()

    def show_queue(self) -> None:
        self.app.call_later(self.queued_bar.show, self.queue.of(self.app.thread_id))

    def flush_soon(self) -> None:
        """Send the next queued message of the open thread if nothing stops it now."""
        self.app.call_later(self._flush)

    async def _flush(self) -> None:
        async with self._flush_lock:
            app = self.app
            conversation = app.conversation
            if conversation is None or conversation.is_streaming or not self.can_send_now:
                return
            item = self.queue.pop_for(app.thread_id)
            if item is None:
                return
            self.show_queue()
            await app.send_message(item.text)


async def show_foreign_user_message(app: ForeignMessageHost, conversation: Conversation, run_id: str) -> bool:
    """A run another client started in the open thread: show its user message above the answer.

    n8n's ``run-start`` does not carry the user's text; its history does (the user message
    is stored before the run starts, even while the run's own group is excluded).
    """
    thread_id = app.thread_id
    msg = conversation.message_for_run(run_id)
    if thread_id is None or msg is None:
        return False
    index = conversation.messages.index(msg)
    if index > 0 and conversation.messages[index - 1].role == "user":
        return False
    try:
        history = await app.client.messages(thread_id)
    except ClientError:
        return False
    if app.conversation is not conversation:
        return False
    known = {m.id for m in conversation.messages}
    candidates = [m for m in history.messages if m.role == "user" and m.id not in known]
    if not candidates:
        return False
    item = candidates[-1]
    return conversation.insert_user_message(msg.id, item.id, item.content)
