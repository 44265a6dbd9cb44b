"""While an answer streams, only its new rows are painted: the rest of the screen is the rows
painted before (``tui/textual_internals.py``), and what is on screen is, cell for cell, what Textual
paints from scratch. A table growing at the end of a text is parsed a row at a time
(``parse_document(grown_from=...)``) into the blocks a whole parse gives."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget

from instance_ai_tui.tui.textual_internals import BlankRows
from instance_ai_tui.tui.widgets.flat_markdown import FlatMarkdown
from instance_ai_tui.tui.widgets.flat_table import Table
from instance_ai_tui.tui.widgets.long_markdown import ChunkedMarkdown
from instance_ai_tui.tui.widgets.markdown_document import parse_document

from .test_flat_markdown import Harness, _cells

ROWS = "".join(f"| {i} | {'webhook Slack'[: 3 + i % 9]} | {i * 37 % 1000} ms | {'ok' if i % 7 else 'failed'} |\n"
               for i in range(1, 41))
TABLE = "Here are the runs:\n\n| # | node | time | status |\n|---|---|---|---|\n" + ROWS + "\nAll 40 runs.\n"


class Turn(BlankRows, Vertical):
    DEFAULT_CSS = "Turn { height: auto; margin: 1 0 0 0; padding: 0 0 0 1; border-left: blank; }"


class BoxedTurn(BlankRows, Vertical):
    """Rows that differ (a top and bottom border, a title): drawn by Textual."""

    DEFAULT_CSS = "BoxedTurn { height: auto; border: round $primary; padding: 1 1; }"


class View(BlankRows, VerticalScroll):
    """A scroll view as the app's conversation view is one (``LaidOutOnce``)."""


class Column(BlankRows, Vertical):
    """A container as the app's turns and sections are."""


class Chat(Harness):
    """An answer in a turn, in a view shorter than the answer that follows its end."""

    CSS = "#history, #history Vertical { height: auto; }"

    def __init__(self, view_class: type[VerticalScroll] = VerticalScroll) -> None:
        super().__init__()
        self.view_class = view_class

    def compose(self) -> ComposeResult:
        with self.view_class(id="box"):
            yield (Column if self.view_class is View else Vertical)(id="history")


def _tokens(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def _fresh_cells(app: App[Any], monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, tuple[object, ...]]]]:
    """The screen painted from scratch by Textual: every widget's caches dropped, and the
    containers' rows drawn one by one."""
    with monkeypatch.context() as patched:
        patched.setattr(BlankRows, "render_lines", Widget.render_lines)
        patched.setattr(BlankRows, "render_line", Widget.render_line)
        for widget in app.screen.walk_children(with_self=True):
            if isinstance(widget, FlatMarkdown):
                widget._drawn, widget._drawn_key, widget._lines = {}, None, None
            widget.refresh()
        return _cells(app)


async def _settle(app: App[Any], pilot: Any) -> None:
    for _ in range(50):
        await pilot.pause()
        screen = app.screen
        if not (screen._layout_required or screen._repaint_required or screen._dirty_widgets):
            return


async def _stream_steps(app: App[Any], pilot: Any, block: ChunkedMarkdown, seen: list[Any]) -> list[int]:
    """Stream ``TABLE`` into ``block`` 7 tokens a step; for each step, how many entries ``seen``
    (a spy's record, cleared before the step is drawn) got while it was drawn."""
    tokens = _tokens(TABLE)
    per_step: list[int] = []
    for end in range(7, len(tokens) + 7, 7):
        block.set_target("".join(tokens[:end]))
        await block.flush()
        seen.clear()
        await _settle(app, pilot)
        per_step.append(len(seen))
    return per_step


