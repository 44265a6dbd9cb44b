"""``instance-ai web``: serve the app to browsers.

``instance-ai web [--host 127.0.0.1] [--port 5690] [--token T] [the app's flags]``: every
browser tab runs ``python -m instance_ai_tui`` with the same app flags (``--url``,
``--email``, ``--model``, ``--workspace``, ``--theme``, ...). ``--token`` here is the web
access token; the app's own server token (``--token`` of the TUI) comes from its environment
variable, like every other secret: the environment is passed to the app processes and never
reaches the page.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ..web.access import TOKEN_ENV, AccessError, check_settings, clean_token

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5690
#: app processes at once by default (each browser tab runs one: ~100 MB and a share of the CPU)
DEFAULT_MAX_APPS = 8
TUI_MODULE = "instance_ai_tui.cli.tui"
#: app flags that web mode does not pass on (``--token``: the web token takes the name; the
#: app's server token comes from the environment)
NOT_PASSED = {"help", "token"}
#: the server's log lines on stderr (visible text: ``cli.logs``)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # the app's own flags first; then ours, whose --token replaces the app's (which web mode
    # takes from the environment, so no secret is on a command line)
    parser.conflict_handler = "resolve"
    importlib.import_module(TUI_MODULE).add_arguments(parser)
    group = parser.add_argument_group("web")
    group.add_argument("--host", default=DEFAULT_HOST,
                       help=f"address to listen on (default {DEFAULT_HOST}; any other address needs --token)")
    group.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    group.add_argument("--token", dest="web_token", metavar="TOKEN",
                       help=f"access token the page asks for (or set {TOKEN_ENV}); required off loopback. "
                            "In web mode the app's server token comes from INSTANCE_AI_TOKEN")
    group.add_argument("--max-apps", type=int, default=DEFAULT_MAX_APPS, metavar="N",
                       help=f"app processes at once: one per browser tab; the next tab is told the server is full "
                            f"(default {DEFAULT_MAX_APPS})")
    group.add_argument("--public-url", metavar="URL",
                       help="the address browsers use, when behind a reverse proxy (e.g. https://ai.example.com)")


def app_arguments(args: argparse.Namespace) -> list[str]:
    """The app's flags in ``args`` as a command line (only those that differ from their defaults;
    paths made absolute, so the app process finds them whatever its folder)."""
    probe = argparse.ArgumentParser(add_help=False)
    importlib.import_module(TUI_MODULE).add_arguments(probe)
    out: list[str] = []
    done: set[str] = set()
    for action in probe._actions:
        dest = action.dest
        if dest in NOT_PASSED or dest in done or not action.option_strings or not hasattr(args, dest):
            continue
        value: Any = getattr(args, dest)
        if value is None or value == action.default:
            continue
        option = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
        if action.nargs == 0:  # a flag (store_true / store_const): the action whose const it is
            if value == action.const:
                out.append(option)
                done.add(dest)
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            text = str(Path(item).expanduser().absolute()) if isinstance(item, Path) else str(item)
            out += [option, text]
        done.add(dest)
    return out


def app_command(args: argparse.Namespace) -> str:
    """The shell command textual-serve runs for each browser tab."""
    return shlex.join([sys.executable, "-m", "instance_ai_tui", *app_arguments(args)])


def _check_app_flags(args: argparse.Namespace) -> str | None:
    """What the app would refuse at start (a broken config file, --gateway without n8n), said
    once here instead of in every tab; ``None``: fine."""
    from ..client.base import ClientError
    from ..client.gateway_flag import GatewayFlagError, check_connection
    from .connection import gateway_from_args, settings_from_args

    try:
        settings = settings_from_args(args)
        check_connection(gateway_from_args(args), settings, settings.remote.dialect)
    except (ClientError, GatewayFlagError, ValueError, OSError) as exc:
        return str(exc)
    return None


def main(args: argparse.Namespace) -> int:
    # (an empty environment variable is unset; a given token that is blank is an error)
    raw = args.web_token if args.web_token is not None else (os.environ.get(TOKEN_ENV) or None)
    os.environ.pop(TOKEN_ENV, None)  # the app processes have no use for it
    try:
        token = clean_token(raw)  # stripped; a blank or whitespace-only token is refused, not ignored
        check_settings(args.host, token)
    except AccessError as exc:
        print(f"instance-ai web: {exc}", file=sys.stderr)
        return 2
    if not 1 <= args.max_apps <= 256:
        print(f"instance-ai web: --max-apps must be between 1 and 256, not {args.max_apps}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"instance-ai web: --port must be between 1 and 65535, not {args.port}", file=sys.stderr)
        return 2
    problem = _check_app_flags(args)
    if problem is not None:
        print(f"instance-ai web: {problem}", file=sys.stderr)
        return 2
    try:
        import textual_serve  # noqa: F401
    except ImportError:
        print("instance-ai web: textual-serve is not installed: pip install textual-serve", file=sys.stderr)
        return 1
    from ..web.server import WebServer
    from .logs import install

    server = WebServer(app_command(args), host=args.host, port=args.port, token=token, public_url=args.public_url,
                       max_apps=args.max_apps, setup_logging=lambda: install(level="INFO", fmt=LOG_FORMAT))
    try:
        server.serve()
    except OSError as exc:  # the port is taken, the address is not ours, ...
        print(f"instance-ai web: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
