"""A partial screen update paints one crop per cluster of dirty regions
(``textual_internals.split_partial_updates``, issue 44): a full-width row dirty beside the answer
(the footer's keys at a run's start and end) no longer makes Textual draw every widget of the
screen again, and what goes to the terminal is what Textual's one crop sends."""

from __future__ import annotations

import random
from typing import Any

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import OptionList, Static

from instance_ai_tui.tui.textual_internals import split_partial_updates
from tests.support.terminal_cells import painted_cells


class Side(OptionList):
    """The thread list's kind of widget: counts the times it is drawn."""

    drawn = 0

    def render_lines(self, crop: Region) -> Any:
        Side.drawn += 1
        return super().render_lines(crop)


class Split(Screen[None]):
    def __init__(self, split: bool) -> None:
        super().__init__()
        self.split = split_partial_updates(self) if split else False

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Side(*[f"thread {i}" for i in range(20)], id="side")
            with VerticalScroll(id="answer"):
                yield Static("\n".join(f"line {i}" for i in range(30)), id="text")
        yield Static("keys", id="footer")

    DEFAULT_CSS = """
    #side { width: 30; height: 1fr; }
    #answer { width: 1fr; }
    #footer { dock: bottom; height: 1; width: 1fr; background: $primary; }
    """


class Two(App[None]):
    def __init__(self, split: bool) -> None:
        super().__init__()
        self._split = split

    def on_mount(self) -> None:
        self.push_screen(Split(self._split))


async def _drawn_after_answer_and_footer(split: bool) -> int:
    app = Two(split)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Split) and screen.split is split
        await pilot.pause()
        Side.drawn = 0
        screen.query_one("#text", Static).update("\n".join(f"new line {i}" for i in range(30)))
        screen.query_one("#footer", Static).update("esc Stop  keys")
        await pilot.pause()
        await pilot.pause()
        return Side.drawn


async def test_a_footer_row_and_the_answer_dirty_together_do_not_draw_the_side_list() -> None:
    assert await _drawn_after_answer_and_footer(split=False) > 0  # Textual's one crop: the whole screen
    assert await _drawn_after_answer_and_footer(split=True) == 0


async def test_the_split_update_sends_what_textuals_one_crop_sends() -> None:
    app = Two(True)
    rng = random.Random(44)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        assert type(compositor) is not Compositor
        width, height = app.size
        compared = 0
        for _ in range(60):
            regions = {Region(x, y, rng.randint(1, width - x), rng.randint(1, min(4, height - y)))
                       for x, y in ((rng.randrange(width), rng.randrange(height)) for _ in range(rng.randint(1, 6)))}
            regions.add(Region(0, height - 1, width, 1))  # the footer's row
            compositor._dirty_regions = set(regions)
            split = compositor.render_partial_update()
            compositor._dirty_regions = set(regions)
            whole = Compositor.render_partial_update(compositor)
            assert split is not None and whole is not None
            assert painted_cells(split, app.console) == painted_cells(whole, app.console)
            compared += 1
        assert compared == 60
