"""The app's side of a connection that comes and goes (issue 13).

* ``ConnectionWatcher`` follows the client's state: the status line's connection word, a banner that
  says why the app cannot send and what to do; after a reconnect it reads the thread's state from the
  server and shows each run cut meanwhile as the server ended it — as a fresh client would —
  ("interrupted by a server restart" only when the server has no record of it at all), reads the
  server's identity again (``resynced``: the model, the demo or not), and the outbox sends what
  waited (``tui.open_thread``).
* ``TitleGuard``: a title received by event is never replaced by an older thread-list answer.
* ``show_foreign_user_message``: a run started by another client gets its user message from
  the thread's history.

Everything here sees only a ``Client`` (layer rule).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from ..client.base import ClientError, ConnectionState, StreamItem

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.api import InstanceAiMessage, ThreadInfo, ThreadMessages, ThreadStatus
    from ..protocol.conversation import Conversation
    from .open_thread import OpenThread
    from .ports import Ui
    from .widgets.status_line import StatusLine

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


def full_stop(text: str) -> str:
    """``text`` as a sentence: a full stop unless it already ends one (n8n's "Do you have caps lock
    on?" is not followed by another)."""
    text = text.rstrip()
    return text if text.endswith((".", "?", "!", "…")) else f"{text}."


# --------------------------------------------------------------------------- interrupted runs


def settle_interrupted(conversation: Conversation, status: ThreadStatus | None) -> list[str]:
    """End every run the conversation still shows as running when the server says none is; a run
    still waiting for an answer (n8n keeps it across a restart) waits again instead.

    Returns the ids of the runs ended or waiting again. A status of ``None`` (unknown) settles nothing.
    """
    if status is None or status.has_active_run or status.is_suspended:
        return []
    revived = conversation.resume_waiting()
    from ..protocol.conversation import awaits_answer
    from ..protocol.events import RunFinishEvent, RunFinishPayload

    ended: list[str] = []
    background = {t.message_group_id for t in status.background_tasks if t.status == "running"}
    for msg in list(conversation.messages):
        reducer = msg.reducer
        if reducer is None or not msg.run_id or reducer.status != "active":
            continue
        if msg.message_group_id is not None and msg.message_group_id in background:
            continue  # a background task of this message still runs on the server
        if awaits_answer(reducer):
            continue  # suspended on a card: n8n keeps its checkpoint across restarts and takes the answer
        event = RunFinishEvent(
            run_id=msg.run_id,
            agent_id=reducer.root_id,
            payload=RunFinishPayload(status="error", reason=INTERRUPTED_REASON),
        )
        conversation.fold([StreamItem(None, event)])
        ended.append(msg.run_id)
    return ended + revived


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
    """Follows the app's client's connection state (see the module docstring): ``thread``'s run
    state and outbox; ``status_line`` shows the state; ``resynced()`` after a reconnect's resync
    (the thread list is read again)."""

    def __init__(self, ui: Ui, thread: OpenThread, status_line: StatusLine, *, resynced: Callable[[], None],
                 settle_delay: float = SETTLE_DELAY) -> None:
        self.ui = ui
        self.thread = thread
        self.status_line = status_line
        self.resynced = resynced
        self.settle_delay = settle_delay
        self.banner = Banner(id="connection-banner")
        #: the app's client (its connection is the one shown); ``follow`` changes it
        self.client: Client = thread.client
        self._remove_listener: Callable[[], None] | None = None
        self._was_away = False
        self._resync_task: asyncio.Task[None] | None = None
        self.reconnects = 0
        #: ``time.monotonic()`` of the client's next reconnect attempt (the banner counts down to it)
        self._next_try_at: float | None = None
        self._ticker: Any = None
        thread.outbox.when_blocked(self._update_banner)

    def follow(self, client: Client, *, say: bool = True) -> None:
        """Show ``client``'s connection from now on (``say``: its state now, too)."""
        if self._remove_listener is not None:
            self._remove_listener()
        self.client = client
        self._remove_listener = client.add_state_listener(self.on_state)
        if say:
            self.on_state(client.state, client.state_detail)

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None

    # ----------------------------------------------------------------- state
    def show_state(self, state: str, detail: str) -> None:
        """The status line's connection word (at once: before a thread is open no frame draws it)."""
        info = self.status_line.info
        info.connection = state
        info.connection_detail = detail
        self.status_line.refresh_info()

    def on_state(self, state: ConnectionState, detail: str) -> None:
        wait = NEXT_TRY.search(detail) if state == ConnectionState.RECONNECTING else None
        self._next_try_at = time.monotonic() + float(wait.group(1)) if wait else None
        self.show_state(state.value, self._counted(detail))
        outbox = self.thread.outbox
        if state in (ConnectionState.RECONNECTING, ConnectionState.OFFLINE) and detail != "closed":
            self._was_away = self._was_away or state == ConnectionState.RECONNECTING
        if state == ConnectionState.OFFLINE and detail.startswith(UNAUTHORIZED):
            outbox.block(UNAUTHORIZED_HELP)
        if wait and self._ticker is None:
            self._ticker = self.ui.set_interval(1.0, self._tick, name="reconnect-countdown")
        self._update_banner()
        if state == ConnectionState.CONNECTED:
            if self._was_away:
                self._was_away = False
                self.reconnects += 1
                self._start_resync()
            outbox.flush_soon()

    def _detail(self) -> str:
        """The client's state detail, its "next try in Ns" counted down to now."""
        return self._counted(self.client.state_detail)

    def _counted(self, detail: str) -> str:
        if self._next_try_at is None:
            return detail
        left = math.ceil(self._next_try_at - time.monotonic() - 0.05)
        # past the time (the try under way, or a back-off under 0.05 s): never "next try in 0s"
        return NEXT_TRY.sub(f"next try in {left}s" if left > 0 else "retrying now", detail)

    def _tick(self) -> None:
        if self._next_try_at is None or self.client.state != ConnectionState.RECONNECTING:
            return
        self.show_state(self.client.state.value, self._detail())
        self._update_banner()

    def _update_banner(self) -> None:
        client = self.client
        state, detail = client.state, self._detail()
        blocked = self.thread.outbox.blocked
        if blocked:
            self.banner.say(blocked, error=True)
        elif state == ConnectionState.RECONNECTING:
            where = getattr(client, "base_url", "the server")
            self.banner.say(
                f"Reconnecting to {where} {detail}. Messages you send now are queued and sent once it is back."
            )
        elif state == ConnectionState.OFFLINE and detail and detail != "closed":
            self.banner.say(f"Offline: {full_stop(detail)} Messages cannot be sent until the connection is back.",
                            error=True)
        else:
            self.banner.say("")

    # ----------------------------------------------------------------- after a reconnect
    def _start_resync(self) -> None:
        task = self._resync_task
        if task is not None and not task.done():
            task.cancel()
        self._resync_task = asyncio.create_task(self.resync(), name="resync")

    async def resync(self) -> None:
        """After a reconnect: once the replay had its chance, read the run's state from the server and
        show what a fresh client would (``adopt_server_ends``); then the server's identity again."""
        thread = self.thread
        conversation, thread_id = thread.conversation, thread.thread_id
        if conversation is not None and thread_id is not None:
            await asyncio.sleep(self.settle_delay)
            if thread.conversation is conversation:
                status: ThreadStatus | None = None
                history: ThreadMessages | None = None
                try:
                    status = await thread.client.status(thread_id)
                    if not (status.has_active_run or status.is_suspended) and live_runs(conversation):
                        history = await thread.client.recent_messages(thread_id, RESYNC_PAGE)
                except ClientError:
                    status = history = None
                if status is not None and thread.conversation is conversation and (
                        adopt_server_ends(conversation, history) or settle_interrupted(conversation, status)):
                    thread.refresh_run_state()
        self.resynced()


#: messages read after a reconnect to learn how the runs cut by it ended
RESYNC_PAGE = 20


def live_runs(conversation: Conversation) -> list[str]:
    """The runs the conversation still shows running."""
    return [msg.run_id for msg in conversation.messages
            if msg.run_id and msg.reducer is not None and msg.reducer.status == "active"]


def adopt_server_ends(conversation: Conversation, history: ThreadMessages | None) -> list[str]:
    """Runs the conversation shows running that the server's history has ended (a restarted server
    swept them: ``interrupted``): their tree and end as the server keeps them — what a fresh client
    shows. Returns their run ids."""
    if history is None:
        return []
    from ..protocol.tree import RunSyncPayload

    running = set(live_runs(conversation))
    adopted: list[str] = []
    for item in history.messages:
        if (item.role != "assistant" or item.is_streaming or item.agent_tree is None
                or item.agent_tree.status in ("active", "suspended")):
            continue  # (the server kept no end for it: settled as a fresh client's opening does)
        run_ids = item.run_ids or ([item.run_id] if item.run_id else [])
        ended = running.intersection(run_ids)
        if not ended:
            continue
        conversation.apply_run_sync(RunSyncPayload(run_id=item.run_id or "", message_group_id=item.message_group_id,
                                                   run_ids=run_ids, agent_tree=item.agent_tree,
                                                   status=item.agent_tree.status))
        adopted.extend(ended)
    return adopted


def lacks_user_message(conversation: Conversation, run_id: str) -> bool:
    """The run's answer shows without the user message above it (another client started it)."""
    msg = conversation.message_for_run(run_id)
    if msg is None:
        return False
    index = conversation.messages.index(msg)
    return not (index > 0 and conversation.messages[index - 1].role == "user")


#: n8n 2.41.1 publishes a run's ``run-start`` before its agent stores the user message (0.25-2.2 s
#: later, measured): the history is read again this often, for at most this long
FOREIGN_MESSAGE_POLL = 0.5
FOREIGN_MESSAGE_WAIT = 15.0


async def show_foreign_user_message(thread: OpenThread, conversation: Conversation, run_id: str) -> bool:
    """A run another client started in the open thread: show its user message above the answer.

    n8n's ``run-start`` does not carry the user's text; its history does, once n8n stored it, which
    n8n 2.41.1 does after the run started (so the history is read until it has it). The message is
    the newest user message the conversation does not show yet: not by id, and not as one typed
    here (shown under a local id until a reload, so matched by its text).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FOREIGN_MESSAGE_WAIT
    while True:
        thread_id = thread.thread_id
        msg = conversation.message_for_run(run_id)
        if thread_id is None or msg is None or thread.conversation is not conversation:
            return False
        if not lacks_user_message(conversation, run_id):
            return False
        try:
            history = await thread.client.messages(thread_id)
        except ClientError:
            return False
        if thread.conversation is not conversation:
            return False
        item = _unshown_user_message(conversation, history.messages, run_id)
        if item is not None:
            return conversation.insert_user_message(msg.id, item.id, item.content)
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(FOREIGN_MESSAGE_POLL)


def _unshown_user_message(conversation: Conversation, history: list[InstanceAiMessage],
                          run_id: str) -> InstanceAiMessage | None:
    """The user message of another client's run ``run_id``: the one right before that run's stored
    answer when n8n has stored it; else the oldest not shown that no other run's stored answer follows
    (two runs of another client in a row: a poll can read the history once both messages are stored,
    and must take its own, not the newest or the other run's — CI against n8n 2.41.1 saw "third" above
    "answer to second")."""
    from collections import Counter

    from ..protocol.safe_text import visible

    stored = {m.id for m in history}
    shown = {m.id for m in conversation.messages}
    typed_here = Counter(m.content for m in conversation.messages if m.role == "user" and m.id not in stored)
    unshown: list[InstanceAiMessage] = []
    for item in history:
        if item.superseded or item.role != "user" or item.id in shown:
            continue
        text = visible(item.content)
        if typed_here[text] > 0:  # a message typed here, stored by n8n under its own id
            typed_here[text] -= 1
            continue
        unshown.append(item)
    # n8n stores a run's answer right after its user message: a message followed by another run's answer
    # is that run's; one followed by this run's answer is this run's; else the oldest of those left
    position = {id(m): i for i, m in enumerate(history)}
    mine: list[InstanceAiMessage] = []
    for item in unshown:
        after = history[position[id(item)] + 1] if position[id(item)] + 1 < len(history) else None
        if after is not None and after.role == "assistant" and (after.run_id or after.run_ids):
            if after.run_id == run_id or run_id in (after.run_ids or []):
                return item
            continue
        mine.append(item)
    return mine[0] if mine else None
