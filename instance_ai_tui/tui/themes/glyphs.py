"""Status glyphs: every status is a glyph and a word, colour only a third cue (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

# --------------------------------------------------------------------------- glyphs


@dataclass(frozen=True, slots=True)
class StatusMark:
    """How one status is drawn: a glyph, a word, and the theme variable that colours them."""

    glyph: str
    label: str
    variable: str

    def markup(self, label: bool = True) -> str:
        """Content markup, e.g. ``[$tool-done]✓ done[/]`` (glyph only with ``label=False``)."""
        text = f"{self.glyph} {self.label}" if label else self.glyph
        return f"[${self.variable}]{text}[/]"

    def plain(self) -> str:
        """Glyph and word without colour, e.g. ``✓ done``."""
        return f"{self.glyph} {self.label}"


TOOL_STATUS: dict[str, StatusMark] = {
    "running": StatusMark("●", "running", "tool-running"),
    "done": StatusMark("✓", "done", "tool-done"),
    "failed": StatusMark("✗", "failed", "tool-failed"),
    "waiting": StatusMark("◷", "waiting for approval", "tool-waiting"),
    "cancelled": StatusMark("⊘", "cancelled", "task-todo"),
    "interrupted": StatusMark("⊘", "interrupted", "tool-waiting"),
}
TOOL_STATUS["awaiting"] = TOOL_STATUS["waiting"]
TASK_STATUS: dict[str, StatusMark] = {
    "todo": StatusMark("○", "todo", "task-todo"),
    "in_progress": StatusMark("◐", "in progress", "tool-running"),
    "done": StatusMark("✓", "done", "tool-done"),
    "failed": StatusMark("✗", "failed", "tool-failed"),
    "cancelled": StatusMark("⊘", "cancelled", "task-todo"),
}
SEVERITY: dict[str, StatusMark] = {
    "destructive": StatusMark("‼", "destructive", "severity-destructive"),
    "warning": StatusMark("⚠", "warning", "severity-warning"),
    "info": StatusMark("ℹ", "info", "severity-info"),
}
GLYPH_EXPANDED = "▾"
GLYPH_COLLAPSED = "▸"
GLYPH_ACTIVE = "▸"
GLYPH_READ_ONLY = "⊡"

