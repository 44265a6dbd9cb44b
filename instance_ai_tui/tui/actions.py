"""What the app's keys, slash commands and palette entries do (``tui.commands`` lists them).

Stopping a run (Esc, Ctrl+C), export, screenshots, copying (with an honest account of where
the text went), themes, the model of the thread (``/model``), the "always allow" grants,
find (Ctrl+F), and going back in a conversation (``/retry``, ``/edit``, ``/rewind``). Thread
operations go to the client of the open thread (``self.thread.client``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..client.base import ClientError, RunActiveError
from .deferred import Deferred

if TYPE_CHECKING:
    from textual.worker import Worker

    from .cards import Cards
    from .keymap import KeyMap
    from .open_thread import OpenThread
    from .pending_watch import PendingWatch
    from .ports import Ui
    from .run_status import RunStatus
    from .screens.main import MainScreen
    from .screens.workflow import Workflows
    from .themes.manager import ThemeManager
    from .threads import Threads
    from .widgets.conversation_view import ConversationView
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusLine


class Actions:
    """What the keys and commands do to ``thread`` (the open thread), through the rooms that own it
    (implements ``commands.CommandActions``). ``theme_manager``: the themes once the app is mounted."""

    def __init__(self, ui: Ui, thread: OpenThread, *, threads: Threads, cards: Cards, run_status: RunStatus,
                 view: ConversationView, prompt: PromptInput, status_line: StatusLine, watch: PendingWatch,
                 keys: Callable[[], KeyMap], theme_manager: Callable[[], ThemeManager | None],
                 screen: MainScreen, help_extra: Callable[[], str] = str) -> None:
        self.ui = ui
        self.thread = thread
        self.threads = threads
        self.cards = cards
        self.run_status = run_status
        self.view = view
        self.prompt = prompt
        self.status_line = status_line
        self.info = status_line.info
        self.watch = watch
        self.keys = keys
        self.theme_manager = theme_manager
        self.screen = screen
        #: the workflow panel's room (``workflows()``: made when first needed, start-up time)
        self._workflows: Workflows | None = None
        #: more of /help (the MCP servers' prompts: ``tui.mcp_prompts``)
        self.help_extra = help_extra
        self._interrupt_at = 0.0
        self._find_hit: Any = None
        #: an Esc just took the keys back to the prompt: the next Esc there says one more stops the agent
        self._escape_went_back = False

    def work(self, job: Deferred[Any], group: str, *, exclusive: bool = False) -> None:
        """Run ``job`` in a worker: its coroutine is made when the worker starts, so an exclusive worker
        that replaces one not started yet leaves no coroutine behind un-awaited."""
        self.ui.run_worker(job, group=group, exclusive=exclusive, exit_on_error=False)

    # ----------------------------------------------------------------- stopping
    @property
    def streaming(self) -> bool:
        """A run of the open thread is running (there is something to stop)."""
        conversation = self.thread.conversation
        return conversation is not None and conversation.is_streaming

    @property
    def waiting(self) -> bool:
        """A card waits for an answer, here or in another thread."""
        return bool(self.thread.pending) or bool(self.watch.elsewhere)

    def escape_goes_back(self) -> bool:
        """Esc from a widget that is not a text field (a queued message, a panel...) returns to
        the prompt (the keyboard model, ``tui.cards``); in the prompt it stops the agent."""
        from textual.widgets import Input, TextArea

        ui = self.ui
        focused = ui.focused
        return (focused is not None and focused is not self.prompt and not isinstance(focused, (Input, TextArea))
                and ui.screen is ui.screen_stack[0])

    def escape(self) -> None:
        """Esc: back to the prompt from a widget that is no text field; in the prompt, stop the agent —
        but not right after an Esc that came back (Esc Esc to leave a panel, a card or a list never
        stops the run nor denies what it asks: issue 39.6)."""
        if self.escape_goes_back():
            self.back_to_prompt()
            return
        if self._escape_went_back and self.streaming:
            self._escape_went_back = False
            self.ui.notify("Esc again stops the agent.", timeout=3)
            return
        self._escape_went_back = False
        self.cancel_run()

    def back_to_prompt(self) -> None:
        """The keys go back to the prompt (Esc from a panel, the conversation or the threads)."""
        self.prompt.focus()
        self._escape_went_back = True

    def other_key(self) -> None:
        """A key between two Escs: the next Esc in the prompt stops the agent."""
        self._escape_went_back = False

    def cancel_run(self) -> None:
        thread = self.thread
        if not self.streaming or thread.thread_id is None:
            return
        thread.set_cancelling(True)
        self.status_line.refresh_info()
        self.work(Deferred(self._cancel, thread.thread_id), "cancel")

    def cancel_command(self) -> None:
        """``/cancel``: stop the agent, or say there is none running (Esc says nothing then)."""
        if not self.streaming or self.thread.thread_id is None:
            self.ui.notify("Nothing is running: there is no agent to stop.", timeout=3)
            return
        self.cancel_run()

    async def _cancel(self, thread_id: str) -> None:
        try:
            await self.thread.client.cancel(thread_id)
        except ClientError as exc:
            self.thread.set_cancelling(False)
            self.ui.show_error(f"Could not cancel: {exc}")

    def interrupt(self) -> None:
        """Ctrl+C as in every agent TUI: copy the selection of the focused field; else clear a
        non-empty prompt (always first, a card waiting or not: keys.md); else copy a selection
        on the screen; else stop the running agent; with nothing to stop or clear, a second
        Ctrl+C within 2 s quits."""
        focused = self.ui.focused
        selected = getattr(focused, "selected_text", "") if focused is not None else ""
        if selected:
            self.copy_text(selected, "the selection")
            self._interrupt_at = 0.0
            return
        if self.prompt.text:
            self.prompt.clear()
            self.prompt.pastes.clear()
            self._interrupt_at = 0.0
            return
        selected = self.ui.screen.get_selected_text() or ""
        if selected:
            self.copy_text(selected, "the selection")
            self._interrupt_at = 0.0
            return
        if self.streaming and not self.thread.cancelling:
            self.cancel_run()
            self.ui.notify("Stopping the agent… (Ctrl+C again with nothing running quits)", timeout=3)
            self._interrupt_at = 0.0
            return
        now = time.monotonic()
        if now - self._interrupt_at < 2.0:
            self.ui.exit()
            return
        self._interrupt_at = now
        self.ui.notify("Press Ctrl+C again to quit (or Ctrl+Q).", timeout=2)

    # ----------------------------------------------------------------- what commands ask for
    def new_thread(self) -> None:
        self.threads.new_thread()

    def show_threads(self) -> None:
        thread_list = self.threads.thread_list
        thread_list.display = True
        thread_list.focus_search()

    def toggle_tasks(self) -> None:
        self.run_status.toggle_tasks()

    def follow(self) -> None:
        self.view.follow()

    def next_pending_card(self) -> None:
        self.cards.next()

    def quit(self) -> None:
        self.ui.exit()

    def export(self, path: str | None) -> Worker[Path | None]:
        """Write the thread as Markdown (secrets redacted) and say where (in a worker)."""
        return self.ui.run_worker(self.export_thread(path), group="export", exit_on_error=False)

    # ----------------------------------------------------------------- export, screenshot, copy
    async def export_thread(self, path: str | None) -> Path | None:
        """Write the thread as Markdown (secrets redacted) and say where."""
        conversation = self.thread.conversation
        if conversation is None or not conversation.messages:
            self.ui.notify("Nothing to export yet.", severity="warning")
            return None
        from ..protocol.transcript import to_markdown

        info = self.info
        usage: dict[str, Any] = {"inputTokens": info.input_tokens, "outputTokens": info.output_tokens}
        if info.cost is not None:
            usage["cost"] = info.cost
        text = to_markdown(conversation, title=conversation.title or None, usage=usage)
        name = conversation.thread_id or "thread"
        try:
            if path:
                target = Path(path).expanduser()  # noqa: ASYNC240 - no I/O
            else:  # the documented folder (created when missing), never the current directory
                target = await asyncio.to_thread(export_folder) / f"{_safe_name(name)}.md"
            await asyncio.to_thread(_write_text, target, text)
        except OSError as exc:
            self.ui.show_error(f"Cannot export the thread: {exc}")
            return None
        self.ui.notify(f"Exported the thread to {target}", timeout=6)
        return target

    def screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save an SVG of the screen: to ``path``, else to the export folder (``export_folder``)."""
        if path is None:
            try:
                folder = export_folder()
            except OSError as exc:
                self.ui.show_error(f"Cannot save the screenshot: {exc}")
                return
        else:
            folder = Path(path).expanduser()
        if not folder.is_dir():
            self.ui.show_error(f"Cannot save the screenshot: the folder {folder} does not exist")
            return
        self.ui.deliver_screenshot(filename, str(folder))

    def screenshot_folder(self) -> str:
        """Where Textual's own palette "Screenshot" saves: the export folder (its default, a Downloads
        folder that may not exist, failed with "Failed to save screenshot"); "" when it cannot be made."""
        try:
            return str(export_folder())
        except OSError as exc:
            self.ui.show_error(f"Cannot save the screenshot: {exc}")
            return ""

    def copy_text(self, text: str, what: str) -> None:
        self.work(Deferred(self._copy, text, what), "copy")

    async def _copy(self, text: str, what: str) -> None:
        """Copy ``text`` and say truthfully where it went. "Copied" only where delivery is known:
        a clipboard tool that succeeded, the browser (``instance-ai web``), tmux's paste buffer
        read back. A terminal copy (OSC 52) is sent too, but a terminal may drop it silently
        (tmux by default does): then the text is also kept in a private file, and the notice
        says where."""
        from . import clipboard

        self.ui.copy_to_clipboard(text)  # OSC 52, and the app's own clipboard (paste within the app)
        if self.ui.is_web:  # instance-ai web: OSC 52 reaches the page, which writes the browser's clipboard
            self.ui.notify(f"Copied {what} to the browser's clipboard.", timeout=3)
            return
        tool = await asyncio.to_thread(clipboard.copy_native, text)
        if tool is not None:
            self.ui.notify(f"Copied {what} to the clipboard ({tool}).", timeout=3)
            return
        if clipboard.in_tmux():
            for _ in range(5):  # the terminal copy travels through the driver's writer first
                await asyncio.sleep(0.1)
                if await asyncio.to_thread(clipboard.tmux_buffer_holds, text):
                    self.ui.notify(f"Copied {what} into tmux's paste buffer (prefix ] pastes it).", timeout=4)
                    return
        blocker = await asyncio.to_thread(clipboard.osc52_blocker)
        try:
            path = await asyncio.to_thread(clipboard.save_copy, text)
        except OSError as exc:
            self.ui.show_error(f"Cannot copy {what}: {blocker or 'the terminal copy may not arrive'}, and saving it "
                            f"failed: {exc}")
            return
        what_cap = f"{what[:1].upper()}{what[1:]}"
        if blocker is not None:
            self.ui.notify(f"Not copied to your clipboard: {blocker}. {what_cap} is saved in {path}.",
                       severity="warning", timeout=10)
        else:
            self.ui.notify(f"{what_cap} was sent to the terminal's clipboard (OSC 52), which some terminals drop "
                       f"without a word; it is also saved in {path}.", timeout=8)

    def copy_last_answer(self) -> None:
        turns = self.view.assistant_turns()
        if not turns:
            self.ui.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_text(turns[-1].answer_text(), "the last answer")

    def show_permissions(self) -> None:
        """``/permissions``: the open thread's "always allow" grants, with revoke."""
        from .screens.permissions import PermissionsScreen

        thread = self.thread
        if thread.thread_id is None:
            self.ui.notify("No thread is open yet: nothing is always allowed.", severity="warning")
            return
        title = (thread.conversation.title if thread.conversation is not None else "") or ""
        self.ui.push_screen(PermissionsScreen(thread.client, thread.thread_id, title))

    def show_mcp(self) -> None:
        """``/mcp``: the MCP servers of the app's client."""
        from .screens.mcp import McpScreen

        self.ui.push_screen(McpScreen(self.threads.main))

    def open_workflow(self, argument: str) -> None:
        """``/workflow [id]`` (``screens.workflow``)."""
        self.workflows().open(argument)

    def workflows(self) -> Workflows:
        """The workflow panel's room (``screens.workflow``, imported here: start-up time), made once."""
        if self._workflows is None:
            from .screens.workflow import Workflows

            self._workflows = Workflows(self.ui, self.thread, self.screen)
        return self._workflows

    def fit_workflow(self, width: int) -> None:
        """The terminal's new width: the workflow panel, if there is one, fits it."""
        if self._workflows is not None:
            self._workflows.fit(width)

    def show_help(self, *, everything: bool) -> None:
        from .screens.help import HelpScreen, help_markdown

        self.ui.push_screen(HelpScreen(help_markdown(self.keys(), self.ui.focused, everything=everything)
                                       + (self.help_extra() if everything else "")))

    # ----------------------------------------------------------------- themes
    def set_theme(self, name: str) -> None:
        """``/theme [name]``: the picker, or that theme (a typo changes nothing and says so)."""
        if not name:
            self.ui.search_themes()
            return
        if name not in self.ui.available_themes:
            import difflib

            known = sorted(self.ui.available_themes)
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else f" Themes: {', '.join(known)}"
            self.ui.notify(f"No theme named {name!r}; the theme is unchanged.{hint}", severity="warning", timeout=8)
            return
        manager = self.theme_manager()
        if manager is not None:
            if manager.apply(name) == name:
                self.ui.notify(f"Theme: {name}", timeout=2)
        else:
            self.ui.theme = name

    # ----------------------------------------------------------------- the model (/model)
    def choose_model(self, name: str = "") -> None:
        self.work(Deferred(self._choose_model, name), "model", exclusive=True)

    async def _choose_model(self, name: str) -> None:
        """A picker of the models the open thread can use; ``name``: set that one."""
        client = self.thread.client
        if not client.can_switch_model:
            self.ui.show_error("This server does not let the app choose the model (/model needs the embedded "
                            "agent or instance-ai serve).")
            return
        try:
            models = await client.list_models(self.thread.thread_id)
        except ClientError as exc:
            self.ui.show_error(f"Cannot list the models: {exc}")
            return
        if not name:
            from .screens.model_picker import ModelPicker

            chosen = await self.ui.push_screen_wait(ModelPicker(models))
            if not chosen:
                return
            name = chosen
        thread_id = self.thread.thread_id
        try:
            if thread_id is None:  # a new thread: create it so the choice has a home
                info = await client.create_thread(title="")
                thread_id = info.id
                await self.threads.open(thread_id)
            await client.set_model(thread_id, "" if name == models.default else name)
        except ClientError as exc:
            self.ui.show_error(f"Cannot switch the model: {exc}")
            return
        await self.threads.show_model_info(thread_id)
        self.ui.notify(f"Model of this thread: {self.info.model} (from the next message on).", timeout=4)

    # ----------------------------------------------------------------- find (Ctrl+F)
    def show_find_hit(self, match: Any) -> None:
        from .widgets.find_bar import matched_widget

        if self._find_hit is not None:
            self._find_hit.remove_class("-find-hit")
        self._find_hit = None
        if match is None:
            return
        widget = matched_widget(self.view, match)
        if widget is None:
            return
        widget.add_class("-find-hit")
        self._find_hit = hit = widget
        self.view.following = False

        def reveal() -> None:
            if hit.is_attached and self._find_hit is hit:
                self.view.scroll_to_widget(hit, animate=False, top=True, immediate=True)

        # once now, and once more after older turns just mounted above it have their heights
        self.ui.call_after_refresh(reveal)
        self.ui.set_timer(0.15, reveal)

    # ----------------------------------------------------------------- retry, edit, rewind
    def _rewind_turns(self) -> list[Any] | None:
        """The user turns that can be rewound to, or None (with the reason shown)."""
        from .screens.rewind import user_turns

        conversation = self.thread.conversation
        if not self.thread.client.can_rewind:
            self.ui.show_error("This server cannot rewind a conversation: retry and edit need our own server "
                            "(embedded, or instance-ai serve).")
            return None
        if conversation is None or self.thread.thread_id is None:
            self.ui.notify("Nothing to go back to yet.", severity="warning")
            return None
        if conversation.is_streaming:
            self.ui.notify("The agent is working: stop it first (Esc or Ctrl+C).", severity="warning")
            return None
        turns = user_turns(conversation)
        if not turns:
            self.ui.notify("Nothing to go back to yet.", severity="warning")
            return None
        return turns

    def rewind_last(self, *, resend: bool) -> None:
        """``/retry`` (the same message again) and ``/edit`` (the last message back in the prompt)."""
        turns = self._rewind_turns()
        if turns:
            self.rewind(turns[-1], resend=resend)

    def pick_rewind(self) -> None:
        """``/rewind``: choose an earlier message to go back to."""
        from .screens.rewind import RewindPicker

        turns = self._rewind_turns()
        if turns:

            def chosen(turn: Any) -> None:
                if turn:
                    self.rewind(turn, resend=False)

            self.ui.push_screen(RewindPicker(turns), chosen)

    def edit_message(self, message_id: str) -> None:
        """``e`` on a user message: go back to it."""
        turns = self._rewind_turns()
        if turns:
            turn = next((t for t in turns if t.message_id == message_id), None)
            if turn is None:
                self.ui.notify("This message has no answer to go back from yet.", severity="warning")
                return
            self.rewind(turn, resend=False)

    def compact(self, keep: str) -> None:
        """``/compact [what to keep]``: the thread's context becomes notes (a run of its own: its row
        and the status line's context share come through the thread's events)."""
        if self.thread.thread_id is None:
            self.ui.notify("Nothing to compact: this thread has no messages yet.", timeout=4)
            return
        if not self.thread.client.can_compact:
            self.ui.show_error("Cannot compact: this server compacts on its own (/compact needs our own server or "
                               "the embedded agent)")
            return
        self.work(Deferred(self._compact, self.thread.thread_id, keep), "compact", exclusive=True)

    async def _compact(self, thread_id: str, keep: str) -> None:
        try:
            await self.thread.client.compact(thread_id, keep)
        except RunActiveError:
            self.ui.notify("A run is going on in this thread: /compact when it has finished.", severity="warning",
                           timeout=5)
        except ClientError as exc:
            self.ui.show_error(f"Cannot compact: {exc}")

    def rewind(self, turn: Any, *, resend: bool) -> None:
        self.work(Deferred(self._rewind, turn, resend=resend), "rewind", exclusive=True)

    async def _rewind(self, turn: Any, *, resend: bool) -> None:
        thread_id = self.thread.thread_id
        if thread_id is None:
            return
        try:
            result = await self.thread.client.rewind(thread_id, turn.rewind_id)
        except ClientError as exc:
            self.ui.show_error(f"Cannot go back: {exc}")
            return
        text = result.text or turn.text
        await self.threads.open(thread_id)
        count = len(result.superseded_run_ids)
        kept = f"{count} turn{'s' if count != 1 else ''} left the agent's memory (kept in the thread's history)"
        if resend:
            self.ui.notify(f"Retrying. {kept}.", timeout=4)
            await self.thread.outbox.send(text)
        else:
            self.prompt.load_text(text)
            self.prompt.move_cursor(self.prompt.document.end)
            self.prompt.focus()
            self.ui.notify(f"Edit the message and send it. {kept}.", timeout=5)


def export_folder() -> Path:
    """Where exports (Ctrl+S, ``/export``) and screenshots go unless a path is given: the Downloads
    folder (``XDG_DOWNLOAD_DIR``, else ``~/Downloads``), created when it does not exist; where it
    cannot be, the app's data folder's ``exports``. Never the current directory (a git checkout)."""
    from platformdirs import user_data_path, user_downloads_path

    downloads = user_downloads_path()
    try:
        downloads.mkdir(parents=True, exist_ok=True)
        return downloads
    except OSError:
        fallback = user_data_path("instance-ai-tui") / "exports"
        try:
            fallback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"neither {downloads} nor {fallback} can be created ({exc.strerror or exc})") from exc
        return fallback


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "thread"


def _write_text(path: Path, text: str) -> None:
    """Write an export; a folder that does not exist is an error, not created silently."""
    if not path.parent.is_dir():
        raise FileNotFoundError(f"the folder {path.parent} does not exist")
    path.write_text(text, encoding="utf-8")
