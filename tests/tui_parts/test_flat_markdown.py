"""FlatMarkdown draws what Textual's Markdown draws, with one widget; ChunkedMarkdown
streams the open chunk and turns finished chunks flat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget

import instance_ai_tui.tui.app as app_module
from instance_ai_tui.tui.themes.variables import app_variable_defaults
from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown, lay_out
from instance_ai_tui.tui.widgets.long_markdown import CHUNK_CHARS, ChunkedMarkdown, LiveMarkdown
from instance_ai_tui.tui.widgets.markdown_document import parse_document
from tests.support.waiting import until

LISTS = """Intro with **bold**, *em*, `code`, ~~gone~~ and a [link](https://example.com).

- one item
- two **items** with enough words in them to wrap across the line at this width, surely
  - nested a
  - nested b
- three

8. eight
9. nine
10. ten

A paragraph
with a hard break, then a loose list:

- first

  second paragraph of the first item
- ![alt](http://img.example/x.png) image
"""

BLOCKS = """# A title long enough to wrap when the window is narrow

## Step 1

Text under it.

### Sub step

#### h4 with `code`

```python
def f(x):
\treturn x  # a comment long enough to run past the right edge of the fence, cut there
```

- item with a fence:

  ```
  x = 1
  ```
- after

<div>html blocks are not drawn by Markdown either</div>

```
```
"""

TABLES = """Intro

| # | node | time |
|---|:-:|--:|
| 1 | **Slack** `x` | 37 ms |
| 22 | webhook trigger | 1000 ms |

| name | what the node does, long enough to wrap at a narrow width | x |
|---|---|---|
| HTTP Request | Makes an HTTP request and returns the response as items | |
| Code | Runs *JavaScript* or Python code | ok |

| only a header |
|---|

| w |
|---|
| averyveryverylongword that is longer than the column and more |

- an item after the tables
"""

SIZE = (70, 60)


class Harness(App[None]):
    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return app_variable_defaults(self.current_theme)

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="box")


def _cells(app: App[Any]) -> list[list[tuple[str, tuple[object, ...]]]]:
    """The screen as cells. A blank cell is compared by what shows: its background and
    the line styles (underline, strike); its text colour is invisible."""
    rows = []
    for strip in app.screen._compositor.render_strips():  # the composed screen
        row = []
        for segment in strip:
            style = segment.style
            assert style is not None
            full = (str(style.color), str(style.bgcolor), style.bold, style.italic, style.underline, style.strike, style.dim)
            blank = (str(style.bgcolor), bool(style.underline), bool(style.strike), bool(style.reverse))
            row.extend((char, blank if char == " " else full) for char in segment.text)
        rows.append(row)
    return rows


def _without_body_rules(rows: list[list[tuple[str, tuple[object, ...]]]]) -> list[list[tuple[str, tuple[object, ...]]]]:
    """The screen ``MarkdownTable`` drew without the rules between its body's rows: of each table's
    "├" rules (a table starts at a "┌" row) the first, under the header, stays; what was below moves
    up and the screen's last (blank) row fills the bottom, as a flat table leaves it."""
    kept, seen_rule = [], False
    for row in rows:
        text = "".join(c for c, _ in row).strip()
        if text.startswith("┌"):
            seen_rule = False
        elif text.startswith("├"):
            if seen_rule:
                continue
            seen_rule = True
        kept.append(row)
    assert not "".join(c for c, _ in rows[-1]).strip(), "the screen ends with a blank row"
    return kept + [rows[-1]] * (len(rows) - len(kept))


async def _draw(app: App[Any], pilot: Any, widget: Widget) -> list[list[tuple[str, tuple[object, ...]]]]:
    box = app.query_one("#box")
    await box.remove_children()
    await box.mount(widget)
    await until(lambda: getattr(widget, "settled", True), pilot, what="the markdown parsed")
    await pilot.pause()  # and drawn (pending messages processed; no fixed time)
    return _cells(app)


async def test_flat_markdown_looks_like_the_markdown_widget() -> None:
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        # (a light theme: test_theme_switch_redraws_flat_markdown)
        for theme, size, classes in (
            ("textual-dark", SIZE, "text-chunk"),
            ("ansi-dark", (34, 90), "reasoning-chunk"),
            ("textual-light", (44, 70), "text-chunk"),
        ):
            app.theme = theme
            await pilot.resize_terminal(*size)
            for text in (LISTS, BLOCKS, TABLES):
                assert parse_document(text) is not None
                live = await _draw(app, pilot, LiveMarkdown(text, classes=classes))
                flat = await _draw(app, pilot, FlatMarkdown(text, classes=classes))
                if text is TABLES:  # the flat table rules its header only (issue 45): Markdown's other rules go
                    live = _without_body_rules(live)
                for y, (a, b) in enumerate(zip(live, flat, strict=False)):
                    assert a == b, f"{theme}, row {y}:\n{''.join(c for c, _ in a)!r}\n{''.join(c for c, _ in b)!r}"
                assert any("".join(c for c, _ in row).strip() for row in flat)


def test_only_what_is_drawn_flat_parses() -> None:
    for text in ("> quoted\n", "before\n\n---\n\nafter\n", "- item\n\n  | a |\n  |---|\n  | 1 |\n"):
        assert parse_document(text) is None, text
    assert parse_document("| a | b |\n|---|---|\n| 1 | 2 |\n") is not None  # a top-level table is drawn flat
    assert parse_document("") == []
    document = parse_document("- a\n\n  ```\n  x\n  ```\n")
    assert document is not None
    lines, _clipped = lay_out(document, 20)
    # the item's paragraph, the fence's top margin and padding, the code (indented by the
    # bullet and the fence's padding), the padding and margin below, the list's margin
    assert [line.plain.rstrip() for line in lines] == ["• a", "", "", "    x", "", "", ""]


async def test_flat_markdown_text_can_be_selected() -> None:
    app = Harness()
    async with app.run_test(size=(60, 20)) as pilot:
        widget = FlatMarkdown("First paragraph.\n\nSecond **para** here.\n\n- item one\n", classes="text-chunk")
        await _draw(app, pilot, widget)
        await pilot.mouse_down(widget, offset=(8, 2))
        await pilot.hover(widget, offset=(9, 4))
        await pilot.mouse_up(widget, offset=(9, 4))
        await until(lambda: app.screen.get_selected_text() is not None, pilot, what="a selection")
        selected = app.screen.get_selected_text()
        assert selected is not None and selected.startswith("para here.") and "item o" in selected


async def test_theme_switch_redraws_flat_markdown() -> None:
    text = "Some *text* with `code`:\n\n- an item\n\n## Heading\n\n```\ncode\n```\n"
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        widget = FlatMarkdown(text, classes="reasoning-chunk")
        dark = await _draw(app, pilot, widget)
        app.theme = "textual-light"
        code_row = next(i for i, row in enumerate(dark) if "code" in "".join(c for c, _ in row))
        await until(lambda: _cells(app)[code_row] != dark[code_row], pilot, what="the code row redrawn in the new theme")
        await pilot.pause()
        light = _cells(app)
        assert light == await _draw(app, pilot, LiveMarkdown(text, classes="reasoning-chunk"))


def _paragraphs(count: int) -> str:
    return "".join(f"Paragraph {i} " + "word " * 60 + "\n\n- a list item\n- another one\n\n" for i in range(count))


async def test_streamed_text_is_flat_while_it_streams_and_a_quote_streams_live() -> None:
    text = _paragraphs(14)
    assert len(text) > 2 * CHUNK_CHARS
    table = "".join(f"> quoted line {i} of a long quote\n" for i in range(30))
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        await app.query_one("#box").mount(block)
        for end in range(0, len(text) + 1600, 1600):
            block.set_target(text[:end])
            await block.flush()
            await pilot.pause()
        await pilot.pause()
        # the open chunk is re-parsed and drawn by one widget: no Markdown widgets at all
        assert all(isinstance(chunk, FlatMarkdown) for chunk in block.chunks.values())
        assert block.stream_writes == 0
        streamed = text + table
        for end in range(len(text), len(streamed) + 40, 40):
            block.set_target(streamed[:end])
            await block.flush()
            await pilot.pause()
        last = block.chunks[max(block.chunks)]
        assert isinstance(last, LiveMarkdown)  # a quote only Markdown draws: it streams
        assert block.stream_writes >= 2
        block.finish()
        for _ in range(50):
            await pilot.pause()
            if block.settled:
                break
        assert block.settled and block.source == streamed[block._splitter.starts[block.first] :]
        assert all(isinstance(chunk, FlatMarkdown) for chunk in list(block.chunks.values())[:-1])


async def test_a_finished_chunk_that_needs_the_markdown_widget_stays_live() -> None:
    table = "> a quote\n> of two lines\n"
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        block = ChunkedMarkdown(table + "\nafter the table\n", chunk_classes="text-chunk", live=False)
        await app.query_one("#box").mount(block)
        for _ in range(100):
            await pilot.pause()
            if block.settled and not any(isinstance(c, FlatMarkdown) for c in block.chunks.values()):
                break
        (chunk,) = block.chunks.values()
        assert isinstance(chunk, LiveMarkdown) and chunk.settled
        assert "after the table" in chunk.source


async def test_a_deferred_flat_chunk_parses_off_the_event_loop() -> None:
    text = _paragraphs(3)
    app = Harness()
    async with app.run_test(size=SIZE) as pilot:
        widget = FlatMarkdown(text, classes="text-chunk", defer=True)
        assert not widget.settled  # nothing parsed yet
        await app.query_one("#box").mount(widget)
        await until(lambda: widget.settled, what="the deferred chunk parsed")
        await pilot.pause()
        assert widget.settled and widget.size.height == len(widget.lines(widget.size.width)) > 10


async def test_a_code_line_wider_than_the_block_keeps_the_markdown_widget() -> None:
    """Markdown lets the reader scroll a code block sideways; a flat one would cut it."""
    short = "```\nx = 1\n```\n"
    long = "```\n" + "y" * 200 + "\n```\n"
    app = Harness()
    async with app.run_test(size=(60, 30)) as pilot:
        block = ChunkedMarkdown(short, chunk_classes="text-chunk", live=False)
        await app.query_one("#box").mount(block)
        await until(lambda: 0 in block.chunks and block.settled, pilot, what="the first chunk drawn")
        assert isinstance(block.chunks[0], FlatMarkdown)
        block.set_target(short + long)  # the same chunk grows a line of 200 characters
        await block.flush()
        await until(lambda: isinstance(block.chunks[0], LiveMarkdown) and block.settled, pilot,
                    what="the chunk redrawn by the Markdown widget")
        assert isinstance(block.chunks[0], LiveMarkdown) and block.source == short + long


async def test_a_table_too_wide_to_draw_flat_keeps_the_markdown_widget() -> None:
    """Six columns in 24 cells would be crushed below their padding: Markdown draws that."""
    wide = "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 | 6 |\n"
    app = Harness()
    async with app.run_test(size=(70, 30)) as pilot:
        block = ChunkedMarkdown("| a | b |\n|---|---|\n| 1 | 2 |\n", chunk_classes="text-chunk", live=False)
        await app.query_one("#box").mount(block)
        await until(lambda: 0 in block.chunks and block.settled, pilot, what="the first chunk drawn")
        assert isinstance(block.chunks[0], FlatMarkdown)
        await pilot.resize_terminal(24, 30)
        block.set_target(wide)
        await block.flush()
        await until(lambda: isinstance(block.chunks[0], LiveMarkdown) and block.settled, pilot,
                    what="the table redrawn by the Markdown widget")
        assert isinstance(block.chunks[0], LiveMarkdown) and block.settled
        assert "┌" in "".join("".join(c for c, _ in row) for row in _cells(app))
