"""``instance-ai`` with no sub-command: the TUI.

``add_arguments`` adds the top-level flags (connection, model, database, workspace, theme,
Redis chat sessions, the local gateway for n8n); ``main`` runs the app, which paints its first
frame and then awaits ``load``: the settings and the client (through ``client.factory``), see
``tui.startup``. Nothing heavy is imported at module level: ``instance-ai --help`` and the other
sub-commands must not pay for Textual.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client.base import Client
    from ..client.gateway_flag import GatewayRequest
    from ..config import Settings
    from ..tui.app import InstanceAiApp
    from ..tui.startup import Started

#: seconds between the demo model's streamed pieces in the TUI (a lifelike pace)
DEMO_DELAY = 0.02


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .connection import add_connection_arguments, add_gateway_arguments

    add_connection_arguments(parser)
    add_gateway_arguments(parser)
    ui = parser.add_argument_group("interface")
    ui.add_argument("--theme", help="theme name (built-in or from a themes folder); saved as your choice")
    ui.add_argument("--thread", dest="tui_thread", metavar="ID", help="open this thread at start")
    start = ui.add_mutually_exclusive_group()
    start.add_argument(
        "--continue", "-c", dest="tui_start", action="store_const", const="latest",
        help="open the latest thread (the default)",
    )
    start.add_argument(
        "--resume", "-r", dest="tui_start", action="store_const", const="pick",
        help="pick a recent thread to open, with search",
    )
    start.add_argument("--new", dest="tui_start", action="store_const", const="new", help="start in a new thread")
    ui.add_argument(
        "--redis-chat",
        metavar="URL",
        help="also list the n8n chat sessions kept in this Redis (redis://host:6379/0)",
    )
    ui.add_argument(
        "--chat-webhook",
        metavar="URL",
        help="with --redis-chat: continue a session through this n8n Chat Trigger webhook (same sessionId)",
    )


def main(args: argparse.Namespace) -> int:
    """Paint the app's first frame, then build its settings and client (``tui.startup``)."""
    import gc

    # start-up allocates some 200,000 objects that all stay (modules, models, widgets): the cyclic
    # collector's passes over them are ~12% of the CPU before the first request (``tui.startup``)
    gc.disable()
    from ..client.factory import skip_unused_optional_imports

    skip_unused_optional_imports()  # before httpx and openai: the first request comes sooner
    from ..client.gateway_flag import GatewayFlagError
    from ..config_file import peek_ui
    from ..tui.startup import FirstFramePrefs, Startup
    from .connection import gateway_from_args

    settings: Settings | None = None
    try:
        gateway = gateway_from_args(args)
        if gateway is not None:  # refused before the screen opens, like any other misused flag
            from ..client.gateway_flag import check_connection
            from .connection import settings_from_args

            settings = settings_from_args(args)
            check_connection(gateway, settings)
    except GatewayFlagError as exc:
        print(f"instance-ai: {exc}", file=sys.stderr)
        return 2
    prefs = FirstFramePrefs.from_ui(peek_ui(), theme=getattr(args, "theme", None))
    from ..config_file import data_dir
    from .logs import install_tui_log

    install_tui_log(data_dir())  # the screen is the terminal: warnings go to a file, as visible text

    from ..tui import screen_cache
    from ..tui.app import InstanceAiApp

    app = InstanceAiApp(
        startup=Startup(prefs, functools.partial(load, args, settings, gateway), collector_held=True),
        thread_id=getattr(args, "tui_thread", None),
        redis_chat=getattr(args, "redis_chat", None),
        chat_webhook=getattr(args, "chat_webhook", None),
        start=getattr(args, "tui_start", None) or "latest",
        tune_gc=True,
    )
    db_path = early_db_path(args)
    cached = screen_cache.load(db_path, getattr(args, "tui_thread", None)) if db_path is not None else None
    if cached is not None:
        app.show_cached(cached)  # the last thread's newest turns in the first frame
    from .type_ahead import driver_class

    app.driver_class = driver_class(app.driver_class)  # keys typed before the first frame come first, as typed
    app.run()  # the app opens the client at start and closes it when it quits
    if db_path is not None:
        save_screen(app, db_path)
    if app.start_error is not None:
        print(f"instance-ai: {app.start_error}", file=sys.stderr)
        return 2
    hint = resume_hint(app, args)
    if hint:
        print(hint)
    return int(app.return_code or 0)


