"""Opening and switching threads, and the thread list's actions (search, rename, delete).

Threads come from the app's client and from extra thread sources (``Client.source``; e.g.
``client.redis_chat.RedisChatClient`` for ``--redis-chat``), each listed in its own section of
the thread list. Opening a thread (start, switch, restore) reads its history through the client
of its source, then follows that client's event stream from ``nextEventId - 1``, in that
order, so nothing shows twice. The open thread itself (its client, id, conversation) is
``tui.open_thread.OpenThread``'s: this room tells it which thread is on screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.content import Content

from ..client.base import Client, ClientError, NotFoundError
from .connection import TitleGuard, settle_interrupted
from .deferred import Deferred

if TYPE_CHECKING:
    from ..protocol.api import ThreadInfo
    from ..protocol.conversation import Conversation
    from .cards import Cards
    from .heap import HeapPolicy
    from .keymap import KeyMap
    from .open_thread import OpenThread
    from .ports import Ui
    from .projection import Projection
    from .run_status import RunStatus
    from .widgets.conversation_view import ConversationView
    from .widgets.n8n_activity import N8nActivity
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusLine
    from .widgets.thread_list import ThreadList


#: messages a thread opens with (as n8n's own frontend asks for); older ones on request
HISTORY_PAGE = 100


class Threads:
    """Opening threads into ``thread`` (the open thread) and the thread sources (see the module
    docstring). ``ready``: the app has opened its first thread; ``start_sent``: a message typed at
    start went out (what the person does not wait for waits for it); ``keys``: the key map now."""

    def __init__(self, ui: Ui, thread: OpenThread, *, thread_list: ThreadList, view: ConversationView,
                 projection: Projection, cards: Cards, run_status: RunStatus, n8n_activity: N8nActivity,
                 prompt: PromptInput, status_line: StatusLine, heap: HeapPolicy, keys: Callable[[], KeyMap],
                 ready: asyncio.Event, start_sent: asyncio.Event) -> None:
        self.ui = ui
        self.thread = thread
        self.thread_list = thread_list
        self.view = view
        self.projection = projection
        self.cards = cards
        self.run_status = run_status
        self.n8n_activity = n8n_activity
        self.prompt = prompt
        self.status_line = status_line
        self.info = status_line.info
        self.heap = heap
        self.keys = keys
        self.ready = ready
        self.start_sent = start_sent
        #: the app's client (the threads of its own list); thread sources by ``Client.source``
        self.main: Client = thread.client
        self.sources: dict[str, Client] = {}
        #: titles that came by event, kept against older thread-list answers
        self.titles = TitleGuard()
        #: a thread the person chose before the app was ready (Ctrl+N, a click): start-up opens it
        self.chosen_at_start: tuple[str | None, str | None] | None = None
        thread.when_created(self._created)

    def use_client(self, client: Client) -> None:
        """The app's client was built (``tui.startup``)."""
        old, self.main = self.main, client
        if self.thread.client is old:  # (a thread opened while the app started: Ctrl+N)
            self.thread.use_client(client)

    def add_sources(self, sources: list[Client]) -> None:
        """More thread sources (``attach_sources`` opens them)."""
        self.sources.update({source.source: source for source in sources})

    def client_of(self, source: str | None) -> Client:
        return self.sources.get(source or "", self.main)

    # ----------------------------------------------------------------- sources
    def attach_sources(self) -> None:
        for source in self.sources.values():
            self.ui.run_worker(self._attach(source), group=f"source-{source.source}", exit_on_error=False)

    async def _attach(self, source: Client) -> None:
        await asyncio.to_thread(source.preload)  # e.g. the Redis client library, off the event loop
        try:
            await source.open()
            threads = await source.list_threads()
        except ClientError as exc:
            self.ui.notify(str(exc), severity="error", timeout=10)
            return
        self.thread_list.set_section(source.source, threads, title=source.source_title or source.source,
                                         read_only=source.read_only)

    async def close_sources(self) -> None:
        for source in self.sources.values():
            try:
                await source.close()
            except (ClientError, OSError) as exc:
                self.ui.log.error(f"closing the thread source {source.source!r} failed: {exc}")

    # ----------------------------------------------------------------- opening
    async def open(self, thread_id: str | None, source: str | None = None, *, whole: bool = False) -> None:
        """Show ``thread_id`` of ``source`` (``None``: a new, not yet created thread of the app's
        client). History first (its newest ``HISTORY_PAGE`` messages; ``whole``: all of them),
        then the event stream from ``nextEventId - 1``."""
        with self.thread.opening_one():
            await self._open(thread_id, self.client_of(source), whole=whole)
        if self.thread.opening == 0 and self.ready.is_set():
            self.thread.outbox.adopt_start_queue()  # what was sent while it opened goes there now

    async def open_whole(self) -> None:
        """The user wants messages older than the page the thread opened with: open it again
        with its whole history, at the message that was the first one."""
        thread = self.thread
        conversation, thread_id = thread.conversation, thread.thread_id
        if conversation is None or thread_id is None:
            return
        first = conversation.messages[0].id if conversation.messages else None
        self.info.message = "loading the whole thread…"
        self.status_line.refresh_info(tick=True)
        try:
            with thread.opening_one():
                await self._open(thread_id, thread.client, whole=True)
        finally:
            self.info.message = ""
            self.status_line.refresh_info(tick=True)
        view = self.view
        if first is None:
            return
        while first not in view.turns and view.load_older(keep_position=False):
            pass
        widget = view.turns.get(first)
        if widget is not None:
            view.release_anchor()
            view.call_after_refresh(view.scroll_to_widget, widget, animate=False, top=True)

    async def _open(self, thread_id: str | None, client: Client, *, whole: bool = False) -> None:
        from ..protocol.conversation import Conversation

        thread = self.thread
        self.projection.stop()
        self.heap.release()  # the open thread's objects may become garbage now
        conversation = Conversation(thread_id or "")
        self.cards.leave_thread(thread_id)
        thread.show(thread_id, conversation, client)
        self.n8n_activity.reset(thread_id)
        self.run_status.reset()
        view = self.view
        view.more_on_server = False
        thread_list = self.thread_list
        thread_list.active_thread_id = thread_id
        if thread_id is None:
            view.load(conversation)
            view.set_placeholder(self.welcome())
            self.after_open(conversation)
            self.ui.run_worker(Deferred(self.refresh_model_info, None), group="model-info", exclusive=True,
                               exit_on_error=False)
            self.heap.settle()
            return
        view.set_placeholder(Content.styled("Loading…", "italic $text-muted"))
        try:
            if whole:
                history = await client.messages(thread_id)
            else:
                history = await client.recent_messages(thread_id, HISTORY_PAGE)
        except NotFoundError:
            history = None
        except ClientError as exc:
            self.ui.show_error(f"Cannot load the thread: {exc}")
            return
        if thread.conversation is not conversation:
            return  # switched again meanwhile
        if history is not None:
            conversation.load_history(history)
        info = thread_list.thread(thread_id)
        conversation.title = info.title if info is not None and info.title else conversation.title
        # the thread's total: from the history (read with its cursor) or else the thread list
        metadata = history.metadata if history is not None and history.metadata is not None else (
            info.metadata if info is not None else {})
        self.run_status.count_thread_usage(metadata.get("usage"))
        conversation.drain_changes()
        view.more_on_server = bool(history is not None and history.has_more)
        view.load(conversation)
        view.set_placeholder(self.welcome())
        self.after_open(conversation)
        self.ui.run_worker(Deferred(self.refresh_model_info, thread_id), group="model-info", exclusive=True,
                           exit_on_error=False)
        try:
            status = await client.status(thread_id)
        except ClientError:
            status = None
        if status is not None and status.is_suspended:
            thread.note_suspended()
        self.n8n_activity.reset(thread_id, status, history)
        settle_interrupted(conversation, status)  # a run the server no longer runs: show how it ended
        thread.outbox.show()
        self.heap.settle()  # (before the stream's replay: a flood holds the collector)
        self.projection.start(conversation, thread_id, conversation.cursor)

    async def refresh_model_info(self, thread_id: str | None) -> None:
        """The status line's model and context window (a ``GET /models`` for some clients), once
        a message typed at start went to the model (``start_sent``, ``tui.startup``)."""
        await self.start_sent.wait()
        await self.show_model_info(thread_id)

    async def show_model_info(self, thread_id: str | None) -> None:
        """The thread's model and its context window, for the status line."""
        client = self.thread.client
        if not client.can_switch_model:
            return
        try:
            models = await client.list_models(thread_id)
        except ClientError:
            return
        info = self.info
        info.model = models.current or info.model
        info.context_window = next((m.context_window for m in models.models if m.name == models.current), None)
        self.status_line.refresh_info()

    def after_open(self, conversation: Conversation) -> None:
        from .widgets.frame import Frame  # (not ``widgets.turns``: no turn is drawn yet)

        thread = self.thread
        title = conversation.title or ""
        self.info.thread_title = title
        self.cards.refresh(Frame(thread.pending))
        self.run_status.update_tasks(conversation)
        thread.refresh_run_state()
        label = thread.client.thread_label if thread.client is not self.main else ""
        if label:
            self.ui.sub_title = f"{title} · {label}" if title else label
        else:
            self.ui.sub_title = title or ("New thread" if not conversation.thread_id else "")

    def show_title(self, conversation: Conversation) -> None:
        """The open thread's title changed (by event): the status line, the window, the list."""
        title = conversation.title or ""
        thread_id = self.thread.thread_id
        self.titles.note(thread_id, title)
        self.info.thread_title = title
        self.ui.sub_title = title
        if thread_id is not None:
            self.thread_list.update_title(thread_id, title)

    def _created(self, info: ThreadInfo) -> None:
        """The new thread on screen was made for its first message: listed, and followed."""
        thread_list = self.thread_list
        thread_list.upsert_thread(info)
        thread_list.active_thread_id = info.id
        conversation = self.thread.conversation
        if conversation is not None:
            self.projection.start(conversation, info.id, conversation.cursor)

    def _keys_line(self) -> str:
        """How to send and how to break a line, in this app's keys (``ui.enter_sends``, ``[ui.keys]``)."""
        keys = self.keys()
        send, newline = keys.hint("send"), keys.hint("newline")
        backslash = " or \\ Enter" if keys.matches("send", "enter") else ""  # "\ + Enter" works where Enter sends
        return f"{send} sends · {newline}{backslash} new line"

    def welcome(self) -> Content:
        lines: list[str | tuple[str, str]] = [
            ("Ask Instance AI to build or change a workflow, e.g.\n", "bold"),
            "  “every morning send the weather forecast to Slack”\n\n",
            (f"{self._keys_line()} · Esc or Ctrl+C stops a run · F1 help · Ctrl+P commands", "$text-muted"),
        ]
        if self.info.demo:
            lines.append(("\nDemo mode: an offline model with canned behaviour, no real n8n.", "$text-warning"))
        return Content.assemble(*lines)

    def open_whole_in_background(self) -> None:
        self.ui.run_worker(Deferred(self.open_whole), group="open", exclusive=True, exit_on_error=False)

    def on_list_message(self, event: object) -> None:
        """What the thread list asks for: open, search (150 ms after the last key), new, rename, delete."""
        from .widgets.thread_list import ThreadList

        ui = self.ui
        if isinstance(event, ThreadList.Selected):
            self.prompt.focus()  # at once: what is typed next goes to the thread that opens
            if event.thread_id != self.thread.thread_id:
                self.open_in_background(event.thread_id, event.source)
        elif isinstance(event, ThreadList.SearchRequested):
            ui.run_worker(Deferred(self._search_soon, event.text), group="thread-search", exclusive=True,
                          exit_on_error=False)
        elif isinstance(event, ThreadList.NewRequested):
            self.new_thread()
        elif isinstance(event, ThreadList.RenameRequested):
            ui.run_worker(Deferred(self.rename, event.thread_id, event.title, event.source), group="threads",
                          exit_on_error=False)
        elif isinstance(event, ThreadList.DeleteRequested):
            ui.run_worker(Deferred(self.delete, event.thread_id, event.source), group="threads",
                          exit_on_error=False)

    def new_thread(self) -> None:
        """Ctrl+N, ``/new``: a new thread; the keys are the prompt's at once (what is typed next is its
        first message)."""
        self.prompt.focus()
        self.open_in_background(None)

    def refresh_soon(self) -> None:
        """Read the app's threads again (in the background; one at a time)."""
        self.ui.run_worker(Deferred(self.refresh), group="refresh-threads", exclusive=True, exit_on_error=False)

    async def _search_soon(self, text: str) -> None:
        await asyncio.sleep(0.15)  # debounce: a search runs 150 ms after the last key
        await self.search(text)

    def open_in_background(self, thread_id: str | None, source: str | None = None) -> None:
        """The person chose a thread (Ctrl+N, the thread list): open it. While the app starts,
        the choice is kept, so the start-up opens it instead of the latest thread (it is the
        thread the person will see, and what they type meanwhile is sent there)."""
        if not self.ready.is_set():
            self.chosen_at_start = (thread_id, source)
        self.ui.run_worker(Deferred(self.open, thread_id, source), group="open", exclusive=True,
                           exit_on_error=False)

    async def open_first(self, thread_id: str | None) -> None:
        """The start-up's first thread: ``thread_id``, unless the person chose one meanwhile (Ctrl+N,
        the thread list) — that one is what they see, and what they typed goes there."""
        source: str | None = None
        if self.chosen_at_start is not None:
            thread_id, source = self.chosen_at_start
        await self.open(thread_id, source)

    # ----------------------------------------------------------------- the thread list's actions
    async def search(self, text: str) -> None:
        """Full-text thread search through the client (the caller waits for the typing to pause)."""
        try:
            found = await self.main.search_threads(text)
        except ClientError as exc:
            self.thread_list.set_content_matches(text, ())
            self.ui.notify(f"Searching messages failed: {exc}; titles only.", severity="warning", timeout=4)
            return
        self.thread_list.set_content_matches(text, [thread.id for thread in found])

    async def rename(self, thread_id: str, title: str, source: str | None = None) -> None:
        try:
            info = await self.client_of(source).rename_thread(thread_id, title)
        except ClientError as exc:
            self.ui.show_error(f"Cannot rename: {exc}")
            return
        self.thread_list.update_title(thread_id, info.title)
        self.titles.note(thread_id, info.title)
        conversation = self.thread.conversation
        if thread_id == self.thread.thread_id and conversation is not None:
            conversation.title = info.title
            self.show_title(conversation)

    async def delete(self, thread_id: str, source: str | None = None) -> None:
        try:
            await self.client_of(source).delete_thread(thread_id)
        except ClientError as exc:
            self.ui.show_error(f"Cannot delete: {exc}")
            return
        self.thread_list.remove_thread(thread_id, source or None)
        if thread_id == self.thread.thread_id:
            await self.open(None)

    async def refresh(self) -> None:
        """The main client's threads again (titles guarded against older answers)."""
        guard = self.titles
        requested_at = guard.mark()
        try:
            threads = await self.main.list_threads()
        except ClientError:
            return
        for info in threads:
            self.thread_list.upsert_thread(guard.fix(info, requested_at))
