"""Answers waiting in threads that are not open: never missed (issue 12).

The open thread's cards come from its own event stream. Every other thread is asked through
the ``Client`` (embedded, our server, or n8n: the same ``status`` route) every
``POLL_SECONDS``: a suspended run waits for an answer; its history says how many cards wait.
The app shows the result in three places — a marker (glyph *and* word) on the thread's row,
the count and where in the status line, and the terminal: its window title says that answers
wait (restored when none does) and a bell rings when a new one arrives (``ui.bell``; a desktop
notification by OSC 9 with ``ui.desktop_notifications``). Ctrl+G walks the cards across
threads.

``TerminalSignals`` writes the escape sequences (xterm title stack: push, set, pop) and keeps
a log of what it did for tests and headless runs (``signals``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..client.base import ClientError

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.api import ThreadInfo

#: how often threads that are not open are asked whether they wait for an answer (seconds)
POLL_SECONDS = 2.0
#: at most this many threads (the most recently updated) are watched
MAX_THREADS = 40


@dataclass
class PendingWatch:
    """Counts of waiting answers per thread that is not open (``elsewhere``)."""

    client: Client
    #: the threads to watch, newest first (the thread list's)
    threads: Callable[[], list[ThreadInfo]]
    #: the open thread's id (not watched here: its stream shows its cards)
    open_thread: Callable[[], str | None]
    #: called after ``elsewhere`` changed
    on_change: Callable[[], None]
    elsewhere: dict[str, int] = field(default_factory=dict)
    #: the threads seen at the last poll (also those created elsewhere after the app started)
    infos: dict[str, ThreadInfo] = field(default_factory=dict)
    _counts: dict[tuple[str, str | None], int] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="pending-watch")

    def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()

    async def _loop(self) -> None:
        while True:
            try:
                await self.poll_once()
            except Exception:  # noqa: BLE001 - a watcher must never take the app down
                pass
            await asyncio.sleep(POLL_SECONDS)

    def forget(self, thread_id: str) -> None:
        """``thread_id`` was opened (its stream shows its cards now)."""
        if self.elsewhere.pop(thread_id, None) is not None:
            self.on_change()

    def note(self, thread_id: str, count: int) -> None:
        """A thread was left with ``count`` cards waiting: show it at once, before the next poll."""
        if count and self.elsewhere.get(thread_id) != count:
            self.elsewhere[thread_id] = count
            self.on_change()

    async def poll_once(self) -> dict[str, int]:
        """Ask every watched thread once; returns (and keeps) the counts."""
        open_id = self.open_thread()
        counts: dict[str, int] = {}
        try:  # the server's list: threads another client created meanwhile are watched too
            threads = sorted(await self.client.list_threads(), key=lambda t: t.updated_at, reverse=True)
        except ClientError:
            threads = self.threads()
        self.infos = {info.id: info for info in threads}
        for info in threads[:MAX_THREADS]:
            if info.id == open_id:
                continue
            try:
                status = await self.client.status(info.id)
            except ClientError:
                continue
            if not status.is_suspended:
                continue
            counts[info.id] = await self._count(info.id, status.run_id)
        if self.open_thread() != open_id:
            return self.elsewhere  # the open thread changed meanwhile: next time
        if counts != self.elsewhere:
            self.elsewhere = counts
            self.on_change()
        return counts

    async def _count(self, thread_id: str, run_id: str | None) -> int:
        """How many cards wait in a suspended thread (at least one), from its history."""
        key = (thread_id, run_id)
        if key in self._counts:
            return self._counts[key]
        count = 1
        try:
            history = await self.client.messages(thread_id)
        except ClientError:
            history = None
        if history is not None:
            from ..protocol.conversation import Conversation

            conversation = Conversation(thread_id)
            conversation.load_history(history)
            count = max(1, len(conversation.pending_confirmations()))
        self._counts[key] = count
        return count


class TerminalSignals:
    """The terminal is told when answers wait: window title (pushed, set, popped) and a bell.

    ``write`` sends an escape sequence to the terminal (``None`` when headless); every signal
    is also appended to ``signals`` (``"title:…"``, ``"title-restored"``, ``"bell"``,
    ``"notify:…"``).
    """

    def __init__(self, write: Callable[[str], None] | None, *, bell: bool = True, desktop: bool = False) -> None:
        self._write = write
        self.bell_enabled = bell
        self.desktop = desktop
        self.signals: list[str] = []
        self.title: str | None = None
        self._pushed = False

    def _out(self, sequence: str) -> None:
        if self._write is not None:
            try:
                self._write(sequence)
            except (OSError, RuntimeError, AttributeError):
                pass

    def waiting(self, total: int, where: str) -> None:
        """``total`` answers wait (0: none): set or restore the window title."""
        if total <= 0:
            if self._pushed:
                self._out("\x1b[23;0t")  # pop: the title the terminal had before
                self._pushed = False
                self.title = None
                self.signals.append("title-restored")
            return
        title = f"({total}) answer{'s' if total != 1 else ''} waiting — Instance AI{where}"
        if title == self.title:
            return
        if not self._pushed:
            self._out("\x1b[22;0t")  # push the terminal's own title, to restore it after
            self._pushed = True
        self._out(f"\x1b]2;{_clean(title)}\x07")
        self.title = title
        self.signals.append(f"title:{title}")

    def arrived(self, text: str) -> None:
        """A new card waits: ring the bell (``ui.bell``), and a desktop notification (OSC 9)."""
        if self.bell_enabled:
            self._out("\x07")
            self.signals.append("bell")
        if self.desktop:
            self._out(f"\x1b]9;{_clean(text)}\x07")
            self.signals.append(f"notify:{text}")

    def restore(self) -> None:
        """On exit: give the terminal its title back."""
        self.waiting(0, "")


def _clean(text: str) -> str:
    """No control characters inside an escape sequence."""
    return "".join(ch for ch in text if ch.isprintable())[:200]


def waiting_summary(here: int, elsewhere: list[tuple[str, int]]) -> str:
    """``2 answers waiting: 1 here, 1 in “Weather digest”`` ("" when none)."""
    total = here + sum(count for _title, count in elsewhere)
    if not total:
        return ""
    places = ([f"{here} here"] if here else []) + [f"{count} in “{title}”" for title, count in elsewhere]
    return f"{total} answer{'s' if total != 1 else ''} waiting: " + ", ".join(places)