def resume_hint(app: InstanceAiApp, args: argparse.Namespace) -> str | None:
    """What the terminal shows after the app quit: the open thread's id and the command that
    opens it again (with the flags that chose where it lives; no secrets), or ``None`` when no
    thread was open. An id from a server is outside text: quoted for the shell, shown visibly."""
    import shlex

    from ..protocol.safe_text import visible

    conversation = app.conversation
    thread_id = conversation.thread_id if conversation is not None else None
    if not thread_id or app.start_error is not None:
        return None
    words = ["instance-ai"]
    for flag, name in (("--url", "url"), ("--email", "email"), ("--dialect", "dialect"), ("--db", "db")):
        value = getattr(args, name, None)
        if value:
            words += [flag, str(value)]
    words += ["--thread", thread_id]
    command = " ".join(shlex.quote(word) for word in words)
    return visible(f"Thread {thread_id} — resume it with: {command}")


def early_db_path(args: argparse.Namespace) -> Path | None:
    """The database the app will open, known before the settings are validated (the flag, the
    environment, the settings file, the default), when the first frame may show its cached
    screen (``tui.screen_cache``): an embedded start that opens the latest thread (or ``--thread``)."""
    import os

    from ..config_file import ConfigFileError, config_path, default_db_path, read_config_file

    if (getattr(args, "tui_start", None) or "latest") != "latest" or getattr(args, "url", None):
        return None
    try:
        data = read_config_file(config_path())
    except ConfigFileError:
        return None
    remote = data.get("remote")
    if isinstance(remote, dict) and remote.get("url"):
        return None
    chosen = getattr(args, "db", None) or os.environ.get("INSTANCE_AI_DB") or data.get("db_path")
    if chosen is not None and not isinstance(chosen, (str, Path)):
        return None
    return Path(chosen).expanduser() if chosen else default_db_path()


def save_screen(app: InstanceAiApp, db_path: Path) -> None:
    """The app has quit (its client closed): keep the open thread's newest screenful for the
    next start (``tui.screen_cache``). When no thread of this database was shown the cache is
    left as it is: its fingerprint of the database says at the next start whether it still holds."""
    from ..tui import screen_cache

    conversation = app.conversation
    if (app.client.mode != "embedded" or not app.ready.is_set() or conversation is None
            or not conversation.thread_id or app.thread.opening
            or app.settings.resolved_db_path.resolve() != db_path.resolve()):
        return
    threads = app.thread_list.local_threads()
    latest = max(threads, key=lambda t: t.updated_at).id if threads else None
    screen_cache.save(db_path, conversation, latest=latest == conversation.thread_id)


async def load(args: argparse.Namespace, settings: Settings | None, gateway: GatewayRequest | None) -> Started:
    """The settings (file, environment, flags; ``settings`` if already read) and the client,
    built after the app's first frame; ``StartError`` when they cannot be."""
    import asyncio  # (not at module level: every command builds its parser from this module)

    from ..client.base import ClientError
    from ..client.factory import detect_dialect
    from ..client.gateway_flag import check_connection
    from ..tui.startup import Started, StartError

    if settings is None:
        settings = await asyncio.to_thread(read_settings, args)
    if getattr(args, "theme", None):
        settings.ui.theme = args.theme
    remote = settings.remote
    dialect = remote.dialect or ("n8n" if remote.email else None)
    try:
        if remote.url and dialect is None:
            dialect = await detect_dialect(remote.url)
        check_connection(gateway, settings, dialect)
        client = await asyncio.to_thread(build, settings, dialect)
    except ClientError as exc:  # GatewayFlagError included
        raise StartError(str(exc)) from None
    return Started(client, settings, gateway)


def read_settings(args: argparse.Namespace) -> Settings:
    """``settings_from_args`` (blocking), its failure (an unreadable file, a value of the wrong
    type: ``config.load_settings``) as a ``StartError``."""
    from ..tui.startup import StartError
    from .connection import settings_from_args

    try:
        return settings_from_args(args)
    except SystemExit as exc:
        raise StartError(str(exc.code).removeprefix("instance-ai: ")) from None


def build(settings: Settings, dialect: str | None) -> Client:
    """The client for ``settings`` (blocking: the import of its module)."""
    if not settings.remote.url:
        # embedded; the offline demo model (if that is the model) streams at a readable pace
        from ..client.embedded import EmbeddedClient

        return EmbeddedClient(settings, demo_delay=DEMO_DELAY)
    from ..client.factory import build_client

    # n8n: the app's login dialog asks; an n8n not started yet is waited for (the app queues what is sent)
    return build_client(settings, dialect, interactive=False, wait_while_down=True)
