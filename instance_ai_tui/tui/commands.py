"""The app's commands, declared once.

Every command is a slash command (``/new``) and an entry of the command palette (Ctrl+P);
``/help``, the prompt's help, the "unknown command" message and the palette are all derived
from ``COMMANDS``, so a command added here shows up everywhere. The palette hides a command
whose ``available`` says it has nothing to act on (no run to cancel, no card waiting).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Protocol


class CommandActions(Protocol):
    """What the commands do, and ask before they are offered (``tui.actions.Actions``)."""

    def new_thread(self) -> object: ...

    def show_threads(self) -> object: ...

    def rewind_last(self, *, resend: bool) -> object: ...

    def pick_rewind(self) -> object: ...

    def choose_model(self, name: str = "") -> object: ...

    def set_theme(self, name: str) -> object: ...

    def export(self, path: str | None) -> object: ...

    def copy_last_answer(self) -> object: ...

    def toggle_tasks(self) -> object: ...

    def follow(self) -> object: ...

    def next_pending_card(self) -> object: ...

    def cancel_run(self) -> object: ...

    def cancel_command(self) -> object: ...

    def open_workflow(self, argument: str) -> object: ...

    def show_permissions(self) -> object: ...

    def show_mcp(self) -> object: ...

    def show_help(self, *, everything: bool) -> object: ...

    def quit(self) -> object: ...

    def compact(self, keep: str) -> object: ...

    @property
    def streaming(self) -> bool:
        """A run of the open thread is running (there is something to stop)."""
        ...

    @property
    def waiting(self) -> bool:
        """A card waits for an answer, here or in another thread."""
        ...


@dataclass(frozen=True, slots=True)
class Command:
    #: the slash command's name, without the slash
    name: str
    #: what it does, for ``/help``
    summary: str
    #: its title and help line in the command palette
    title: str
    palette_help: str
    #: runs it: ``run(actions, argument)`` (the argument is "" from the palette)
    run: Callable[[CommandActions, str], object]
    #: how the argument is written in help, e.g. ``[name]``
    arg: str = ""
    aliases: tuple[str, ...] = ()
    #: whether it has anything to act on now (the palette hides it otherwise)
    available: Callable[[CommandActions], bool] | None = None

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.arg}" if self.arg else f"/{self.name}"


COMMANDS: tuple[Command, ...] = (
    Command("new", "start a new thread", "New thread", "Start a new conversation",
            lambda actions, arg: actions.new_thread()),
    Command("threads", "show the thread list and search it (titles and message text)", "Threads",
            "Show and search the thread list", lambda actions, arg: actions.show_threads()),
    Command("retry", "the last message again; its old answer leaves the agent's memory (kept in the history)",
            "Retry the last message", "Send it again; the old answer leaves the agent's memory",
            lambda actions, arg: actions.rewind_last(resend=True)),
    Command("edit", "the last message back in the prompt, to change and send again", "Edit the last message",
            "Put it back in the prompt to change and send again",
            lambda actions, arg: actions.rewind_last(resend=False)),
    Command("rewind", "pick an earlier message to go back to (`e` on a message does the same)",
            "Rewind to an earlier message", "Pick a message to go back to", lambda actions, arg: actions.pick_rewind()),
    Command("model", "the model of this thread (a picker, or `name`)", "Model", "Choose the model of this thread",
            lambda actions, arg: actions.choose_model(arg), arg="[name]"),
    Command("compact", "turn this thread's context into notes now (the messages stay here); `what to keep` "
            "guides the notes", "Compact context", "Make room in the model's context: older messages become notes",
            lambda actions, arg: actions.compact(arg), arg="[what to keep]"),
    Command("theme", "pick a theme (or switch to `name`)", "Theme", "Pick a theme",
            lambda actions, arg: actions.set_theme(arg), arg="[name]"),
    Command("export", "write the thread as Markdown (default: `<thread>.md` in your Downloads folder; a `file` "
            "without a folder goes to the current one)",
            "Export thread", "Write the thread as Markdown", lambda actions, arg: actions.export(arg or None),
            arg="[file]"),
    Command("copy", "copy the agent's last answer", "Copy last answer", "Copy the agent's last answer",
            lambda actions, arg: actions.copy_last_answer()),
    Command("tasks", "show or hide the task checklist", "Toggle task list", "Show or hide the task checklist",
            lambda actions, arg: actions.toggle_tasks()),
    Command("follow", "scroll to the newest output and follow it", "Jump to newest output",
            "Scroll to the bottom and follow", lambda actions, arg: actions.follow()),
    Command("pending", "go to the card waiting for your answer (here, then in other threads)",
            "Go to pending approval", "Jump to the card waiting for you",
            lambda actions, arg: actions.next_pending_card(), available=lambda actions: actions.waiting),
    Command("cancel", "stop the running agent", "Cancel run", "Stop the agent",
            lambda actions, arg: actions.cancel_command(), available=lambda actions: actions.streaming),
    Command("workflow", "the workflow canvas beside the conversation (the thread's latest workflow, or `id`); "
            "again to close", "Workflow canvas", "Draw the workflow the agent builds, live",
            lambda actions, arg: actions.open_workflow(arg), arg="[id]"),
    Command("permissions", "the \"always allow\" grants of this thread, and revoke them", "Permissions",
            "The thread's always-allow grants; revoke them", lambda actions, arg: actions.show_permissions()),
    Command("mcp", "your MCP servers: their state, tools, last error and stderr; restart one", "MCP servers",
            "Your own tools: each MCP server, its state and tools; restart", lambda actions, arg: actions.show_mcp()),
    Command("help", "this help", "Help", "Every key and slash command",
            lambda actions, arg: actions.show_help(everything=True)),
    Command("quit", "quit", "Quit", "Quit the application", lambda actions, arg: actions.quit(), aliases=("exit",)),
)

#: the palette entries of Textual's own that a command here replaces (same title)
REPLACED_SYSTEM_TITLES = frozenset(command.title for command in COMMANDS)


def find(name: str) -> Command | None:
    """The command called ``name`` (or one of its aliases), ignoring case."""
    name = name.lower()
    return next((c for c in COMMANDS if c.name == name or name in c.aliases), None)


def looks_like_command(text: str) -> str | None:
    """The would-be command name of ``/word …`` (letters only), or ``None``: then the text is a
    message that happens to start with a slash (a path, ``/ 2``, ...)."""
    name, _ = parse(text)
    return name if name and text[1:].startswith(name) and name.isalpha() else None


def parse(text: str) -> tuple[str, str]:
    """``/name rest`` -> ``(name, rest)``."""
    name, _, arg = text[1:].strip().partition(" ")
    return name, arg.strip()


def unknown_text(name: str) -> str:
    return f"Unknown command /{name}. Commands: {' '.join('/' + c.name for c in COMMANDS)}"


def help_markdown() -> str:
    """The slash-command table of ``/help``."""
    rows = "\n".join(f"| `{c.usage}` | {c.summary} |" for c in COMMANDS)
    return f"\n## Slash commands\n\n| Command | What it does |\n|---|---|\n{rows}\n"


def inline_list() -> str:
    """``/new``, ``/threads``, … for running text (the prompt's help)."""
    return ", ".join(f"`{c.usage}`" for c in COMMANDS)


def palette(actions: CommandActions) -> Iterator[tuple[Command, Callable[[], object]]]:
    """The commands the palette offers now, each with what selecting it does."""
    for command in COMMANDS:
        if command.available is None or command.available(actions):
            yield command, partial(command.run, actions, "")
