"""``InstanceAiApp``: the Textual app — its composition and bindings. It only talks to a ``Client``.

Data flow (DESIGN.md, "Performance architecture")::

    client.events()  --ingest worker-->  Conversation (reducer model)   no widget work
                                              |  drain_changes()
    frame timer (25 Hz)  --one batch_update-->  widgets (only what changed)

The app is the composition root: it builds the screen (``screens.main.MainScreen``, which makes
the widgets and is the projection's frame sink) and the rooms, each from its collaborators, and
hands Textual's events to them. No room is given the app:

``app.thread`` (``tui.open_thread.OpenThread``) is the one writer of the thread on screen, with its
``Outbox``; ``app.threads``, ``sender``, ``cards``, ``run_status``, ``actions``, ``connection``,
``projection`` and ``boot`` (``tui.startup.Boot``) are the rooms — who owns what is in
docs/architecture.md, "The TUI".

Headless use (benchmarks, screenshots, tests)::

    app = InstanceAiApp(client, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()            # first thread opened
        await app.thread.outbox.send("hello")   # what Enter in the prompt does
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
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import Static

from ..client.base import Client, ClientError, ConnectionState
from ..protocol.safe_text import visible
from . import commands, keymap, screen_cache
from .actions import Actions
from .cards import Cards
from .connection import ConnectionWatcher
from .heap import HeapPolicy
from .open_thread import OpenThread
from .pending_watch import PendingWatch, TerminalSignals
from .projection import Projection
from .run_clock import RunClock
from .run_status import RunStatus
from .screens.main import MainScreen
from .sending import Sender
from .startup import Boot, FirstFramePrefs, Started, StartingClient, Startup, is_demo
from .textual_internals import TOASTS_CSS, app_driver, keep_reflow_baseline
from .themes.manager import ThemeManager
from .themes.variables import app_variable_defaults
from .threads import Threads
from .widgets.conversation_view import ConversationView
from .widgets.find_bar import FindBar
from .widgets.n8n_activity import N8nActivity
from .widgets.prompt import PromptInput
from .widgets.queued import QueuedBar, QueuedRow
from .widgets.status_line import StatusInfo, StatusLine
from .widgets.tasks_panel import TasksPanel
from .widgets.thread_list import ThreadList

# Imported when first needed, after the first frame (start-up time): the conversation model
# (protocol.conversation / reducer), the turn widgets and cards (Markdown), the help screen.
if TYPE_CHECKING:
    from ..client.gateway_flag import GatewayRequest
    from ..config import Settings
    from ..protocol.conversation import Conversation
    from .screen_cache import CachedScreen
    from .widgets.confirmations import ConfirmationAnswered
    from .widgets.tool_card import ToolCallCard
    from .widgets.turns import UserMessage


class InstanceAiApp(App[None]):
    """The terminal app. ``client`` is any ``Client``; ``settings`` the loaded ``Settings``.

    ``sources``: more thread sources, each listed in its own section (e.g. ``--redis-chat``,
    built here from ``redis_chat`` / ``chat_webhook`` when not given).
    """

    CSS_PATH = "app.tcss"
    CSS = TOASTS_CSS
    TITLE = "Instance AI"
    #: the open thread's title; no Header draws it, so a new one repaints nothing (Textual's
    #: repaints the whole screen: at a new thread's first frame, beside its answer; issue 44)
    sub_title: Reactive[str] = Reactive("", compute=False, repaint=False)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("app")]
    PAUSE_GC_ON_SCROLL = True
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        client: Client | None = None,
        settings: Settings | None = None,
        *,
        startup: Startup | None = None,
        thread_id: str | None = None,
        redis_chat: str | None = None,
        chat_webhook: str | None = None,
        sources: Iterable[Client] = (),
        watch_themes: bool = True,
        persist_theme: bool = True,
        close_client: bool = True,
        gateway: GatewayRequest | None = None,
        start: str = "latest",
        tune_gc: bool = False,
    ) -> None:
        super().__init__()
        if client is not None and settings is not None and startup is None:
            prefs = FirstFramePrefs.from_settings(settings)
        elif client is None and settings is None and startup is not None:
            prefs = startup.prefs
        else:
            raise TypeError("InstanceAiApp takes a client and its settings, or a startup (tui.startup)")
        #: the preferences the screen is drawn with (from the settings once they are loaded)
        self.prefs = prefs
        #: the garbage collector's policy (``heap.py``; only the real app tunes it)
        self.heap = HeapPolicy(tune_gc)
        #: until ``attach``: a ``StartingClient`` ("connecting")
        self.client: Client = client if client is not None else StartingClient()
        self.settings: Settings
        self._watch_themes = watch_themes
        self._persist_theme = persist_theme
        self._close_client = close_client
        self.extra_sources = list(sources)
        self.redis_chat = (redis_chat, chat_webhook)
        self.status_info = StatusInfo(model=self.client.model_name)
        self.keys = self.load_keymap()
        self.theme_manager: ThemeManager | None = None
        self._frame_timer: Any = None
        #: the cached screen of the last thread, shown in the first frame (``show_cached``)
        self.cached_screen: CachedScreen | None = None
        #: set once the first thread is open (or the connection failed)
        self.ready = asyncio.Event()
        #: set once a message typed at start went to the model (or none was typed): what the
        #: person does not wait for (theme files, the model list) waits for it (``tui.startup``)
        self.start_sent = asyncio.Event()
        #: the request ids of the cards waiting in the open thread (``OpenThread.pending``; the view reads it)
        pending: set[str] = set()
        #: the default screen and its widgets (``screens.main``); the rooms are given them
        self.main_screen = screen = MainScreen(status_info=self.status_info, pending=pending, client=self.client,
                                               placeholder=self.prompt_placeholder())
        self.view: ConversationView = screen.view
        self.badge: Static = screen.badge
        self.find_bar: FindBar = screen.find_bar
        self.prompt: PromptInput = screen.prompt
        self.status_line: StatusLine = screen.status_line
        self.status_line.clock = RunClock(lambda: self.conversation, lambda: self.client.storage_wait(self.thread_id))
        self.tasks_panel: TasksPanel = screen.tasks_panel
        self.n8n_activity: N8nActivity = screen.n8n_activity
        self.thread_list: ThreadList = screen.thread_list
        self.queued_bar = QueuedBar(id="queued")
        # the rooms, each built from its collaborators
        self.thread = thread = OpenThread(self.client, self.status_info, pending, ui=self, prompt=self.prompt,
                                          queued_bar=self.queued_bar, ready=self.ready, login=self._login)
        #: answers waiting in threads that are not open, and the terminal's title and bell
        self.pending_watch = PendingWatch(self.client, threads=self.thread_list.local_threads,
                                          open_thread=lambda: thread.thread_id,
                                          on_change=lambda: self.cards.changed())
        self.terminal = TerminalSignals(self._write_terminal)
        self.connection = ConnectionWatcher(self, thread, self.status_line, resynced=self._reconnected)
        self.run_status = RunStatus(self, thread, view=self.view, badge=self.badge, tasks_panel=self.tasks_panel,
                                    thread_list=self.thread_list, show_tasks=lambda: self.settings.ui.show_tasks,
                                    width=lambda: self.size.width)
        self.cards = Cards(self, thread, view=self.view, prompt=self.prompt, find_bar=self.find_bar,
                           thread_list=self.thread_list, status_line=self.status_line, watch=self.pending_watch,
                           terminal=self.terminal, keys=lambda: self.keys, open=lambda tid: self.threads.open(tid))
        self.projection = Projection(self, thread, screen, view=self.view, status_line=self.status_line,
                                     heap=self.heap, observe=self.n8n_activity.observe)
        self.stats = self.projection.stats
        self.threads = Threads(self, thread, thread_list=self.thread_list, view=self.view, projection=self.projection,
                               cards=self.cards, run_status=self.run_status, n8n_activity=self.n8n_activity,
                               prompt=self.prompt, status_line=self.status_line, heap=self.heap,
                               keys=lambda: self.keys, ready=self.ready, start_sent=self.start_sent)
        self.actions = Actions(self, thread, threads=self.threads, cards=self.cards, run_status=self.run_status,
                               view=self.view, prompt=self.prompt, status_line=self.status_line,
                               watch=self.pending_watch, keys=lambda: self.keys,
                               theme_manager=lambda: self.theme_manager, screen=screen,
                               help_extra=lambda: self.sender.mcp.help())
        self.sender = Sender(self, thread.outbox, self.prompt, self.actions, client=lambda: thread.client)
        screen.connect(thread=thread, run_status=self.run_status, cards=self.cards, threads=self.threads,
                       heap=self.heap, idle=self._idle)
        given = Started(client, settings, gateway) if client is not None and settings is not None else None
        self.boot = Boot(self, thread, startup=startup, given=given, attach=self.attach, threads=self.threads,
                         screen=screen, connection=self.connection, pending_watch=self.pending_watch,
                         watchers=self._start_watchers, confirm_cached=self._confirm_cached, ready=self.ready,
                         start_sent=self.start_sent, start_mode=start, thread_id=thread_id, gateway=gateway,
                         is_running=lambda: self.is_running)
        if given is not None:
            self.attach(given)

    def attach(self, started: Started) -> None:
        """Use ``started``'s client and settings: in ``__init__`` when the app was given them,
        else once ``startup.load`` has built them after the first frame (``tui.startup``)."""
        client, settings = started.client, started.settings
        self.client, self.settings = client, settings
        # everything that was given the starting client gets the real one
        self.threads.use_client(client)
        self.n8n_activity.client = self.pending_watch.client = client
        self.terminal.bell_enabled, self.terminal.desktop = settings.ui.bell, settings.ui.desktop_notifications
        extra = self.extra_sources
        redis_chat, chat_webhook = self.redis_chat
        if redis_chat:
            from ..client.redis_chat import RedisChatClient

            extra.append(RedisChatClient(redis_chat, chat_webhook))
        self.threads.add_sources(extra)
        self.status_info.model = client.model_name or self.status_info.model  # known once open, for some
        self.status_info.demo = is_demo(client, settings)
        prefs, self.prefs = self.prefs, FirstFramePrefs.from_settings(settings)
        changed = prefs != self.prefs  # the settings file said what its unvalidated read did not
        if changed:
            self.keys = self.load_keymap()
            self.prompt.placeholder = self.prompt_placeholder()
        if self.theme_manager is None:  # not mounted yet (``__init__``): on_mount uses what is set
            return
        if changed:
            self.set_keymap(self.keys.textual_keymap())
            if self.prefs.theme != prefs.theme:
                self.theme_manager.apply(self.prefs.theme)
        # (not "never opened": say so)
        self.connection.follow(client, say=client.state != ConnectionState.OFFLINE or bool(client.state_detail))
        self.main_screen.show_demo_banner()
        self.status_line.refresh_info()

    @property
    def conversation(self) -> Conversation | None:
        """The open thread's conversation (``app.thread``'s)."""
        return self.thread.conversation

    @property
    def thread_id(self) -> str | None:
        return self.thread.thread_id

    @property
    def start_error(self) -> str | None:
        """Why the app could not start: ``cli.tui`` prints it, exit code 2."""
        return self.boot.error

    def _reconnected(self) -> None:
        """After a reconnect's resync: the threads and who answers, read again (a restarted server may
        run another model, the demo or not: the status line and the banner follow)."""
        self.threads.refresh_soon()
        self.run_worker(self._identify(), group="identify", exclusive=True, exit_on_error=False)

    async def _identify(self) -> None:
        if await self.boot.identify(self.client, self.settings):
            await self.threads.show_model_info(self.thread.thread_id)

    async def _login(self, error: ClientError) -> bool:
        from .screens.login import offer_login

        return await offer_login(self, self.thread.client, self.thread.outbox, error)

    def _start_watchers(self) -> None:
        """Answers waiting in other threads (the list asked again), workflows the agent changes."""
        self.pending_watch.start()
        self.actions.workflows()  # the canvas opens when the agent creates or changes a workflow

    def show_cached(self, cached: CachedScreen) -> None:
        """The last thread's newest turns in the first frame (``tui.screen_cache``; before ``run``)."""
        screen_cache.show(self.view, cached)
        self.thread_list.expect_threads()  # (not "No threads yet" beside it)
        self.cached_screen = cached
        self.sub_title = cached.title

    def _confirm_cached(self, db_path: Path | None, thread_id: str | None) -> None:
        cached, self.cached_screen = self.cached_screen, None
        if cached is not None:
            screen_cache.confirm(self.view, cached, db_path, thread_id)

    # ------------------------------------------------------------------ setup
    def prompt_placeholder(self) -> str:
        """The prompt's placeholder, naming this key map's keys (``ui.enter_sends``, ``[ui.keys]``)."""
        return f"Message Instance AI…  ({self.keys.send_hint()}, /help for commands)"

    def load_keymap(self) -> keymap.KeyMap:
        """The user's key map; on a bad ``[ui.keys]`` the defaults (and an error shown at mount)."""
        self._keymap_error: str | None = None
        try:
            return keymap.KeyMap.from_settings(self.prefs)
        except keymap.KeyMapError as exc:
            self._keymap_error = str(exc)
            return keymap.KeyMap(enter_sends=self.prefs.enter_sends)

    def get_default_screen(self) -> Screen[Any]:
        return self.main_screen

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(screen, Screen):  # every screen shown: a widget placed between two layouts gets its Resize
            keep_reflow_baseline(screen)
        return super().push_screen(screen, *args, **kwargs)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return app_variable_defaults(self.current_theme)

    def on_mount(self) -> None:
        self.theme_manager = ThemeManager(self, persist=self._persist_theme, watch=self._watch_themes,
                                          load_after=self.start_sent.wait)
        self.theme_manager.install(self.prefs.theme)
        self.set_keymap(self.keys.textual_keymap())
        if self._keymap_error:
            self.notify(self._keymap_error + "\nUsing the default keys.", severity="error", timeout=15)
        self.badge.display = False
        self.tasks_panel.display = False
        self.run_status.fit_panels(self.size.width, initial=True)
        self.prompt.focus()
        self.connection.follow(self.client)
        self._frame_timer = self.projection.run_frames(self._frame)  # (it rests while the app is idle)
        # the keyboard model: focus that moved by itself goes back to the prompt, and the
        # status line names where keys go (also checked before every key: ``Cards.on_input``)
        self.set_interval(0.1, self.cards.guard_focus, name="focus-guard")
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
        self.mount_hidden()

    def mount_hidden(self) -> None:
        """What is hidden at start, with the connection's banner and queue (``MainScreen.mount_hidden``)."""
        self.main_screen.mount_hidden(banner=self.connection.banner, queued_bar=self.queued_bar)

    @work(group="boot", exit_on_error=False)
    async def _boot(self) -> None:
        await self.boot.run()

    async def on_unmount(self) -> None:
        self.pending_watch.stop()
        self.terminal.restore()
        self.connection.stop()
        await self.threads.close_sources()
        if self.theme_manager is not None:
            self.theme_manager.stop()
        self.projection.stop()
        self.projection.release_gc()
        gc.unfreeze()  # what was frozen at mount may be garbage now (tests run many apps)
        self.heap.restore()
        gateway, self.boot.booted.gateway = self.boot.booted.gateway, None
        if gateway is not None:
            try:
                await gateway.stop()
            except (ClientError, OSError) as exc:
                self.log.error(f"stopping the local gateway failed: {exc}")
        if self._close_client:
            try:
                await self.client.close()
            except (ClientError, OSError) as exc:
                self.log.error(f"closing the client failed: {exc}")

    # ------------------------------------------------------------------ notifications
    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification (widgets' and screens' too) is drawn with control characters made
        visible (``protocol.safe_text``): many quote a server, a model or a file."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=markup)
        self.call_later(self.main_screen.notices.sync)  # drawn with the notification, not at the line's next look

    def show_error(self, message: str) -> None:
        self.notify(message, severity="error", timeout=10)

    def _write_terminal(self, sequence: str) -> None:
        driver = app_driver(self)
        if not self.is_headless and driver is not None:
            driver.write(sequence)

    # ------------------------------------------------------------------ ingest and frame (tui.projection)
    async def _frame(self) -> None:
        """The frame timer's callback: project what changed in the model onto the widgets."""
        if self.boot.holding:
            return  # a message typed at start is on its way to the model (``tui.startup.StartSend``)
        await self.projection.frame()

    async def wait_until_rendered(self, timeout: float = 30.0, *, events: int | None = None) -> float:
        """Wait until rendering caught up (and, with ``events``, that many were ingested); seconds waited."""
        return await self.projection.wait_until_rendered(timeout, events=events)

    def _idle(self) -> bool:
        conversation = self.conversation
        return conversation is None or (not conversation.is_streaming and self.projection.ingest_idle)

    # ------------------------------------------------------------------ cards (``tui.cards``)
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.call_later(self.cards.show_where)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.call_later(self.cards.show_where)

    async def on_event(self, event: events.Event) -> None:
        if (isinstance(event, events.InputEvent) and not self.main_screen.hidden_mounted
                and self.is_mounted(self.prompt)):
            self.mount_hidden()  # a key typed while the app starts may need them (the queue)
        if self.cards.on_input(event):
            return
        await super().on_event(event)

    def on_confirmation_answered(self, event: ConfirmationAnswered) -> None:
        """A card was answered (``confirmations.ConfirmationAnswered``)."""
        event.stop()
        self.run_worker(self.cards.send_answer(event.card, event.request_id, event.body, event.summary),
                        group="confirm", exit_on_error=False)

    # ------------------------------------------------------------------ sending (``tui.sending``)
    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        self.sender.submit(event.text)

    @on(QueuedRow.Edit)
    def _edit_queued(self, event: QueuedRow.Edit) -> None:
        event.stop()
        self.thread.outbox.take_back(event.item_id, edit=True)

    @on(QueuedRow.Remove)
    def _remove_queued(self, event: QueuedRow.Remove) -> None:
        event.stop()
        self.thread.outbox.take_back(event.item_id, edit=False)

    # ------------------------------------------------------------------ bindings (``tui.actions``)
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":  # Esc: from a widget that is no text field, back to the prompt first
            return self.actions.escape_goes_back() or self.actions.streaming
        if action == "next_pending_card":
            return self.actions.waiting
        return True

    def action_next_pending_card(self) -> None:
        self.cards.next()

    def action_cancel_run(self) -> None:
        self.actions.escape()

    def on_key(self, event: events.Key) -> None:
        self.projection.wake()  # (the frames may rest while the app is idle: ``tui.projection``)
        if event.key != "escape":
            self.actions.other_key()

    def action_interrupt(self) -> None:
        self.actions.interrupt()

    def action_new_thread(self) -> None:
        self.threads.new_thread()

    def action_toggle_threads(self) -> None:
        threads = self.thread_list
        threads.display = not threads.display
        if threads.display:
            threads.focus_list()
        else:
            self.prompt.focus()

    def action_toggle_tasks(self) -> None:
        self.run_status.toggle_tasks()

    def action_focus_input(self) -> None:
        self.actions.back_to_prompt()

    def action_theme_picker(self) -> None:
        self.search_themes()

    def action_help(self) -> None:
        self.actions.show_help(everything=False)

    def action_export(self) -> None:
        self.actions.export(None)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        self.actions.screenshot(filename, path)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Also Textual's own palette "Screenshot": to the export folder (``actions.screenshot_folder``)."""
        path = path if path is not None or self.is_web else self.actions.screenshot_folder()
        return None if path == "" else super().deliver_screenshot(filename, path, time_format)

    @on(ConversationView.CopyWanted)
    def _copy_wanted(self, event: ConversationView.CopyWanted) -> None:
        event.stop()
        self.actions.copy_text(event.text, event.what)

    def action_block_previous(self) -> None:
        self.view.move_block(-1)

    def action_block_next(self) -> None:
        self.view.move_block(+1)

    def action_find(self) -> None:
        if not self.find_bar.is_mounted:  # Ctrl+F typed while the app starts (``MainScreen.mount_hidden``)
            self.call_after_refresh(self.action_find)
            return
        self.find_bar.open(self.conversation)

    def on_find_bar_show(self, event: FindBar.Show) -> None:
        event.stop()
        self.actions.show_find_hit(event.match)

    def on_find_bar_closed(self, event: FindBar.Closed) -> None:
        event.stop()
        self.prompt.focus()

    def on_tool_call_card_workflow_wanted(self, event: ToolCallCard.WorkflowWanted) -> None:
        """``w`` on a tool card (by name: the cards load lazily): its workflow on the canvas."""
        event.stop()
        self.actions.workflows().open(event.workflow_id)

    def on_user_message_edit_requested(self, event: UserMessage.EditRequested) -> None:
        """``e`` on a user message (``turns.UserMessage.EditRequested``; by name: turns loads lazily)."""
        event.stop()
        self.actions.edit_message(event.message_id)

    def on_resize(self, event: events.Resize) -> None:
        """Small terminals keep the conversation: the side panels and the workflow panel fit the width."""
        self.run_status.fit_panels(event.size.width)
        self.actions.fit_workflow(event.size.width)

    @on(ConversationView.Followed)
    def _followed(self) -> None:
        self.badge.display = False

    def on_click(self, event: events.Click) -> None:
        widget = event.widget
        if widget is not None and widget.id == "new-output":
            self.view.follow()

    @on(PromptInput.JumpToEnd)
    def _jump_to_end(self) -> None:
        self.view.follow()

    @on(PromptInput.Page)
    def _page(self, event: PromptInput.Page) -> None:
        if event.direction < 0:
            if self.view.max_scroll_y > 0:
                self.view.release_anchor()  # (up: the newest output stops pulling the view down; End follows again)
            self.view.scroll_page_up()
        elif self.view.scroll_y + self.view.scrollable_content_region.height + 2 >= self.view.max_scroll_y:
            # the last page: follow the newest output again (the "new output" badge, a row or two while it
            # shows, goes with it)
            self.view.follow()
        else:
            self.view.scroll_page_down()

    @on(ConversationView.WholeThreadWanted)
    def _whole_thread_wanted(self, event: ConversationView.WholeThreadWanted) -> None:
        event.stop()
        self.threads.open_whole_in_background()

    # ------------------------------------------------------------------ the thread list
    @on(ThreadList.Selected)
    @on(ThreadList.SearchRequested)
    @on(ThreadList.NewRequested)
    @on(ThreadList.RenameRequested)
    @on(ThreadList.DeleteRequested)
    def _thread_list(self, event: ThreadList.Selected | ThreadList.SearchRequested | ThreadList.NewRequested
                     | ThreadList.RenameRequested | ThreadList.DeleteRequested) -> None:
        event.stop()
        self.threads.on_list_message(event)

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's own entries (those ``tui.commands`` replaces left out), then the app's commands."""
        for command in super().get_system_commands(screen):
            if command.title not in commands.REPLACED_SYSTEM_TITLES:
                yield command
        for entry, run in [*commands.palette(self.actions), *self.sender.mcp.palette(self.sender.submit)]:
            yield SystemCommand(entry.title, f"{entry.palette_help}  (/{entry.name})", run)

    # ------------------------------------------------------------------ headless hooks
    async def wait_until_ready(self, timeout: float = 10.0) -> None:
        """Until the first thread is open (or the connection failed)."""
        await asyncio.wait_for(self.ready.wait(), timeout)

