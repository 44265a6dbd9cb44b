"""Sending a message: what Enter in the prompt does.

A slash command runs (``tui.commands``); anything else is sent in the open thread through the
client of that thread (a new thread is created first). While the agent works, and during a
transition (the app starting, a thread opening, the client connecting or reconnecting), the
message waits in the visible queue (``tui.connection``) and goes to the thread that opens: it
is never refused for being early. A refused
message goes back into the prompt, and the reason is shown: a read-only source, a run already
active, a session that ended (n8n: a login dialog), a server that did not answer (queued).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.content import Content

from ..client.base import ClientError, ConnectionState, ReadOnlyError, RunActiveError
from . import commands
from .commands import CommandHost
from .ports import Ui

if TYPE_CHECKING:
    import asyncio

    from ..client.base import Client
    from ..protocol.conversation import Conversation
    from .connection import ConnectionWatcher
    from .projection import Projection
    from .threads import Threads
    from .widgets.conversation_view import ConversationView
    from .widgets.prompt import PromptInput
    from .widgets.thread_list import ThreadList


class SenderHost(Ui, CommandHost, Protocol):
    """What sending uses of the app (and hands to the slash commands and the login screen)."""

    client: Client
    conversation: Conversation | None
    thread_id: str | None
    ready: asyncio.Event
    view: ConversationView
    prompt: PromptInput
    thread_list: ThreadList
    connection: ConnectionWatcher
    threads: Threads
    projection: Projection

    @property
    def thread_client(self) -> Client: ...


#: a message refused because a run is still ending is tried again this many times, this far apart
RUN_ACTIVE_RETRIES = 10
RUN_ACTIVE_WAIT = 0.5


class Sender:
    def __init__(self, app: SenderHost) -> None:
        self.app = app
        #: text -> how often it met "a run is active" in a row (``RUN_ACTIVE_RETRIES``)
        self._run_active_tries: dict[str, int] = {}

    def submit(self, text: str) -> None:
        """The prompt's text: a slash command, or a message sent in the background."""
        if text.startswith("/") and self.run_slash_command(text):
            return
        self.app.run_worker(self.send(text), group="send", exit_on_error=False)

    def run_slash_command(self, text: str) -> bool:
        """Run ``/command args``. Returns False if it is not a command (then it is sent)."""
        app = self.app
        name, arg = commands.parse(text)
        command = commands.find(name)
        if command is None:
            if commands.looks_like_command(text):
                app.notify(commands.unknown_text(name), severity="warning")
                app.prompt.load_text(text)
                app.prompt.move_cursor(app.prompt.document.end)  # the next keys go after it
                return True
            return False
        command.run(app, arg)
        return True

    async def send(self, text: str) -> str | None:
        """Send ``text`` in the current thread (creating it first if it is new). Returns the runId."""
        app = self.app
        conversation = app.conversation
        if not text.strip():
            return None
        client = app.thread_client
        watcher = app.connection
        if watcher.blocked:
            app.notify(f"Not sent: {watcher.blocked}", severity="error", timeout=8)
            self.keep_in_prompt(text)
            return None
        if self.in_transition():
            # the app starts, a thread opens (Ctrl+N, a switch, --resume) or the connection
            # comes back: never refused for being early; it waits, visibly, and goes to the
            # thread that opens (``Threads.open`` / ``boot`` hand the queue to it)
            watcher.enqueue(text)
            return None
        if conversation is None:  # the start-up ended without a thread (it could not connect)
            app.notify(f"Not sent: not connected ({client.state_detail or client.state.value})", severity="error",
                       timeout=8)
            self.keep_in_prompt(text)
            return None
        if conversation.is_streaming:
            watcher.enqueue(text)  # sent when the run ends
            return None
        if client.state == ConnectionState.OFFLINE:
            app.notify(f"Not sent: offline ({client.state_detail or 'no connection'})", severity="error")
            self.keep_in_prompt(text)
            return None
        thread_id = app.thread_id
        if thread_id is None:
            try:
                info = await client.create_thread(title="")
            except ClientError as exc:
                app.show_error(f"Cannot create a thread: {exc}")
                app.prompt.load_text(text)
                return None
            thread_id = info.id
            app.thread_id = thread_id
            conversation.thread_id = thread_id
            app.thread_list.upsert_thread(info)
            app.thread_list.active_thread_id = thread_id
            app.projection.start(conversation, thread_id, conversation.cursor)
        message = conversation.add_user_message(text)
        try:
            run_id = await client.send(thread_id, text)
            self._run_active_tries.pop(text, None)
            return run_id
        except ReadOnlyError as exc:
            conversation.discard_local(message.id)
            app.notify(f"Not sent: {exc}", severity="warning", timeout=8)
            self.keep_in_prompt(text)
        except RunActiveError:
            tries = self._run_active_tries.get(text, 0)
            if tries < RUN_ACTIVE_RETRIES and conversation.discard_local(message.id):
                # the run is ending (a cancel, a card answered) but the server has not let it go
                # yet: a transition, so the message waits at the front of the queue and is tried
                # again in a moment instead of being refused
                self._run_active_tries[text] = tries + 1
                item = watcher.enqueue(text)
                watcher.queue.items.remove(item)
                watcher.queue.items.insert(0, item)
                watcher.show_queue()
                app.set_timer(RUN_ACTIVE_WAIT, watcher.flush_soon)
                return None
            self._run_active_tries.pop(text, None)
            self.mark_unsent(message.id, "the agent is still working on the previous message")
            self.keep_in_prompt(text)
            return None
        except ClientError as exc:
            if exc.status in (401, 403) and client.supports_login and conversation.discard_local(message.id):
                # the n8n session ended and logging in again failed: ask, then the user sends again
                self.keep_in_prompt(text)
                from .screens.login import offer_login

                if await offer_login(app, exc):
                    app.notify("Logged in again. Press Enter to send your message.", timeout=8)
                return None
            if exc.status is None and conversation.discard_local(message.id):
                # the server did not answer at all (restarting?): queued, sent once it is back
                watcher.enqueue(text)
                app.notify(f"{exc} — your message is queued and will be sent when the connection is back.",
                           severity="warning", timeout=8)
                return None
            self.mark_unsent(message.id, str(exc))
            self.keep_in_prompt(text)
        return None

    def in_transition(self) -> bool:
        """The app is between states a message cannot be sent in yet, but soon can: starting,
        opening a thread, connecting or reconnecting."""
        app = self.app
        state = app.thread_client.state
        return (not app.ready.is_set() or app.threads.opening > 0
                or state in (ConnectionState.RECONNECTING, ConnectionState.CONNECTING))

    def keep_in_prompt(self, text: str) -> None:
        """A refused message goes back into the prompt (in front of anything typed since)."""
        prompt = self.app.prompt
        typed = prompt.text
        prompt.load_text(text if not typed.strip() else f"{text}\n{typed}")

    def mark_unsent(self, message_id: str, reason: str) -> None:
        app = self.app
        app.notify(f"Not sent: {reason}", severity="error", timeout=8)

        def mark() -> None:
            from .widgets.turns import UserMessage

            widget = app.view.turns.get(message_id)
            if isinstance(widget, UserMessage):
                widget.add_class("-unsent")
                widget.update(Content.assemble(widget.text, ("\n✗ not sent: " + reason, "$text-error")))

        app.call_after_refresh(mark)

    def take_back_queued(self, item_id: int, *, edit: bool) -> None:
        """A queued message leaves the queue: back into the prompt (``edit``) or away."""
        app = self.app
        item = app.connection.queue.remove(item_id)
        app.connection.show_queue()
        if edit and item is not None:
            self.keep_in_prompt(item.text)
        app.prompt.focus()
