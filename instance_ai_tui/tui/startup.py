"""Start-up, in one module: the first frame before anything slow, then ``Boot``, which returns what it started.

Shell-first start: the app paints a typeable prompt before its settings and client exist.

Validating the settings imports pydantic and builds its models, and a ``--url`` client first
asks the server which dialect it speaks: ~50 ms to seconds that the first frame should not
wait for. So the real app (``cli.tui``) starts with a ``Startup``: the preferences the first
frame needs, read from the settings file without validation (``FirstFramePrefs``: theme,
keys), and ``load``, a coroutine that builds what the rest needs (``Started``: the validated
``Settings``, the ``Client``, the ``--gateway`` request). Until ``boot`` has awaited it and
``InstanceAiApp.attach`` has swapped it in, the app's client is a ``StartingClient``: its state
is "connecting" ("starting"), so the status line says so, and a message sent meanwhile waits
in the visible queue and goes to the thread that opens (``tui.sending``). A ``StartError``
from ``load`` (a broken settings file, a flag that cannot work) ends the app with exit code 2,
and ``cli.tui`` prints its message, as it did before the first frame.

Tests and benchmarks that build the client themselves pass it (and its settings) to the app
directly: ``attach`` then runs in ``InstanceAiApp.__init__``.

After the first frame ``Boot.run`` (the app's boot worker) does the rest, off the event loop where
it can: awaits ``Startup.load`` and has the app ``attach`` what it built, imports what the first
turn and Markdown block need (``preload_ui``; the Markdown parsers' lazy expressions compile in a
background thread, ``warm_up_markdown``), lets the client import what it needs (``Client.preload``:
the in-process assistant for the embedded client), opens the client (a login dialog for n8n, a
setup dialog for a model without a key), starts the local gateway (``--gateway``), lists the threads
and the extra thread sources (``--redis-chat``) and opens the first thread (the latest, a new one,
or one picked with ``--resume``). It returns a ``Booted``: what it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from textual.worker import WorkerCancelled, WorkerFailed

from ..client.base import Client, ClientError, ConnectionState, StorageError

if TYPE_CHECKING:
    from textual.worker import Worker

    from ..client.base import StreamItem
    from ..client.gateway_flag import GatewayHandle, GatewayRequest
    from ..config import Settings
    from ..protocol.api import ConfirmBody, ConfirmResponse, ThreadInfo, ThreadMessages, ThreadStatus
    from .connection import ConnectionWatcher
    from .open_thread import OpenThread
    from .pending_watch import PendingWatch
    from .ports import Ui
    from .screens.main import MainScreen
    from .threads import Threads
    from .widgets.status_line import StatusInfo

#: the theme of a first frame when neither ``--theme`` nor the settings file names one
DEFAULT_THEME = "textual-dark"

log = logging.getLogger(__name__)


class StartError(Exception):
    """The app cannot start as asked (the message says why); exit code 2."""


@dataclass(frozen=True, slots=True)
class FirstFramePrefs:
    """What the first frame is drawn with: the ``[ui]`` preferences the app needs at once."""

    theme: str = DEFAULT_THEME
    enter_sends: bool = True
    keys: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_ui(cls, ui: Mapping[str, Any], theme: str | None = None) -> FirstFramePrefs:
        """From a raw ``[ui]`` table (``config_file.peek_ui``): a value of the wrong type is
        ignored here (the validated settings report it); ``theme`` (``--theme``) wins."""
        chosen = theme or ui.get("theme")
        enter_sends = ui.get("enter_sends")
        keys = ui.get("keys")
        return cls(
            theme=chosen if isinstance(chosen, str) and chosen else DEFAULT_THEME,
            enter_sends=enter_sends if isinstance(enter_sends, bool) else True,
            keys=dict(keys) if isinstance(keys, dict) else {},
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> FirstFramePrefs:
        ui = settings.ui
        return cls(theme=ui.theme, enter_sends=ui.enter_sends, keys=dict(ui.keys))


@dataclass(frozen=True, slots=True)
class Started:
    """What ``Startup.load`` built: the app's settings and client, and ``--gateway``'s request."""

    client: Client
    settings: Settings
    gateway: GatewayRequest | None = None


@dataclass(frozen=True, slots=True)
class Startup:
    """How the app gets its settings and client after its first frame (see the module docstring).

    ``collector_held``: the cyclic garbage collector was disabled before the imports (``cli.tui``);
    ``release_collector`` gives it back once the start's work is done."""

    prefs: FirstFramePrefs
    load: Callable[[], Awaitable[Started]]
    collector_held: bool = False


