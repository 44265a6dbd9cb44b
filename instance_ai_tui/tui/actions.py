"""What the app's keys, slash commands and palette entries do (``tui.commands`` lists them).

Stopping a run (Esc, Ctrl+C), export, screenshots, copying (with an honest account of where
the text went), themes, the model of the thread (``/model``), the "always allow" grants,
find (Ctrl+F), and going back in a conversation (``/retry``, ``/edit``, ``/rewind``). Thread
operations go to the client of the open thread (``app.thread_client``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..client.base import ClientError
from .deferred import Deferred
from .ports import Ui

if TYPE_CHECKING:
    from textual.theme import Theme

    from ..client.base import Client
    from ..protocol.conversation import Conversation
    from .keymap import KeyMap
    from .run_status import RunStatus
    from .themes import ThemeManager
    from .widgets.conversation_view import ConversationView
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusInfo, StatusLine


class ActionsHost(Ui, Protocol):
    """What the actions use of the app."""

    conversation: Conversation | None
    thread_id: str | None
    keys: KeyMap
    theme: str
    theme_manager: ThemeManager | None
    view: ConversationView
    prompt: PromptInput
    status_info: StatusInfo
    status_line: StatusLine
    run_status: RunStatus

    @property
    def thread_client(self) -> Client: ...

    @property
    def is_web(self) -> bool: ...

    @property
    def available_themes(self) -> dict[str, Theme]: ...

    def search_themes(self) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None: ...

    async def open_thread(self, thread_id: str | None, source: str | None = None) -> None: ...

    async def send_message(self, text: str) -> str | None: ...


class Actions:
    def __init__(self, app: ActionsHost) -> None:
        self.app = app
        self._interrupt_at = 0.0
        self._find_hit: Any = None

    def work(self, job: Deferred[Any], group: str, *, exclusive: bool = False) -> None:
        """Run ``job`` in a worker: its coroutine is made when the worker starts, so an exclusive worker
        that replaces one not started yet leaves no coroutine behind un-awaited."""
        self.app.run_worker(job, group=group, exclusive=exclusive, exit_on_error=False)

    # ----------------------------------------------------------------- stopping
    def cancel_run(self) -> None:
        app = self.app
        if app.conversation is None or not app.conversation.is_streaming or app.thread_id is None:
            return
        app.run_status.cancelling = True
        app.run_status.update_run_state()
        app.status_line.refresh_info()
        self.work(Deferred(self._cancel, app.thread_id), "cancel")

    async def _cancel(self, thread_id: str) -> None:
        try:
            await self.app.thread_client.cancel(thread_id)
        except ClientError as exc:
            self.app.run_status.cancelling = False
            self.app.show_error(f"Could not cancel: {exc}")

    def interrupt(self) -> None:
        """Ctrl+C as in every agent TUI: copy the selection of the focused field; else clear a
        non-empty prompt (always first, a card waiting or not: keys.md); else copy a selection
        on the screen; else stop the running agent; with nothing to stop or clear, a second
        Ctrl+C within 2 s quits."""
        app = self.app
        focused = app.focused
        selected = getattr(focused, "selected_text", "") if focused is not None else ""
        if selected:
            self.copy_text(selected, "the selection")
            self._interrupt_at = 0.0
            return
        if app.prompt.text:
            app.prompt.clear()
            app.prompt.pastes.clear()
            self._interrupt_at = 0.0
            return
        selected = app.screen.get_selected_text() or ""
        if selected:
            self.copy_text(selected, "the selection")
            self._interrupt_at = 0.0
            return
        if app.conversation is not None and app.conversation.is_streaming and not app.run_status.cancelling:
            self.cancel_run()
            app.notify("Stopping the agent… (Ctrl+C again with nothing running quits)", timeout=3)
            self._interrupt_at = 0.0
            return
        now = time.monotonic()
        if now - self._interrupt_at < 2.0:
            app.exit()
            return
        self._interrupt_at = now
        app.notify("Press Ctrl+C again to quit (or Ctrl+Q).", timeout=2)

    # ----------------------------------------------------------------- export, screenshot, copy
    async def export_thread(self, path: str | None) -> Path | None:
        """Write the thread as Markdown (secrets redacted) and say where."""
        app = self.app
        conversation = app.conversation
        if conversation is None or not conversation.messages:
            app.notify("Nothing to export yet.", severity="warning")
            return None
        from ..protocol.transcript import to_markdown

        info = app.status_info
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
            app.show_error(f"Cannot export the thread: {exc}")
            return None
        app.notify(f"Exported the thread to {target}", timeout=6)
        return target

    def screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save an SVG of the screen: to ``path``, else to the export folder (``export_folder``)."""
        if path is None:
            try:
                folder = export_folder()
            except OSError as exc:
                self.app.show_error(f"Cannot save the screenshot: {exc}")
                return
        else:
            folder = Path(path).expanduser()
        if not folder.is_dir():
            self.app.show_error(f"Cannot save the screenshot: the folder {folder} does not exist")
            return
        self.app.deliver_screenshot(filename, str(folder))

    def screenshot_folder(self) -> str:
        """Where Textual's own palette "Screenshot" saves: the export folder (its default, a Downloads
        folder that may not exist, failed with "Failed to save screenshot"); "" when it cannot be made."""
        return _screenshot_folder_or_error(self.app)

    def copy_text(self, text: str, what: str) -> None:
        self.work(Deferred(self._copy, text, what), "copy")

    async def _copy(self, text: str, what: str) -> None:
        """Copy ``text`` and say truthfully where it went. "Copied" only where delivery is known:
        a clipboard tool that succeeded, the browser (``instance-ai web``), tmux's paste buffer
        read back. A terminal copy (OSC 52) is sent too, but a terminal may drop it silently
        (tmux by default does): then the text is also kept in a private file, and the notice
        says where."""
        from . import clipboard

        app = self.app
        app.copy_to_clipboard(text)  # OSC 52, and the app's own clipboard (paste within the app)
        if app.is_web:  # instance-ai web: OSC 52 reaches the page, which writes the browser's clipboard
            app.notify(f"Copied {what} to the browser's clipboard.", timeout=3)
            return
        tool = await asyncio.to_thread(clipboard.copy_native, text)
        if tool is not None:
            app.notify(f"Copied {what} to the clipboard ({tool}).", timeout=3)
            return
        if clipboard.in_tmux():
            for _ in range(5):  # the terminal copy travels through the driver's writer first
                await asyncio.sleep(0.1)
                if await asyncio.to_thread(clipboard.tmux_buffer_holds, text):
                    app.notify(f"Copied {what} into tmux's paste buffer (prefix ] pastes it).", timeout=4)
                    return
        blocker = await asyncio.to_thread(clipboard.osc52_blocker)
        try:
            path = await asyncio.to_thread(clipboard.save_copy, text)
        except OSError as exc:
            app.show_error(f"Cannot copy {what}: {blocker or 'the terminal copy may not arrive'}, and saving it "
                            f"failed: {exc}")
            return
        what_cap = f"{what[:1].upper()}{what[1:]}"
        if blocker is not None:
            app.notify(f"Not copied to your clipboard: {blocker}. {what_cap} is saved in {path}.",
                       severity="warning", timeout=10)
        else:
            app.notify(f"{what_cap} was sent to the terminal's clipboard (OSC 52), which some terminals drop "
                       f"without a word; it is also saved in {path}.", timeout=8)

    def copy_last_answer(self) -> None:
        turns = self.app.view.assistant_turns()
        if not turns:
            self.app.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_text(turns[-1].answer_text(), "the last answer")

    def show_permissions(self) -> None:
        """``/permissions``: the open thread's "always allow" grants, with revoke."""
        from .screens.permissions import open_permissions

        open_permissions(self.app)

    def show_help(self, *, everything: bool) -> None:
        from .screens.help import HelpScreen, help_markdown

        app = self.app
        app.push_screen(HelpScreen(help_markdown(app.keys, app.focused, everything=everything)))

    # ----------------------------------------------------------------- themes
    def set_theme(self, name: str) -> None:
        """``/theme [name]``: the picker, or that theme (a typo changes nothing and says so)."""
        app = self.app
        if not name:
            app.search_themes()
            return
        if name not in app.available_themes:
            import difflib

            known = sorted(app.available_themes)
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(close)}?" if close else f" Themes: {', '.join(known)}"
            app.notify(f"No theme named {name!r}; the theme is unchanged.{hint}", severity="warning", timeout=8)
            return
        if app.theme_manager is not None:
            if app.theme_manager.apply(name) == name:
                app.notify(f"Theme: {name}", timeout=2)
        else:
            app.theme = name

    # ----------------------------------------------------------------- the model (/model)
    def choose_model(self, name: str = "") -> None:
        self.work(Deferred(self._choose_model, name), "model", exclusive=True)

    async def _choose_model(self, name: str) -> None:
        """A picker of the models the open thread can use; ``name``: set that one."""
        app = self.app
        client = app.thread_client
        if not client.can_switch_model:
            app.show_error("This server does not let the app choose the model (/model needs the embedded "
                            "agent or instance-ai serve).")
            return
        try:
            models = await client.list_models(app.thread_id)
        except ClientError as exc:
            app.show_error(f"Cannot list the models: {exc}")
            return
        if not name:
            from .screens.model_picker import ModelPicker

            chosen = await app.push_screen_wait(ModelPicker(models))
            if not chosen:
                return
            name = chosen
        thread_id = app.thread_id
        try:
            if thread_id is None:  # a new thread: create it so the choice has a home
                info = await client.create_thread(title="")
                thread_id = info.id
                await app.open_thread(thread_id)
            await client.set_model(thread_id, "" if name == models.default else name)
        except ClientError as exc:
            app.show_error(f"Cannot switch the model: {exc}")
            return
        await self.refresh_model_info(thread_id)
        app.notify(f"Model of this thread: {app.status_info.model} (from the next message on).", timeout=4)

    async def refresh_model_info(self, thread_id: str | None) -> None:
        """The thread's model and its context window, for the status line."""
        app = self.app
        client = app.thread_client
        if not client.can_switch_model:
            return
        try:
            models = await client.list_models(thread_id)
        except ClientError:
            return
        info = app.status_info
        info.model = models.current or info.model
        info.context_window = next((m.context_window for m in models.models if m.name == models.current), None)
        app.status_line.refresh_info()

    # ----------------------------------------------------------------- find (Ctrl+F)
    def show_find_hit(self, match: Any) -> None:
        from .widgets.find_bar import matched_widget

        app = self.app
        if self._find_hit is not None:
            self._find_hit.remove_class("-find-hit")
        self._find_hit = None
        if match is None:
            return
        widget = matched_widget(app.view, match)
        if widget is None:
            return
        widget.add_class("-find-hit")
        self._find_hit = hit = widget
        app.view.following = False

        def reveal() -> None:
            if hit.is_attached and self._find_hit is hit:
                app.view.scroll_to_widget(hit, animate=False, top=True, immediate=True)

        # once now, and once more after older turns just mounted above it have their heights
        app.call_after_refresh(reveal)
        app.set_timer(0.15, reveal)

    # ----------------------------------------------------------------- retry, edit, rewind
    def _rewind_turns(self) -> list[Any] | None:
        """The user turns that can be rewound to, or None (with the reason shown)."""
        from .screens.rewind import user_turns

        app = self.app
        conversation = app.conversation
        if not app.thread_client.can_rewind:
            app.show_error("This server cannot rewind a conversation: retry and edit need our own server "
                            "(embedded, or instance-ai serve).")
            return None
        if conversation is None or app.thread_id is None:
            app.notify("Nothing to go back to yet.", severity="warning")
            return None
        if conversation.is_streaming:
            app.notify("The agent is working: stop it first (Esc or Ctrl+C).", severity="warning")
            return None
        turns = user_turns(conversation)
        if not turns:
            app.notify("Nothing to go back to yet.", severity="warning")
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

            self.app.push_screen(RewindPicker(turns), chosen)

    def edit_message(self, message_id: str) -> None:
        """``e`` on a user message: go back to it."""
        turns = self._rewind_turns()
        if turns:
            turn = next((t for t in turns if t.message_id == message_id), None)
            if turn is None:
                self.app.notify("This message has no answer to go back from yet.", severity="warning")
                return
            self.rewind(turn, resend=False)

    def rewind(self, turn: Any, *, resend: bool) -> None:
        self.work(Deferred(self._rewind, turn, resend=resend), "rewind", exclusive=True)

    async def _rewind(self, turn: Any, *, resend: bool) -> None:
        app = self.app
        thread_id = app.thread_id
        if thread_id is None:
            return
        try:
            result = await app.thread_client.rewind(thread_id, turn.rewind_id)
        except ClientError as exc:
            app.show_error(f"Cannot go back: {exc}")
            return
        text = result.text or turn.text
        await app.open_thread(thread_id)
        count = len(result.superseded_run_ids)
        kept = f"{count} turn{'s' if count != 1 else ''} left the agent's memory (kept in the thread's history)"
        if resend:
            app.notify(f"Retrying. {kept}.", timeout=4)
            await app.send_message(text)
        else:
            app.prompt.load_text(text)
            app.prompt.move_cursor(app.prompt.document.end)
            app.prompt.focus()
            app.notify(f"Edit the message and send it. {kept}.", timeout=5)


def _screenshot_folder_or_error(app: Any) -> str:
    try:
        return str(export_folder())
    except OSError as exc:
        app.show_error(f"Cannot save the screenshot: {exc}")
        return ""


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
