"""The thread on screen, and the messages on their way to it.

``OpenThread`` is the one writer of the open thread's state: the client it belongs to (the app's, or
a thread source's), its id, its ``Conversation``, the cards waiting in it (``pending_cards``; the ids
in ``pending``, the set the view and each frame read), whether it is being opened, whether a stop was
asked for, and the run's state on the status line (idle, running, cancelling, awaiting approval or
your answer, error). The rooms read these attributes and call its methods; only this module assigns
them (``tests/test_architecture.py``: ``OPEN_THREAD_STATE``).

``Outbox`` (``OpenThread.outbox``) is the truth about a message the person sent. A message is in
one place at every moment — the prompt, the outbox's queue (shown above the prompt, each row saying
why it waits) or the thread's storage — and its bubble shows only once the thread has it
(``client.send`` returned, or the run it started arrived with it). So:

* during a transition (the app starting, a thread opening, a reconnect) or while the agent works it
  waits in the queue and goes when it can — never refused for being early;
* a storage that is down for now (a database locked by another program, Redis down) holds it at the
  front of the queue with the reason ("the database is locked by another program (PID 4242) — it will
  be sent when it is free") and tries again with a growing wait (``RETRY_WAITS``);
* a run still ending (409) is tried again a few times, then the message goes back into the prompt;
* anything else that refuses it (a read-only source, an ended session, a blocked app, offline) puts
  it back into the prompt and says why.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..client.base import ClientError, ConnectionState, ReadOnlyError, RunActiveError, StorageError
from .widgets.queued import QueuedMessage

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.api import ThreadInfo
    from ..protocol.conversation import Conversation, PendingConfirmation
    from .ports import Ui
    from .widgets.prompt import PromptInput
    from .widgets.queued import QueuedBar
    from .widgets.status_line import StatusInfo

#: the kinds of request that ask the person for an answer rather than an approval
ANSWER_KINDS = frozenset({"questions", "plan-review", "text"})
#: a message refused because a run is still ending is tried again this many times, this far apart
RUN_ACTIVE_RETRIES = 10
RUN_ACTIVE_WAIT = 0.5
#: seconds between the tries of a message the storage could not take (a locked database): growing,
#: then every ``RETRY_WAITS[-1]`` until it goes (each try itself waits for the lock a while)
RETRY_WAITS = (1.0, 2.0, 4.0, 8.0, 15.0)
#: a send that takes longer than this shows its row ("sending…") until it is stored
SHOW_SENDING_AFTER = 0.3


@dataclass
class SendQueue:
    """Messages waiting for the run to end, the connection, or the storage."""

    items: list[QueuedMessage] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, thread_id: str | None, text: str, *, first: bool = False, reason: str = "") -> QueuedMessage:
        item = QueuedMessage(next(self._ids), thread_id, text, reason)
        self.items.insert(0, item) if first else self.items.append(item)
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


class OpenThread:
    """The thread on screen (see the module docstring). ``status``: the status line's info (the run's
    state is written here); ``client``: the app's client until a thread of a source opens; ``pending``:
    the set of waiting request ids the conversation view was given (kept, changed in place)."""

    def __init__(self, client: Client, status: StatusInfo, pending: set[str], *, ui: Ui, prompt: PromptInput,
                 queued_bar: QueuedBar, ready: asyncio.Event, login: Callable[[ClientError], Awaitable[bool]]) -> None:
        self.client = client
        self.status = status
        self.thread_id: str | None = None
        self.conversation: Conversation | None = None
        #: the cards waiting in this thread, by request id; ``pending`` holds their ids (shared with
        #: the conversation view and each frame: changed in place)
        self.pending_cards: dict[str, PendingConfirmation] = {}
        self.pending = pending
        #: thread opens in progress: rendering is not "caught up", a message sent meanwhile waits
        self.opening = 0
        #: a stop was asked for and the run has not ended yet
        self.cancelling = False
        self._created: list[Callable[[ThreadInfo], None]] = []
        self.outbox = Outbox(ui, self, prompt, queued_bar, ready=ready, login=login)

    # ----------------------------------------------------------------- which thread
    def use_client(self, client: Client) -> None:
        """The app's client was built (``InstanceAiApp.attach``): the thread on screen is its."""
        self.client = client

    def show(self, thread_id: str | None, conversation: Conversation, client: Client) -> None:
        """``thread_id`` of ``client`` is on screen now (``None``: a new thread, made on the first send)."""
        self.client = client
        self.conversation = conversation
        self.thread_id = thread_id
        self.cancelling = False
        self.pending_cards = {}
        self.pending.clear()

    @contextmanager
    def opening_one(self) -> Iterator[None]:
        """While a thread is being opened (its history read)."""
        self.opening += 1
        try:
            yield
        finally:
            self.opening -= 1

    def when_created(self, callback: Callable[[ThreadInfo], None]) -> None:
        """``callback(info)`` once a new thread was made for its first message."""
        self._created.append(callback)

    def created(self, info: ThreadInfo) -> None:
        """The new thread on screen was made (the first message is about to go)."""
        self.thread_id = info.id
        if self.conversation is not None:
            self.conversation.thread_id = info.id
        for callback in self._created:
            callback(info)

    def sent(self, run_id: str, text: str) -> None:
        """``text`` is the thread's now (its run ``run_id`` started): its bubble shows — above the run's
        answer when that came first (n8n's ``run-start`` has no user text)."""
        conversation = self.conversation
        if conversation is None:
            return
        answer = conversation.message_for_run(run_id)
        if answer is None:
            conversation.add_user_message(text)  # (the run's ``run-start`` takes it as its own)
            return
        index = conversation.messages.index(answer)
        if index == 0 or conversation.messages[index - 1].role != "user":
            conversation.insert_user_message(answer.id, f"sent-{run_id}", text)

    # ----------------------------------------------------------------- the cards and the run's state
    def set_pending(self, cards: dict[str, PendingConfirmation]) -> None:
        self.pending_cards = cards
        self.pending.clear()
        self.pending.update(cards)

    def set_cancelling(self, cancelling: bool) -> None:
        self.cancelling = cancelling
        self.refresh_run_state()

    def note_suspended(self) -> None:
        """The server says the thread's run waits for an answer (before its cards are drawn)."""
        if self.conversation is None or not self.conversation.is_streaming:
            self.status.run_state = "awaiting approval"

    def refresh_run_state(self) -> None:
        """The run's state on the status line, from the conversation and the cards waiting."""
        conversation = self.conversation
        info = self.status
        if conversation is None:
            return
        if self.pending:
            # a question, a plan or a text request asks for an answer, not an approval
            kinds = {card.input_type for rid, card in self.pending_cards.items() if rid in self.pending}
            state = "awaiting your answer" if kinds and kinds <= ANSWER_KINDS else "awaiting approval"
        elif conversation.is_streaming:
            state = "cancelling" if self.cancelling else "running"
        elif info.run_state in ("awaiting approval", "awaiting your answer") and not conversation.messages:
            state = info.run_state
        else:
            last = next((m for m in reversed(conversation.messages) if m.reducer is not None), None)
            state = "error" if last is not None and last.reducer is not None and last.reducer.status == "error" else "idle"
        if not conversation.is_streaming:
            self.cancelling = False
        info.run_state = state


