"""A layout pass compares with the layout pass before it (``textual_internals.keep_reflow_baseline``).

Textual's compositor rebuilds its map of the screen lazily when a lookup (any widget's ``size``)
comes after an update that saw a widget not yet placed: the next layout pass then compared with
that map, found a widget mounted in between already there, and sent it no ``Resize`` nor
``Show`` and marked none of its cells to paint. Seen on a busy machine: an approval card that
never had a ``Resize``, so its buttons were never fitted to its width (the last one cut)."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from instance_ai_tui.tui.textual_internals import keep_reflow_baseline, split_partial_updates


class Seen(Static):
    """Records the Resize and Show events it receives."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.events: list[str] = []

    def on_resize(self, event: events.Resize) -> None:
        self.events.append(f"resize {event.size.width}x{event.size.height}")

    def on_show(self) -> None:
        self.events.append("show")


class Board(Screen[None]):
    def __init__(self, keep: bool) -> None:
        super().__init__()
        split_partial_updates(self)  # as MainScreen: the two classes of compositor together
        self.kept = keep_reflow_baseline(self) if keep else False

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Static("first", id="first")


class Host(App[None]):
    def __init__(self, keep: bool) -> None:
        super().__init__()
        self.keep = keep

    def on_mount(self) -> None:
        self.push_screen(Board(self.keep))


async def _mounted_between_two_layouts(keep: bool) -> tuple[Seen, Any, Any]:
    """Show a widget, let an update see it unplaced and a lookup build the map lazily, then run
    the layout pass: the widget, what the pass reports and the cells it marks dirty, and where
    the widget is."""
    app = Host(keep)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Board) and screen.kept == keep
        box = screen.query_one("#box")
        first = screen.query_one("#first")
        late = Seen("late")
        late.display = False
        await box.mount(late)  # mounted, not placed (hidden)
        await pilot.pause()
        compositor = screen._compositor
        assert late not in compositor.full_map
        # from here on nothing yields: no layout pass can come in between
        late.display = True  # to be placed by the next layout pass
        compositor.update_widgets({late})  # an update sees it dirty and unplaced: the map is stale
        assert screen.find_widget(first)  # a lookup: the map built again, lazily, with ``late`` in it
        compositor._dirty_regions.clear()
        result = compositor.reflow(screen, screen.outer_size)  # the layout pass
        dirty = set(compositor._dirty_regions)
        region = compositor.full_map[late].region
        return late, (result, dirty), region


async def test_a_widget_mounted_between_two_layouts_is_shown_and_painted() -> None:
    late, (result, dirty), region = await _mounted_between_two_layouts(keep=True)
    assert late in result.shown  # so it gets its Show and its Resize
    assert any(d.contains_region(region) for d in dirty)  # and its cells are painted


async def test_textual_alone_loses_it() -> None:
    """The race itself, on the installed Textual: if this starts to fail, Textual fixed it and
    ``keep_reflow_baseline`` can go."""
    late, (result, dirty), region = await _mounted_between_two_layouts(keep=False)
    assert late not in result.shown and late not in result.resized
    assert not any(d.overlaps(region) for d in dirty)


async def test_the_widget_gets_its_show_and_resize_on_a_running_screen() -> None:
    """On a running screen: the widget shown in the gap receives its Show and its Resize."""
    app = Host(True)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        late = Seen("late")
        late.display = False
        await screen.query_one("#box").mount(late)
        await pilot.pause()
        late.display = True
        screen._compositor.update_widgets({late})
        screen.find_widget(screen.query_one("#first"))
        screen._refresh_layout()
        for _ in range(20):
            if "show" in late.events and any(e.startswith("resize") for e in late.events):
                break
            await pilot.pause()
        assert "show" in late.events and "resize 60x1" in late.events
