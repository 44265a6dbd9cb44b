"""``/mcp``: the assistant's MCP servers — each one's state, its tools, its last error and the
tail of its stderr — and a key to restart the highlighted one.

The list comes from ``Client.mcp_status`` (embedded mode and ``instance-ai serve``; another
server says it has none). While a server is starting the view reloads itself every second.
Everything a server wrote (its errors, stderr, tool descriptions) is outside text: control and
bidi characters are shown, never sent to the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...client.base import Client, ClientError
from ...config_file import config_path
from ...protocol.safe_text import visible
from .. import keymap
from ..widgets.key_footer import KeyFooter

if TYPE_CHECKING:
    from ...protocol.mcp import McpServerInfo

#: glyph of each state
STATE_MARKS = {"ready": "●", "starting": "◌", "failed": "✗", "stopped": "○", "disabled": "–", "unapproved": "?"}
#: the levels ``l`` steps through (``logging/setLevel``)
LOG_LEVELS = ("debug", "info", "notice", "warning", "error")
#: the longest tool summary shown on one line (cut at a word, never in one)
SUMMARY_CHARS = 100


def summary_of(description: str, limit: int = SUMMARY_CHARS) -> str:
    """The first line of a tool's description, at most ``limit`` characters: a longer one is
    cut at the last space before the limit and ends with ``…`` (a word is never cut, unless
    it alone is longer than the limit)."""
    lines = description.strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    if len(first) <= limit:
        return first
    cut = first[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-—") + "…"


def describe_server(server: McpServerInfo) -> str:
    """The details of one server as plain text (every outside part made visible)."""
    lines = [f"{server.name} — {server.state}  ({server.transport}: {visible(server.target)})"]
    if server.origin:
        lines.append(f"from the project's {visible(server.origin)}"
                     + (": it starts once you approve it (a approves it, now and later), since a project file "
                        "is someone else's command line" if server.state == "unapproved" else ""))
    if server.signed_in:
        lines.append("signed in (o signs out: its tokens are forgotten)")
    if server.starts:
        lines.append(f"started {server.starts} time{'s' if server.starts != 1 else ''}")
    if server.error:
        lines.append(f"last error: {visible(server.error)}")
    if server.note:
        lines.append(visible(server.note))
    if server.tools:
        lines.append("")
        lines.append(f"{len(server.tools)} tool{'s' if len(server.tools) != 1 else ''}:")
        for tool in server.tools:
            how = "read-only, runs" if not tool.asks and tool.read_only else ("runs" if not tool.asks else "asks first")
            summary = visible(summary_of(tool.description))
            lines.append(f"  {visible(tool.name)} ({how}){' — ' + summary if summary else ''}")
    elif server.state == "ready":
        lines.append("no tools")
    if server.prompts:
        lines.append("")
        lines.append("prompts (slash commands): " + ", ".join(
            visible(f"/mcp__{server.name}__{p.name}") for p in server.prompts[:20]))
    if server.resources:
        lines.append(f"{len(server.resources)} resources (attach one with @{visible(server.name)}:URI, Tab completes)")
    if server.stderr.strip():
        tail = [line for line in server.stderr.splitlines() if line.strip()][-15:]
        lines.append("")
        lines.append("stderr (last lines):")
        lines.extend(f"  {visible(line)}" for line in tail)
    if server.log:
        lines.append("")
        lines.append(f"its log (level {server.log_level or 'as it chose'}; l changes it), last lines:")
        lines.extend(f"  {visible(line)}" for line in server.log[-30:])
    return "\n".join(lines)


#: the actions on the highlighted server (not offered when there is none)
_ON_A_SERVER = frozenset({"restart", "approve", "sign_out", "log_level"})


class McpScreen(ModalScreen[None]):
    """The MCP servers; ``r`` restarts the highlighted one, Esc closes."""

    KEY_SCOPES = ("mcp",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("mcp")]

    HELP = """
## MCP servers

