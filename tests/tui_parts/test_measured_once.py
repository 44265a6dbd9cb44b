"""A block beside a growing one is measured once (issue 44): Textual keys a child's box model by
its container's size, so each frame that made a turn taller had every block of the turn measured
again (``get_content_height``); ``BlankRows`` containers now arrange their children at height 0
when no child's height can depend on theirs (``textual_internals.BlankRows.arrange``)."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown
from instance_ai_tui.tui.widgets.long_markdown import ChunkedMarkdown

from .test_painted_rows import TABLE, Chat, Turn, _cells, _fresh_cells, _settle, _tokens


async def test_the_blocks_beside_a_growing_answer_are_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    measured: list[int] = []
    real = FlatMarkdown.get_content_height

    def get_content_height(self: FlatMarkdown, container: Any, viewport: Any, width: int) -> int:
        if getattr(self, "beside", False):
            measured.append(id(self))
        return real(self, container, viewport, width)

    monkeypatch.setattr(FlatMarkdown, "get_content_height", get_content_height)
    app = Chat()
    async with app.run_test(size=(72, 24)) as pilot:
        beside = [FlatMarkdown(f"Finished paragraph {i}. " * 6) for i in range(10)]
        for block in beside:
            block.beside = True  # type: ignore[attr-defined]
        growing = ChunkedMarkdown("", chunk_classes="text-chunk")
        await app.query_one("#history").mount(Turn(*beside, growing))
        await _settle(app, pilot)
        assert measured  # each was measured for the first layout
        measured.clear()
        tokens = _tokens(TABLE)
        steps = 0
        for end in range(7, len(tokens) + 7, 7):
            growing.set_target("".join(tokens[:end]))
            await growing.flush()
            await _settle(app, pilot)
            steps += 1
        assert steps > 20
        assert measured == []  # the turn grew every step; the blocks beside the answer did not
        streamed = _cells(app)
        assert streamed == _fresh_cells(app, monkeypatch)  # and the screen is what Textual paints anew
