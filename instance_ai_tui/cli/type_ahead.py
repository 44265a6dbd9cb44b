"""Keys typed before the app's first frame are read as the app reads keys after it (issue 39.4).

Until Textual's driver puts the terminal in raw mode, the terminal is in cooked mode: the line
discipline turns Enter (CR) into a line feed (``ICRNL``), which the app then reads as Ctrl+J — a
new line — so a message typed and sent at launch sat unsent in the prompt (7 of 7 typed within
1.5 s of launch on a busy machine). Claude Code reads such keys as it reads any other; so does this:

- ``capture()``, the first thing the TUI's command does (``cli.main``, before the imports of the
  app): the terminal stops translating and echoing (no ``ICRNL``, ``ICANON``, ``ECHO``; signals
  stay on, so Ctrl+C before the app starts still stops it), so every key typed from now on waits
  in the terminal exactly as typed, for the app to read raw. What was typed *before* this moment
  (while the interpreter started) was translated already: it is read now, each line feed in it
  taken back to the CR the Enter key sent, and kept;
- ``TypeAheadDriver`` (the app's driver for a real terminal) hands those kept keys to the app
  first, through Textual's own key parser, exactly as if they had been read after the first frame,
  and restores the terminal's original settings when the app ends (not the ones ``capture`` set);
- ``restore()`` (also at exit) gives the terminal its original settings back whatever happened.

A web tab's app (textual-serve's driver) and a terminal that is not a TTY are left alone.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

#: the terminal's settings before ``capture`` (None: not captured)
_original: list[Any] | None = None
#: what was typed before ``capture``, as the keys sent it
_early: str = ""
_fd = 0


def capture(fd: int | None = None) -> bool:
    """Stop the terminal on ``fd`` (stdin) from translating keys; keep what was typed already.
    Returns whether the terminal was captured."""
    global _original, _early, _fd
    if _original is not None:
        return True
    try:
        import termios
    except ImportError:  # not POSIX
        return False
    try:
        # pytest's captured stdin, a closed or replaced stdin (None, a pseudo-file): not a terminal,
        # nothing to capture (io.UnsupportedOperation is an OSError and a ValueError)
        fd = sys.stdin.fileno() if fd is None else fd
        if not os.isatty(fd):
            return False
        original = termios.tcgetattr(fd)
    except (OSError, ValueError, AttributeError, termios.error):
        return False
    raw = termios.tcgetattr(fd)
    raw[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
    raw[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)
    raw[6][termios.VMIN] = 0
    raw[6][termios.VTIME] = 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, raw)
    except termios.error:
        return False
    _original, _fd = original, fd
    atexit.register(restore)
    early = b""
    try:
        while chunk := os.read(fd, 65536):  # (VMIN 0: returns at once when nothing waits)
            early += chunk
            if len(early) > 1_000_000:
                break
    except (BlockingIOError, OSError):
        pass
    raw[6][termios.VMIN] = 1
    try:
        termios.tcsetattr(fd, termios.TCSANOW, raw)
    except termios.error:
        pass
    if early and original[0] & termios.ICRNL:
        early = early.replace(b"\n", b"\r")  # the kernel turned each Enter into a line feed
    _early = early.decode("utf-8", "replace")
    return True


def take_early() -> str:
    """The keys typed before ``capture`` (once: then empty)."""
    global _early
    early, _early = _early, ""
    return early


def restore() -> None:
    """Give the terminal its settings from before ``capture`` back (nothing when not captured)."""
    global _original
    if _original is None:
        return
    try:
        import termios

        termios.tcsetattr(_fd, termios.TCSANOW, _original)
    except Exception:  # noqa: BLE001 - at exit, a terminal already gone
        pass
    _original = None


def driver_class(default: type[Any]) -> type[Any]:
    """The app's driver: ``TypeAheadDriver`` when the app would use Textual's Linux driver on the
    captured terminal, else ``default`` as it is (a web tab, a headless test, another platform)."""
    if _original is None:
        return default
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:
        return default
    if not (isinstance(default, type) and issubclass(default, LinuxDriver)):
        return default

    class TypeAheadDriver(default):
        """Textual's driver, handing the app the keys typed before it started first."""

        def start_application_mode(self) -> None:
            super().start_application_mode()
            if _original is not None:
                self.attrs_before = _original  # the app ends with the terminal as it was before capture

        def run_input_thread(self) -> None:
            early = take_early()
            if early:
                from ..tui.textual_internals import parse_input  # (Textual's private parser, behind its door)

                for event in parse_input(early, self._debug):
                    self.process_message(event)
            super().run_input_thread()

    return TypeAheadDriver
