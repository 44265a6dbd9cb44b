"""The one-line row of a ``context-compacted`` timeline entry (issue 47): where the thread's context was
compacted into notes, and how full it was before and after. The messages above it stay on screen."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class CompactedRow(Static):
    """The one line of a ``context-compacted`` timeline entry: "⟲ context compacted: 12 older messages
    became notes (78% → 21% of 8.2k)". The messages stay above it, on screen and in the store."""

    DEFAULT_CSS = "CompactedRow { height: auto; color: $text-muted; }"

    def __init__(self, entry: dict[str, object]) -> None:
        from ...protocol.safe_text import visible
        from ...protocol.transcript import compaction_marker

        marker = visible(compaction_marker(entry))
        super().__init__(Content.styled(marker, "italic"), classes="compacted-row", markup=False)

    def set_live(self, live: bool) -> None:
        """A finished line: nothing streams into it."""
