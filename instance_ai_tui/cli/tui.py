"""``instance-ai`` with no sub-command: the TUI.

``add_arguments`` adds the top-level flags (connection, model, database, workspace, theme,
Redis chat sessions, the local gateway for n8n); ``main`` builds the client through ``client.factory`` and runs the
app. Nothing heavy is imported at module level: ``instance-ai --help`` and the other
sub-commands must not pay for Textual.
"""

from __future__ import annotations

import argparse
import sys

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
    from ..client.base import Client, ClientError
    from ..client.factory import build_client, detect_dialect
    from ..client.gateway_flag import GatewayFlagError, check_connection
    from .connection import gateway_from_args, settings_from_args

    settings = settings_from_args(args)
    try:
        gateway = gateway_from_args(args)
        check_connection(gateway, settings)
    except GatewayFlagError as exc:
        print(f"instance-ai: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "theme", None):
        settings.ui.theme = args.theme
    remote = settings.remote
    dialect = remote.dialect or ("n8n" if remote.email else None)
    try:
        if remote.url and dialect is None:
            import asyncio

            dialect = asyncio.run(detect_dialect(remote.url))
        check_connection(gateway, settings, dialect)
        if not remote.url:
            # embedded; the offline demo model (if that is the model) streams at a readable pace
            from ..client.embedded import EmbeddedClient

            client: Client = EmbeddedClient(settings, demo_delay=DEMO_DELAY)
        else:
            client = build_client(settings, dialect, interactive=False)  # n8n: the app's login dialog asks
    except ClientError as exc:  # GatewayFlagError included
        print(f"instance-ai: {exc}", file=sys.stderr)
        return 2

    from ..tui.app import InstanceAiApp

    app = InstanceAiApp(
        client,
        settings,
        thread_id=getattr(args, "tui_thread", None),
        redis_chat=getattr(args, "redis_chat", None),
        chat_webhook=getattr(args, "chat_webhook", None),
        gateway=gateway,
        start=getattr(args, "tui_start", None) or "latest",
        tune_gc=True,
    )
    app.run()  # the app opens the client at start and closes it when it quits
    return int(app.return_code or 0)
