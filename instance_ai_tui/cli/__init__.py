"""The ``instance-ai`` command.

``instance-ai`` with no sub-command starts the TUI. Each sub-command lives in the module
that owns it, which provides ``add_arguments(parser)`` and ``main(args) -> int``.

Start-up only pays for the mode it runs: ``main`` first finds which sub-command the
arguments name (a quiet pre-parse that imports nothing), then builds the real parser with
only that sub-command's arguments. The other sub-commands are still listed (name and
help text come from ``COMMANDS``), so ``instance-ai --help``, every ``instance-ai CMD
--help`` and every error message read exactly as with the full parser.

Exit codes (every sub-command): 0 done; 1 an error the command reported (server unreachable,
refused token, unknown thread, ...); 2 bad arguments; 130 interrupted (Ctrl+C); 141 the
output was closed early (``instance-ai threads | head``): the command stops quietly, as a
program killed by SIGPIPE would.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Collection, Sequence

from .. import __version__

#: sub-command -> (module, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("instance_ai_tui.cli.serve", "run the HTTP/SSE server"),
    "run": ("instance_ai_tui.cli.run", "send one message headless and stream the answer"),
    "threads": ("instance_ai_tui.cli.threads", "list threads"),
    "export": ("instance_ai_tui.cli.export", "export a thread as Markdown or JSON"),
    "replay": ("instance_ai_tui.cli.replay", "fold a recorded event stream into an agent tree and print it"),
    "web": ("instance_ai_tui.cli.web", "serve the app to browsers (one app per tab; loopback unless --token)"),
    "workflow": ("instance_ai_tui.cli.workflow", "draw a workflow (boxes and lines, last run's node states) or list them"),
}
TUI_MODULE = "instance_ai_tui.cli.tui"
DESCRIPTION = "A terminal client for Instance AI agents: embedded, our own server, or n8n."
EXIT_CODES = "exit codes: 0 done, 1 error, 2 bad arguments, 130 interrupted, 141 output closed early"
#: the exit code when the reader of our output went away (128 + SIGPIPE, as the shell reports it)
EXIT_PIPE_CLOSED = 141


class _NotParsed(Exception):
    """The pre-parse could not make sense of the arguments (the real parse will say why)."""


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _NotParsed(message)


def _add_commands(parser: argparse.ArgumentParser, with_arguments: Collection[str], *, quiet: bool = False) -> None:
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if quiet:
            sub.add_parser(name, add_help=False)
            continue
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name in with_arguments:
            importlib.import_module(module).add_arguments(sub_parser)


def _epilog() -> str:
    """Where the config file is (MCP servers, models, keys, themes: ``--help`` names it), then
    the exit codes."""
    from ..config_file import config_path

    where = str(config_path()).replace("%", "%%")
    return (f"config file (MCP servers, models, keys; INSTANCE_AI_CONFIG names another):\n  {where}\n\n"
            f"{EXIT_CODES}")


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``instance-ai`` parser; ``commands``: the sub-commands whose arguments it parses
    (all by default; the others are listed but take no arguments)."""
    # the epilog as written: a path is never wrapped at its hyphens
    parser = argparse.ArgumentParser(prog="instance-ai", description=DESCRIPTION, epilog=_epilog(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    importlib.import_module(TUI_MODULE).add_arguments(parser)
    _add_commands(parser, COMMANDS if commands is None else commands)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (``None``: the TUI, or arguments the real parser
    will reject). Imports no sub-command module and never prints or exits."""
    parser = _QuietParser(prog="instance-ai", add_help=False)
    importlib.import_module(TUI_MODULE).add_arguments(parser)
    _add_commands(parser, (), quiet=True)
    try:
        namespace, _rest = parser.parse_known_args(list(argv))
    except _NotParsed:
        return None
    command = getattr(namespace, "command", None)
    return command if command in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = chosen_command(arguments)
    if command is None:  # the TUI: keys typed from now on wait as typed, Enter stays Enter (cli.type_ahead)
        from .type_ahead import capture

        capture()
    parser = build_parser(() if command is None else (command,))
    args = parser.parse_args(arguments)
    module = COMMANDS[args.command][0] if args.command else TUI_MODULE
    from ..log_secrets import install as scrub_secrets
    from .logs import install

    scrub_secrets()  # no URL credential or configured secret in any log line, whoever logs it
    install()  # warnings of any command on stderr as visible text, one line each (the TUI moves them to a file)
    try:
        code = int(importlib.import_module(module).main(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here for short outputs
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except Exception as exc:
        # a failure every command should have said in its own words (a database that cannot open, a
        # server that cannot be reached): one line, not a traceback; anything else is a bug
        from ..client.base import ClientError
        from ..store.errors import StoreError

        if not isinstance(exc, ClientError | StoreError):
            raise
        name = f"instance-ai {args.command}" if args.command else "instance-ai"
        print(f"{name}: {exc}", file=sys.stderr)
        return 1


def _silence_stdout() -> None:
    """The reader is gone: point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
