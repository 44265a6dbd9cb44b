"""Start-up: the first frame is painted before anything slow happens.

``InstanceAiApp.on_mount`` composes the screen from light widgets and schedules ``boot`` after
the first refresh. ``boot`` then, off the event loop where it can: builds the settings and the
client when the app was started without them (``tui.startup``; the real app is) and hands them
to the app (``attach``), imports what the first turn and Markdown block need (``preload_ui``;
the Markdown parsers' lazy expressions compile in a background thread, ``warm_up_markdown``),
lets the client import what it needs (``Client.preload``: the in-process assistant for the
embedded client), opens the client (a login dialog for n8n, a setup dialog for a model without
a key), starts the local gateway (``--gateway``), lists the threads and the extra thread
sources (``--redis-chat``) and opens the first thread (the latest, a new one, or one picked
with ``--resume``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, cast

from textual.worker import WorkerCancelled, WorkerFailed

from ..client.base import ClientError, ConnectionState, StorageError
from . import screen_cache
from .startup import FirstFramePrefs, StartError, release_collector

if TYPE_CHECKING:
    from ..client.gateway_flag import GatewayRequest
    from ..protocol.api import ThreadInfo
    from .boot_host import BootHost
    from .startup import Started


def is_demo(app: BootHost) -> bool:
    """The offline demo model is what answers (a banner says so)."""
    client, settings = app.client, app.settings
    if "demo" in (client.model_name or "").lower():
        return True
    return client.mode == "embedded" and not client.model_name and settings.model.name in (None, "demo")


def attach(app: BootHost, started: Started) -> None:
    """Use ``started``'s client and settings: in ``__init__`` when the app was given them,
    else once ``startup.load`` has built them after the first frame (``tui.startup``)."""
    client, settings = started.client, started.settings
    app.client, app.settings = client, settings
    if started.gateway is not None:
        app.gateway_request = started.gateway
    # everything that was given the starting client gets the real one
    app.threads.client = app.n8n_activity.client = app.pending_watch.client = client
    app.terminal.bell_enabled, app.terminal.desktop = settings.ui.bell, settings.ui.desktop_notifications
    extra = app.extra_sources
    redis_chat, chat_webhook = app.redis_chat
    if redis_chat:
        from ..client.redis_chat import RedisChatClient

        extra.append(RedisChatClient(redis_chat, chat_webhook))
    app.threads.add_sources(extra)
    app.status_info.model = client.model_name or app.status_info.model  # known once open, for some
    app.status_info.demo = is_demo(app)
    prefs, app.prefs = app.prefs, FirstFramePrefs.from_settings(settings)
    changed = prefs != app.prefs  # the settings file said what its unvalidated read did not
    if changed:
        app.keys = app.load_keymap()
        app.prompt.placeholder = app.prompt_placeholder()
    if app.theme_manager is None:  # not mounted yet (``__init__``): on_mount uses what is set
        return
    if changed:
        app.set_keymap(app.keys.textual_keymap())
        if app.prefs.theme != prefs.theme:
            app.theme_manager.apply(app.prefs.theme)
    if app.remove_state_listener is not None:
        app.remove_state_listener()
    app.remove_state_listener = client.add_state_listener(app.connection_state_changed)
    if client.state != ConnectionState.OFFLINE or client.state_detail:  # not "never opened": say so
        app.connection_state_changed(client.state, client.state_detail)
    app.main_screen.show_demo_banner()
    app.status_line.refresh_info()


async def boot(app: BootHost) -> None:
    """Everything the app does at start after its first frame (see the module docstring).

    ``app.start_sent`` is set once a message typed at start went to the model (by
    ``warm_up_after_send``), or when the start ends without one: what waits for it (the theme
    files, the model list) does not share the interpreter with that message's way out."""
    handed_over = False
    try:
        handed_over = await _boot(app)
    finally:
        if not handed_over:
            app.start_sent.set()