@pytest.mark.parametrize(("turn_class", "view_class"), [(Turn, VerticalScroll), (BoxedTurn, VerticalScroll), (Turn, View)])
async def test_what_streams_on_screen_is_what_textual_paints_from_scratch(
    turn_class: type[Vertical], view_class: type[VerticalScroll], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = Chat(view_class)
    async with app.run_test(size=(72, 24)) as pilot:
        box = app.query_one("#box", VerticalScroll)
        box.anchor()
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        turn = turn_class(Vertical(block))
        if turn_class is BoxedTurn:
            turn.border_title = "answer"
        await app.query_one("#history").mount(turn)
        tokens = _tokens(TABLE)
        steps = 0
        for end in range(7, len(tokens) + 7, 7):
            block.set_target("".join(tokens[:end]))
            await block.flush()
            await _settle(app, pilot)
            steps += 1
            if steps % 3 and end < len(tokens):
                continue  # (compared every third step and at the end: the kept rows pile up)
            streamed = _cells(app)
            fresh = _fresh_cells(app, monkeypatch)
            await _settle(app, pilot)
            for y, (a, b) in enumerate(zip(fresh, streamed, strict=True)):
                assert a == b, f"step {steps}, row {y}:\n{''.join(c for c, _ in a)!r}\n{''.join(c for c, _ in b)!r}"
        assert box.scroll_y > 20  # the view scrolled while the table grew


async def test_a_growing_table_paints_only_its_new_rows() -> None:
    app = Chat()
    async with app.run_test(size=(72, 24)) as pilot:
        box = app.query_one("#box", VerticalScroll)
        box.anchor()
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        await app.query_one("#history").mount(Turn(Vertical(block)))
        painted: list[int] = []
        real = FlatMarkdown.render_line

        def render_line(self: FlatMarkdown, y: int) -> Any:
            painted.append(y)
            return real(self, y)

        FlatMarkdown.render_line = render_line  # type: ignore[method-assign]
        try:
            per_step = await _stream_steps(app, pilot, block, painted)
        finally:
            FlatMarkdown.render_line = real  # type: ignore[method-assign]
        chunk = next(iter(block.chunks.values()))
        assert isinstance(chunk, FlatMarkdown) and chunk.size.height > 40  # taller than the view
        # once the table fills the view (22 rows), a step paints the rows its text changed
        # (the last row, a new row, the bottom rule, the line below the table), never the view
        late = per_step[len(per_step) // 2 :]
        assert late and max(late) <= 6, per_step


async def test_a_growing_answer_is_laid_out_once_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual follows a layout that changed a widget's size with a second one (its
    ``virtual_size`` reactive asks for it): the turn, the text and the view each grew, so
    every frame of a streamed answer was laid out and painted twice."""
    from textual._compositor import Compositor

    app = Chat(View)
    async with app.run_test(size=(72, 24)) as pilot:
        box = app.query_one("#box", VerticalScroll)
        box.anchor()
        block = ChunkedMarkdown("", chunk_classes="text-chunk")
        await app.query_one("#history").mount(Turn(Column(block)))
        layouts: list[int] = []
        real = Compositor.reflow

        def reflow(self: Compositor, parent: Widget, size: Any) -> Any:
            layouts.append(1)
            return real(self, parent, size)

        monkeypatch.setattr(Compositor, "reflow", reflow)
        per_step = await _stream_steps(app, pilot, block, layouts)
        assert box.scroll_y > 20 and box.scroll_y == box.max_scroll_y  # it grew, and the view followed it
        # (0: the step only changed a row; the step where the view's scrollbar appears takes
        # more: the text is narrower then. The table passes the view's 24 rows at about its 20th
        # row, some 40% into the stream, since only the header has a rule under it)
        assert max(per_step[len(per_step) // 2 :]) == 1 and sum(per_step) < len(per_step), per_step


def _blocks(document: Any) -> Any:
    if document is None:
        return None
    out: list[Any] = []
    for block in document:
        if isinstance(block, Table):
            out.append((
                [(c.plain, tuple(c.spans)) for c in block.headers],
                [[(c.plain, tuple(c.spans)) for c in row] for row in block.rows],
                block.line,
                block.row_lines,
            ))
        else:
            out.append(repr(block))
    return out


GROWING = [
    TABLE,
    TABLE + "\n| a | b |\n|--|--|\n| 1 | **2** |\n",
    "| a | b |\n|---|---|\n| x \\| y | `a|b` |\n| only one |\n| 1 | 2 | 3 |\n> a quote ends it\n",
    "| a |\n|---|\n| 1 |\n    | indented: not a row |\n| 2 |\n\n- a list\n",
    "| h | i |\n|---|---|\n| 1 | 2 |\n| [a link][r] | x |\n\n[r]: http://example.com\n",
    "- a list\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n| c |\n|---|\n| 3 |\n",
]


@pytest.mark.parametrize("text", GROWING)
def test_a_table_parsed_as_it_grows_is_the_table_parsed_whole(text: str) -> None:
    rng = random.Random(text)
    for _ in range(3):
        end = 0
        previous: tuple[str, Any] | None = None
        while end < len(text):
            end = min(len(text), end + rng.randint(1, 12))
            source = text[:end]
            whole = parse_document(source)
            grown = parse_document(source, grown_from=previous) if previous and previous[1] is not None else whole
            assert _blocks(grown) == _blocks(whole), repr(source)
            previous = (source, grown)


def test_only_the_tables_last_row_is_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from instance_ai_tui.tui.widgets import markdown_document

    parsed: list[str] = []
    real = markdown_document.markdown_parser

    class Spy:
        def __init__(self, parser: Any) -> None:
            self.parser = parser

        def parse(self, source: str, env: Any = None) -> Any:
            parsed.append(source)
            return self.parser.parse(source, env)

        def __getattr__(self, name: str) -> Any:  # parseInline and the rest: the real parser's
            return getattr(self.parser, name)

    monkeypatch.setattr(markdown_document, "markdown_parser", lambda inline=True: Spy(real(inline)))
    before = TABLE[: TABLE.index("| 30 |")]
    document = parse_document(before)
    assert document is not None
    parsed.clear()
    grown = parse_document(before + "| 30 | web", grown_from=(before, document))
    assert grown is not None and len(parsed) == 1
    assert parsed[0].count("\n") <= 4  # the header, the delimiter row, the last row, the new one


def test_a_container_drawn_off_its_screen_is_drawn_by_textual() -> None:
    """A modal's background draws the screen under it, where a widget that is being removed has
    no screen any more: its rows are Textual's to draw (reading its text selection raised
    NoScreen and crashed the app when the n8n login dialog opened mid-conversation)."""

    class Box(BlankRows, Vertical):
        is_container = True  # as while it still holds its children

    assert Box()._uniform_rows() is False
