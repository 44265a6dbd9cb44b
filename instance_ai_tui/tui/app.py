"""``InstanceAiApp``: the Textual app. It only talks to a ``Client``.

Data flow (DESIGN.md, "Performance architecture")::

    client.events()  --ingest worker-->  Conversation (reducer model)   no widget work
                                              |  drain_changes()
    frame timer (25 Hz)  --one batch_update-->  widgets (only what changed)

Opening a thread (start, switch, restore): ``client.messages()`` then
``client.events(thread, after=nextEventId - 1)``, in that order, so nothing shows twice.

Headless use (benchmarks, screenshots, tests)::

    app = InstanceAiApp(client, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()            # first thread opened
        await app.send_message("hello")         # what Enter in the prompt does
        await app.wait_until_rendered()         # ingest idle, frame drained, markdown parsed
        app.stats                               # events ingested, frames, slowest frame

``wait_until_rendered`` is the "rendering caught up" signal: no event left undrained in the
model, the last frame projected nothing new and every streamed Markdown block has parsed
what it was given.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..client.base import Client, ClientError, ConnectionState, NotFoundError, RunActiveError
from . import keymap, themes
from .connection import ConnectionWatcher, QueuedRow, settle_interrupted, show_foreign_user_message
from .pending_watch import PendingWatch, TerminalSignals, waiting_summary
from .widgets.conversation_view import ConversationView
from .widgets.n8n_activity import N8nActivity
from .widgets.prompt import PromptInput
from .widgets.status_line import StatusInfo, StatusLine
from .widgets.tasks_panel import TasksPanel
from .widgets.thread_list import ThreadList

# Imported when first needed, after the first frame (start-up time): the conversation model
# (protocol.conversation / reducer), the turn widgets and cards (Markdown), the help screen.
if TYPE_CHECKING:
    from ..client.gateway_flag import GatewayHandle, GatewayRequest
    from ..config import Settings
    from ..protocol.api import ThreadInfo
    from ..protocol.conversation import Conversation, PendingConfirmation
    from .redis_sessions import RedisSessionsView
    from .widgets.confirmations import ConfirmationAnswered, ConfirmCard
    from .widgets.turns import Frame

FRAME_HZ = 25
#: more events than this between two frames (with more still coming) is a flood
FLOOD_EVENTS = 2000
#: the ingest worker yields to the event loop at least this often (seconds)
INGEST_SLICE = 0.005


@dataclass
class IngestStats:
    """Counters for benchmarks and tests."""

    #: ``time.perf_counter()`` when the first frame was painted (cold start)
    first_frame_at: float | None = None
    events: int = 0
    frames: int = 0
    busy_frames: int = 0
    slowest_frame: float = 0.0
    first_event_at: float | None = None
    last_event_at: float | None = None
    frame_times: list[float] = field(default_factory=list)

    def record_frame(self, seconds: float) -> None:
        self.busy_frames += 1
        self.slowest_frame = max(self.slowest_frame, seconds)
        if len(self.frame_times) < 100_000:
            self.frame_times.append(seconds)


#: a new card takes focus only after this many seconds without a key, click or scroll
IDLE_BEFORE_FOCUS = 1.0
#: below this many columns the side panels hide by themselves (the conversation keeps the width)
PANELS_MIN_WIDTH = 100
#: the thread list is shown from the start (and comes back after a narrow spell) from this width
THREADS_MIN_WIDTH = 120


def is_demo(client: Client, settings: Settings) -> bool:
    label = (client.model_name or "").lower()
    if "demo" in label:
        return True
    return client.mode == "embedded" and not client.model_name and settings.model.name in (None, "demo")


class InstanceAiApp(App[None]):
    """The terminal app. ``client`` is any ``Client``; ``settings`` the loaded ``Settings``."""

    CSS_PATH = "app.tcss"
    TITLE = "Instance AI"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("app")]
    PAUSE_GC_ON_SCROLL = True
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        client: Client,
        settings: Settings,
        *,
        thread_id: str | None = None,
        redis_chat: str | None = None,
        chat_webhook: str | None = None,
        watch_themes: bool = True,
        persist_theme: bool = True,
        close_client: bool = True,
        gateway: GatewayRequest | None = None,
        start: str = "latest",
    ) -> None:
        super().__init__()
        #: which thread opens at start without ``thread_id``: "latest", "new", or "pick" (a picker)
        self.start_mode = start
        self.client = client
        #: ``--gateway``: the folder to share with n8n once the client is open
        self.gateway_request = gateway
        self.gateway: GatewayHandle | None = None
        self.settings = settings
        self.initial_thread_id = thread_id
        self.redis_chat = redis_chat
        self.chat_webhook = chat_webhook
        #: the "Redis sessions" source (``tui.redis_sessions``), with ``redis_chat``
        self.redis_sessions: RedisSessionsView | None = None
        self._watch_themes = watch_themes
        self._persist_theme = persist_theme
        self._close_client = close_client
        self.conversation: Conversation | None = None
        self.thread_id: str | None = None
        self.pending: set[str] = set()
        self._pending_by_id: dict[str, PendingConfirmation] = {}
        self.status_info = StatusInfo(model=client.model_name, demo=is_demo(client, settings))
        self.stats = IngestStats()
        self.keys = self._load_keymap()
        self.theme_manager: themes.ThemeManager | None = None
        self._frame_timer: Any = None
        self._frame_no = 0
        self._last_frame_empty = True
        self._ready_event = asyncio.Event()
        self._ingest_task: asyncio.Task[None] | None = None
        self._ingest_waiting = False
        self._cancelling = False
        self._status_source: tuple[str, str] | None = None
        #: the run the thread's usage total ended with when it was read (``assistant.usage``)
        self._usage_counted_run: str | None = None
        self._user_toggled_tasks = False
        self._narrow = False
        self._threads_auto_hidden = False
        self._remove_state_listener: Any = None
        self._pending_focus: list[str] = []
        #: cards the user was told about (once each) while the focus rule kept them waiting
        self._announced: set[str] = set()
        #: ``time.monotonic()`` of the last key, click, scroll or paste (the focus rule)
        self._last_input_at = 0.0
        self._events_at_frame = 0
        self._catching_up = False
        self._gc_held = False
        #: thread opens in progress (rendering is not "caught up" meanwhile)
        self._opening = 0
        self.view = ConversationView(self.pending, id="conversation")
        self.badge = Static("", id="new-output", markup=False)
        from .widgets.find_bar import FindBar

        self.find_bar = FindBar()
        self.prompt = PromptInput(placeholder="Message Instance AI…  (Enter sends, Ctrl+J new line, /help for commands)", id="prompt")
        self.status_line = StatusLine(self.status_info, id="status")
        self.tasks_panel = TasksPanel(id="tasks")
        #: n8n's background tasks, setup items, archived workflows, quota banner (``n8n_activity``)
        self.n8n_activity = N8nActivity(client, id="n8n-activity")
        self.thread_list = ThreadList(id="threads")
        #: answers waiting in threads that are not open, and the terminal's title and bell
        self.pending_watch = PendingWatch(client, threads=self.thread_list.local_threads,
                                          open_thread=lambda: self.thread_id, on_change=self._pending_changed)
        self.terminal = TerminalSignals(self._write_terminal, bell=settings.ui.bell,
                                        desktop=settings.ui.desktop_notifications)
        self._elsewhere_seen: dict[str, int] = {}
        #: cards of a thread just opened that were already signalled while it was not open
        self._expected_waiting = 0
        #: the thread Ctrl+G is opening to reach its card
        self._going_to: str | None = None
        #: connection banner, queued messages, resync after a reconnect, title guard (issue 13)
        self.connection = ConnectionWatcher(self)

    # ------------------------------------------------------------------ setup
    def _load_keymap(self) -> keymap.KeyMap:
        """The user's key map; on a bad ``[ui.keys]`` the defaults (and an error shown at mount)."""
        self._keymap_error: str | None = None
        try:
            return keymap.KeyMap.from_settings(self.settings.ui)
        except keymap.KeyMapError as exc:
            self._keymap_error = str(exc)
            return keymap.KeyMap(enter_sends=self.settings.ui.enter_sends)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return themes.app_variable_defaults(self.current_theme)

    def compose(self) -> ComposeResult:
        yield self.thread_list
        with Vertical(id="main"):
            if self.status_info.demo:
                with Horizontal(id="demo-banner"):
                    yield Static(" DEMO MODE ", classes="demo-label", markup=False)
                    yield Static(
                        "offline scripted model — canned answers, a simulated n8n instance; nothing real is changed.",
                        classes="demo-text",
                        markup=False,
                    )
            yield self.find_bar
            yield self.view
            yield self.badge
            yield self.n8n_activity
            yield self.connection.banner
            yield self.connection.queued_bar
            yield self.prompt
            yield self.status_line
        yield self.tasks_panel
        yield Footer()

    def on_mount(self) -> None:
        self.theme_manager = themes.ThemeManager(self, persist=self._persist_theme, watch=self._watch_themes)
        self.theme_manager.install(self.settings.ui.theme)
        self.set_keymap(self.keys.textual_keymap())
        if self._keymap_error:
            self.notify(self._keymap_error + "\nUsing the default keys.", severity="error", timeout=15)
        self.badge.display = False
        tasks = self.tasks_panel
        tasks.display = False
        self.thread_list.display = self.size.width >= THREADS_MIN_WIDTH
        self._narrow = self.size.width < PANELS_MIN_WIDTH
        self.prompt.focus()
        self._remove_state_listener = self.client.add_state_listener(self._on_connection_state)
        self._on_connection_state(self.client.state, self.client.state_detail)
        self._frame_timer = self.set_interval(1 / FRAME_HZ, self._frame, name="frame")
        # What exists now (modules, pydantic schemas, styles, widgets) lives as long as the
        # app: keep it out of the cyclic collector's full passes, which otherwise stall the
        # UI for 100+ ms each while a long stream is folded.
        gc.freeze()
        self.call_after_refresh(self._first_frame)
        # paint the first frame before anything slow (opening the client imports the
        # assistant for an embedded client, or connects for a remote one)
        self.call_after_refresh(self._boot)

    def _first_frame(self) -> None:
        self.stats.first_frame_at = time.perf_counter()

    @work(group="boot", exit_on_error=False)
    async def _boot(self) -> None:
        # the turn widgets, the conversation model and the Markdown parser are large imports:
        # do them off the event loop, before a thread opens (the UI stays responsive)
        await asyncio.to_thread(_preload_ui)
        if self.client.mode == "embedded":
            # the in-process assistant is a large import: do it off the event loop
            await asyncio.to_thread(_preload_embedded, self.client)
            from .screens.setup import check_model_setup

            if not await check_model_setup(self):  # a model without a key: say how to set it up
                return
        try:
            await self.client.open()
        except ClientError as exc:
            from .screens.login import offer_login

            if not await offer_login(self, exc):  # n8n: a login dialog instead of a dead app
                self._show_error(f"Cannot connect: {exc}")
                self._set_connection("offline", str(exc))
                self._ready_event.set()
                return
        self.status_info.model = self.client.model_name or self.status_info.model
        self.status_info.demo = is_demo(self.client, self.settings)
        if self.gateway_request is not None:
            await self._start_gateway(self.gateway_request)
        threads: list[ThreadInfo] = []
        try:
            threads = await self.client.list_threads()
        except ClientError as exc:
            self._show_error(f"Cannot list threads: {exc}")
        self.thread_list.set_threads(threads)
        self._load_redis_sessions()
        target = self.initial_thread_id
        if target is None and threads and self.start_mode == "pick":
            from .screens.resume_picker import ResumePicker

            target = await self.push_screen_wait(ResumePicker(threads))
        elif target is None and threads and self.start_mode == "latest":
            target = max(threads, key=lambda t: t.updated_at).id
        await self.open_thread(target)
        self._ready_event.set()
        self.pending_watch.start()

    async def _start_gateway(self, request: GatewayRequest) -> None:
        """Share ``request.root`` with n8n (``--gateway``); its state shows in the status line."""
        from ..client import gateway_flag

        info = self.status_info
        info.gateway, info.gateway_state = request.root.name or str(request.root), "connecting"

        def on_state(state: ConnectionState, detail: str) -> None:
            word = gateway_flag.STATE_WORDS.get(state, state.value)
            info.gateway_state = f"{word} {detail}" if state == ConnectionState.RECONNECTING and detail else word

        def on_end(message: str) -> None:
            info.gateway_state = "stopped"
            self.notify(message.capitalize(), severity="warning", timeout=10)

        try:
            self.gateway = await gateway_flag.start(self.client, request, set_state=on_state, on_end=on_end,
                                                    log=lambda message: self.log.info(f"gateway: {message}"))
        except ClientError as exc:
            info.gateway_state = "failed"
            self._show_error(f"The local gateway could not start: {exc}")
            return
        info.gateway_state = "sharing"
        self.notify(f"Sharing {request.root} (read-only) with n8n's agent", timeout=6)

    def _load_redis_sessions(self) -> None:
        """``--redis-chat``: the Redis chat sessions section is wired by the Redis integration."""
        hook = getattr(self, "load_redis_sessions", None)
        if self.redis_chat and callable(hook):
            hook(self.redis_chat)

    def load_redis_sessions(self, url: str) -> None:
        """``--redis-chat``: list the n8n chat sessions of that Redis in the thread list."""
        from .redis_sessions import RedisSessionsView

        self.redis_sessions = RedisSessionsView.attach(self, url, self.chat_webhook)

    async def on_unmount(self) -> None:
        self.pending_watch.stop()
        self.terminal.restore()
        if self.redis_sessions is not None:
            await self.redis_sessions.close()
        if self._remove_state_listener is not None:
            self._remove_state_listener()
        if self.theme_manager is not None:
            self.theme_manager.stop()
        self._stop_ingest()
        self._release_gc()
        gc.unfreeze()  # what was frozen at mount may be garbage now (tests run many apps)
        if self.gateway is not None:
            gateway, self.gateway = self.gateway, None
            try:
                await gateway.stop()
            except (ClientError, OSError) as exc:
                self.log.error(f"stopping the local gateway failed: {exc}")
        if self._close_client:
            try:
                await self.client.close()
            except (ClientError, OSError) as exc:
                self.log.error(f"closing the client failed: {exc}")

    # ------------------------------------------------------------------ connection state
    def _on_connection_state(self, state: ConnectionState, detail: str) -> None:
        self._set_connection(state.value, detail)
        self.connection.on_state(state, detail)

    def refresh_after_settle(self) -> None:
        """A run was ended locally (``tui.connection.settle_interrupted``): show it."""
        self._update_run_state()

    def refresh_threads_soon(self) -> None:
        self._refresh_threads()

    def _set_connection(self, state: str, detail: str) -> None:
        self.status_info.connection = state
        self.status_info.connection_detail = detail

    def _show_error(self, message: str) -> None:
        self.notify(message, severity="error", timeout=10)

    # ------------------------------------------------------------------ threads
    async def open_thread(self, thread_id: str | None) -> None:
        """Show ``thread_id`` (``None``: a new, not yet created thread).

        History first, then the event stream from ``nextEventId - 1``; nothing shows twice.
        """
        self._opening += 1
        try:
            await self._open_thread(thread_id)
        finally:
            self._opening -= 1

    async def _open_thread(self, thread_id: str | None) -> None:
        from ..protocol.conversation import Conversation

        self._stop_ingest()
        if self.redis_sessions is not None:
            self.redis_sessions.current = None
        conversation = Conversation(thread_id or "")
        if self.thread_id and self.pending:
            self.pending_watch.note(self.thread_id, len(self.pending))  # left with cards waiting
        self._expected_waiting = self.pending_watch.elsewhere.get(thread_id or "", 0)
        self.conversation = conversation
        self.thread_id = thread_id
        if thread_id:
            self.pending_watch.forget(thread_id)
        self.n8n_activity.reset(thread_id)
        self._pending_by_id = {}
        self.pending.clear()
        self._cancelling = False
        self._status_source = None
        self.status_info.message = ""
        self.status_info.input_tokens = self.status_info.output_tokens = 0
        self.status_info.cost = None
        self.status_info.context_tokens = 0
        self._usage_counted_run = None
        view = self.view
        thread_list = self.thread_list
        thread_list.active_thread_id = thread_id
        if thread_id is None:
            view.load(conversation)
            view.set_placeholder(self._welcome())
            self._after_open(conversation)
            self.run_worker(self.refresh_model_info(None), group="model-info", exclusive=True, exit_on_error=False)
            return
        view.set_placeholder(Content.styled("Loading…", "italic $text-muted"))
        try:
            history = await self.client.messages(thread_id)
        except NotFoundError:
            history = None
        except ClientError as exc:
            self._show_error(f"Cannot load the thread: {exc}")
            return
        if self.conversation is not conversation:
            return  # switched again meanwhile
        if history is not None:
            conversation.load_history(history)
        info = thread_list.thread(thread_id)
        conversation.title = info.title if info is not None and info.title else conversation.title
        # the thread's total: from the history (read with its cursor) or else the thread list
        metadata = history.metadata if history is not None and history.metadata is not None else (
            info.metadata if info is not None else {})
        usage = metadata.get("usage")
        self._add_usage(usage)
        if isinstance(usage, dict) and isinstance(usage.get("lastRunId"), str):
            self._usage_counted_run = usage["lastRunId"]  # its run-finish may still arrive: not twice
        conversation.drain_changes()
        view.load(conversation)
        view.set_placeholder(self._welcome())
        self._after_open(conversation)
        self.run_worker(self.refresh_model_info(thread_id), group="model-info", exclusive=True, exit_on_error=False)
        try:
            status = await self.client.status(thread_id)
        except ClientError:
            status = None
        if status is not None and status.is_suspended and not conversation.is_streaming:
            self.status_info.run_state = "awaiting approval"
        self.n8n_activity.reset(thread_id, status, history)
        settle_interrupted(conversation, status)  # a run the server no longer runs: show how it ended
        self.connection.show_queue()
        self._start_ingest(conversation, thread_id, conversation.cursor)

    def _after_open(self, conversation: Conversation) -> None:
        from .widgets.turns import Frame

        self.status_info.thread_title = conversation.title or ""
        self._refresh_pending(Frame(self.pending))
        self._update_tasks(conversation)
        self._update_run_state()
        self.sub_title = conversation.title or ("New thread" if not conversation.thread_id else "")

    def _welcome(self) -> Content:
        lines: list[str | tuple[str, str]] = [
            ("Ask Instance AI to build or change a workflow, e.g.\n", "bold"),
            "  “every morning send the weather forecast to Slack”\n\n",
            ("Enter sends · Ctrl+J or \\ Enter new line · Esc or Ctrl+C stops a run · F1 help · Ctrl+P commands", "$text-muted"),
        ]
        if self.status_info.demo:
            lines.append(("\nDemo mode: an offline model with canned behaviour, no real n8n.", "$text-warning"))
        return Content.assemble(*lines)

    # ------------------------------------------------------------------ ingest
    def _start_ingest(self, conversation: Conversation, thread_id: str, after: int) -> None:
        self._stop_ingest()
        self._ingest_task = asyncio.create_task(self._ingest(conversation, thread_id, after), name="ingest")

    def _stop_ingest(self) -> None:
        task, self._ingest_task = self._ingest_task, None
        if task is not None and not task.done():
            task.cancel()

    async def _ingest(self, conversation: Conversation, thread_id: str, after: int) -> None:
        """Fold every stream item into the model. No widget work happens here.

        ``_ingest_waiting`` is true only while the stream itself has nothing to give: it is
        set at the end of every item, but other tasks only see it when the stream really
        suspended (an item that is ready at once is taken in the same step).
        """
        stats = self.stats
        apply = conversation.apply
        apply_sync = conversation.apply_run_sync
        observe = self.n8n_activity.observe
        clock = time.perf_counter
        slice_end = clock() + INGEST_SLICE
        stream = self.client.events(thread_id, after=after)
        try:
            self._ingest_waiting = True
            async for item in stream:
                self._ingest_waiting = False
                event = item.event
                if event is not None:
                    apply(item.id, event)
                    if event.type == "run-finish":
                        self._note_run_finish(event)
                    elif event.type == "run-start":
                        self._check_foreign_message(conversation, event.run_id)
                elif item.run_sync is not None:
                    apply_sync(item.run_sync)
                observe(item)
                stats.events += 1
                if stats.first_event_at is None:
                    stats.first_event_at = clock()
                if not stats.events & 63:
                    now = clock()
                    stats.last_event_at = now
                    if now >= slice_end:
                        await asyncio.sleep(0)
                        slice_end = clock() + INGEST_SLICE
                        if self.conversation is not conversation:
                            return
                self._ingest_waiting = True
        except asyncio.CancelledError:
            raise
        except ClientError as exc:
            if self.conversation is conversation:
                self._show_error(f"The event stream stopped: {exc}")
        finally:
            self._ingest_waiting = False
            stats.last_event_at = clock()
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except (RuntimeError, ClientError):
                    pass

    def _check_foreign_message(self, conversation: Conversation, run_id: str) -> None:
        """A run nobody here started (another client): fetch its user message (n8n's
        ``run-start`` carries none)."""
        msg = conversation.message_for_run(run_id)
        if msg is None:
            return
        index = conversation.messages.index(msg)
        if index > 0 and conversation.messages[index - 1].role == "user":
            return
        self.run_worker(show_foreign_user_message(self, conversation, run_id), group="foreign", exit_on_error=False)

    def _note_run_finish(self, event: Any) -> None:
        """Tokens and cost, when the backend reports them: ``run-finish`` ``payload.usage``
        (and the thread's ``metadata.usage`` when it opens)."""
        if self._usage_counted_run is not None and event.run_id == self._usage_counted_run:
            return  # already in the thread total read when the thread opened
        extra = getattr(event.payload, "model_extra", None) or {}
        self._add_usage(extra.get("usage"))

    def _add_usage(self, usage: Any) -> None:
        """Add ``{inputTokens, outputTokens, cost}`` (a run's, or a thread's metadata) to the
        status line's totals."""
        if isinstance(usage, dict):
            info = self.status_info
            info.input_tokens += int(usage.get("inputTokens", usage.get("input_tokens", 0)) or 0)
            info.output_tokens += int(usage.get("outputTokens", usage.get("output_tokens", 0)) or 0)
            cost = usage.get("cost")
            if isinstance(cost, (int, float)):
                info.cost = (info.cost or 0.0) + float(cost)
            context = usage.get("contextTokens")
            if isinstance(context, int) and not isinstance(context, bool) and context > 0:
                info.context_tokens = context  # the latest, not a sum: how full the context is now

    # ------------------------------------------------------------------ the frame
    async def _frame(self) -> None:
        """Project what changed in the model onto the widgets, in one batched update."""
        self._frame_no += 1
        self.stats.frames += 1
        conversation = self.conversation
        view = self.view
        if conversation is None or not view.is_attached:
            return
        started = time.perf_counter()
        if self._flooded():
            return
        changes = conversation.drain_changes()
        behind = view.behind
        if changes.empty and not behind:
            self._last_frame_empty = True
            if self._pending_focus:
                self._focus_new_cards()
            if self._frame_no % 3 == 0:
                view.ticks()
                self._update_run_state()
                self.status_line.refresh_info(tick=True)
            return
        self._last_frame_empty = False
        from .widgets.turns import Frame

        frame = Frame(self.pending)
        with self.batch_update():
            if changes.confirmations or changes.reset:
                self._refresh_pending(frame)
            grew = view.apply(changes, frame)
            grew = view.catch_up(frame) or grew
            if changes.tasks or changes.reset:
                self._update_tasks(conversation)
            if changes.title and conversation.title:
                self._update_title(conversation)
            if changes.messages:
                self._update_status_message(conversation, changes)
            if changes.streaming:
                self._on_streaming_changed(conversation)
            self._update_run_state()
            self.status_line.refresh_info(tick=True)
            if grew and not view.following:
                self._show_new_output_badge()
        await frame.run()
        self._focus_new_cards()
        self.stats.record_frame(time.perf_counter() - started)

    def _flooded(self) -> bool:
        """During a flood of events (a replayed log, a burst after a reconnect) skip the
        projection: the model keeps every change and one later frame projects the end
        state, so no widget is mounted only to be pruned a moment later and the event loop
        stays with the ingest. Live agent output (hundreds of events/s) is never a flood."""
        backlog = self.stats.events - self._events_at_frame
        self._events_at_frame = self.stats.events
        flooding = backlog > FLOOD_EVENTS and not self.ingest_idle
        if flooding:
            if not self._catching_up and gc.isenabled():
                # a flood allocates fast: hold the cyclic collector (reference counting
                # still frees nearly everything) instead of letting it stall every few frames
                gc.disable()
                self._gc_held = True
            self._catching_up = True
            self.status_info.message = f"catching up… {self.stats.events:,} events"
            self.status_line.refresh_info(tick=True)
        elif self._catching_up:
            self._catching_up = False
            self.status_info.message = ""
            self._release_gc()
        return flooding

    def _release_gc(self) -> None:
        if self._gc_held:
            self._gc_held = False
            gc.enable()

    def _refresh_pending(self, frame: Frame) -> None:
        conversation = self.conversation
        if conversation is None:
            return
        new = {p.request_id: p for p in conversation.pending_confirmations()}
        old = self._pending_by_id
        changed = set(new) ^ set(old)
        self._pending_by_id = new
        self.pending.clear()
        self.pending.update(new)
        self._pending_focus.extend(rid for rid in new if rid not in old)
        if changed or not new:
            self._pending_changed([rid for rid in new if rid not in old])
        if changed:
            self._update_tasks(conversation)  # a plan review answered: rejected plans leave
        if changed:
            frame.new_cards.extend(self.view.refresh_pending(changed))
            if bool(old) != bool(new):
                self.refresh_bindings()  # the footer recomposes: only when "pending" flips


    # ------------------------------------------------------------------ never missed
    def _write_terminal(self, sequence: str) -> None:
        driver = self._driver
        if not self.is_headless and driver is not None:
            driver.write(sequence)

    def _thread_label(self, thread_id: str) -> str:
        info = self.thread_list.thread(thread_id)
        return (info.title if info is not None and info.title else "") or "Untitled thread"

    def _pending_changed(self, new_ids: Iterable[str] = ()) -> None:
        """Answers waiting here or in threads not open changed: the thread list's markers,
        the status line (how many, where), the terminal's title, and the bell for new ones."""
        watch = self.pending_watch
        here = len(self.pending)
        counts = {tid: n for tid, n in watch.elsewhere.items() if tid != self.thread_id}
        for tid in counts:  # a thread another client created after the app started
            if self.thread_list.thread(tid) is None and tid in watch.infos:
                self.thread_list.upsert_thread(watch.infos[tid])
        marks = dict(counts)
        if self.thread_id and here:
            marks[self.thread_id] = here
        self.thread_list.set_pending(marks)
        elsewhere = [(self._thread_label(tid), n) for tid, n in counts.items()]
        info = self.status_info
        info.waiting = waiting_summary(here, elsewhere)
        info.waiting_key = keymap.display_keys(self.keys.keys("next-pending-card"))
        self.status_line.refresh_info()
        total = here + sum(counts.values())
        self.terminal.waiting(total, f" in “{elsewhere[0][0]}”" if elsewhere and not here else "")
        arrived: list[str] = []
        for _rid in new_ids:
            if self._expected_waiting > 0:
                self._expected_waiting -= 1  # it was already signalled in another thread
            else:
                arrived.append("here")
        for tid, n in counts.items():
            if n > self._elsewhere_seen.get(tid, 0):
                arrived.append(self._thread_label(tid))
        self._elsewhere_seen = dict(counts)
        if arrived:
            self.terminal.arrived(f"Instance AI: an answer is waiting ({arrived[0]})")
        self.refresh_bindings()

    def _go_elsewhere(self) -> bool:
        """Ctrl+G past the last card here: open the next thread with answers waiting."""
        waiting = self.pending_watch.elsewhere
        order = [t.id for t in self.thread_list.local_threads()]
        others = sorted((tid for tid in waiting if tid != self.thread_id),
                        key=lambda tid: order.index(tid) if tid in order else len(order))
        if not others:
            return False
        self._open_and_go(others[0])
        return True

    @work(group="open", exclusive=True, exit_on_error=False)
    async def _open_and_go(self, thread_id: str) -> None:
        self._going_to = thread_id  # the user is on the way to its card: no "press Ctrl+G" notice
        try:
            await self.open_thread(thread_id)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while loop.time() < deadline:
                await asyncio.sleep(0.05)
                if self.thread_id != thread_id:
                    return
                if self.pending and self.go_to_pending():
                    self._pending_focus = []
                    return
        finally:
            self._going_to = None
        self.prompt.focus()
        self.notify("The answer in that thread is no longer waiting.", timeout=4)

    # ------------------------------------------------------------------ the focus rule
    # FOCUS RULE (issue 12). This is the only place where the app moves focus to a card by
    # itself. A new card takes focus only when ALL of these hold:
    #   1. the main screen is on top: no dialog (rename, delete), palette, help, picker or
    #      other screen — keys there belong to it;
    #   2. focus is on nothing, the conversation, or an EMPTY message prompt — never on the
    #      thread list, the thread search, a text field of another card (a wizard), another
    #      card, or a prompt with text in it;
    #   3. the user is not interacting: no key, click, scroll or paste for IDLE_BEFORE_FOCUS
    #      seconds (``_last_input_at``).
    # Otherwise the card waits (it stays queued and this is asked again every frame), and the
    # user is told once that it waits and how to reach it. Even when it takes focus, its keys
    # are ignored for ``confirmations.GRACE_SECONDS`` (``restart_grace``). The pending card is
    # reached deliberately with Ctrl+G (``next-pending-card`` in the key map), a click, or Tab.
    def focus_blocker(self) -> str | None:
        """Why a card may not take focus now (``None``: it may). See the focus rule above."""
        if len(self.screen_stack) > 1 or self.screen is not self.screen_stack[0]:
            return "a dialog is open"
        focused = self.focused
        if focused is not None and _inside_card(focused):
            return "another card has focus"
        if focused is not None and focused is not self.prompt and not _inside(focused, self.view):
            return "you are using another part of the screen"
        if focused is self.prompt and self.prompt.text.strip():
            return "you are typing"
        if time.monotonic() - self._last_input_at < IDLE_BEFORE_FOCUS:
            return "you are typing"
        return None

    async def on_event(self, event: events.Event) -> None:
        # every key, click, scroll and paste counts as interacting (the focus rule)
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp,
                              events.Paste)) and not getattr(event, "is_forwarded", False):
            self._last_input_at = time.monotonic()
        if (isinstance(event, events.Key) and event.key == "tab" and not getattr(event, "is_forwarded", False)
                and self.pending and self.focused is self.prompt and self.screen is self.screen_stack[0]):
            # Tab from the prompt goes to the card waiting for an answer (deliberately; keys
            # typed right after it still wait for the grace period)
            if self.go_to_pending(restart_grace=True):
                self._pending_focus = []
                return
        await super().on_event(event)

    def _focus_new_cards(self) -> None:
        """Bring a newly pending card to the user: focus it if the focus rule allows, else
        leave it queued (asked again next frame) and say once how to reach it.

        A card whose widget is not mounted yet stays queued for the next frame.
        """
        if not self._pending_focus:
            return
        wanted = [rid for rid in self._pending_focus if rid in self.pending]
        if not wanted:
            self._pending_focus = []
            return
        if self.focus_blocker() is not None:
            unannounced = [rid for rid in wanted if rid not in self._announced and self._going_to is None]
            if unannounced:
                self._announced.update(unannounced)
                key = keymap.display_keys(self.keys.keys("next-pending-card"))
                self.notify(f"The agent needs your answer — press {key} to go to it.", timeout=6)
            self._pending_focus = wanted
            return
        if self.go_to_pending(wanted[0], restart_grace=True):
            self._pending_focus = []

    def _update_tasks(self, conversation: Conversation) -> None:
        panel = self.tasks_panel
        tasks = conversation.latest_tasks
        if tasks is None:
            tasks = _tasks_from_history(conversation)
        from .widgets.tasks_panel import checklist

        # a rejected plan is not the checklist; a stopped run's unfinished tasks show stopped
        last = next((m for m in reversed(conversation.messages) if m.reducer is not None), None)
        run_status = None if last is None or last.reducer is None or last.is_streaming else last.reducer.status
        reviews = [call for m in conversation.messages if m.reducer is not None
                   for _agent, call in m.reducer.confirmation_calls()
                   if call.confirmation is not None and call.confirmation.effective_input_type == "plan-review"]
        tasks, note = checklist(tasks, run_status=run_status, plan_reviews=reviews)
        panel.set_tasks(tasks, note)
        if not self._user_toggled_tasks:
            wide_enough = self.size.width >= PANELS_MIN_WIDTH
            panel.display = bool(tasks is not None and tasks.tasks and self.settings.ui.show_tasks and wide_enough)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_panels(event.size.width)

    def _fit_panels(self, width: int) -> None:
        """Small terminals keep the conversation: below ``PANELS_MIN_WIDTH`` columns the side
        panels hide by themselves (Ctrl+B / Ctrl+T still open them); the thread list comes back
        by itself at ``THREADS_MIN_WIDTH`` unless the user hid it."""
        narrow = width < PANELS_MIN_WIDTH
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
            if self.conversation is not None:
                self._update_tasks(self.conversation)

    def _update_title(self, conversation: Conversation) -> None:
        title = conversation.title or ""
        self.connection.titles.note(self.thread_id, title)
        self.status_info.thread_title = title
        self.sub_title = title
        if self.thread_id is not None:
            self.thread_list.update_title(self.thread_id, title)

    def _update_status_message(self, conversation: Conversation, changes: Any) -> None:
        info = self.status_info
        for message_id, reducer_changes in changes.messages.items():
            if not reducer_changes.agents:
                continue
            msg = conversation.message(message_id) if len(reducer_changes.agents) else None
            if msg is None or msg.reducer is None:
                continue
            for agent_id in reducer_changes.agents:
                from .widgets.agent_info import agent_info

                agent = agent_info(msg.reducer, agent_id)
                if agent is None:
                    continue
                if agent.status_message:
                    info.message = agent.status_message
                    self._status_source = (message_id, agent_id)
                elif self._status_source == (message_id, agent_id):
                    info.message = ""
                    self._status_source = None

    def _on_streaming_changed(self, conversation: Conversation) -> None:
        if not conversation.is_streaming:
            self._cancelling = False
            self.status_info.message = ""
            self._status_source = None
            self._refresh_threads()
            self._update_tasks(conversation)  # a stopped run's unfinished tasks
            self.connection.flush_soon()  # a queued message goes now
        self.refresh_bindings()

    def _update_run_state(self) -> None:
        conversation = self.conversation
        info = self.status_info
        if conversation is None:
            return
        if self.pending:
            state = "awaiting approval"
        elif conversation.is_streaming:
            state = "cancelling" if self._cancelling else "running"
        elif info.run_state == "awaiting approval" and not conversation.messages:
            state = info.run_state
        else:
            last = next((m for m in reversed(conversation.messages) if m.reducer is not None), None)
            state = "error" if last is not None and last.reducer is not None and last.reducer.status == "error" else "idle"
        info.run_state = state

    def _show_new_output_badge(self) -> None:
        """After layout: if the user is scrolled up and output landed below, say so."""

        def check() -> None:
            view = self.view
            if view.following or view.scroll_y >= view.max_scroll_y - 1 or self.badge.display:
                return
            self.badge.update(
                Content.styled("↓ new output below — press End (or click here) to follow", "bold $text-accent")
            )
            self.badge.display = True

        self.call_after_refresh(check)

    @on(ConversationView.Followed)
    def _followed(self) -> None:
        self.badge.display = False

    def on_click(self, event: Any) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and widget.id == "new-output":
            self.view.follow()

    @on(PromptInput.JumpToEnd)
    def _jump_to_end(self) -> None:
        self.view.follow()

    # ------------------------------------------------------------------ sending
    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        if text.startswith("/") and self.run_slash_command(text):
            return
        self.send_message_in_background(text)

    @work(group="send", exit_on_error=False)
    async def send_message_in_background(self, text: str) -> None:
        await self.send_message(text)

    async def send_message(self, text: str) -> str | None:
        """Send ``text`` in the current thread (creating it first if it is new). Returns the runId."""
        if self.redis_sessions is not None and self.redis_sessions.current is not None:
            await self.redis_sessions.send(text)  # continues the open Redis chat session
            return None
        conversation = self.conversation
        if not text.strip():
            return None
        watcher = self.connection
        if conversation is None or watcher.blocked:
            reason = watcher.blocked or f"not connected ({self.client.state_detail or self.client.state.value})"
            self.notify(f"Not sent: {reason}", severity="error", timeout=8)
            self._keep_in_prompt(text)
            return None
        if conversation.is_streaming or self.client.state in (ConnectionState.RECONNECTING, ConnectionState.CONNECTING):
            watcher.enqueue(text)  # sent when the run ends / the connection is back
            return None
        if self.client.state == ConnectionState.OFFLINE:
            self.notify(f"Not sent: offline ({self.client.state_detail or 'no connection'})", severity="error")
            self._keep_in_prompt(text)
            return None
        thread_id = self.thread_id
        if thread_id is None:
            try:
                info = await self.client.create_thread(title="")
            except ClientError as exc:
                self._show_error(f"Cannot create a thread: {exc}")
                self.prompt.load_text(text)
                return None
            thread_id = info.id
            self.thread_id = thread_id
            conversation.thread_id = thread_id
            thread_list = self.thread_list
            thread_list.upsert_thread(info)
            thread_list.active_thread_id = thread_id
            self._start_ingest(conversation, thread_id, conversation.cursor)
        message = conversation.add_user_message(text)
        try:
            run_id = await self.client.send(thread_id, text)
        except RunActiveError:
            self._mark_unsent(message.id, "the agent is still working on the previous message")
            self._keep_in_prompt(text)
            return None
        except ClientError as exc:
            if exc.status in (401, 403) and self.client.supports_login and conversation.discard_local(message.id):
                # the n8n session ended and logging in again failed: ask, then the user sends again
                self._keep_in_prompt(text)
                from .screens.login import offer_login

                if await offer_login(self, exc):
                    self.notify("Logged in again. Press Enter to send your message.", timeout=8)
                return None
            if exc.status is None and conversation.discard_local(message.id):
                # the server did not answer at all (restarting?): queued, sent once it is back
                watcher.enqueue(text)
                self.notify(f"{exc} — your message is queued and will be sent when the connection is back.",
                            severity="warning", timeout=8)
                return None
            self._mark_unsent(message.id, str(exc))
            self._keep_in_prompt(text)
            return None
        return run_id

    def _keep_in_prompt(self, text: str) -> None:
        """A refused message goes back into the prompt (in front of anything typed since)."""
        typed = self.prompt.text
        self.prompt.load_text(text if not typed.strip() else f"{text}\n{typed}")

    @on(QueuedRow.Edit)
    def _edit_queued(self, event: QueuedRow.Edit) -> None:
        event.stop()
        item = self.connection.queue.remove(event.item_id)
        self.connection.show_queue()
        if item is not None:
            self._keep_in_prompt(item.text)
            self.prompt.focus()

    @on(QueuedRow.Remove)
    def _remove_queued(self, event: QueuedRow.Remove) -> None:
        event.stop()
        self.connection.queue.remove(event.item_id)
        self.connection.show_queue()
        self.prompt.focus()

    def _mark_unsent(self, message_id: str, reason: str) -> None:
        self.notify(f"Not sent: {reason}", severity="error", timeout=8)

        def mark() -> None:
            from .widgets.turns import UserMessage

            widget = self.view.turns.get(message_id)
            if isinstance(widget, UserMessage):
                widget.add_class("-unsent")
                widget.update(Content.assemble(widget.text, ("\n✗ not sent: " + reason, "$text-error")))

        self.call_after_refresh(mark)

    # ------------------------------------------------------------------ confirmations
    def on_confirmation_answered(self, event: ConfirmationAnswered) -> None:
        """A card was answered (``confirmations.ConfirmationAnswered``)."""
        event.stop()
        self._send_confirmation(event.card, event.request_id, event.body, event.summary)

    @work(group="confirm", exit_on_error=False)
    async def _send_confirmation(self, card: ConfirmCard, request_id: str, body: Any, summary: str) -> None:
        from ..protocol.api import ApprovalConfirm, PlanDenyConfirm

        try:
            await self.client.confirm(request_id, body)
        except ClientError as exc:
            self._show_error(f"Could not send your answer: {exc}")
            card.reopen()
            return
        approved: bool | None = None
        if isinstance(body, ApprovalConfirm):
            approved = body.approved
        elif isinstance(body, PlanDenyConfirm):
            approved = False
        if self.conversation is not None:
            self.conversation.mark_confirmation_resolved(request_id, approved)
        card.settle(summary)
        if self.focused is None or _inside_card(self.focused) or self.focused is card:
            remaining = [rid for rid in self.pending if rid != request_id]
            if remaining:
                # the next card: its keys wait again, so a double press cannot answer it
                self.call_after_refresh(self.go_to_pending, remaining[0], True)
            else:
                self.prompt.focus()
                self.view.follow()  # back to following the agent's output

    def go_to_pending(self, request_id: str | None = None, restart_grace: bool = False) -> bool:
        """Scroll to a pending card (the first one by default) and focus it.

        ``restart_grace``: the app moved focus by itself, so the card's key grace period
        starts now (the user may have been typing a moment ago).
        """
        view = self.view
        ids = [request_id] if request_id else list(self._pending_by_id)
        for rid in ids:
            pending = self._pending_by_id.get(rid)
            if pending is None:
                continue
            card = self._find_card(pending)
            if card is None and pending.message_id not in view.turns:
                # an older message is not mounted: mount everything up to it
                while pending.message_id not in view.turns and view.load_older():
                    pass
                card = self._find_card(pending)
            if card is not None and card.card is not None:
                if restart_grace:
                    card.card.restart_grace()
                if restart_grace and view.following:
                    # a new card at the bottom of the output: stay anchored, it is in view
                    card.card.focus_default(scroll_visible=False)
                    view.follow()
                else:
                    view.release_anchor()
                    card.card.focus_default()
                    card.card.reveal()
                return True
        return False

    def _find_card(self, pending: PendingConfirmation) -> Any:
        view = self.view
        for turn in view.assistant_turns():
            card = turn.cards.get(pending.tool_call.tool_call_id)
            if card is not None:
                return card
        return None

    def action_next_pending_card(self) -> None:
        """The next card waiting: in this thread, then in the other threads (switching)."""
        if not self.pending:
            if not self._go_elsewhere():
                self.notify("Nothing is waiting for your answer.", timeout=3)
            return
        ids = list(self._pending_by_id)
        focused = self.focused
        current = None
        node: Any = focused
        while node is not None:
            if _is_card(node):
                current = node.request_id
                break
            node = node.parent
        if current in ids:
            if ids.index(current) == len(ids) - 1 and self._go_elsewhere():
                return  # the last card here: on to the next thread with answers waiting
            ids = ids[ids.index(current) + 1 :] + ids[: ids.index(current) + 1]
        for rid in ids:
            if self.go_to_pending(rid):
                return
        self.notify("The pending card is not visible yet; try again in a moment.", timeout=3)

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            return self.conversation is not None and self.conversation.is_streaming
        if action == "next_pending_card":
            return bool(self.pending) or bool(self.pending_watch.elsewhere)
        return True

    def action_cancel_run(self) -> None:
        if self.conversation is None or not self.conversation.is_streaming or self.thread_id is None:
            return
        self._cancelling = True
        self._update_run_state()
        self.status_line.refresh_info()
        self._cancel(self.thread_id)

    def action_interrupt(self) -> None:
        """Ctrl+C as in every agent TUI: copy a selection; else stop the running agent; else
        clear the prompt; with nothing to stop or clear, a second Ctrl+C within 2 s quits."""
        focused = self.focused
        selected = getattr(focused, "selected_text", "") if focused is not None else ""
        if not selected:
            selected = self.screen.get_selected_text() or ""
        if selected:
            self.copy_text(selected, "the selection")
            self._interrupt_at = 0.0
            return
        if self.conversation is not None and self.conversation.is_streaming and not self._cancelling:
            self.action_cancel_run()
            self.notify("Stopping the agent… (Ctrl+C again with nothing running quits)", timeout=3)
            self._interrupt_at = 0.0
            return
        if self.prompt.text:
            self.prompt.clear()
            self._interrupt_at = 0.0
            return
        now = time.monotonic()
        if now - getattr(self, "_interrupt_at", 0.0) < 2.0:
            self.exit()
            return
        self._interrupt_at = now
        self.notify("Press Ctrl+C again to quit (or Ctrl+Q).", timeout=2)

    @work(group="cancel", exit_on_error=False)
    async def _cancel(self, thread_id: str) -> None:
        try:
            await self.client.cancel(thread_id)
        except ClientError as exc:
            self._cancelling = False
            self._show_error(f"Could not cancel: {exc}")

    def action_new_thread(self) -> None:
        self._open_in_background(None)

    @work(group="open", exclusive=True, exit_on_error=False)
    async def _open_in_background(self, thread_id: str | None) -> None:
        await self.open_thread(thread_id)
        self.prompt.focus()

    def action_toggle_threads(self) -> None:
        threads = self.thread_list
        threads.display = not threads.display
        if threads.display:
            threads.focus_list()
        else:
            self.prompt.focus()

    def show_threads(self) -> None:
        threads = self.thread_list
        threads.display = True
        threads.focus_search()

    def action_toggle_tasks(self) -> None:
        panel = self.tasks_panel
        self._user_toggled_tasks = True
        panel.display = not panel.display

    def action_focus_input(self) -> None:
        self.prompt.focus()

    def action_theme_picker(self) -> None:
        self.search_themes()

    def action_help(self) -> None:
        from .screens.help import HelpScreen, help_markdown

        self.push_screen(HelpScreen(help_markdown(self.keys, self.focused)))

    def show_full_help(self) -> None:
        from .screens.help import HelpScreen, help_markdown

        self.push_screen(HelpScreen(help_markdown(self.keys, self.focused, everything=True)))

    def action_export(self) -> None:
        self.export_thread(None)

    @work(group="export", exit_on_error=False)
    async def export_thread(self, path: str | None) -> Path | None:
        """Write the thread as Markdown (secrets redacted) and say where."""
        conversation = self.conversation
        if conversation is None or not conversation.messages:
            self.notify("Nothing to export yet.", severity="warning")
            return None
        from ..protocol.transcript import to_markdown

        info = self.status_info
        usage: dict[str, Any] = {"inputTokens": info.input_tokens, "outputTokens": info.output_tokens}
        if info.cost is not None:
            usage["cost"] = info.cost
        text = to_markdown(conversation, title=conversation.title or None, usage=usage)
        name = conversation.thread_id or "thread"
        target = Path(path).expanduser() if path else Path.cwd() / f"{_safe_name(name)}.md"  # noqa: ASYNC240 - no I/O
        try:
            await asyncio.to_thread(_write_text, target, text)
        except OSError as exc:
            self._show_error(f"Cannot write {target}: {exc}")
            return None
        self.notify(f"Exported the thread to {target}", timeout=6)
        return target

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save an SVG of the screen: to ``path``, else the Downloads folder if there is one, else here."""
        if path is None:
            from platformdirs import user_downloads_path

            downloads = user_downloads_path()
            folder = downloads if downloads.is_dir() else Path.cwd()
        else:
            folder = Path(path).expanduser()
        if not folder.is_dir():
            self._show_error(f"Cannot save the screenshot: the folder {folder} does not exist")
            return
        self.deliver_screenshot(filename, str(folder))

    @work(group="copy", exit_on_error=False)
    async def copy_text(self, text: str, what: str) -> None:
        """Copy ``text`` and say truthfully where it went: the system clipboard (a clipboard tool),
        the terminal's clipboard (OSC 52; in a browser, the page's), or — when the terminal is
        known to drop OSC 52 — a private file."""
        from . import clipboard

        self.copy_to_clipboard(text)  # OSC 52, and the app's own clipboard (paste within the app)
        if self.is_web:  # instance-ai web: OSC 52 reaches the page, which writes the browser's clipboard
            self.notify(f"Copied {what} to the browser's clipboard.", timeout=3)
            return
        tool = await asyncio.to_thread(clipboard.copy_native, text)
        if tool is not None:
            self.notify(f"Copied {what} to the clipboard ({tool}).", timeout=3)
            return
        blocker = await asyncio.to_thread(clipboard.osc52_blocker)
        if blocker is None:
            self.notify(f"Copied {what} through the terminal (OSC 52).", timeout=3)
            return
        try:
            path = await asyncio.to_thread(clipboard.save_copy, text)
        except OSError as exc:
            self._show_error(f"Cannot copy {what}: {blocker}, and saving it failed: {exc}")
            return
        self.notify(f"Not copied to your clipboard: {blocker}. {what[:1].upper()}{what[1:]} is saved in {path}.",
                    severity="warning", timeout=10)

    def show_permissions(self) -> None:
        """``/permissions``: the open thread's "always allow" grants, with revoke."""
        from .screens.permissions import open_permissions

        open_permissions(self)

    def copy_last_answer(self) -> None:
        view = self.view
        turns = view.assistant_turns()
        if not turns:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_text(turns[-1].answer_text(), "the last answer")

    # ------------------------------------------------------------------ slash commands
    def run_slash_command(self, text: str) -> bool:
        """Run ``/command args``. Returns False if it is not a command (then it is sent)."""
        name, _, arg = text[1:].strip().partition(" ")
        arg = arg.strip()
        commands: dict[str, Callable[[], object]] = {
            "new": lambda: self.action_new_thread(),
            "threads": lambda: self.show_threads(),
            "theme": lambda: self._slash_theme(arg),
            "export": lambda: self.export_thread(arg or None),
            "help": lambda: self.show_full_help(),
            "permissions": lambda: self.show_permissions(),
            "retry": lambda: self.rewind_last(resend=True),
            "edit": lambda: self.rewind_last(resend=False),
            "rewind": lambda: self.pick_rewind(),
            "model": lambda: self.choose_model(arg),
            "quit": lambda: self.exit(),
            "exit": lambda: self.exit(),
        }
        command = commands.get(name.lower())
        if command is None:
            if name and " " not in text.split("\n")[0][: len(name) + 1] and name.isalpha():
                self.notify(
                    f"Unknown command /{name}. Commands: /new /threads /retry /edit /rewind /model /theme /export /permissions /help /quit",
                    severity="warning",
                )
                self.prompt.load_text(text)
                return True
            return False
        command()
        return True

    def _slash_theme(self, name: str) -> None:
        if not name:
            self.search_themes()
            return
        if name not in self.available_themes:
            # A typo neither switches nor saves anything: say so and suggest the closest names.
            import difflib

            known = sorted(self.available_themes)
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else f" Themes: {', '.join(known)}"
            self.notify(f"No theme named {name!r}; the theme is unchanged.{hint}", severity="warning", timeout=8)
            return
        if self.theme_manager is not None:
            applied = self.theme_manager.apply(name)
            if applied == name:
                self.notify(f"Theme: {name}", timeout=2)
        else:
            self.theme = name

    # ------------------------------------------------------------------ thread list
    @on(ThreadList.Selected)
    def _thread_selected(self, event: ThreadList.Selected) -> None:
        event.stop()
        if event.source == "redis" and self.redis_sessions is not None:
            self.redis_sessions.open_in_background(event.thread_id)
            return
        if event.thread_id != self.thread_id:
            self._open_in_background(event.thread_id)
        else:
            self.prompt.focus()

    # ------------------------------------------------------------------ the model (/model)
    @work(group="model", exclusive=True, exit_on_error=False)
    async def choose_model(self, name: str = "") -> None:
        """``/model``: a picker of the models the open thread can use; ``/model NAME`` sets it."""
        if not self.client.can_switch_model:
            self._show_error("This server does not let the app choose the model (/model needs the embedded "
                             "agent or instance-ai serve).")
            return
        try:
            models = await self.client.list_models(self.thread_id)
        except ClientError as exc:
            self._show_error(f"Cannot list the models: {exc}")
            return
        if not name:
            from .screens.model_picker import ModelPicker

            chosen = await self.push_screen_wait(ModelPicker(models))
            if not chosen:
                return
            name = chosen
        thread_id = self.thread_id
        try:
            if thread_id is None:  # a new thread: create it so the choice has a home
                info = await self.client.create_thread(title="")
                thread_id = info.id
                await self.open_thread(thread_id)
            await self.client.set_model(thread_id, "" if name == models.default else name)
        except ClientError as exc:
            self._show_error(f"Cannot switch the model: {exc}")
            return
        await self.refresh_model_info(thread_id)
        self.notify(f"Model of this thread: {self.status_info.model} (from the next message on).", timeout=4)

    async def refresh_model_info(self, thread_id: str | None) -> None:
        """The thread's model and its context window, for the status line."""
        if not self.client.can_switch_model:
            return
        try:
            models = await self.client.list_models(thread_id)
        except ClientError:
            return
        info = self.status_info
        info.model = models.current or info.model
        info.context_window = next((m.context_window for m in models.models if m.name == models.current), None)
        self.status_line.refresh_info()

    # ------------------------------------------------------------------ block cursor (Alt+↑/↓)
    def action_block_previous(self) -> None:
        self.view.move_block(-1)

    def action_block_next(self) -> None:
        self.view.move_block(+1)

    # ------------------------------------------------------------------ find (Ctrl+F)
    def action_find(self) -> None:
        self.find_bar.open(self.conversation)

    def on_find_bar_show(self, event: Any) -> None:
        from .widgets.find_bar import matched_widget

        event.stop()
        previous = getattr(self, "_find_hit", None)
        if previous is not None:
            previous.remove_class("-find-hit")
        self._find_hit = None
        if event.match is None:
            return
        widget = matched_widget(self.view, event.match)
        if widget is None:
            return
        widget.add_class("-find-hit")
        self._find_hit = hit = widget
        self.view.following = False

        def reveal() -> None:
            if hit.is_attached and id(self._find_hit) == id(hit):
                self.view.scroll_to_widget(hit, animate=False, top=True, immediate=True)

        # once now, and once more after older turns just mounted above it have their heights
        self.call_after_refresh(reveal)
        self.set_timer(0.15, reveal)

    def on_find_bar_closed(self, event: Any) -> None:
        event.stop()
        self.prompt.focus()

    # ------------------------------------------------------------------ retry, edit, rewind
    def _rewind_turns(self) -> list[Any] | None:
        """The user turns that can be rewound to, or None (with the reason shown)."""
        from .screens.rewind import user_turns

        conversation = self.conversation
        if not self.client.can_rewind:
            self._show_error("This server cannot rewind a conversation: retry and edit need our own server "
                             "(embedded, or instance-ai serve).")
            return None
        if conversation is None or self.thread_id is None:
            self.notify("Nothing to go back to yet.", severity="warning")
            return None
        if conversation.is_streaming:
            self.notify("The agent is working: stop it first (Esc or Ctrl+C).", severity="warning")
            return None
        turns = user_turns(conversation)
        if not turns:
            self.notify("Nothing to go back to yet.", severity="warning")
            return None
        return turns

    def rewind_last(self, *, resend: bool) -> None:
        """``/retry`` (the same message again) and ``/edit`` (the last message back in the prompt)."""
        turns = self._rewind_turns()
        if turns:
            self._rewind(turns[-1], resend=resend)

    def pick_rewind(self) -> None:
        """``/rewind``: choose an earlier message to go back to."""
        from .screens.rewind import RewindPicker

        turns = self._rewind_turns()
        if turns:

            def chosen(turn: Any) -> None:
                if turn:
                    self._rewind(turn, resend=False)

            self.push_screen(RewindPicker(turns), chosen)

    def on_user_message_edit_requested(self, event: Any) -> None:
        """``e`` on a user message (``turns.UserMessage.EditRequested``; by name: turns loads lazily)."""
        event.stop()
        turns = self._rewind_turns()
        if turns:
            turn = next((t for t in turns if t.message_id == event.message_id), None)
            if turn is None:
                self.notify("This message has no answer to go back from yet.", severity="warning")
                return
            self._rewind(turn, resend=False)

    @work(group="rewind", exclusive=True, exit_on_error=False)
    async def _rewind(self, turn: Any, *, resend: bool) -> None:
        thread_id = self.thread_id
        if thread_id is None:
            return
        try:
            result = await self.client.rewind(thread_id, turn.rewind_id)
        except ClientError as exc:
            self._show_error(f"Cannot go back: {exc}")
            return
        text = result.text or turn.text
        await self.open_thread(thread_id)
        count = len(result.superseded_run_ids)
        kept = f"{count} turn{'s' if count != 1 else ''} left the agent's memory (kept in the thread's history)"
        if resend:
            self.notify(f"Retrying. {kept}.", timeout=4)
            await self.send_message(text)
        else:
            self.prompt.load_text(text)
            self.prompt.move_cursor(self.prompt.document.end)
            self.prompt.focus()
            self.notify(f"Edit the message and send it. {kept}.", timeout=5)

    @on(ThreadList.SearchRequested)
    def _thread_search(self, event: ThreadList.SearchRequested) -> None:
        event.stop()
        self._search_threads(event.text)

    @work(group="thread-search", exclusive=True, exit_on_error=False)
    async def _search_threads(self, text: str) -> None:
        """Full-text thread search through the client, 150 ms after the last key."""
        await asyncio.sleep(0.15)
        try:
            found = await self.client.search_threads(text)
        except ClientError as exc:
            self.thread_list.set_content_matches(text, ())
            self.notify(f"Searching messages failed: {exc}; titles only.", severity="warning", timeout=4)
            return
        self.thread_list.set_content_matches(text, [thread.id for thread in found])

    @on(ThreadList.NewRequested)
    def _thread_new(self, event: ThreadList.NewRequested) -> None:
        event.stop()
        self.action_new_thread()

    @on(ThreadList.RenameRequested)
    def _thread_rename(self, event: ThreadList.RenameRequested) -> None:
        event.stop()
        self._rename(event.thread_id, event.title)

    @work(group="threads", exit_on_error=False)
    async def _rename(self, thread_id: str, title: str) -> None:
        try:
            info = await self.client.rename_thread(thread_id, title)
        except ClientError as exc:
            self._show_error(f"Cannot rename: {exc}")
            return
        self.thread_list.update_title(thread_id, info.title)
        self.connection.titles.note(thread_id, info.title)
        if thread_id == self.thread_id and self.conversation is not None:
            self.conversation.title = info.title
            self._update_title(self.conversation)

    @on(ThreadList.DeleteRequested)
    def _thread_delete(self, event: ThreadList.DeleteRequested) -> None:
        event.stop()
        self._delete(event.thread_id)

    @work(group="threads", exit_on_error=False)
    async def _delete(self, thread_id: str) -> None:
        try:
            await self.client.delete_thread(thread_id)
        except ClientError as exc:
            self._show_error(f"Cannot delete: {exc}")
            return
        thread_list = self.thread_list
        thread_list.remove_thread(thread_id)
        if thread_id == self.thread_id:
            await self.open_thread(None)

    @work(group="refresh-threads", exclusive=True, exit_on_error=False)
    async def _refresh_threads(self) -> None:
        guard = self.connection.titles
        requested_at = guard.mark()
        try:
            threads = await self.client.list_threads()
        except ClientError:
            return
        thread_list = self.thread_list
        for info in threads:
            thread_list.upsert_thread(guard.fix(info, requested_at))

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("New thread", "Start a new conversation", self.action_new_thread)
        yield SystemCommand("Threads", "Show and search the thread list", self.show_threads)
        yield SystemCommand("Toggle task list", "Show or hide the task checklist", self.action_toggle_tasks)
        yield SystemCommand("Export thread", "Write the thread as Markdown", self.action_export)
        yield SystemCommand("Copy last answer", "Copy the agent's last answer", self.copy_last_answer)
        yield SystemCommand("Help", "Every key and slash command", self.show_full_help)
        yield SystemCommand("Permissions", "The thread's always-allow grants; revoke them", self.show_permissions)
        if self.pending or self.pending_watch.elsewhere:
            yield SystemCommand("Go to pending approval", "Jump to the card waiting for you", self.action_next_pending_card)
        if self.conversation is not None and self.conversation.is_streaming:
            yield SystemCommand("Cancel run", "Stop the agent", self.action_cancel_run)
        yield SystemCommand(
            "Jump to newest output", "Scroll to the bottom and follow", self.view.follow
        )

    # ------------------------------------------------------------------ headless hooks
    async def wait_until_ready(self, timeout: float = 10.0) -> None:
        """Until the first thread is open (or the connection failed)."""
        await asyncio.wait_for(self._ready_event.wait(), timeout)

    @property
    def ingest_idle(self) -> bool:
        """The ingest worker is waiting for the stream's next item (or none runs)."""
        task = self._ingest_task
        return task is None or task.done() or self._ingest_waiting

    @property
    def rendered(self) -> bool:
        """The last frame projected nothing new and every Markdown block has parsed its text."""
        return (
            self._last_frame_empty and not self._catching_up and not self._opening and self.view.settled
        )

    async def wait_until_rendered(self, timeout: float = 30.0, *, events: int | None = None) -> float:
        """Wait until rendering caught up (and, with ``events``, that many were ingested).

        Returns the seconds waited. Raises ``TimeoutError``.
        """
        started = time.perf_counter()
        deadline = started + timeout
        while True:
            enough = events is None or self.stats.events >= events
            if enough and self.ingest_idle and self.rendered and not self._model_dirty():
                return time.perf_counter() - started
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"rendering did not catch up in {timeout} s (events={self.stats.events}, "
                    f"frame empty={self._last_frame_empty})"
                )
            await asyncio.sleep(1 / FRAME_HZ / 2)

    def _model_dirty(self) -> bool:
        conversation = self.conversation
        return conversation is not None and conversation.has_changes