Your own tools, from the MCP servers of the config file (`[mcp.servers.NAME]`; the file's
path is shown when no server is configured, and by `instance-ai --help`).
**r** restarts the highlighted server; **a** approves a project's server (`.mcp.json`: it does not
start before); **o** signs out of a server you signed in to (its tokens are forgotten); **l** sets
the level of the log lines it sends (shown below its tools); **Esc** closes.
"""

    DEFAULT_CSS = """
    McpScreen { align: center middle; }
    McpScreen > Vertical {
        width: 100; max-width: 95%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    McpScreen .mcp-title { text-style: bold; margin-bottom: 1; }
    McpScreen .mcp-hint { color: $text-muted; margin-top: 1; }
    McpScreen OptionList { height: auto; max-height: 8; }
    McpScreen #mcp-detail-box { height: auto; max-height: 24; margin-top: 1; }
    """

    def __init__(self, client: Client) -> None:
        super().__init__()
        self.client = client
        self.servers: list[McpServerInfo] = []
        self.message = Static("Loading…", classes="mcp-message", markup=False)
        self.detail = Static("", id="mcp-detail", markup=False)
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("MCP servers (your own tools)", classes="mcp-title", markup=False)
            yield self.message
            yield OptionList(id="mcp-servers")
            with VerticalScroll(id="mcp-detail-box"):
                yield self.detail
            yield Static(self._hint(), classes="mcp-hint", markup=False)
        # its own keys (the main screen's footer behind said "⏎ Send the message"), each whole: at 80x24
        # Textual's footer cut them ("o Sign out (f")
        yield KeyFooter()

    def _hint(self) -> str:
        keys = "r restart · a approve (.mcp.json) · o sign out · l log level · " if self.servers else ""
        return f"{keys}Esc close\nconfig file: {visible(str(config_path()))}"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No server: the footer does not offer what acts on one (the keys do nothing)."""
        return bool(self.servers) or action not in _ON_A_SERVER

    async def on_mount(self) -> None:
        await self.reload()

    async def reload(self) -> None:
        options = self.query_one("#mcp-servers", OptionList)
        try:
            status = await self.client.mcp_status()
        except ClientError as exc:
            self.servers = []
            self.refresh_bindings()
            options.display = False
            self.detail.update("")
            self.message.update(visible(f"Cannot list the MCP servers: {exc}"))
            return
        highlighted = options.highlighted
        self.servers = list(status.servers)
        self.refresh_bindings()
        self.query_one(".mcp-hint", Static).update(self._hint())
        options.clear_options()
        options.add_options([Option(self._line(s), id=s.name) for s in self.servers])
        options.display = bool(self.servers)
        if not self.servers:
            self.message.update(f"No MCP server is configured. Add one to the config file, {visible(str(config_path()))}:\n"
                                "[mcp.servers.NAME] command = \"...\" (see the README, \"Your own tools (MCP)\"),\n"
                                "or start with --mcp 'NAME=COMMAND …' for this session.")
            self.detail.update("")
        else:
            failed = sum(1 for s in self.servers if s.state == "failed")
            self.message.update(f"{len(self.servers)} server{'s' if len(self.servers) != 1 else ''}"
                                + (f", {failed} failed" if failed else ""))
            options.highlighted = min(highlighted or 0, len(self.servers) - 1)
            options.focus()
            self._show(options.highlighted)
        starting = any(s.state == "starting" for s in self.servers)
        if starting and self._timer is None:
            self._timer = self.set_interval(1.0, self.reload)
        elif not starting and self._timer is not None:
            self._timer.stop()
            self._timer = None

    @staticmethod
    def _line(server: McpServerInfo) -> str:
        mark = STATE_MARKS.get(server.state, "?")
        tools = f"{len(server.tools)} tools" if server.tools else "no tools"
        return f"{mark} {visible(server.name)} — {server.state} · {tools}"

    def _show(self, index: int | None) -> None:
        if index is None or index >= len(self.servers):
            self.detail.update("")
            return
        self.detail.update(describe_server(self.servers[index]))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show(event.option_index)

    def action_restart(self) -> None:
        server = self._highlighted("restart")
        if server is None:
            return
        self.message.update(f"Restarting {visible(server.name)}…")
        self.run_worker(self._call(self.client.restart_mcp_server(server.name), f"restart {server.name}"),
                        group="mcp-restart", exclusive=True)

    def _highlighted(self, what: str) -> McpServerInfo | None:
        index = self.query_one("#mcp-servers", OptionList).highlighted
        if index is None or index >= len(self.servers):
            self.notify(f"No MCP server to {what}.", severity="warning")
            return None
        return self.servers[index]

    def action_approve(self) -> None:
        server = self._highlighted("approve")
        if server is None:
            return
        if server.state != "unapproved":
            self.notify(visible(f"{server.name} is not a project server waiting for approval."), severity="warning")
            return
        self.run_worker(self._call(self.client.approve_mcp_server(server.name), f"approve {server.name}"),
                        group="mcp-action", exclusive=True)

    def action_sign_out(self) -> None:
        server = self._highlighted("sign out of")
        if server is None:
            return
        if not server.signed_in:
            self.notify(visible(f"{server.name} has no sign-in to forget."), severity="warning")
            return
        self.run_worker(self._call(self.client.sign_out_mcp_server(server.name), f"sign out of {server.name}"),
                        group="mcp-action", exclusive=True)

    def action_log_level(self) -> None:
        server = self._highlighted("set the log level of")
        if server is None:
            return
        current = server.log_level if server.log_level in LOG_LEVELS else "warning"
        level = LOG_LEVELS[(LOG_LEVELS.index(current) + 1) % len(LOG_LEVELS)]
        self.message.update(visible(f"{server.name}: log level {level}…"))
        self.run_worker(self._call(self.client.set_mcp_log_level(server.name, level), f"set the log level of {server.name}"),
                        group="mcp-action", exclusive=True)

    async def _call(self, request: Any, what: str) -> None:
        try:
            await request
        except ClientError as exc:
            self.notify(visible(f"Could not {what}: {exc}"), severity="error", timeout=8)
        await self.reload()

    def action_close(self) -> None:
        self.dismiss(None)