class Outbox:
    """The messages on their way to the open thread (see the module docstring).

    ``ready``: set once the app has opened its first thread; ``login``: asks the person to log in again
    (n8n) and says whether the client is open now."""

    def __init__(self, ui: Ui, thread: OpenThread, prompt: PromptInput, bar: QueuedBar, *,
                 ready: asyncio.Event, login: Callable[[ClientError], Awaitable[bool]]) -> None:
        self.ui = ui
        self.thread = thread
        self.prompt = prompt
        self.bar = bar
        self.ready = ready
        self.login = login
        self.queue = SendQueue()
        #: why every send is refused (no model key, not logged in, a refused token); "" = none is
        self.blocked = ""
        #: text -> how often it met "a run is active" in a row (``RUN_ACTIVE_RETRIES``)
        self._run_active_tries: dict[str, int] = {}
        #: text -> how often the storage could not take it in a row (``RETRY_WAITS``)
        self._storage_tries: dict[str, int] = {}
        #: messages being handed to the client right now
        self.sending: list[QueuedMessage] = []
        self._flush_lock = asyncio.Lock()
        self._on_blocked: list[Callable[[], None]] = []

    # ----------------------------------------------------------------- refusing everything
    def when_blocked(self, callback: Callable[[], None]) -> None:
        """``callback()`` after ``block`` (the connection banner says why)."""
        self._on_blocked.append(callback)

    def block(self, reason: str) -> None:
        """Refuse every send with ``reason`` (until the app starts again: a key, a login, a model)."""
        self.blocked = reason
        for callback in self._on_blocked:
            callback()

    # ----------------------------------------------------------------- sending
    def in_transition(self) -> bool:
        """Between states a message cannot be sent in yet, but soon can: starting, opening a thread,
        connecting or reconnecting."""
        state = self.thread.client.state
        return (not self.ready.is_set() or self.thread.opening > 0
                or state in (ConnectionState.RECONNECTING, ConnectionState.CONNECTING))

    async def send(self, text: str, *, queued: QueuedMessage | None = None) -> str | None:
        """Send ``text`` in the open thread (creating it first if it is new). Returns the run id, or
        ``None`` when the message waits (queued, held) or went back into the prompt."""
        if not text.strip():
            return None
        thread, ui = self.thread, self.ui
        client = thread.client
        if self.blocked:
            ui.notify(f"Not sent: {self.blocked}", severity="error", timeout=8)
            self.keep_in_prompt(text)
            return None
        if self.in_transition():
            # the app starts, a thread opens (Ctrl+N, a switch, --resume) or the connection comes back:
            # never refused for being early; it waits, visibly, and goes to the thread that opens
            self.enqueue(text)
            return None
        conversation = thread.conversation
        if conversation is None:  # the start-up ended without a thread (it could not connect)
            ui.notify(f"Not sent: not connected ({client.state_detail or client.state.value})", severity="error",
                      timeout=8)
            self.keep_in_prompt(text)
            return None
        if conversation.is_streaming:
            self.enqueue(text)  # sent when the run ends
            return None
        if queued is None and (self.sending or self.queue.of(thread.thread_id)):
            self.enqueue(text)  # behind what waits already (a message the storage could not take yet)
            self.flush_soon()
            return None
        if client.state == ConnectionState.OFFLINE:
            ui.notify(f"Not sent: offline ({client.state_detail or 'no connection'})", severity="error")
            self.keep_in_prompt(text)
            return None
        item = queued or QueuedMessage(0, thread.thread_id, text)
        self.sending.append(item)
        shown = ui.set_timer(SHOW_SENDING_AFTER, self._show_sending)
        try:
            return await self._send(client, conversation, text)
        finally:
            shown.stop()
            self.sending.remove(item)
            if item.reason:
                self.show()

    async def _send(self, client: Client, conversation: Conversation, text: str) -> str | None:
        thread, ui = self.thread, self.ui
        thread_id = thread.thread_id
        try:
            if thread_id is None:
                info = await client.create_thread(title="")
                if thread.conversation is not conversation:
                    self.enqueue(text)  # another thread opened meanwhile: it goes there
                    return None
                thread.created(info)
                thread_id = info.id
            run_id = await client.send(thread_id, text)
        except ReadOnlyError as exc:
            ui.notify(f"Not sent: {exc}", severity="warning", timeout=8)
            self.keep_in_prompt(text)
        except RunActiveError:
            tries = self._run_active_tries.get(text, 0)
            if tries < RUN_ACTIVE_RETRIES:
                # the run is ending (a cancel, a card answered) but the server has not let it go yet:
                # a transition, so the message waits at the front of the queue and is tried again
                self._run_active_tries[text] = tries + 1
                self.enqueue(text, first=True)
                ui.set_timer(RUN_ACTIVE_WAIT, self.flush_soon)
                return None
            self._run_active_tries.pop(text, None)
            self.refuse(text, "the agent is still working on the previous message")
        except StorageError as exc:
            if not exc.unavailable:
                self.refuse(text, str(exc))
                return None
            self.hold(text, exc)
        except ClientError as exc:
            if exc.status in (401, 403) and client.supports_login:
                # the n8n session ended and logging in again failed: ask, then the person sends again
                self.keep_in_prompt(text)
                if await self.login(exc):
                    ui.notify("Logged in again. Press Enter to send your message.", timeout=8)
                return None
            if exc.status is None:
                # the server did not answer at all (restarting?): queued, sent once it is back
                self.enqueue(text)
                ui.notify(f"{exc} — your message is queued and will be sent when the connection is back.",
                          severity="warning", timeout=8)
                return None
            self.refuse(text, str(exc))
        except Exception as exc:  # noqa: BLE001 - an error of ours: a bug, but the message is never lost for it
            ui.log.error(f"sending failed: {exc!r}")
            self.refuse(text, f"an error in the app ({type(exc).__name__}: {exc}); your message is back in the prompt")
        else:
            self._run_active_tries.pop(text, None)
            if self._storage_tries.pop(text, None) is not None:
                ui.notify("Sent: the database is free again.", timeout=4)
            if thread.conversation is conversation:
                thread.sent(run_id, text)
            return run_id
        return None

    def hold(self, text: str, exc: StorageError) -> None:
        """The storage cannot take ``text`` now (locked by another program, Redis down): it waits at the
        front of the queue with the reason and is tried again after a growing wait."""
        tries = self._storage_tries.get(text, 0)
        self._storage_tries[text] = tries + 1
        if exc.code == "storage_locked":
            holder = f" (PID {exc.holder_pid})" if exc.holder_pid is not None else ""
            why = f"the database is locked by another program{holder}"
        else:
            why = f"the storage is not available ({exc})"
        reason = f"not sent: {why} — it will be sent when it is free"
        self.enqueue(text, first=True, reason=reason)
        if tries == 0:
            self.ui.notify(f"Not sent: {why} — it will be sent when it is free.", severity="warning", timeout=10)
        self.ui.set_timer(RETRY_WAITS[min(tries, len(RETRY_WAITS) - 1)], self.flush_soon)

    def refuse(self, text: str, reason: str) -> None:
        """``text`` cannot be sent: back into the prompt, and why."""
        self.ui.notify(f"Not sent: {reason}", severity="error", timeout=8)
        self.keep_in_prompt(text)

    def keep_in_prompt(self, text: str) -> None:
        """A refused message goes back into the prompt (in front of anything typed since)."""
        prompt = self.prompt
        typed = prompt.text
        prompt.load_text(text if not typed.strip() else f"{text}\n{typed}")

    # ----------------------------------------------------------------- the queue
    def enqueue(self, text: str, *, first: bool = False, reason: str = "") -> QueuedMessage:
        item = self.queue.add(self.thread.thread_id, text, first=first, reason=reason)
        self.show()
        return item

    def take_back(self, item_id: int, *, edit: bool) -> None:
        """A queued message leaves the queue: back into the prompt (``edit``) or away."""
        item = self.queue.remove(item_id)
        self.show()
        if item is not None:
            self._storage_tries.pop(item.text, None)
            if edit:
                self.keep_in_prompt(item.text)
        self.prompt.focus()

    def adopt_start_queue(self) -> None:
        """The first thread is open: what was queued while the app started is sent there."""
        for item in self.queue.items:
            if item.thread_id is None:
                item.thread_id = self.thread.thread_id
        self.show()
        self.flush_soon()

    def show(self) -> None:
        """The open thread's queue above the prompt (and a message taking long to be stored)."""
        thread_id = self.thread.thread_id
        rows = [item for item in self.sending if item.reason] + self.queue.of(thread_id)
        self.ui.call_later(self.bar.show, rows)

    def _show_sending(self) -> None:
        for item in self.sending:
            if not item.reason:
                item.reason = "sending…"
        self.show()

    @property
    def can_send_now(self) -> bool:
        return not self.blocked and self.thread.client.state in (ConnectionState.CONNECTED, ConnectionState.EMBEDDED)

    def flush_soon(self) -> None:
        """Send the next queued message of the open thread if nothing stops it now."""
        self.ui.call_later(self._flush)

    async def _flush(self) -> None:
        async with self._flush_lock:
            conversation = self.thread.conversation
            if conversation is None or conversation.is_streaming or not self.can_send_now or self.sending:
                return
            item = self.queue.pop_for(self.thread.thread_id)
            if item is None:
                return
            self.show()
            await self.send(item.text, queued=item)
