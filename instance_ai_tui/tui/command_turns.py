"""A user turn that is a command's record, not a message of the person's.

The server records the run of ``/compact`` (a run of its own) with the command as its user message.
Such a turn is shown as a command (``widgets.turns.UserMessage``), has no ``e``, and ``/edit``,
``/retry`` and ``/rewind`` pass it by (``screens.rewind.user_turns``): issue 45, where ``/edit`` after
``/compact`` put "/compact" back in the prompt as if it were a message."""

from __future__ import annotations

#: the commands whose run is recorded with the command as its user message
COMMAND_TURNS = ("/compact",)


def is_command_turn(text: str) -> bool:
    """Whether a user turn's ``text`` is a command's record (``/compact the log numbers``)."""
    return any(text == command or text.startswith(f"{command} ") for command in COMMAND_TURNS)
