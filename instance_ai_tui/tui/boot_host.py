"""``BootHost``: what start-up (``tui.boot``) uses of the app — the client and settings it attaches,
the rooms it hands them to, the widgets it fills and the screens it may show (login, model setup,
start failure, resume picker). ``boot.py`` types the app with it, so it never imports ``app.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .ports import Ui

if TYPE_CHECKING:
    from ..client.base import Client, ConnectionState
    from ..client.gateway_flag import GatewayHandle, GatewayRequest
    from ..config import Settings
    from ..protocol.conversation import Conversation
    from .connection import ConnectionWatcher
    from .keymap import KeyMap
    from .pending_watch import PendingWatch, TerminalSignals
    from .screens.main import MainScreen
    from .startup import FirstFramePrefs, Started, Startup
    from .themes import ThemeManager
    from .threads import Threads
    from .widgets.n8n_activity import N8nActivity
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusInfo, StatusLine
    from .widgets.thread_list import ThreadList


class BootHost(Ui, Protocol):
    client: Client
    settings: Settings
    startup: Startup | None
    start_error: str | None
    start_mode: str
    initial_thread_id: str | None
    prefs: FirstFramePrefs
    keys: KeyMap
    theme_manager: ThemeManager | None
    gateway_request: GatewayRequest | None
    gateway: GatewayHandle | None
    extra_sources: list[Client]
    redis_chat: tuple[str | None, str | None]
    remove_state_listener: Callable[[], None] | None
    conversation: Conversation | None
    ready: asyncio.Event
    start_sent: asyncio.Event
    hold_frames: Callable[[], bool] | None
    threads: Threads
    pending_watch: PendingWatch
    terminal: TerminalSignals
    connection: ConnectionWatcher
    main_screen: MainScreen
    status_info: StatusInfo
    thread_list: ThreadList
    prompt: PromptInput
    status_line: StatusLine
    n8n_activity: N8nActivity

    @property
    def is_running(self) -> bool: ...

    def attach(self, started: Started) -> None: ...

    def load_keymap(self) -> KeyMap: ...

    def prompt_placeholder(self) -> str: ...

    def set_keymap(self, keymap: dict[str, str]) -> None: ...

    def set_connection(self, state: str, detail: str) -> None: ...

    def connection_state_changed(self, state: ConnectionState, detail: str) -> None: ...

    async def open_thread(self, thread_id: str | None, source: str | None = None) -> None: ...