#: seconds ``release_collector`` waits at most for the first thread, then for a message typed at
#: start to go out (a login or setup dialog may hold the start much longer)
READY_PATIENCE = 10.0
SEND_PATIENCE = 3.0


async def release_collector(ready: asyncio.Event, waiting: Callable[[], bool]) -> None:
    """The start held the cyclic collector (``Startup.collector_held``): all it built stays
    (modules, pydantic models, widgets), so passes over it were wasted CPU between the first
    frame and the first request. Once the first thread is open (``ready``) and a message typed
    at start has gone out (``waiting()`` false), what is alive moves to the permanent generation
    (``gc.freeze``: later passes never walk it, as ``tui.heap`` does for each opened thread)
    and the collector runs again."""
    loop = asyncio.get_running_loop()
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready.wait(), READY_PATIENCE)
        until = loop.time() + SEND_PATIENCE
        while loop.time() < until:
            if not waiting():
                break
            await asyncio.sleep(0.05)
    finally:
        gc.freeze()
        gc.enable()


class StartingClient(Client):
    """The app's client until the real one is built: "connecting", and nothing to ask yet."""

    mode = "starting"
    #: where the status line names the model: it is not known yet
    model_name = "starting…"

    def __init__(self) -> None:
        super().__init__()
        self._set_state(ConnectionState.CONNECTING, "starting")

    def _not_yet(self) -> NoReturn:
        raise ClientError("starting: not connected yet")

    async def open(self) -> None:
        self._not_yet()

    async def close(self) -> None:
        return None

    async def list_threads(self) -> list[ThreadInfo]:
        self._not_yet()

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        self._not_yet()

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        self._not_yet()

    async def delete_thread(self, thread_id: str) -> None:
        self._not_yet()

    async def send(self, thread_id: str, text: str) -> str:
        self._not_yet()

    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        self._not_yet()
        yield  # pragma: no cover - an async generator, as the interface's

    async def cancel(self, thread_id: str) -> None:
        self._not_yet()

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        self._not_yet()

    async def messages(self, thread_id: str) -> ThreadMessages:
        self._not_yet()

    async def status(self, thread_id: str) -> ThreadStatus:
        self._not_yet()


# --------------------------------------------------------------------------- after the first frame


def is_demo(client: Client, settings: Settings) -> bool:
    """The offline demo model is what answers (a banner says so)."""
    if "demo" in (client.model_name or "").lower():
        return True
    return client.mode == "embedded" and not client.model_name and settings.model.name in (None, "demo")


@dataclass
class Booted:
    """What ``Boot.run`` started: the client and settings (``None`` when the start ended before them)
    and the local gateway."""

    client: Client | None = None
    settings: Settings | None = None
    gateway: GatewayHandle | None = None


