"""A big change of the screen is painted in bands, one band a screen update (issue 44.1c):
no single loop turn paints the whole screen (a layout that moved everything, a flood's end
scrolled into view), and what the terminal holds once the bands are painted is, cell for cell,
the whole screen (``textual_internals.paint_band``, ``split_partial_updates``). Counted work,
no clock: the cells each update writes."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import OptionList, Static

from instance_ai_tui.tui.textual_internals import PAINT_CELLS, paint_band, paint_budget, split_partial_updates
from tests.support.terminal_cells import painted_cells

SIZE = (120, 40)


class Wide(Screen[None]):
    DEFAULT_CSS = """
    #side { width: 30; height: 1fr; }
    #answer { width: 1fr; }
    #footer { dock: bottom; height: 1; background: $primary; }
    """

    def __init__(self, split: bool) -> None:
        super().__init__()
        self.split = split_partial_updates(self) if split else False

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield OptionList(*[f"thread {i}" for i in range(60)], id="side")
            with VerticalScroll(id="answer"):
                yield Static("\n".join(f"line {i} " + "word " * 15 for i in range(80)), id="text")
        yield Static("keys", id="footer")


class Mirrored(App[None]):
    """Keeps what every update writes (the cells, as a terminal applies them)."""

    def __init__(self, split: bool) -> None:
        super().__init__()
        self._split = split
        self.rows = [[" "] * SIZE[0] for _ in range(SIZE[1])]
        self.updates: list[int] = []  # cells written by each update

    def on_mount(self) -> None:
        self.push_screen(Wide(self._split))

    def _display(self, screen: Screen[Any], renderable: Any) -> None:
        if renderable is not None and not self._batch_count and isinstance(screen, Wide):
            cells = painted_cells(renderable, self.console)
            self.updates.append(len(cells))
            for (x, y), (char, _style) in cells.items():
                if y < SIZE[1] and x < SIZE[0]:
                    self.rows[y][x] = char
        super()._display(screen, renderable)

    def lines(self) -> list[str]:
        return ["".join(row) for row in self.rows]


async def _settle(app: App[Any], pilot: Any) -> None:
    for _ in range(100):
        await pilot.pause()
        screen = app.screen
        if not (screen._layout_required or screen._repaint_required or screen._dirty_widgets
                or screen._scroll_required or getattr(screen._compositor, "_left", ())):
            return


def _whole_screen(app: App[Any]) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


async def _whole_change(split: bool) -> tuple[list[int], list[str], list[str]]:
    """The updates written when every row of the screen changes (the side list scrolls, the answer
    is replaced and scrolled to its end, the footer's words change)."""
    app = Mirrored(split)
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, Wide) and screen.split is split
        assert app.lines() == _whole_screen(app)  # (the first paint: whole)
        app.updates.clear()
        screen.query_one("#side", OptionList).highlighted = 59
        screen.query_one("#text", Static).update("\n".join(f"new {i} " + "text " * 15 for i in range(90)))
        screen.query_one("#answer", VerticalScroll).scroll_end(animate=False)
        screen.query_one("#footer", Static).update("esc Stop  keys")
        await _settle(app, pilot)
        return list(app.updates), app.lines(), _whole_screen(app)


async def test_a_whole_screen_change_is_painted_in_bands_and_ends_as_the_whole_screen() -> None:
    updates, on_terminal, whole = await _whole_change(split=True)
    assert on_terminal == whole, "\n".join(["terminal:", *on_terminal, "whole screen:", *whole])
    assert sum(updates) >= SIZE[0] * (SIZE[1] - 2)  # (most of the screen was written)
    assert len(updates) >= 2
    assert max(updates) <= PAINT_CELLS, updates


async def test_textual_alone_paints_it_in_one_update() -> None:
    """The installed Textual writes the change in one update (why the bands are needed)."""
    updates, on_terminal, whole = await _whole_change(split=False)
    assert on_terminal == whole
    assert max(updates) > PAINT_CELLS, updates


def test_a_band_is_rows_within_the_budget_from_where_the_last_stopped() -> None:
    screen = Region(0, 0, 120, 40)
    assert paint_budget(120, 40) == PAINT_CELLS and paint_budget(160, 220) == 160 * 220 // 4
    assert paint_band([Region(0, 0, 120, 20)]) is None  # 2,400 cells: fits
    assert paint_band([screen]) == ([Region(0, 0, 120, 20)], [Region(0, 20, 120, 20)], 20)
    # from row 30 down, then from the top
    assert paint_band([screen], start=30) == ([Region(0, 0, 120, 10), Region(0, 30, 120, 10)],
                                              [Region(0, 10, 120, 20)], 10)
    # regions side by side: cut at the same row
    band = paint_band([Region(0, 0, 30, 40), Region(30, 0, 90, 40)], budget=600)
    assert band == ([Region(0, 0, 30, 5), Region(30, 0, 90, 5)], [Region(0, 5, 30, 35), Region(30, 5, 90, 35)], 5)
    # a row wider than the budget is painted alone
    assert paint_band([Region(0, 3, 120, 2)], budget=50) == ([Region(0, 3, 120, 1)], [Region(0, 4, 120, 1)], 4)
    assert paint_band([Region(0, 3, 120, 1)], budget=50) is None


def test_no_row_waits_for_ever_while_the_rows_above_change_at_every_update() -> None:
    """The whole screen dirty again before each update (a layout at every frame): every row is
    painted within the bands of one screen's worth, the bottom ones too."""
    width, height = 120, 40
    budget = paint_budget(width, height)
    left: list[Region] = []
    start = 0
    last_painted = dict.fromkeys(range(height), -1)
    for update in range(12):
        dirty = [*left, Region(0, 0, width, height)]
        band = paint_band(dirty, budget, start)
        assert band is not None
        now, left, start = band
        for region in now:
            for y in region.line_range:
                last_painted[y] = update
        assert len({y for region in now for y in region.line_range}) * width <= budget  # (full-width rows)
        if update >= 1:
            assert min(last_painted.values()) >= update - 1, last_painted  # (2 bands at 120x40)
