"""Opening and switching threads, and the thread list's actions (search, rename, delete).

Threads come from the app's client and from extra thread sources (``Client.source``; e.g.
``client.redis_chat.RedisChatClient`` for ``--redis-chat``), each listed in its own section of
the thread list. Opening a thread (start, switch, restore) reads its history through the client
of its source, then follows that client's event stream from ``nextEventId - 1``, in that
order, so nothing shows twice; ``thread_client`` is the client of the thread that is open.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from textual.content import Content

from ..client.base import Client, ClientError, NotFoundError
from .connection import settle_interrupted
from .deferred import Deferred
from .ports import Ui

if TYPE_CHECKING:
    import asyncio

    from ..protocol.conversation import Conversation
    from .actions import Actions
    from .cards import Cards
    from .connection import ConnectionWatcher
    from .heap import HeapPolicy
    from .keymap import KeyMap
    from .projection import Projection
    from .run_status import RunStatus
    from .widgets.conversation_view import ConversationView
    from .widgets.n8n_activity import N8nActivity
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusInfo, StatusLine
    from .widgets.thread_list import ThreadList


class ThreadsHost(Ui, Protocol):
    """What opening threads uses of the app: the open thread's state, the widgets it resets, the
    rooms it hands the new thread to."""

    client: Client
    conversation: Conversation | None
    thread_id: str | None
    pending: set[str]
    sub_title: str
    keys: KeyMap
    heap: HeapPolicy
    ready: asyncio.Event
    start_sent: asyncio.Event
    view: ConversationView
    prompt: PromptInput
    status_info: StatusInfo
    status_line: StatusLine
    thread_list: ThreadList
    n8n_activity: N8nActivity
    projection: Projection
    connection: ConnectionWatcher
    cards: Cards
    run_status: RunStatus
    actions: Actions

    def action_new_thread(self) -> None: ...


#: messages a thread opens with (as n8n's own frontend asks for); older ones on request
HISTORY_PAGE = 100


class Threads:
    """The open thread and the thread sources of ``app``."""

    def __init__(self, app: ThreadsHost, sources: list[Client]) -> None:
        self.app = app
        #: extra thread sources by ``Client.source`` (the main client is ``app.client``)
        self.sources: dict[str, Client] = {source.source: source for source in sources}
        #: the client of the open thread
        self.client: Client = app.client
        #: thread opens in progress (rendering is not "caught up" meanwhile; a message sent
        #: meanwhile waits in the queue and goes to the thread that opens: ``tui.sending``)
        self.opening = 0
        #: a thread the person chose before the app was ready (Ctrl+N, a click): start-up opens it
        self.chosen_at_start: tuple[str | None, str | None] | None = None

    def add_sources(self, sources: list[Client]) -> None:
        """More thread sources (``attach_sources`` opens them)."""
        self.sources.update({source.source: source for source in sources})

    def client_of(self, source: str | None) -> Client:
        return self.sources.get(source or "", self.app.client)

    # ----------------------------------------------------------------- sources
    def attach_sources(self) -> None:
        for source in self.sources.values():
            self.app.run_worker(self._attach(source), group=f"source-{source.source}", exit_on_error=False)

    async def _attach(self, source: Client) -> None:
        await asyncio.to_thread(source.preload)  # e.g. the Redis client library, off the event loop
        try:
            await source.open()
            threads = await source.list_threads()
        except ClientError as exc:
            self.app.notify(str(exc), severity="error", timeout=10)
            return
        self.app.thread_list.set_section(source.source, threads, title=source.source_title or source.source,
                                         read_only=source.read_only)

    async def close_sources(self) -> None:
        for source in self.sources.values():
            try:
                await source.close()
            except (ClientError, OSError) as exc:
                self.app.log.error(f"closing the thread source {source.source!r} failed: {exc}")

    # ----------------------------------------------------------------- opening
    async def open(self, thread_id: str | None, source: str | None = None, *, whole: bool = False) -> None:
        """Show ``thread_id`` of ``source`` (``None``: a new, not yet created thread of the app's
        client). History first (its newest ``HISTORY_PAGE`` messages; ``whole``: all of them),
        then the event stream from ``nextEventId - 1``."""
        self.opening += 1
        opened = False
        try:
            await self._open(thread_id, self.client_of(source), whole=whole)
            opened = True
        finally:
            self.opening -= 1
        if opened and self.opening == 0 and self.app.ready.is_set():
            self.app.connection.adopt_start_queue()  # what was sent while it opened goes there now

    async def open_whole(self) -> None:
        """The user wants messages older than the page the thread opened with: open it again
        with its whole history, at the message that was the first one."""
        app = self.app
        conversation, thread_id = app.conversation, app.thread_id
        if conversation is None or thread_id is None:
            return
        first = conversation.messages[0].id if conversation.messages else None
        app.status_info.message = "loading the whole thread…"
        app.status_line.refresh_info(tick=True)
        self.opening += 1
        try:
            await self._open(thread_id, self.client, whole=True)
        finally:
            self.opening -= 1
            app.status_info.message = ""
            app.status_line.refresh_info(tick=True)
        view = app.view
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

        app = self.app
        app.projection.stop()
        app.heap.release()  # the open thread's objects may become garbage now
        conversation = Conversation(thread_id or "")
        app.cards.leave_thread(thread_id)
        self.client = client
        app.conversation = conversation
        app.thread_id = thread_id
        app.n8n_activity.reset(thread_id)
        app.run_status.reset()
        view = app.view
        view.more_on_server = False
        thread_list = app.thread_list
        thread_list.active_thread_id = thread_id
        if thread_id is None:
            view.load(conversation)
            view.set_placeholder(self.welcome())
            self.after_open(conversation)
            app.run_worker(Deferred(self.refresh_model_info, None), group="model-info", exclusive=True,
                           exit_on_error=False)
            app.heap.settle()
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
            app.show_error(f"Cannot load the thread: {exc}")
            return
        if app.conversation is not conversation:
            return  # switched again meanwhile
        if history is not None:
            conversation.load_history(history)
        info = thread_list.thread(thread_id)
        conversation.title = info.title if info is not None and info.title else conversation.title
        # the thread's total: from the history (read with its cursor) or else the thread list
        metadata = history.metadata if history is not None and history.metadata is not None else (
            info.metadata if info is not None else {})
        app.run_status.count_thread_usage(metadata.get("usage"))
        conversation.drain_changes()
        view.more_on_server = bool(history is not None and history.has_more)
        view.load(conversation)
        view.set_placeholder(self.welcome())
        self.after_open(conversation)
        app.run_worker(Deferred(self.refresh_model_info, thread_id), group="model-info", exclusive=True,
                       exit_on_error=False)
        try:
            status = await client.status(thread_id)
        except ClientError:
            status = None
        if status is not None and status.is_suspended and not conversation.is_streaming:
            app.status_info.run_state = "awaiting approval"
        app.n8n_activity.reset(thread_id, status, history)
        settle_interrupted(conversation, status)  # a run the server no longer runs: show how it ended
        app.connection.show_queue()
        app.heap.settle()  # (before the stream's replay: a flood holds the collector)
        app.projection.start(conversation, thread_id, conversation.cursor)

    async def refresh_model_info(self, thread_id: str | None) -> None:
        """The status line's model and context window (a ``GET /models`` for some clients), once
        a message typed at start went to the model (``app.start_sent``, ``tui.boot``)."""
        await self.app.start_sent.wait()
        await self.app.actions.refresh_model_info(thread_id)

    def after_open(self, conversation: Conversation) -> None:
        from .widgets.frame import Frame  # (not ``widgets.turns``: no turn is drawn yet)

        app = self.app
        title = conversation.title or ""
        app.status_info.thread_title = title
        app.cards.refresh(Frame(app.pending))
        app.run_status.update_tasks(conversation)
        app.run_status.update_run_state()
        label = self.client.thread_label if self.client is not app.client else ""
        if label:
            app.sub_title = f"{title} · {label}" if title else label
        else:
            app.sub_title = title or ("New thread" if not conversation.thread_id else "")

    def _keys_line(self) -> str:
        """How to send and how to break a line, in this app's keys (``ui.enter_sends``, ``[ui.keys]``)."""
        keys = self.app.keys
        send, newline = keys.hint("send"), keys.hint("newline")
        backslash = " or \\ Enter" if keys.matches("send", "enter") else ""  # "\ + Enter" works where Enter sends
        return f"{send} sends · {newline}{backslash} new line"

    def welcome(self) -> Content:
        lines: list[str | tuple[str, str]] = [
            ("Ask Instance AI to build or change a workflow, e.g.\n", "bold"),
            "  “every morning send the weather forecast to Slack”\n\n",
            (f"{self._keys_line()} · Esc or Ctrl+C stops a run · F1 help · Ctrl+P commands", "$text-muted"),
        ]
        if self.app.status_info.demo:
            lines.append(("\nDemo mode: an offline model with canned behaviour, no real n8n.", "$text-warning"))
        return Content.assemble(*lines)

    def open_whole_in_background(self) -> None:
        self.app.run_worker(Deferred(self.open_whole), group="open", exclusive=True, exit_on_error=False)

    def on_list_message(self, event: object) -> None:
        """What the thread list asks for: open, search (150 ms after the last key), new, rename, delete."""
        from .widgets.thread_list import ThreadList

        app = self.app
        if isinstance(event, ThreadList.Selected):
            app.prompt.focus()  # at once: what is typed next goes to the thread that opens
            if event.thread_id != app.thread_id:
                self.open_in_background(event.thread_id, event.source)
        elif isinstance(event, ThreadList.SearchRequested):
            app.run_worker(Deferred(self._search_soon, event.text), group="thread-search", exclusive=True,
                           exit_on_error=False)
        elif isinstance(event, ThreadList.NewRequested):
            app.action_new_thread()
        elif isinstance(event, ThreadList.RenameRequested):
            app.run_worker(Deferred(self.rename, event.thread_id, event.title, event.source), group="threads",
                           exit_on_error=False)
        elif isinstance(event, ThreadList.DeleteRequested):
            app.run_worker(Deferred(self.delete, event.thread_id, event.source), group="threads",
                           exit_on_error=False)

    async def _search_soon(self, text: str) -> None:
        await asyncio.sleep(0.15)  # debounce: a search runs 150 ms after the last key
        await self.search(text)

    def open_in_background(self, thread_id: str | None, source: str | None = None) -> None:
        """The person chose a thread (Ctrl+N, the thread list): open it. While the app starts,
        the choice is kept, so the start-up opens it instead of the latest thread (it is the
        thread the person will see, and what they type meanwhile is sent there)."""
        if not self.app.ready.is_set():
            self.chosen_at_start = (thread_id, source)
        self.app.run_worker(Deferred(self.open, thread_id, source), group="open", exclusive=True,
                            exit_on_error=False)

    # ----------------------------------------------------------------- the thread list's actions
    async def search(self, text: str) -> None:
        """Full-text thread search through the client (the caller waits for the typing to pause)."""
        app = self.app
        try:
            found = await app.client.search_threads(text)
        except ClientError as exc:
            app.thread_list.set_content_matches(text, ())
            app.notify(f"Searching messages failed: {exc}; titles only.", severity="warning", timeout=4)
            return
        app.thread_list.set_content_matches(text, [thread.id for thread in found])

    async def rename(self, thread_id: str, title: str, source: str | None = None) -> None:
        app = self.app
        try:
            info = await self.client_of(source).rename_thread(thread_id, title)
        except ClientError as exc:
            app.show_error(f"Cannot rename: {exc}")
            return
        app.thread_list.update_title(thread_id, info.title)
        app.connection.titles.note(thread_id, info.title)
        if thread_id == app.thread_id and app.conversation is not None:
            app.conversation.title = info.title
            app.run_status.update_title(app.conversation)

    async def delete(self, thread_id: str, source: str | None = None) -> None:
        app = self.app
        try:
            await self.client_of(source).delete_thread(thread_id)
        except ClientError as exc:
            app.show_error(f"Cannot delete: {exc}")
            return
        app.thread_list.remove_thread(thread_id, source or None)
        if thread_id == app.thread_id:
            await self.open(None)

    async def refresh(self) -> None:
        """The main client's threads again (titles guarded against older answers)."""
        app = self.app
        guard = app.connection.titles
        requested_at = guard.mark()
        try:
            threads = await app.client.list_threads()
        except ClientError:
            return
        for info in threads:
            app.thread_list.upsert_thread(guard.fix(info, requested_at))
