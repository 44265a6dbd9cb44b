"""A streamed answer, split into pieces inside its lists and code blocks while it grows,
ends up drawn cell for cell as Textual's ``Markdown`` draws the whole text; settled pieces
are not laid out again while later ones stream."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.tui.widgets import long_markdown
from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown
from instance_ai_tui.tui.widgets.long_markdown import ChunkedMarkdown, LiveMarkdown
from tests.support.fold import apply_wire
from tests.support.waiting import until

from .test_flat_markdown import Harness, _cells, _draw, _without_body_rules

BULLETS = "Here is the list you asked for:\n\n" + "".join(
    f"- item {i}: **{'word ' * (i % 7)}**done with `x{i}`\n" + ("  - a nested point\n" if i % 9 == 0 else "")
    for i in range(1, 41)
) + "\nThat is all.\n"

# every item numbered '1.' (as models often write them): the whole list counts 1..120, and
# its numbers grow from one digit to three while it streams
ORDERED = "Steps:\n\n" + "".join(f"1. step {i} {'x' * (i % 11)}\n" for i in range(1, 121)) + "\nDone.\n"

TABLE = "| # | name | value |\n|---|---|---|\n" + "".join(f"| {i} | row {i} | {i * i} |\n" for i in range(1, 25))

CODE = "```python\n" + "".join(
    f"def f{i}(x: int) -> int:\n    # step {i}\n    return x * {i} + {i % 5}\n\n" for i in range(1, 25)
) + "```\n\nThe code above has 24 functions.\n"

# (a code block continued into a piece that also holds a table or quote, which only
# Markdown draws, shows its top padding line again there: not covered, see long_markdown)
MIXED = (
    "# Plan\n\nSome prose with *emphasis* and a [link](https://example.com).\n\n"
    + TABLE[:200]
    + "\n> a quoted line\n\n"
    + BULLETS[:700]
    + "\n\n## Code\n\n"
    + CODE[:600]
    + "\n```\n\nSome words after the code.\n\n"
    + ORDERED[:400]
    + "\n\nThe end.\n"
)


THEMES = (("textual-dark", "text-chunk"), ("textual-light", "text-chunk"), ("ansi-dark", "reasoning-chunk"))


async def _stream(app: Any, pilot: Any, text: str, classes: str, step: int) -> ChunkedMarkdown:
    box = app.query_one("#box")
    await box.remove_children()
    block = ChunkedMarkdown("", chunk_classes=classes)
    block.keep = 10**6  # every chunk mounted: the whole text is compared
    await box.mount(block)
    for end in range(step, len(text) + step, step):
        block.set_target(text[:end])
        await block.flush()
        await pilot.pause()
    await _finish(block, pilot)
    return block


async def _finish(block: ChunkedMarkdown, pilot: Any) -> None:
    """End the stream and wait until every piece has drawn its last text."""
    block.finish()
    await until(lambda: block.settled and all(isinstance(c, FlatMarkdown) or c.settled for c in block.chunks.values()),
                pilot, what="every chunk drawn")
    await pilot.pause()  # and painted (pending messages processed)


@pytest.mark.parametrize("name", ["list", "ordered", "table", "code", "mixed"])
async def test_streamed_answer_looks_like_markdown_of_the_whole_text(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = {"list": BULLETS, "ordered": ORDERED, "table": TABLE, "code": CODE, "mixed": MIXED}[name]
    monkeypatch.setattr(long_markdown, "CHUNK_CHARS", 300)  # many pieces
    app = Harness()
    height = 200
    async with app.run_test(size=(72, height)) as pilot:
        for theme, classes in THEMES:
            app.theme = theme
            await pilot.pause()
            # Textual's Markdown (the subclass the app styles its Markdown chunks by) of the whole text
            whole = await _draw(app, pilot, LiveMarkdown(text, classes=classes))
            if name == "table":  # drawn flat: a rule under the header only (MIXED's table beside a quote: Markdown's)
                whole = _without_body_rules(whole)
            for step in ((13, 97) if theme == "textual-dark" and name != "mixed" else (53,)):
                block = await _stream(app, pilot, text, classes, step)
                streamed = _cells(app)
                if name in ("list", "ordered", "code"):
                    # the growing block was split into pieces that continue each other
                    assert len(block._splitter.conts) >= 3, block._splitter.conts
                if name == "table":
                    # a growing table is drawn by one widget, never by Markdown's grid of cells
                    assert block.stream_writes == 0
                    assert all(isinstance(chunk, FlatMarkdown) for chunk in block.chunks.values())
                text_rows = sum(1 for row in whole if "".join(c for c, _ in row).strip())
                assert text_rows > 20
                for y, (a, b) in enumerate(zip(whole, streamed, strict=True)):
                    assert a == b, (
                        f"{name}, {theme}, step {step}, row {y}:\n"
                        f"{''.join(c for c, _ in a)!r}\n{''.join(c for c, _ in b)!r}"
                    )


async def test_settled_pieces_are_not_laid_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_markdown, "CHUNK_CHARS", 300)
    app = Harness()
    async with app.run_test(size=(72, 60)) as pilot:
        box = app.query_one("#box")
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        block.keep = 10**6
        await box.mount(block)
        layouts: dict[int, int] = {}
        for end in range(20, len(BULLETS), 20):
            block.set_target(BULLETS[:end])
            await block.flush()
            await pilot.pause()
            open_index = max(block.chunks)
            for index, chunk in block.chunks.items():
                assert isinstance(chunk, FlatMarkdown)
                if index < open_index - 1 and index in layouts:
                    # a piece two pieces back never changes again
                    assert chunk._layouts == layouts[index], index
                layouts[index] = chunk._layouts
        assert len(block.chunks) >= 5
        # the open piece stays small however long the list grows
        starts = block._splitter.starts
        assert len(BULLETS) - starts[-1] < 2 * 300 + 200


async def test_the_reducers_change_is_taken_without_re_diffing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``take_change`` appends the reducer's delta (issue 11: the screen uses the reducer's change): it
    never compares the whole text, draws the same as ``set_target`` of the whole text, skips a change it
    already shows and says when it is out of step (so the caller sets the whole text)."""
    from instance_ai_tui.protocol.reducer import RunReducer

    monkeypatch.setattr(long_markdown, "CHUNK_CHARS", 300)
    reducer = RunReducer()
    apply_wire(reducer, {"type": "run-start", "runId": "r", "agentId": "agent-001", "payload": {"messageId": "m"}})
    reducer.drain_changes()
    app = Harness()
    async with app.run_test(size=(72, 200)) as pilot:
        whole = _without_body_rules(await _draw(app, pilot, LiveMarkdown(TABLE, classes="text-chunk")))
        box = app.query_one("#box")
        await box.remove_children()
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        block.keep = 10**6
        await box.mount(block)

        compared: list[str] = []
        real_startswith = str.startswith

        class Watched(str):
            def startswith(self, *args: Any, **kw: Any) -> bool:  # a whole-text re-diff would call this
                compared.append("startswith")
                return real_startswith(self, *args, **kw)

        taken = 0
        for start in range(0, len(TABLE), 37):
            apply_wire(reducer, {"type": "text-delta", "runId": "r", "agentId": "agent-001",
                                "payload": {"text": TABLE[start : start + 37]}})
            changes = reducer.drain_changes()
            for change in changes.segments:
                assert change.length == len(reducer.segment_text("agent-001", change.index))
                result = block.take_change(Watched(change.text), change.replaced, change.length)
                assert result is True
                taken += 1
                assert block.take_change(change.text, False, change.length) is False  # already shown
            if not changes.segments and changes.timeline_appends:  # the first delta: a new entry
                block.set_target(reducer.segment_text("agent-001", 0))
            await block.flush()
            await pilot.pause()
        assert taken > 10 and compared == []
        # a change this widget cannot continue (it missed one) is refused, not glued on
        assert block.take_change("zzz", False, len(TABLE) + 10) is None
        await _finish(block, pilot)
        assert _cells(app) == whole


async def test_the_earlier_text_line_says_what_is_hidden_and_shows_it_on_enter_and_click(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(long_markdown, "CHUNK_CHARS", 300)
    app = Harness()
    async with app.run_test(size=(72, 60)) as pilot:
        block = ChunkedMarkdown(BULLETS, chunk_classes="text-chunk", live=False)
        await app.query_one("#box").mount(block)
        await pilot.pause()
        starts = block._splitter.starts
        assert len(starts) > 4 and block.first == len(starts) - long_markdown.KEEP_CHUNKS
        line = block.earlier
        assert line.display and str(line.visual) == (
            f"… {starts[block.first]:,} earlier characters (Enter or click to show)")
        line.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert block.first == len(starts) - long_markdown.KEEP_CHUNKS - 1
        assert str(line.visual) == f"… {starts[block.first]:,} earlier characters (Enter or click to show)"
        await pilot.click(line)
        await pilot.pause()
        assert block.first == len(starts) - long_markdown.KEEP_CHUNKS - 2
