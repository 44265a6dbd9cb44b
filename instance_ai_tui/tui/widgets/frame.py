"""``Frame``: what one projection tick collects (``tui.projection``), apart from the turn widgets
(``widgets.turns``, which import Markdown): opening a thread uses it before any turn is drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .long_markdown import ChunkedMarkdown
    from .tool_card import ToolCallCard


class Frame:
    """What one projection tick collects: markdown to flush, cards that appeared, and a
    budget of new timeline widgets (a section that runs out of it is "behind" and catches
    up in the next frames)."""

    __slots__ = ("budget", "flush", "new_cards", "pending")

    #: budget units one frame may mount (``entry_cost``): keeps every frame short,
    #: whatever the event rate
    BUDGET = 6

    def __init__(self, pending: set[str] | None = None, budget: int = BUDGET) -> None:
        self.flush: dict[int, ChunkedMarkdown] = {}
        #: request ids waiting for the user's answer
        self.pending: set[str] = pending if pending is not None else set()
        self.new_cards: list[ToolCallCard] = []
        self.budget = budget

    def add_flush(self, markdown: ChunkedMarkdown) -> None:
        self.flush[id(markdown)] = markdown

    async def run(self) -> None:
        for markdown in list(self.flush.values()):
            await markdown.flush()
        self.flush.clear()
