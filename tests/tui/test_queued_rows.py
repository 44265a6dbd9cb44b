"""The messages waiting above the prompt (``widgets.queued.QueuedBar``) take one row each (issue 45).
Seen in tmux at 80x24: four queued messages of ~55 characters wrapped to two rows each, " [e] edit
[x] remove" in the middle of the text, and took 6 of the screen's 24 rows, the conversation above
them cut to 7."""

from __future__ import annotations

from typing import Any

from textual.app import App

from instance_ai_tui.tui.widgets.queued import QueuedBar, QueuedMessage, QueuedRow


async def test_each_queued_message_is_one_row_cut_with_an_ellipsis_at_80_columns() -> None:
    bar = QueuedBar()
    texts = ["build a workflow that posts new GitHub issues to Slack every morning", "xxxxxxxx",
             "and also add a filter " * 5]

    class Harness(App[None]):
        def compose(self) -> Any:
            yield bar

    app = Harness()
    async with app.run_test(size=(80, 24)) as pilot:
        await bar.show([QueuedMessage(index, "t1", text) for index, text in enumerate(texts)])
        await pilot.pause()
        rows = list(bar.query(QueuedRow))
        assert [row.size.height for row in rows] == [1, 1, 1]
        assert bar.size.height == 3
        shown = [row.query_one(".queued-text").render_line(0).text.rstrip() for row in rows]
        assert shown[0].endswith("…") and shown[2].endswith("…"), shown
        assert shown[1] == "⏳ queued: xxxxxxxx", shown
        assert all(row.query_one(".queued-keys").size.height == 1 for row in rows)


async def test_a_queued_row_lines_up_with_the_prompt_and_the_status_line() -> None:
    """Seen in tmux at 160x48 and 80x24: "⏳ queued: …" touched the conversation's left edge and the keys its
    right edge, one column out of line with the prompt's box and the status line under it."""
    from tests.tui.scripts import make_app, recorded

    app = make_app(recorded([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        bar = app.query_one(QueuedBar)
        await bar.show([QueuedMessage(0, "t1", "typed while the agent runs")])
        await pilot.pause()
        row = bar.query_one(QueuedRow)
        assert row.region.x == app.prompt.region.x == app.status_line.content_region.x, (
            row.region, app.prompt.region, app.status_line.content_region)
        assert row.region.right == app.prompt.region.right, (row.region, app.prompt.region)
