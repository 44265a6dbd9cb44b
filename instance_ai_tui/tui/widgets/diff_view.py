"""A change preview on an approval card: the summary and a coloured unified diff.

``ChangePreviewView(preview)`` shows ``preview.summary`` ("new file, 12 lines", "overwrites
30 lines: +4 −2", "nodes: +1 added") and, under it, the diff in a scrollable box at most
``MAX_HEIGHT`` lines high (Tab reaches it, arrows scroll it). Lines are coloured by their
first character with theme variables, so every theme (the ANSI ones included) reads them.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

MAX_HEIGHT = 16


def diff_content(diff: str) -> Content:
    """The diff with ``+`` lines in the success colour, ``-`` in the error colour, hunks dim."""
    parts: list[tuple[str, str] | str] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            parts.append((line, "bold"))
        elif line.startswith("+"):
            parts.append((line, "$text-success"))
        elif line.startswith("-"):
            parts.append((line, "$text-error"))
        elif line.startswith("@@"):
            parts.append((line, "$text-accent"))
        else:
            parts.append((line, "$text-muted"))
        parts.append("\n")
    return Content.assemble(*parts[:-1]) if parts else Content("")


class ChangePreviewView(Vertical):
    """What the approved call would change."""

    DEFAULT_CSS = f"""
    ChangePreviewView {{
        height: auto;
        margin: 1 0 0 0;
        .preview-summary {{ text-style: bold; }}
        .preview-diff {{ height: auto; max-height: {MAX_HEIGHT}; border-left: wide $border-blurred; padding: 0 1; }}
        .preview-diff:focus {{ border-left: wide $border; }}
    }}
    """

    def __init__(self, preview: Any) -> None:
        super().__init__(classes="change-preview")
        self.preview = preview

    @staticmethod
    def _field(preview: Any, name: str, default: Any) -> Any:
        if isinstance(preview, dict):
            return preview.get(name, preview.get("omittedLines" if name == "omitted_lines" else name, default))
        return getattr(preview, name, default)

    def compose(self) -> ComposeResult:
        summary = str(self._field(self.preview, "summary", "") or "")
        diff = str(self._field(self.preview, "diff", "") or "")
        omitted = int(self._field(self.preview, "omitted_lines", 0) or 0)
        if summary:
            yield Static(f"Changes: {summary}", classes="preview-summary", markup=False)
        if diff:
            body = diff_content(diff)
            if omitted:
                body = Content.assemble(body, (f"\n… {omitted} more lines not shown", "italic $text-muted"))
            with VerticalScroll(classes="preview-diff", can_focus=True):
                yield Static(body, markup=False)