async def _boot(app: BootHost) -> bool:
    """``boot``'s steps; true when a worker sets ``app.start_sent`` once the message typed at
    start went out."""
    if app.startup is not None and app.startup.collector_held:  # (``startup.release_collector``)
        app.run_worker(release_collector(app.ready, lambda: bool(app.connection.queue.items)), group="collector",
                       exit_on_error=False)
    if app.startup is not None:  # the settings and the client (``tui.startup``)
        try:
            started = await app.startup.load()
        except StartError as exc:
            app.start_error = str(exc)
            app.exit(return_code=2)
            return False
        app.attach(started)
    # a message typed at the first frame waits for the client only: what draws the answer
    # (the imports and warm-up below, some 0.5 CPU-seconds) comes after it is sent
    waiting = bool(app.connection.queue.items)
    warm_up = None
    if not waiting:
        # the turn widgets, the conversation model and the Markdown parser are large imports:
        # do them off the event loop, before a thread opens (the UI stays responsive)
        await asyncio.to_thread(preload_ui)
        # the parsers' lazily compiled expressions (60 ms): in the background, beside the
        # client's own preload and opening; done before the first thread opens, whose replay would
        # otherwise share the interpreter with it (every loop callback then takes twice as long)
        warm_up = app.run_worker(warm_up_markdown, thread=True, group="warm-up", exit_on_error=False)
    await asyncio.to_thread(app.client.preload)
    if app.client.mode == "embedded":
        from .screens.setup import check_model_setup

        if not await check_model_setup(app):  # a model without a key: say how to set it up
            return False
    try:
        await app.client.open()
    except StorageError as exc:  # the database cannot open: a clear screen and exit code 2, not a hang
        await show_start_failure(app, str(exc), exc.code)
        return False
    except ClientError as exc:
        from .screens.login import offer_login

        if not await offer_login(app, exc):  # n8n: a login dialog instead of a dead app
            app.show_error(f"Cannot connect: {exc}")
            app.set_connection("offline", str(exc))
            app.ready.set()
            return False
    app.status_info.model = app.client.model_name or app.status_info.model
    app.status_info.demo = is_demo(app)
    app.main_screen.show_demo_banner()  # a server by --url says only now that the demo model answers
    if app.gateway_request is not None:
        await start_gateway(app, app.gateway_request)
    threads: list[ThreadInfo] = []
    try:
        threads = await app.client.list_threads()
    except ClientError as exc:
        app.show_error(f"Cannot list threads: {exc}")
    app.thread_list.set_threads(threads)
    app.threads.attach_sources()
    target = app.initial_thread_id
    if target is not None and target not in {t.id for t in threads} and not await thread_exists(app, target):
        where = "this database" if app.client.mode == "embedded" else "this server"
        await show_start_failure(app, f"there is no thread {target!r} in {where}: list them with "
                                      "`instance-ai threads`, or start without --thread", "thread_not_found")
        return False
    if target is None and threads and app.start_mode == "pick":
        from .screens.resume_picker import ResumePicker

        target = await app.push_screen_wait(ResumePicker(threads, search=app.client.search_threads))
    elif target is None and threads and app.start_mode == "latest":
        target = max(threads, key=lambda t: t.updated_at).id
    if warm_up is not None:
        with contextlib.suppress(WorkerFailed, WorkerCancelled):  # (a failed warm-up only costs time)
            await warm_up.wait()
    # the first frame may show this thread's cached screen (``tui.screen_cache``): gone at once if not
    screen_cache.confirm(app, app.settings.resolved_db_path if app.client.mode == "embedded" else None, target)
    await app.open_thread(target)
    app.ready.set()
    typed_at_start = bool(app.connection.queue.items)
    sending = StartSend(app) if typed_at_start else None
    if sending is not None:  # its way to the model first: the conversation view draws it once there
        app.hold_frames = sending.hold
    app.connection.adopt_start_queue()
    if not typed_at_start:  # nothing to let go first: the watchers start with the thread
        start_watchers(app)
        if warm_up is None:
            app.run_worker(warm_up_after_send(app, watchers=False), group="warm-up", exit_on_error=False)
        return False
    # the watchers, the model list, the theme files (and the UI's preload if not done) once it went out
    app.run_worker(warm_up_after_send(app, preload=warm_up is None, sending=sending), group="warm-up",
                   exit_on_error=False)
    return True


def start_watchers(app: BootHost) -> None:
    """Answers waiting in other threads (the list asked again), workflows the agent changes."""
    app.pending_watch.start()
    from .screens.workflow import FrameFollowers, WorkflowHost, follow_workflows

    # the canvas opens when the agent creates or changes a workflow, driven by the frame's changes
    follow_workflows(cast("WorkflowHost", app), cast("FrameFollowers", cast(Any, app).projection.sink))


async def thread_exists(app: BootHost, thread_id: str) -> bool:
    """Whether the client knows ``thread_id`` although its list did not show it (a long list is
    read a page at a time): only a 404 says no."""
    from ..client.base import NotFoundError

    try:
        await app.client.status(thread_id)
    except NotFoundError:
        return False
    except ClientError:
        return True  # it could not say: let the thread open and show its own error
    return True


async def show_start_failure(app: BootHost, message: str, code: str | None = None) -> None:
    """The app cannot start: the start-failure screen (part, cause, fix); closing it exits with 2,
    and ``cli/tui.py`` prints the same words on the terminal."""
    from .screens.start_failure import StartFailureScreen, failure_title

    app.start_error = message
    app.set_connection("offline", message)
    await app.push_screen(StartFailureScreen(failure_title(code), message))


