"""A widget that moves is painted where it moved to, whoever made Textual lay the screen out first.

Seen at 80x24 (tmux, the demo, an approval card waiting): the notice line above the status line went
away, the prompt moved down two rows, and the terminal kept the prompt's old rows and the notice's
text ("… in / the prompt).") until a resize. Textual marks a moved widget's old and new places
dirty when its layout pass (``Compositor.reflow``) compares the new arrangement with the last one;
but after a scroll (``reflow_visible``) the full arrangement is rebuilt lazily by whatever asks for
a widget's region first (``Compositor.full_map``: here a removed widget's parent asking its own
size), and that rebuild took in the pending change without marking anything, so the next layout
pass found nothing moved. ``textual_internals.keep_reflow_baseline`` (the layout pass compares with
the layout pass before) paints it: what goes to the terminal is checked here cell for cell against
Textual's whole screen, in the order the approval card's wait takes (a scroll, then the notice line
hidden; ``test_reflow_baseline.py`` makes the gap with a widget mounted instead)."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from instance_ai_tui.tui.textual_internals import keep_reflow_baseline, split_partial_updates
from tests.support.terminal_cells import painted_cells


class Terminal:
    """The terminal's cells, from every update the app writes (as a terminal applies them)."""

    def __init__(self, width: int, height: int) -> None:
        self.rows = [[" "] * width for _ in range(height)]

    def apply(self, update: Any, console: Any) -> None:
        for (x, y), (char, _style) in painted_cells(update, console).items():
            if y < len(self.rows) and x < len(self.rows[y]):
                self.rows[y][x] = char

    def lines(self) -> list[str]:
        return ["".join(row) for row in self.rows]


class Bottom(Screen[None]):
    """The main screen's column: a scrolling view, the prompt, the notice line, the status line."""

    DEFAULT_CSS = """
    #view { height: 1fr; }
    #prompt { height: 3; border: tall $primary; }
    #notice { height: 2; background: $boost; }
    #status { height: 1; }
    """

    def __init__(self, hook: str) -> None:
        super().__init__()
        if hook in ("split", "both"):
            split_partial_updates(self)
        if hook in ("keep", "both"):
            assert keep_reflow_baseline(self)

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll(id="view"):
                for n in range(40):
                    yield Static(f"line {n}", id=f"line-{n}")
            yield Static("Message Instance AI…", id="prompt")
            yield Static("NOTICE the agent needs your answer\nNOTICE (your typing stays in the prompt).",
                         id="notice")
            yield Static("keys: prompt", id="status")


class Mirrored(App[None]):
    def __init__(self, hook: str) -> None:
        super().__init__()
        self.hook = hook
        self.terminal = Terminal(*self.SIZE)

    SIZE = (44, 14)

    def on_mount(self) -> None:
        self.push_screen(Bottom(self.hook))

    def _display(self, screen: Screen[Any], renderable: Any) -> None:
        if renderable is not None and not self._batch_count:  # (Textual drops an update made in a batch)
            self.terminal.apply(renderable, self.console)
        super()._display(screen, renderable)


async def _settle(app: App[Any], pilot: Any) -> None:
    for _ in range(50):
        await pilot.pause()
        screen = app.screen
        if not (screen._layout_required or screen._repaint_required or screen._dirty_widgets or screen._scroll_required):
            return


def _whole_screen(app: App[Any]) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


async def _after_notice_goes(hook: str) -> tuple[list[str], list[str]]:
    app = Mirrored(hook)
    async with app.run_test(size=Mirrored.SIZE) as pilot:
        await _settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, Bottom)
        screen.query_one("#view", VerticalScroll).scroll_end(animate=False)
        await _settle(app, pilot)
        assert app.terminal.lines() == _whole_screen(app)
        # the view scrolled: Textual laid out the visible widgets only, the whole arrangement waits
        assert screen._compositor._full_map_invalidated
        screen.query_one("#notice").display = False  # (a layout pass is due)
        screen.query_one("#line-0").region  # noqa: B018 - a widget out of view asks where it is first
        await _settle(app, pilot)
        prompt = screen.query_one("#prompt").region
        assert prompt.bottom == Mirrored.SIZE[1] - 1  # moved down to the status line
        return app.terminal.lines(), _whole_screen(app)


async def test_a_widget_moved_by_a_layout_change_is_painted_where_it_moved() -> None:
    on_terminal, whole = await _after_notice_goes("keep")
    assert on_terminal == whole, "\n".join(["terminal:", *on_terminal, "whole screen:", *whole])


async def test_with_split_crops_too() -> None:
    """As the main screen's compositor: it splits its partial updates too (``split_partial_updates``)."""
    on_terminal, whole = await _after_notice_goes("both")
    assert on_terminal == whole, "\n".join(["terminal:", *on_terminal, "whole screen:", *whole])


async def test_textual_alone_leaves_the_moved_widget_unpainted() -> None:
    """The gap on the installed Textual (this fails the day Textual paints it itself: then the door's
    ``keep_reflow_baseline`` can go)."""
    on_terminal, whole = await _after_notice_goes("split")
    assert on_terminal != whole
    assert on_terminal[-4].startswith("▊▁") and whole[-4].startswith("▊▔")  # the prompt's bottom border for its top
