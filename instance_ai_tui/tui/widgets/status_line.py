"""The status bar under the prompt: one line, or as many (up to ``MAX_ROWS``) as its parts need
when the line is narrower than they are (the workflow panel open at 160 columns cut it at
"◷ " before): it breaks between parts (``fit_status``), never inside one.

It shows, left to right: where keys go now ("keys: prompt", "keys: card", "keys: thread list";
anywhere but the prompt with the key back to it, in bold), the connection state (embedded / connected / reconnecting n /
offline), the run state with a spinner, the answers waiting (how many, where, and the key
that goes to them — threads that are not open included), the transient ``status`` message of the agent, the
model name (with a clear ``DEMO`` badge for the offline demo model), the local gateway's
folder and state when ``--gateway`` shares one, and the thread's tokens and cost when they
are known. Every state has a word as well as a colour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from ...protocol.usage_words import format_tokens
from ..run_clock import MODEL_WAIT, STORAGE_WAIT

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: the separator between the status line's parts
SEPARATOR = "  │  "
MAX_ROWS = 3


@dataclass(slots=True)
class StatusInfo:
    """Everything the status line shows. The app mutates it; the line renders it."""

    connection: str = "offline"
    connection_detail: str = ""
    run_state: str = "idle"  # idle | running | awaiting approval | awaiting your answer | cancelling | error
    message: str = ""
    model: str = ""
    demo: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    thread_title: str = ""
    #: the folder the agent's file tools may use (``--workspace``, embedded), ``~`` for the home; ""
    workspace: str = ""
    #: the local gateway (``--gateway``): the shared folder's name, and its state word
    #: (connecting / sharing / reconnecting n / stopped / failed); "" when there is none
    gateway: str = ""
    gateway_state: str = ""
    #: answers waiting, how many and where (``pending_watch.waiting_summary``); "" when none
    waiting: str = ""
    #: the key that goes to them (from the key map), e.g. "Ctrl+G"
    waiting_key: str = "Ctrl+G"
    #: how full the model's context was at the last request, and its size when known
    context_tokens: int = 0
    context_window: int | None = None
    #: where a key typed now goes (``tui.cards.where_keys_go``): "prompt", "card", "thread list"...
    keys_at: str = "prompt"
    #: the key that goes back to the prompt from a widget that is not a text field
    back_key: str = "Esc"
    #: while running: the run state's words with the clock (``tui.run_clock``: "running 12 s · ~340 tokens")
    clock: str = ""

    def signature(self) -> tuple[object, ...]:
        return (
            self.connection,
            self.connection_detail,
            self.run_state,
            self.message,
            self.model,
            self.demo,
            self.input_tokens,
            self.output_tokens,
            self.cost,
            self.thread_title,
            self.gateway,
            self.gateway_state,
            self.workspace,
            self.waiting,
            self.waiting_key,
            self.context_tokens,
            self.context_window,
            self.keys_at,
            self.back_key,
            self.clock,
        )


_CONNECTION_STYLE = {
    "embedded": "$text-success",
    "connected": "$text-success",
    "connecting": "$text-warning",
    "reconnecting": "$text-warning",
    "offline": "$text-error",
}
_GATEWAY_STYLE = {
    "sharing": "$text-success",
    "connecting": "$text-warning",
    "reconnecting": "$text-warning",
    "stopped": "$text-error",
    "failed": "$text-error",
}
_RUN_STYLE = {
    "idle": "$text-muted",
    "running": "$text-accent",
    "awaiting approval": "$text-warning",
    "awaiting your answer": "$text-warning",
    "cancelling": "$text-warning",
    "error": "$text-error",
}


def workspace_label(folder: object) -> str:
    """The ``--workspace`` folder as the status line names it: the path, ``~`` for the home
    folder, control characters visible ("" when there is none)."""
    if not folder:
        return ""
    from pathlib import Path

    from ...protocol.safe_text import visible

    path = Path(str(folder)).expanduser()
    home = Path.home()
    try:
        shown = "~/" + str(path.relative_to(home)) if path != home else "~"
    except ValueError:
        shown = str(path)
    return visible(shown)


def render_status(info: StatusInfo, frame: int = 0) -> Content:
    """The status line as styled content (pure: used by tests and the widget)."""
    sep = (SEPARATOR, "$text-muted")
    parts: list[tuple[str, str] | str] = []
    if info.keys_at == "prompt":
        parts.append(("keys: prompt", "$text-muted"))
    else:
        back = f" · {info.back_key} back" if info.keys_at not in ("dialog", "nowhere") else ""
        parts.append((f"keys: {info.keys_at}{back}", "bold reverse"))
    parts.append(sep)
    conn = info.connection
    label = conn
    if conn == "reconnecting" and info.connection_detail:
        label = f"reconnecting {info.connection_detail}"
    elif conn == "offline" and info.connection_detail:
        label = f"offline: {info.connection_detail}"
    parts.append(("● ", _CONNECTION_STYLE.get(conn, "")))
    parts.append(label)
    parts.append(sep)
    run = info.run_state
    glyph = SPINNER[frame % len(SPINNER)] if run in ("running", "cancelling") else {
        "idle": "○",
        "awaiting approval": "⏸",
        "awaiting your answer": "⏸",
        "error": "✗",
    }.get(run, "•")
    words = info.clock if info.clock and run == "running" else run
    if conn in ("reconnecting", "offline") and words.startswith(MODEL_WAIT):  # the connection is what waits
        words = "waiting for the server" + words.removeprefix(MODEL_WAIT)
    if run == "cancelling" and info.clock.startswith(STORAGE_WAIT):  # its end waits for the storage too (39.1)
        words = f"cancelling, {info.clock}"
    parts.append((f"{glyph} {words}", _RUN_STYLE.get(run, "")))
    if info.waiting:
        parts.append(sep)
        parts.append((f"◷ {info.waiting} ({info.waiting_key})", "bold $text-warning"))
    message = info.message
    head, dots, rest = message.partition("…")
    if dots and words.lower().startswith(head.lower()):  # "Running delegate…": the clock names the tool already
        message = rest.strip()
    if message and not words.startswith(message):  # (a retry's or compaction's: the run state's already)
        parts.append(sep)
        parts.append((message, "italic"))
    parts.append(sep)
    if info.demo:
        parts.append((" DEMO ", "bold $background on $warning"))
        parts.append(" ")
    parts.append((info.model or "no model", "$text-secondary"))
    if info.context_tokens and info.context_window:
        share = info.context_tokens / info.context_window
        style = "$text-error" if share >= 0.9 else "$text-warning" if share >= 0.7 else "$text-muted"
        parts.append((f" · context {format_tokens(info.context_tokens)}/{format_tokens(info.context_window)}"
                      f" ({share:.0%})", style))
    if info.workspace:
        parts.append(sep)
        parts.append((f"⌂ {info.workspace}", "$text-muted"))
    if info.gateway:
        parts.append(sep)
        state = info.gateway_state or "connecting"
        parts.append((f"⇄ {info.gateway} {state}", _GATEWAY_STYLE.get(state.split()[0], "")))
    if info.input_tokens or info.output_tokens:
        parts.append(sep)
        tokens = f"{format_tokens(info.input_tokens)} in · {format_tokens(info.output_tokens)} out"
        if info.cost is not None:
            tokens += f" · ${info.cost:.4f}" if info.cost < 1 else f" · ${info.cost:.2f}"
        parts.append(tokens)
    return Content.assemble(*parts)


def fit_status(content: Content, width: int, max_rows: int = MAX_ROWS) -> Content:
    """``content`` (``render_status``) broken into lines of at most ``width`` cells between its
    parts (at ``SEPARATOR``), at most ``max_rows`` lines (the last cut with "…")."""
    if width <= 0 or content.cell_length <= width:
        return content
    plain = content.plain
    parts: list[Content] = []
    start = 0
    while (at := plain.find(SEPARATOR, start)) >= 0:
        parts.append(content[start:at])
        start = at + len(SEPARATOR)
    parts.append(content[start:])
    sep = content[plain.find(SEPARATOR):plain.find(SEPARATOR) + len(SEPARATOR)]
    lines: list[Content] = []
    for part in parts:
        if lines and lines[-1].cell_length + sep.cell_length + part.cell_length <= width:
            lines[-1] = Content.assemble(lines[-1], sep, part)
        else:
            lines.append(part)
    if len(lines) > max_rows:
        lines = [*lines[: max_rows - 1], Content.assemble(*(piece for line in lines[max_rows - 1:]
                                                             for piece in (line, sep)))[: width - 1] + "…"]
    return Content("\n").join(line if line.cell_length <= width else line[: width - 1] + "…" for line in lines)


class StatusLine(Static):
    """Docked status; ``refresh_info`` re-renders only when something changed, and lays the
    line out again only when the number of its rows changed."""

    DEFAULT_CSS = """
    StatusLine {
        height: auto;
        padding: 0 1;
        background: $panel;
        color: $foreground;
    }
    """

    def __init__(self, info: StatusInfo, **kwargs: object) -> None:
        super().__init__("", markup=False, **kwargs)  # type: ignore[arg-type]
        self.info = info
        self._last: tuple[object, ...] | None = None
        self._frame = 0
        #: the run state's words while running, asked at each refresh (``tui.run_clock.RunClock``)
        self.clock: Callable[[], str] | None = None
        self._rows = 1

    def on_mount(self) -> None:
        self.refresh_info(force=True)

    def refresh_info(self, *, force: bool = False, tick: bool = False) -> None:
        """Re-render if the info changed (or a spinner frame is due when ``tick``)."""
        spinning = self.info.run_state in ("running", "cancelling")
        if self.clock is not None:
            self.info.clock = self.clock() if spinning else ""
        if tick and spinning:
            self._frame += 1
        width = self.content_region.width if self.is_mounted else 0
        signature = (*self.info.signature(), self._frame if spinning else 0, width)
        if not force and signature == self._last:
            return
        self._last = signature
        content = fit_status(render_status(self.info, self._frame), width)
        rows = content.plain.count("\n") + 1
        self.update(content, layout=rows != self._rows)
        self._rows = rows

    def on_resize(self) -> None:
        self.refresh_info()

    @property
    def plain(self) -> str:
        """The text currently shown (for tests and screen readers)."""
        return render_status(self.info, self._frame).plain