async def start_gateway(app: BootHost, request: GatewayRequest) -> None:
    """Share ``request.root`` with n8n (``--gateway``); its state shows in the status line."""
    from ..client import gateway_flag

    info = app.status_info
    info.gateway, info.gateway_state = request.root.name or str(request.root), "connecting"

    def on_state(state: ConnectionState, detail: str) -> None:
        word = gateway_flag.STATE_WORDS.get(state, state.value)
        info.gateway_state = f"{word} {detail}" if state == ConnectionState.RECONNECTING and detail else word

    def on_end(message: str) -> None:
        info.gateway_state = "stopped"
        app.notify(message[:1].upper() + message[1:], severity="warning", timeout=10)  # n8n's words kept as they are

    try:
        app.gateway = await gateway_flag.start(app.client, request, set_state=on_state, on_end=on_end,
                                               log=lambda message: app.log.info(f"gateway: {message}"))
    except ClientError as exc:
        info.gateway_state = "failed"
        app.show_error(f"The local gateway could not start: {exc}")
        return
    info.gateway_state = "sharing"
    app.notify(f"Sharing {request.root} (read-only) with n8n's agent", timeout=6)


def preload_ui() -> None:
    """Import what the first turn, tool card and Markdown block need (off the event loop)."""
    from textual.highlight import highlight

    from ..protocol import conversation  # noqa: F401
    from ..protocol.events import TaskList
    from ..protocol.tree import AgentNode, Confirmation, ToolCallState
    from .screens import setup  # noqa: F401  (boot's model check; on the loop it stalled it 34 ms)
    from .widgets import turns  # noqa: F401
    from .widgets.markdown_document import parse_document

    parse_document("warm *up*\n\n- list\n")  # builds the markdown-it parsers
    highlight("{}", language="json")  # loads the lexers
    for model in (ToolCallState, Confirmation, AgentNode, TaskList):
        model.model_rebuild()  # the wire models build their validators on first use


class StartSend:
    """The way of a message typed at start to the model, which nothing else should share the
    interpreter with: its request leaves from the event loop, and each step of it waits behind
    whatever runs there (a frame mounting the first turn imports the turn widgets and Markdown,
    some 50 ms) or holds the interpreter lock in a thread beside it (an import, a validation).

    ``reached``: the first message of the queue (when made) left it, the thread's run streams and
    its answer has begun (text or reasoning; a run that already ended counts too). ``hold``: the app's frame
    timer asks it before each frame (``app.hold_frames``); true until ``reached`` or for at most
    ``HOLD`` seconds (a model slow to answer: the message is drawn anyway), then it lets go
    for good."""

    #: seconds the conversation view waits at most before it draws the message typed at start
    HOLD = 0.3

    def __init__(self, app: BootHost) -> None:
        self.app = app
        self._loop = asyncio.get_running_loop()
        self._hold_until = self._loop.time() + self.HOLD
        items = app.connection.queue.items
        self._first = items[0] if items else None
        #: the thread's run was seen streaming
        self._run_seen = False

    def reached(self) -> bool:
        conversation = self.app.conversation
        if conversation is None or any(item is self._first for item in self.app.connection.queue.items):
            return False
        if not self._run_seen:
            self._run_seen = conversation.is_streaming
            return False
        if not conversation.is_streaming:
            return True  # the run already ended
        # the model's answer began (the run's first events, its start and a new thread's title,
        # come before the request)
        last = conversation.messages[-1] if conversation.messages else None
        return last is not None and last.role == "assistant" and bool(last.content or last.reasoning)

    def hold(self) -> bool:
        app = self.app
        if app.is_running and self._loop.time() < self._hold_until and not self.reached():
            return True
        if app.hold_frames == self.hold:
            app.hold_frames = None
        return False


async def warm_up_after_send(app: BootHost, patience: float = 3.0, *, watchers: bool = True,
                             preload: bool = True, sending: StartSend | None = None) -> None:
    """``app.start_sent``, ``start_watchers``, ``preload_ui`` and ``warm_up_markdown`` once the
    message typed at start reached the model (``StartSend.reached``), or after ``patience``
    seconds; not beside its way out (``StartSend``): a thread beside it held it up some 0.1 s."""
    loop = asyncio.get_running_loop()
    until = loop.time() + patience
    sending = sending or StartSend(app)
    try:
        while loop.time() < until and app.is_running:  # (polled: the events come through the ingest)
            if sending.reached():
                break
            await asyncio.sleep(0.02)
    finally:
        app.start_sent.set()
    if app.is_running and watchers:
        start_watchers(app)
    if preload:
        await asyncio.to_thread(preload_ui)
        await asyncio.to_thread(warm_up_markdown)


def warm_up_markdown() -> None:
    """Compile what the Markdown parsers compile on first use (``markdown_document.warm_up``)."""
    from .widgets.markdown_document import warm_up

    warm_up()
