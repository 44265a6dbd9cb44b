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


def _screen_classes() -> list[type[Screen[Any]]]:
    """Every Screen subclass defined in ``instance_ai_tui.tui`` (found by walking the package, so a new
    screen is in the list the day it is written)."""
    import importlib
    import inspect
    import pkgutil

    import instance_ai_tui.tui as tui

    found: dict[str, type[Screen[Any]]] = {}
    for module_info in pkgutil.walk_packages(tui.__path__, prefix="instance_ai_tui.tui."):
        module = importlib.import_module(module_info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Screen) and cls.__module__.startswith("instance_ai_tui.tui."):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[name] for name in sorted(found)]


def test_every_screen_the_app_pushes_keeps_its_reflow_baseline(monkeypatch: Any) -> None:
    """The app's ``push_screen`` (``push_screen_wait`` goes through it too) gives every screen of the
    package a compositor that keeps its reflow baseline: the modal screens as the main one."""
    from tests.tui.scripts import make_app, recorded

    classes = _screen_classes()
    names = {cls.__name__ for cls in classes}
    assert {"MainScreen", "StartFailureScreen", "HelpScreen", "RenameThreadScreen", "ConfirmDeleteScreen",
            "ModelPicker", "RewindPicker"} <= names, names
    pushed: list[Screen[Any]] = []
    monkeypatch.setattr(App, "push_screen", lambda self, screen, *args, **kwargs: pushed.append(screen))
    app = make_app(recorded([]))
    for cls in classes:
        screen = cls.__new__(cls)  # its own arguments do not matter here: the compositor Screen.__init__ makes
        Screen.__init__(screen)
        assert not type(screen._compositor).__name__.startswith("KeepsReflowBaseline")
        app.push_screen(screen)
        assert pushed[-1] is screen
        assert type(screen._compositor).__name__.startswith("KeepsReflowBaseline"), cls


async def test_a_modal_screen_pushed_on_the_running_app_keeps_its_reflow_baseline() -> None:
    from instance_ai_tui.tui.screens.help import HelpScreen
    from tests.tui.scripts import make_app, recorded

    app = make_app(recorded([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await app.push_screen(HelpScreen("# Help"))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert type(app.screen._compositor).__name__.startswith("KeepsReflowBaseline")