class Boot:
    """The app's start after its first frame (see the module docstring), built from what it starts:

    ``startup``: how to build the client and settings (``None``: ``given``); ``attach``: the app takes
    them (``InstanceAiApp.attach``); ``thread`` the open thread (its outbox holds what was typed
    meanwhile); ``threads`` opens the first one; ``watchers()`` starts what follows the threads not open
    and the workflows (once the thread is open, or once a message typed at start went out). ``ready``
    is set once the first thread is open (or the start failed), ``start_sent`` once a message typed at
    start went to the model (or none was typed)."""

    def __init__(self, ui: Ui, thread: OpenThread, *, startup: Startup | None, given: Started | None,
                 attach: Callable[[Started], None], threads: Threads, screen: MainScreen,
                 connection: ConnectionWatcher, pending_watch: PendingWatch, watchers: Callable[[], None],
                 confirm_cached: Callable[[Path | None, str | None], None], ready: asyncio.Event,
                 start_sent: asyncio.Event, start_mode: str = "latest", thread_id: str | None = None,
                 gateway: GatewayRequest | None = None, is_running: Callable[[], bool] = lambda: True) -> None:
        self.ui = ui
        self.thread = thread
        self.startup = startup
        self.given = given
        self.attach = attach
        self.threads = threads
        self.screen = screen
        self.connection = connection
        self.pending_watch = pending_watch
        self.watchers = watchers
        self.confirm_cached = confirm_cached
        self.ready = ready
        self.start_sent = start_sent
        self.start_mode = start_mode
        #: the thread asked for (``--thread``)
        self.wanted = thread_id
        self.gateway_request = gateway
        self.is_running = is_running
        #: why the app could not start (the CLI prints it; exit code 2)
        self.error: str | None = None
        #: the message typed at start on its way to the model: the frames wait for it (``StartSend``)
        self.sending: StartSend | None = None
        self.booted = Booted()

    @property
    def holding(self) -> bool:
        """The frame timer projects nothing now: a message typed at start is on its way to the model."""
        sending = self.sending
        if sending is None:
            return False
        if sending.hold():
            return True
        self.sending = None
        return False

    async def run(self) -> Booted:
        """Everything the app does at start after its first frame; ``start_sent`` is set by a worker
        once a message typed at start went to the model, or here when the start ends without one."""
        handed_over = False
        try:
            handed_over = await self._run()
        except Exception as exc:  # a start that broke says so (never "connecting" for ever with no word)
            where = f"{type(exc).__module__}.{type(exc).__qualname__}"
            log.exception("the start-up failed")
            await self.fail(f"the start-up failed: {where}: {exc} (the details are in instance-ai.log beside the "
                            "database: please report it)", "startup_failed")
        finally:
            if not handed_over:
                self.start_sent.set()
        return self.booted

    async def _run(self) -> bool:
        ui, booted, outbox = self.ui, self.booted, self.thread.outbox
        if self.startup is not None and self.startup.collector_held:  # (``release_collector``)
            ui.run_worker(release_collector(self.ready, lambda: bool(outbox.queue.items)), group="collector",
                          exit_on_error=False)
        started = self.given
        if self.startup is not None:  # the settings and the client
            try:
                started = await self.startup.load()
            except StartError as exc:
                self.error = str(exc)
                ui.exit(return_code=2)
                return False
            self.attach(started)
        assert started is not None
        client, settings = booted.client, booted.settings = started.client, started.settings
        gateway_request = started.gateway or self.gateway_request
        # a message typed at the first frame waits for the client only: what draws the answer
        # (the imports and warm-up below, some 0.5 CPU-seconds) comes after it is sent
        warm_up: Worker[None] | None = None
        if not outbox.queue.items:
            # the turn widgets, the conversation model and the Markdown parser are large imports:
            # do them off the event loop, before a thread opens (the UI stays responsive)
            await asyncio.to_thread(preload_ui)
            # the parsers' lazily compiled expressions (60 ms): in the background, beside the
            # client's own preload and opening; done before the first thread opens, whose replay would
            # otherwise share the interpreter with it (every loop callback then takes twice as long)
            warm_up = ui.run_worker(warm_up_markdown, thread=True, group="warm-up", exit_on_error=False)
        try:  # imports only, a speed-up: one that fails leaves the import to ``open``, which names its error
            await asyncio.to_thread(client.preload)
        except Exception:
            log.warning("the client's preload failed; opening it anyway", exc_info=True)
        if client.mode == "embedded":
            from .screens.setup import check_model_setup

            if not await check_model_setup(ui, client, settings, outbox):  # a model without a key: how to set it up
                return False
        try:
            await client.open()
        except StorageError as exc:  # the database cannot open: a clear screen and exit code 2, not a hang
            await self.fail(str(exc), exc.code)
            return False
        except ClientError as exc:
            from .screens.login import offer_login

            if not await offer_login(ui, client, outbox, exc):  # n8n: a login dialog instead of a dead app
                ui.show_error(f"Cannot connect: {exc}")
                self.connection.show_state("offline", str(exc))
                self.ready.set()
                return False
        self.show_identity(client, settings)  # a server by --url says only now which model answers
        if gateway_request is not None:
            booted.gateway = await start_gateway(ui, client, self.thread.status, gateway_request)
        threads: list[ThreadInfo] = []
        try:
            threads = await client.list_threads()
        except ClientError as exc:
            ui.show_error(f"Cannot list threads: {exc}")
        self.threads.thread_list.set_threads(threads)
        self.threads.attach_sources()
        target = self.wanted
        if target is not None and target not in {t.id for t in threads} and not await thread_exists(client, target):
            where = "this database" if client.mode == "embedded" else "this server"
            await self.fail(f"there is no thread {target!r} in {where}: list them with `instance-ai threads`, or "
                            "start without --thread", "thread_not_found")
            return False
        if target is None and threads and self.start_mode == "pick":
            from .screens.resume_picker import ResumePicker

            target = await ui.push_screen_wait(ResumePicker(threads, search=client.search_threads))
        elif target is None and threads and self.start_mode == "latest":
            target = max(threads, key=lambda t: t.updated_at).id
        if warm_up is not None:
            with contextlib.suppress(WorkerFailed, WorkerCancelled):  # (a failed warm-up only costs time)
                await warm_up.wait()
        # the first frame may show this thread's cached screen (``tui.screen_cache``): gone at once if not
        self.confirm_cached(settings.resolved_db_path if client.mode == "embedded" else None, target)
        await self.threads.open_first(target)
        self.ready.set()
        typed_at_start = bool(outbox.queue.items)
        sending = StartSend(self.thread, self.is_running) if typed_at_start else None
        self.sending = sending  # its way to the model first: the conversation view draws it once there
        outbox.adopt_start_queue()
        if sending is None:  # nothing to let go first: the watchers start with the thread
            self.watchers()
            if warm_up is None:
                ui.run_worker(self.warm_up_after_send(watchers=False), group="warm-up", exit_on_error=False)
            return False
        # the watchers, the model list, the theme files (and the UI's preload if not done) once it went out
        ui.run_worker(self.warm_up_after_send(preload=warm_up is None, sending=sending), group="warm-up",
                      exit_on_error=False)
        return True

    def show_identity(self, client: Client, settings: Settings) -> None:  # (and the --workspace folder)
        """Which model answers, and whether it is the offline demo: the status line and the banner."""
        info = self.thread.status
        info.model = client.model_name or info.model
        info.demo = is_demo(client, settings)
        from .widgets.status_line import workspace_label

        info.workspace = workspace_label(settings.workspace_root) if client.mode == "embedded" else ""
        self.screen.show_demo_banner()
        self.connection.status_line.refresh_info()

    async def identify(self, client: Client, settings: Settings) -> bool:
        """Ask ``client`` again who answers (after a reconnect: a restarted server may run another model,
        the demo or not) and show it; false when it could not say."""
        try:
            await client.identify()
        except ClientError as exc:
            self.ui.log.warning(f"the server did not say which model it runs: {exc}")
            return False
        self.show_identity(client, settings)
        return True

    async def fail(self, message: str, code: str | None = None) -> None:
        """The app cannot start: the start-failure screen (part, cause, fix); closing it exits with 2,
        and ``cli/tui.py`` prints the same words on the terminal."""
        from .screens.start_failure import StartFailureScreen, failure_title

        self.error = message
        self.connection.show_state("offline", message)
        await self.ui.push_screen(StartFailureScreen(failure_title(code), message))

    async def warm_up_after_send(self, patience: float = 3.0, *, watchers: bool = True, preload: bool = True,
                                 sending: StartSend | None = None) -> None:
        """``start_sent``, the watchers, ``preload_ui`` and ``warm_up_markdown`` once the message typed at
        start reached the model (``StartSend.reached``), or after ``patience`` seconds; not beside its way
        out (``StartSend``): a thread beside it held it up some 0.1 s."""
        loop = asyncio.get_running_loop()
        until = loop.time() + patience
        sending = sending or StartSend(self.thread, self.is_running)
        try:
            while loop.time() < until and self.is_running():  # (polled: the events come through the ingest)
                if sending.reached():
                    break
                await asyncio.sleep(0.02)
        finally:
            self.start_sent.set()
        if self.is_running() and watchers:
            await asyncio.to_thread(preload_watchers)  # (not on the loop, beside the answer's first frames)
            if self.is_running():
                self.watchers()
        if preload:
            await asyncio.to_thread(preload_ui)
            await asyncio.to_thread(warm_up_markdown)


