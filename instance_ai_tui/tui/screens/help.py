"""F1 help: the keys of the focused part of the screen (and its HELP text); ``/help``: all keys.

The key table comes from the key map (``keymap.KeyMap.help_markdown``), so it shows the
user's remapped keys; the widget's own ``HELP`` Markdown describes the keys particular to it.
"""

from __future__ import annotations

import re
from inspect import cleandoc

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

from .. import commands, keymap
from ..widgets.flat_markdown import FlatMarkdown

SLASH_HELP = commands.help_markdown()


def widget_help(node: DOMNode | None, km: keymap.KeyMap | None = None) -> str:
    """The ``HELP`` text of ``node`` or its nearest ancestor that has one; ``{key:<id>}`` in it
    becomes that binding's keys in the user's key map (so help never shows a default the
    user changed)."""
    current = node
    while current is not None:
        text = getattr(type(current), "HELP", None)
        if isinstance(text, str) and text.strip():
            return with_keys(cleandoc(text), km or keymap.KeyMap())
        current = current.parent
    return ""


_KEY_REF = re.compile(r"\{key:([a-z0-9.\-]+)\}")


def with_keys(text: str, km: keymap.KeyMap) -> str:
    """Replace ``{key:approve}`` by the keys of ``approve`` (``y / Enter``)."""

    def keys(match: re.Match[str]) -> str:
        try:
            return keymap.display_keys(km.keys(match.group(1)))
        except KeyError:
            return match.group(0)

    return _KEY_REF.sub(keys, text)


def help_markdown(km: keymap.KeyMap, focused: DOMNode | None, *, everything: bool = False) -> str:
    parts: list[str] = ["# Help"]
    if everything:
        parts.append("## Keys")
        parts.append(km.help_markdown())
        parts.append(SLASH_HELP)
        parts.append(
            "Remap any key in the config file: `[ui.keys]` with the id from the table, "
            'e.g. `approve = "y,ctrl+y"`.'
        )
    else:
        text = widget_help(focused, km)
        if text:
            parts.append(text)
        parts.append("## Keys here")
        parts.append(km.help_markdown(keymap.scopes_for(focused), keymap.descriptions_for(focused)))
        parts.append("Type `/help` in the prompt for every key and the slash commands.")
    return "\n\n".join(parts)


#: below this many columns the key table is one two-column table per place (Key, Action): at 80 the ids took
#: 22 cells and the actions 14, and without the ids the Where column still took 22 of the actions' cells
#: (their words on 2-3 lines); the ids are in docs/keymap.md and in the wider table
IDS_FROM_COLUMNS = 100
_KEY_TABLE_HEADER = "| Key | Action | Where | Id |"


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row (an escaped ``\\|`` stays in its cell)."""
    cells = re.split(r"(?<!\\)\|", row.strip())
    return [cell.strip() for cell in cells[1:-1]]


def by_place(markdown: str) -> str:
    """``markdown`` with the key table made one table per place, headed by the place's name, of the
    keys and their actions only (the other tables as they are)."""
    out: list[str] = []
    places: dict[str, list[str]] = {}
    in_keys = False

    def flush() -> None:
        for place, rows in places.items():
            out.extend([f"**{place}**", "", "| Key | Action |", "|---|---|", *rows, ""])
        places.clear()

    for line in markdown.split("\n"):
        if line == _KEY_TABLE_HEADER:
            in_keys = True
            continue
        if in_keys and line.startswith("|"):
            cells = _cells(line)
            if len(cells) == 4 and not set(line) <= set("|-: "):
                places.setdefault(cells[2], []).append(f"| {cells[0]} | {cells[1]} |")
            continue
        if in_keys:
            in_keys = False
            flush()
        out.append(line)
    if in_keys:
        flush()
    return "\n".join(out).rstrip("\n")


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%;
        max-width: 110;
        height: 85%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    """

    KEY_SCOPES = ("help",)
    BINDINGS = keymap.bindings("help")

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        markdown = self.markdown if self.app.size.width >= IDS_FROM_COLUMNS else by_place(self.markdown)
        with VerticalScroll():
            try:  # drawn as the conversation draws a finished answer: a table ruled under its header only
                yield FlatMarkdown(markdown)
            except ValueError:  # a quote or a rule in a widget's HELP: the Markdown widget draws it
                yield Markdown(markdown)
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
