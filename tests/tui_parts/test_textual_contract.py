"""The private Textual names the app uses (all in ``tui/textual_internals.py``) are still there,
with the shape used, on the installed Textual; and no other module of the app touches one.

A Textual release that changes one fails here with the name, instead of the app drawing wrong."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import textual
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Markdown, Static

from instance_ai_tui.tui import textual_internals
from tests.support.waiting import until

TUI = Path(textual_internals.__file__).resolve().parent

#: private names of Textual objects the door uses (attribute names starting with one underscore)
PRIVATE_NAMES = {"_size_updated", "_size", "_container_size", "_styles_cache", "_cache", "_dirty_lines", "_render",
                 "_border_title", "_border_subtitle", "_pending", "_driver", "_has_outline"}


def _broken(name: str) -> str:
    return (f"Textual {textual.__version__} changed {name}, which tui/textual_internals.py relies on: "
            "pin Textual to the range in pyproject.toml or adapt the door")


def test_widget_size_updated_has_the_signature_used() -> None:
    params = list(inspect.signature(Widget._size_updated).parameters)
    assert params == ["self", "size", "virtual_size", "container_size", "layout"], _broken("Widget._size_updated")


def test_private_module_resolve_has_the_signature_used() -> None:
    from textual import _resolve

    params = inspect.signature(_resolve.resolve).parameters
    assert {"dimensions", "total", "gutter", "size", "viewport", "expand", "shrink", "minimums"} <= set(params), \
        _broken("textual._resolve.resolve")
    assert textual_internals.resolve_lengths([10, 20], 40, 1, [3, 3]) and sum(
        textual_internals.resolve_lengths([10, 20], 40, 1, [3, 3])) == 39


def test_the_private_names_behind_the_doors_functions_still_work() -> None:
    """``character_key`` (``textual.keys._character_to_key``) and ``parse_input``
    (``textual._xterm_parser.XTermParser``) give what the app reads from them."""
    from textual import events

    assert textual_internals.character_key("!") == "exclamation_mark", _broken("textual.keys._character_to_key")
    keys = [event for event in textual_internals.parse_input("hi\r") if isinstance(event, events.Key)]
    assert [event.key for event in keys] == ["h", "i", "enter"], _broken("textual._xterm_parser.XTermParser")


def test_the_compositor_and_screen_have_what_the_paint_bands_use() -> None:
    """``split_partial_updates``' bands override ``Compositor.render_update`` and add the screen to
    ``Screen._dirty_widgets`` (tests/tui_parts/test_paint_bands.py shows the bands on screen)."""
    from textual._compositor import Compositor
    from textual.screen import Screen

    params = list(inspect.signature(Compositor.render_update).parameters)
    assert params == ["self", "full", "screen_stack", "simplify"], _broken("Compositor.render_update")
    assert "self._dirty_widgets" in inspect.getsource(Screen._on_timer_update), _broken("Screen._dirty_widgets")
    assert callable(getattr(Screen, "check_idle", None)), _broken("Screen.check_idle")


def test_markdown_stream_keeps_pending_fragments() -> None:
    assert hasattr(Markdown, "get_stream"), _broken("Markdown.get_stream")
    from textual.widgets._markdown import MarkdownStream

    source = inspect.getsource(MarkdownStream)
    assert "self._pending" in source, _broken("MarkdownStream._pending")


async def test_a_mounted_widget_has_the_private_attributes_the_door_reads() -> None:
    class Harness(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("x", id="s")

    app = Harness()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        widget = app.query_one("#s")
        for name in ("_size", "_container_size", "_styles_cache", "_border_title", "_border_subtitle"):
            assert hasattr(widget, name), _broken(f"Widget.{name}")
        cache = widget._styles_cache
        assert isinstance(getattr(cache, "_cache", None), dict), _broken("StylesCache._cache")
        assert isinstance(getattr(cache, "_dirty_lines", None), set), _broken("StylesCache._dirty_lines")
        assert callable(getattr(widget, "_render", None)), _broken("Widget._render")
        assert hasattr(app, "_driver"), _broken("App._driver")
        assert textual_internals.app_driver(app) is not None


@pytest.mark.parametrize("path", sorted(p for p in TUI.rglob("*.py") if p.name != "textual_internals.py"),
                         ids=lambda p: str(p.relative_to(TUI)))
def test_no_other_module_touches_a_private_textual_name(path: Path) -> None:
    """Outside the door, no import from a private Textual module and no override or read of a private
    Textual attribute on a widget or app (``self._x`` of the module's own classes is fine: this looks
    for the names Textual owns)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual"):
            if any(part.startswith("_") for part in (node.module or "").split(".")):
                found.append(f"import from {node.module}")
        if isinstance(node, ast.FunctionDef) and node.name in {"_size_updated", "_render", "_has_outline"}:
            found.append(f"overrides {node.name}")
        if isinstance(node, ast.Attribute) and node.attr in {"_styles_cache", "_driver", "_size_updated",
                                                              "_container_size", "_dirty_lines"}:
            found.append(f"reads .{node.attr}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in PRIVATE_NAMES):
            found.append(f"getattr {node.args[1].value!r}")
    assert found == []


async def test_each_screen_has_the_toast_container_the_door_moves_to_the_top() -> None:
    """``TOASTS_CSS`` moves the container of id ``textual-toastrack`` to the top right: it is there,
    and a notification is drawn in the top rows, at the right."""
    class Harness(App[None]):
        CSS = textual_internals.TOASTS_CSS

        def compose(self) -> ComposeResult:
            yield Static("x")

    app = Harness()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # (the test harness has none by default)
        assert app.screen.query(f"#{textual_internals.TOAST_RACK_ID}"), _broken("the toast container's id")
        app.notify("hello there", timeout=30)
        def toast_region() -> object:
            toasts = [w for w in app.screen.walk_children() if type(w).__name__ == "Toast" and w.region.height]
            return toasts[0].region if toasts else None

        await until(lambda: toast_region() is not None, pilot, what="the toast drawn")
        region = toast_region()
        assert region.y <= 2 and region.right >= 76, (region, _broken("the toast container's placement"))  # type: ignore[attr-defined]


def test_the_footer_names_behind_the_door_are_there() -> None:
    """``footer_key_class`` (``textual.widgets._footer.FooterKey``) and ``footer_bindings_ready``
    (``Footer._bindings_ready``) read what ``widgets.key_footer`` needs."""
    import inspect

    from textual.widgets import Footer

    key = textual_internals.footer_key_class()
    assert list(inspect.signature(key).parameters)[:4] == ["key", "key_display", "description", "action"], \
        _broken("textual.widgets._footer.FooterKey")
    assert "_bindings_ready" in dir(Footer) and textual_internals.footer_bindings_ready(Footer()) is False, \
        _broken("Footer._bindings_ready")


def test_the_compositor_names_keep_reflow_baseline_reads_are_there() -> None:
    """``keep_reflow_baseline`` (``Compositor.full_map`` a property, ``.reflow``, ``._full_map``,
    ``._full_map_invalidated``) takes effect on the installed Textual, and on the app's screen."""
    from textual._compositor import Compositor
    from textual.screen import Screen

    assert isinstance(Compositor.__dict__.get("full_map"), property), _broken("Compositor.full_map")
    compositor = Compositor()
    assert {"_full_map", "_full_map_invalidated"} <= set(vars(compositor)), _broken("Compositor._full_map")
    screen = Screen()
    assert textual_internals.keep_reflow_baseline(screen), _broken("Compositor.reflow / Screen._compositor")
    assert type(screen._compositor).__name__.startswith("KeepsReflowBaseline")
    assert textual_internals.keep_reflow_baseline(screen)  # twice: the same class, not one more layer
    assert type(screen._compositor).__mro__[1] is Compositor


async def test_the_main_screen_keeps_its_reflow_baseline() -> None:
    from tests.tui.scripts import make_app, recorded

    app = make_app(recorded([]))
    async with app.run_test(size=(80, 24)):
        await app.wait_until_ready()
        assert type(app.screen._compositor).__name__.startswith("KeepsReflowBaseline")