def _tasks_from_history(conversation: Conversation) -> Any:
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


def _preload_ui() -> None:
    """Import what the first turn, tool card and Markdown block need (off the event loop)."""
    from textual.highlight import highlight

    from ..protocol import conversation  # noqa: F401
    from ..protocol.events import TaskList
    from ..protocol.tree import AgentNode, Confirmation, ToolCallState
    from .widgets import turns  # noqa: F401
    from .widgets.flat_markdown import parse_document

    parse_document("warm *up*\n\n- list\n")  # builds the markdown-it parser
    highlight("{}", language="json")  # loads the lexers
    for model in (ToolCallState, Confirmation, AgentNode, TaskList):
        model.model_rebuild()  # the wire models build their validators on first use


def _preload_embedded(client: Client) -> None:
    """The in-process assistant (only an ``EmbeddedClient`` runs one)."""
    import importlib

    from ..client.embedded import EmbeddedClient

    if not isinstance(client, EmbeddedClient):
        return
    for name in ("instance_ai_tui.server.service_factory", "instance_ai_tui.assistant.service"):
        try:
            importlib.import_module(name)
        except ImportError:
            return


def _is_card(node: Any) -> bool:
    """A confirmation card (duck-typed: the module is imported only when cards exist)."""
    return getattr(type(node), "KEY_SCOPE", None) == "card"


def _inside_card(node: Any) -> bool:
    while node is not None:
        if _is_card(node):
            return True
        node = node.parent
    return False


def _inside(node: Any, container: Any) -> bool:
    while node is not None:
        if node is container:
            return True
        node = node.parent
    return False


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "thread"


def _write_text(path: Path, text: str) -> None:
    """Write an export; a folder that does not exist is an error, not created silently."""
    if not path.parent.is_dir():
        raise FileNotFoundError(f"the folder {path.parent} does not exist")
    path.write_text(text, encoding="utf-8")
