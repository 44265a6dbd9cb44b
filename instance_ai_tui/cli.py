"""The ``instance-ai`` command.

``instance-ai`` with no sub-command starts the TUI. Each sub-command lives in the module
that owns it, which provides ``add_arguments(parser)`` and ``main(args) -> int``; the
modules are imported lazily so that start-up only pays for the mode it runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

#: sub-command -> (module, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("instance_ai_tui.server.cli", "run the HTTP/SSE server"),
    "run": ("instance_ai_tui.client.cli_run", "send one message headless and stream the answer"),
    "threads": ("instance_ai_tui.client.cli_threads", "list threads"),
    "export": ("instance_ai_tui.client.cli_export", "export a thread as Markdown or JSON"),
    "replay": ("instance_ai_tui.replay", "fold a recorded event stream into an agent tree and print it"),
}
TUI_MODULE = "instance_ai_tui.tui.cli"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("instance-ai-tui")
    except PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="instance-ai",
        description="A terminal client for Instance AI agents: embedded, our own server, or n8n.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    importlib.import_module(TUI_MODULE).add_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = COMMANDS[args.command][0] if args.command else TUI_MODULE
    try:
        return int(importlib.import_module(module).main(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
