"""The log path: every log record goes through the visible-text rule before it is written.

A log record may hold text from outside — a model server's HTTP error body in a failed title
generation, an MCP server's answer in the SDK's own warnings, a header httpx or uvicorn quote —
and a log ends on a terminal (``run``'s and ``serve``'s stderr) or in a file someone ``cat``s.
A terminal obeys what it is sent (OSC 52 writes the clipboard, CSI 2J wipes the screen, U+202E
reorders the line), so the log obeys the screen's rule (``protocol.safe_text.visible``):

- ``VisibleFormatter`` formats a record as usual, then makes the whole line visible (message,
  arguments, exception text and traceback alike): no ESC, BEL, C1 or bidi control is ever
  written. A newline inside a message becomes ``␤``, so one event is one line and a value
  from outside cannot forge a line of its own.
- Records of other libraries (the ``mcp`` SDK, httpx, uvicorn, asyncio, aiohttp, textual-serve)
  are one line each, never a traceback: their exception is named on that line
  (``… (ValueError: …)``). Our own records keep their traceback (they are bugs of ours), made
  visible line by line.

``install`` puts one handler with this formatter on the root logger and is what every entry
point calls: ``cli.main`` for every command (stderr, warnings and worse), then ``run`` (the same,
named), ``serve`` (stderr, ``--log-level``), ``web``
(stderr) and the TUI (a file beside its database: ``instance-ai.log``, bounded, since the
screen is the terminal). It replaces the handler it installed before, so calling it again
(a test, a second ``main``) never doubles the lines. Other libraries' loggers that carry a
handler of their own are made to propagate to it instead (uvicorn's configuration is not
applied: ``server.runner.make_server`` passes ``log_config=None``).
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from pathlib import Path
from typing import TextIO

from ..log_secrets import scrub
from ..protocol.safe_text import visible

#: the prefix of our own loggers: their records keep a traceback
OURS = "instance_ai_tui"
#: what a newline inside one record's message is written as (one event, one line)
NEWLINE = "\u2424"
#: the TUI's log file: its name beside the database, its size before it is rolled over (one old copy is kept)
TUI_LOG_NAME = "instance-ai.log"
TUI_LOG_BYTES = 1_000_000
#: the longest message a record writes (a 1 MB error body from a server is cut here), and the longest
#: exception summary on a third-party line (its first line)
MAX_MESSAGE_CHARS = 2_000
MAX_SUMMARY_CHARS = 300
#: libraries whose loggers may come with handlers of their own (their lines must go through ours)
THIRD_PARTY = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "mcp", "httpx", "httpcore",
               "aiohttp", "aiohttp.access", "aiohttp.server", "asyncio", "textual_serve")

SERVE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` visible (``protocol.safe_text.visible``), on one line (newlines as ``␤``) and at
    most about ``limit`` characters (the rest counted, not written)."""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    text = visible(text)
    if "\n" in text:
        text = text.rstrip("\n").replace("\r\n", "\n").replace("\n", NEWLINE)
    return text


def _exception_summary(exc_info: object) -> str:
    if not isinstance(exc_info, tuple) or len(exc_info) != 3 or exc_info[1] is None:
        return ""
    exc = exc_info[1]
    said = str(exc).strip()
    first, _, rest = said.partition("\n")
    if rest:
        first += " …"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class VisibleFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose every line is visible text (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except Exception as exc:  # noqa: BLE001 - a record whose arguments do not fit its format
            message = f"{record.msg!r} {record.args!r} (unformattable: {exc})"
        record.message = one_line(message)
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        if not record.name.startswith(OURS):
            summary = _exception_summary(record.exc_info)
            if summary:
                line = f"{line} ({one_line(summary, MAX_SUMMARY_CHARS)})"
            return scrub(line)  # no traceback, no stack: one line per event
        details: list[str] = []
        if record.exc_info:
            details.append(self.formatException(record.exc_info))
        elif record.exc_text:
            details.append(record.exc_text)
        if record.stack_info:
            details.append(self.formatStack(record.stack_info))
        if details:
            line += "\n" + visible("\n".join(details)).rstrip("\n")
        return scrub(line)  # secrets out of the exception text too (log_secrets)


class _Installed(logging.StreamHandler):  # type: ignore[type-arg,unused-ignore]
    """The handler ``install`` put on the root logger (replaced by the next ``install``). Without a
    stream of its own it writes to ``sys.stderr`` as it is at each record (as ``logging.lastResort``
    does), so a stderr replaced later (a test's capture, a redirection) is followed."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._own: TextIO | None = stream
        super().__init__(stream)

    @property
    def stream(self) -> TextIO:
        return self._own if self._own is not None else sys.stderr

    @stream.setter
    def stream(self, value: TextIO | None) -> None:
        if value is not sys.stderr:
            self._own = value


class _InstalledFile(logging.handlers.RotatingFileHandler):
    """The same mark for a log file."""


def install(*, level: int | str = logging.WARNING, fmt: str = "%(message)s", stream: TextIO | None = None,
            path: Path | None = None) -> logging.Handler:
    """Send every log record at ``level`` or above through ``VisibleFormatter(fmt)`` to ``stream``
    (stderr by default), or to the file ``path`` (rolled over past ``TUI_LOG_BYTES``); the root
    logger's level is set to ``level``. Returns the handler (``uninstall`` removes it)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, (_Installed, _InstalledFile))]:
        uninstall(old)
    handler: logging.Handler
    if path is not None:
        handler = _InstalledFile(path, maxBytes=TUI_LOG_BYTES, backupCount=1, encoding="utf-8", delay=True)
    else:
        handler = _Installed(stream)
    handler.setFormatter(VisibleFormatter(fmt))
    handler.setLevel(level)
    # the formatter is the rule: any other handler on the root (a basicConfig of a library) goes
    for other in [h for h in root.handlers if not isinstance(h, (_Installed, _InstalledFile))]:
        root.removeHandler(other)
    root.addHandler(handler)
    root.setLevel(level)
    for name in THIRD_PARTY:
        logger = logging.getLogger(name)
        for own in list(logger.handlers):
            logger.removeHandler(own)
        logger.propagate = True
    return handler


def uninstall(handler: logging.Handler) -> None:
    """Take ``handler`` (from ``install``) off the root logger and close it."""
    logging.getLogger().removeHandler(handler)
    handler.close()


def install_tui_log(data_dir: Path | None) -> logging.Handler | None:
    """The TUI's log: warnings and worse to ``instance-ai.log`` in ``data_dir`` (the database's
    folder). None (and nothing installed but a handler that drops records) when the folder
    cannot be written: the screen says what is wrong with the folder, the log must not add a
    traceback of its own."""
    if data_dir is not None:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
            path = data_dir / TUI_LOG_NAME
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError:
            data_dir = None
    if data_dir is None:
        root = logging.getLogger()
        for old in [h for h in root.handlers if isinstance(h, (_Installed, _InstalledFile))]:
            uninstall(old)  # (the command's stderr handler: the screen is on stderr's terminal)
        if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
            root.addHandler(logging.NullHandler())  # nothing reaches the screen through logging.lastResort
        return None
    return install(level=logging.WARNING, fmt=SERVE_FORMAT, path=data_dir / TUI_LOG_NAME)
