"""A user turn that is a command's record, not a message of the person's.

The server records the run of ``/compact`` (a run of its own) with the command as its user message.
Such a turn is shown as a command wherever a thread is shown -- the live view
(``tui.widgets.turns.UserMessage``), the export (``protocol.transcript``), the screen kept for the
next start (``tui.screen_cache``) -- in the same words (``command_line``); it has no ``e``, and
``/edit``, ``/retry`` and ``/rewind`` pass it by (``tui.screens.rewind.user_turns``): issue 45, where
``/edit`` after ``/compact`` put "/compact" back in the prompt as if it were a message, and the
export and the kept screen showed it as a message of the person's."""

from __future__ import annotations

#: the commands whose run is recorded with the command as its user message
COMMAND_TURNS = ("/compact",)


def is_command_turn(text: str) -> bool:
    """Whether a user turn's ``text`` is a command's record (``/compact the log numbers``)."""
    return any(text == command or text.startswith(f"{command} ") for command in COMMAND_TURNS)


def command_line(text: str) -> str:
    """How a command's record reads: ``/compact the log numbers  · a command, not a message``."""
    return f"{text}  · a command, not a message"
