"""Shell-first start: the app paints a typeable prompt before its settings and client exist.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from ..client.base import Client, ClientError, ConnectionState

if TYPE_CHECKING:
    from ..client.base import StreamItem
    from ..client.gateway_flag import GatewayRequest
    from ..config import Settings
    from ..protocol.api import ConfirmBody, ConfirmResponse, ThreadInfo, ThreadMessages, ThreadStatus

#: the theme of a first frame when neither ``--theme`` nor the settings file names one
DEFAULT_THEME = "textual-dark"


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
