"""What Enter in the prompt does: a slash command runs (``tui.commands``); anything else goes to
the open thread's outbox (``tui.open_thread.Outbox``), which sends it, queues it or keeps it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import commands
from .mcp_prompts import McpPrompts, is_prompt_command

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..client.base import Client
    from .commands import CommandActions
    from .open_thread import Outbox
    from .ports import Ui
    from .widgets.prompt import PromptInput


class Sender:
    """The prompt's Enter: ``actions`` run the slash commands, ``outbox`` takes the messages; the MCP
    servers of ``client()`` (the open thread's) give their prompts as ``/mcp__server__prompt`` commands
    and Tab completion of ``@server:uri`` (``tui.mcp_prompts``)."""

    def __init__(self, ui: Ui, outbox: Outbox, prompt: PromptInput, actions: CommandActions, *,
                 client: Callable[[], Client]) -> None:
        self.ui = ui
        self.outbox = outbox
        self.prompt = prompt
        self.actions = actions
        self.mcp = McpPrompts(ui, client, outbox.send)
        prompt.completer = self.mcp.completer

    def submit(self, text: str) -> None:
        """The prompt's text: a slash command, or a message sent in the background."""
        if text.startswith("/") and self.run_slash_command(text):
            return
        self.ui.run_worker(self.outbox.send(text), group="send", exit_on_error=False)

    def run_slash_command(self, text: str) -> bool:
        """Run ``/command args``. Returns False if it is not a command (then it is sent)."""
        name, arg = commands.parse(text)
        if is_prompt_command(name):  # an MCP server's prompt: its text is the message
            self.mcp.run(name, arg)
            return True
        command = commands.find(name)
        if command is None:
            if commands.looks_like_command(text):
                self.ui.notify(commands.unknown_text(name), severity="warning")
                self.prompt.load_text(text)
                self.prompt.move_cursor(self.prompt.document.end)  # the next keys go after it
                return True
            return False
        command.run(self.actions, arg)
        return True
