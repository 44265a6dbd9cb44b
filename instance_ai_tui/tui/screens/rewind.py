"""Retry, edit and rewind: going back to an earlier user message of the open thread.

The server keeps the rewound turns in the thread's history, marked superseded, and leaves them
out of the model's context (``Client.rewind``); the app then reloads the thread and either
sends the same text again (retry), or puts it in the prompt to be edited and sent (edit,
rewind). ``user_turns(conversation)`` lists the user messages that can be rewound to, each
with the run it started; ``RewindPicker`` lets the user choose one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.widgets.option_list import Option

from ...protocol.command_turns import is_command_turn
from ...protocol.conversation import Conversation
from .. import keymap
from .list_picker import ListPicker


@dataclass(frozen=True, slots=True)
class UserTurn:
    """A user message and the run it started (what ``Client.rewind`` is given)."""

    message_id: str
    run_id: str
    text: str

    @property
    def rewind_id(self) -> str:
        """The id the server knows this user message by (``<runId>-user`` always works)."""
        return f"{self.run_id}-user"


def user_turns(conversation: Conversation) -> list[UserTurn]:
    """The user messages whose run is known (answered, or at least started), oldest first."""
    turns: list[UserTurn] = []
    messages = conversation.messages
    for index, message in enumerate(messages):
        if message.role != "user" or is_command_turn(message.content):  # /compact's run: not a message to edit
            continue
        for reply in messages[index + 1 :]:
            if reply.role == "user":
                break
            run_ids = list(getattr(reply, "run_ids", None) or ([reply.run_id] if reply.run_id else []))
            if run_ids:
                turns.append(UserTurn(message.id, run_ids[0], message.content))
                break
    return turns


def _one_line(text: str, width: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


class RewindPicker(ListPicker[UserTurn]):
    """Choose the user message to go back to (newest first); Esc cancels."""

    DEFAULT_CSS = """
    RewindPicker { align: center middle; }
    RewindPicker > Vertical {
        width: 90; max-width: 100%; height: auto; max-height: 90%;
        padding: 1 2; border: round $warning; background: $surface;
    }
    /* the list gives way to the help line on a short screen (80x24) */
    RewindPicker OptionList { height: auto; max-height: 40vh; margin: 1 0; }
    RewindPicker .hint { color: $text-muted; width: 100%; }
    """
    KEY_SCOPES = ("rewind",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("rewind")]

    def __init__(self, turns: list[UserTurn]) -> None:
        self.turns = list(reversed(turns))
        super().__init__(
            "Rewind to which message?",
            "Enter: go back to it — it and every later turn leave the agent's memory (kept in the "
            "thread's history) and its text comes back to the prompt · Esc: cancel",
            "rewind-list", [(Option(Text(_one_line(turn.text)), id=str(n)), turn) for n, turn in enumerate(self.turns)],
        )