async def thread_exists(client: Client, thread_id: str) -> bool:
    """Whether ``client`` knows ``thread_id`` although its list did not show it (a long list is
    read a page at a time): only a 404 says no."""
    from ..client.base import NotFoundError

    try:
        await client.status(thread_id)
    except NotFoundError:
        return False
    except ClientError:
        return True  # it could not say: let the thread open and show its own error
    return True


async def start_gateway(ui: Ui, client: Client, info: StatusInfo, request: GatewayRequest) -> GatewayHandle | None:
    """Share ``request.root`` with n8n (``--gateway``); its state shows in the status line."""
    from ..client import gateway_flag

    info.gateway, info.gateway_state = request.root.name or str(request.root), "connecting"

    def on_state(state: ConnectionState, detail: str) -> None:
        word = gateway_flag.STATE_WORDS.get(state, state.value)
        info.gateway_state = f"{word} {detail}" if state == ConnectionState.RECONNECTING and detail else word

    def on_end(message: str) -> None:
        info.gateway_state = "stopped"
        ui.notify(message[:1].upper() + message[1:], severity="warning", timeout=10)  # n8n's words kept as they are

    try:
        handle = await gateway_flag.start(client, request, set_state=on_state, on_end=on_end,
                                          log=lambda message: ui.log.info(f"gateway: {message}"))
    except ClientError as exc:
        info.gateway_state = "failed"
        ui.show_error(f"The local gateway could not start: {exc}")
        return None
    info.gateway_state = "sharing"
    ui.notify(f"Sharing {request.root} (read-only) with n8n's agent", timeout=6)
    return handle


