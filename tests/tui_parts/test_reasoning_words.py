"""The folded reasoning's word count is the reasoning's, not the words it had when it folded.

Seen in tmux (the demo at its lifelike pace): "▸ ∴ Reasoning · 12 words" live, "13 words" for the same
answer after a restart. A frame that brings the next entry (a tool call) and the reasoning's last words
folds the block first (``SectionView.append_entries``: the header counted then) and hands it the new
text after (``ReasoningBlock.set_content``), which did not count again."""

from __future__ import annotations

from textual.app import ComposeResult

from instance_ai_tui.tui.widgets.frame import Frame
from instance_ai_tui.tui.widgets.turns import ReasoningBlock

from .test_flat_markdown import Harness


class OneBlock(Harness):
    def compose(self) -> ComposeResult:
        yield ReasoningBlock("The workflow is", index=0, live=True)


async def test_words_that_come_after_the_fold_are_counted() -> None:
    app = OneBlock()
    async with app.run_test(size=(60, 10)) as pilot:
        block = app.query_one(ReasoningBlock)
        await pilot.pause()
        assert "Thinking" in str(block.header.visual)
        block.set_live(False)  # the next entry came: folded, "3 words"
        assert "Reasoning · 3 words" in str(block.header.visual)
        block.set_content("The workflow is built. Activating it changes production behaviour, so I need approval.",
                          Frame())
        await pilot.pause()
        assert "Reasoning · 13 words" in str(block.header.visual)


async def test_live_reasoning_still_says_thinking() -> None:
    app = OneBlock()
    async with app.run_test(size=(60, 10)) as pilot:
        block = app.query_one(ReasoningBlock)
        await pilot.pause()
        block.set_content("The workflow is built and more words come.", Frame())
        await pilot.pause()
        assert "Thinking" in str(block.header.visual) and "words" not in str(block.header.visual)