def preload_ui() -> None:
    """Import what the first turn, tool card and Markdown block need (off the event loop)."""
    from textual.highlight import highlight

    from ..protocol import conversation  # noqa: F401
    from ..protocol.events import TaskList
    from ..protocol.tree import AgentNode, Confirmation, ToolCallState
    from .screens import setup  # noqa: F401  (boot's model check; on the loop it stalled it 34 ms)
    from .widgets import turns  # noqa: F401
    from .widgets.markdown_document import parse_document

    preload_watchers()
    parse_document("warm *up*\n\n- list\n")  # builds the markdown-it parsers
    highlight("{}", language="json")  # loads the lexers
    for model in (ToolCallState, Confirmation, AgentNode, TaskList):
        model.model_rebuild()  # the wire models build their validators on first use


def preload_watchers() -> None:
    """Import what ``Boot.watchers`` builds: the workflow room (``screens.workflow`` and the canvas modules;
    on the loop, 55-70 ms of CPU in one turn while the first thread's stream arrived)."""
    from .screens import workflow  # noqa: F401


class StartSend:
    """The way of a message typed at start to the model, which nothing else should share the
    interpreter with: its request leaves from the event loop, and each step of it waits behind
    whatever runs there (a frame mounting the first turn imports the turn widgets and Markdown,
    some 50 ms) or holds the interpreter lock in a thread beside it (an import, a validation).

    ``reached``: the first message of the queue (when made) left it, the thread's run streams and
    its answer has begun (text or reasoning; a run that already ended counts too). ``hold``: the app's frame
    timer asks it before each frame (``Boot.holding``); true until ``reached`` or for at most
    ``HOLD`` seconds (a model slow to answer: the message is drawn anyway), then it lets go
    for good."""

    #: seconds the conversation view waits at most before it draws the message typed at start
    HOLD = 0.3

    def __init__(self, thread: OpenThread, is_running: Callable[[], bool]) -> None:
        self.thread = thread
        self.is_running = is_running
        self._loop = asyncio.get_running_loop()
        self._hold_until = self._loop.time() + self.HOLD
        items = thread.outbox.queue.items
        self._first = items[0] if items else None
        #: the thread's run was seen streaming
        self._run_seen = False
        self._let_go = False

    def reached(self) -> bool:
        conversation = self.thread.conversation
        outbox = self.thread.outbox
        if (conversation is None or any(item is self._first for item in outbox.queue.items)
                or any(item is self._first for item in outbox.sending)):
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
        if self._let_go:
            return False
        if self.is_running() and self._loop.time() < self._hold_until and not self.reached():
            return True
        self._let_go = True
        return False


def warm_up_markdown() -> None:
    """Compile what the Markdown parsers compile on first use (``markdown_document.warm_up``)."""
    from .widgets.markdown_document import warm_up

    warm_up()
