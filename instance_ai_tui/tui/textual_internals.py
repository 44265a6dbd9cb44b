"""Every use of a private Textual name, behind one door.

Textual's public API does not give what a streamed answer needs (a frame that repaints only the
new rows; a layout that does not ask for a second layout) nor a few read-only facts (whether a
``MarkdownStream`` has text not handed over yet; the driver, to write an OSC sequence; Textual's
own style resolution for a table cell). Everything here touches a name Textual may change without
notice; nothing else in the app does (``tests/test_architecture.py`` checks that), and
``tests/tui_parts/test_textual_contract.py`` checks, on the installed Textual, that each name is
still there with the shape used here, failing with a message that names it. ``pyproject.toml``
states the Textual range the suite passes on; CI also runs the rendering tests on its lowest
version (``.ci/run``).

The private names: ``Widget._size_updated``, ``Widget._size``, ``Widget._container_size``,
``Widget._styles_cache`` (``StylesCache._cache``, ``._dirty_lines``), ``Widget._render``,
``Widget._border_title``/``_border_subtitle``, ``MarkdownStream._pending``, ``App._driver``,
``textual._resolve.resolve``, ``textual.keys._character_to_key`` (``character_key``),
``textual._xterm_parser.XTermParser`` (``parse_input``: keys typed before the app started, ``cli.type_ahead``),
and the id of each screen's toast container (``TOASTS_CSS``), ``textual.widgets._footer.FooterKey`` and
``Footer._bindings_ready`` (``widgets.key_footer``), ``Screen._compositor`` and ``textual._compositor``'s
``Compositor`` (``_dirty_regions``, ``_regions_to_spans``, ``_render_chops``, ``cuts``, ``visible_widgets``) and
``ChopsUpdate`` (``split_partial_updates``: one crop per cluster of dirty regions; and, overriding
``Compositor.render_update`` and adding the screen to ``Screen._dirty_widgets``, a big change painted in
bands), and ``Compositor.full_map``,
``.reflow`` and ``._full_map``/``._full_map_invalidated`` (``keep_reflow_baseline``).

A streamed answer repaints its new rows only.

A streamed answer grows at its end: every frame the open Markdown chunk gets a line or two
taller, and so do the containers around it (the text block, the agent section, the turn),
and the view scrolls. Textual (8.2) treats any change of a widget's size as "paint all of
it again": ``Widget._size_updated`` and the ``virtual_size`` reactive both clear the widget's
line cache (``StylesCache``). So each frame every visible row of the chunk and of each
container around it was drawn anew (styles, padding, filters; a container's row by
rendering its whole height) and then cut again at the screen's widget edges by the
compositor (``Strip.divide``, a new ``Strip`` per piece), though only the last rows had
changed: for a 60-row table streamed at 150 tokens/s most of Textual's paint.

``KeepsPaintedRows`` (``FlatMarkdown``) keeps, across a change of height alone (same
width), the cached rows above the bottom gutter (padding, border) of the smaller of the
two heights; rows marked for repainting are still repainted. What a row shows must then
not depend on the height: ``FlatMarkdown`` marks the rows its new text changed (``refresh``
with a region) instead of the whole widget, and a kept row is the very ``Strip`` the
compositor cut last frame (its cuts are cached on it).

``BlankRows`` (the turn, the agent section, the text block: containers that draw nothing
of their own) draws row 0 as Textual does and hands it over for every row of the frame:
with no top or bottom border or padding, outline, keylines, border title or selection,
every row of such a container is the same.

``LaidOutOnce`` (both mixins): a layout pass that changed a widget's size then set its
``virtual_size`` reactive, which asks for a *second* layout pass of the whole screen (and a
repaint of the widget) on the next update, though the sizes just came from that layout:
every frame of a growing answer was laid out and painted twice. Here the size a layout
gives is only recorded, except for a scroll container whose own size changed (its
scrollbars may come or go); a scroll container's anchor (the view following the answer's
end) is applied within the layout pass itself.

``KeepsPaintedRows`` and ``LaidOutOnce`` use Textual internals (``_size_updated``,
``_styles_cache``, ``_size``, ``_container_size``): if a Textual release changes them, they
fall back to Textual's own behaviour.
``tests/tui_parts/test_painted_rows.py`` checks that what is on screen while an answer
streams is, cell for cell, what Textual paints from scratch.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from textual.css.scalar import Unit
from textual.dom import NoScreen
from textual.geometry import Region
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.geometry import Size

    _Base = Widget
else:
    _Base = object


def _scrolls(widget: Widget) -> bool:
    styles = widget.styles
    return styles.overflow_x != "hidden" or styles.overflow_y != "hidden"


class LaidOutOnce(_Base):
    """Mixin: the sizes a layout pass gives do not ask for another layout pass (see the
    module docstring)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        old_size, old_container = getattr(self, "_size", None), getattr(self, "_container_size", None)
        if (
            layout
            and old_size is not None
            and old_container is not None
            and not (_scrolls(self) and (size != old_size or container_size != old_container))
        ):
            layout = False
        return super()._size_updated(size, virtual_size, container_size, layout)


class KeepsPaintedRows(LaidOutOnce):
    """Mixin (before the Textual widget class): a change of height keeps the painted rows
    that stay the same (see the module docstring)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        old = self._size
        cache: Any = getattr(self, "_styles_cache", None)
        rows = getattr(cache, "_cache", None)
        dirty = getattr(cache, "_dirty_lines", None)
        if (
            not rows
            or not isinstance(rows, dict)
            or not isinstance(dirty, set)
            or old.width != size.width
            or old.height == size.height
            or self._has_outline()
        ):
            return super()._size_updated(size, virtual_size, container_size, layout)
        kept_rows, kept_dirty = dict(rows), set(dirty)
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        if cache._cache is not rows or cache._dirty_lines is not dirty:
            return resized  # not the cache this was written for
        keep = min(old.height, size.height) - self.styles.gutter.bottom
        rows.update({y: strip for y, strip in kept_rows.items() if y < keep and y not in kept_dirty})
        # rows Textual marked dirty for the resize are painted again only from ``keep`` on
        dirty.intersection_update(range(keep, max(old.height, size.height)))
        dirty.update(kept_dirty)
        return resized

    def _has_outline(self) -> bool:
        outline = self.styles.outline
        return any(edge[0] not in ("", "none", "hidden") for edge in outline)


_HEIGHT_FREE_UNITS = frozenset({Unit.AUTO, Unit.CELLS})


def _heights_free(widget: Widget) -> bool:
    """No child's height can depend on ``widget``'s (see ``BlankRows.arrange``)."""
    styles = widget.styles
    if not styles.is_auto_height or styles.align_vertical != "top":
        return False
    free = _HEIGHT_FREE_UNITS
    for child in widget.children:
        child_styles = child.styles
        height, low, high = child_styles.height, child_styles.min_height, child_styles.max_height
        if (
            height is None
            or height.unit not in free
            or (low is not None and low.unit is not Unit.CELLS)
            or (high is not None and high.unit is not Unit.CELLS)
            or child_styles.is_docked
            or child_styles.is_split
            or child_styles.overlay == "screen"
        ):
            return False
    return True


class BlankRows(LaidOutOnce):
    """Mixin (before the Textual container class) for a container that draws nothing of its
    own: every row is the same blank, drawn once per width and style, and a frame hands the
    compositor that one row as many times as it shows rows (the same ``Strip``: the
    compositor's cuts of it are cached on it). Rows differ only with a top or bottom border
    or padding, an outline, keylines, a border title or a text selection: then Textual
    draws them."""

    _blank_row: tuple[object, Strip] | None = None

    def _uniform_rows(self) -> bool:
        try:
            selection = self.text_selection
        except NoScreen:  # drawn while it leaves its screen (a modal's background): Textual draws it
            return False
        styles = self.styles
        return (
            self.is_container
            and selection is None
            and str(styles.keyline[0]) == "none"
            and styles.padding.top == 0
            and styles.padding.bottom == 0
            and styles.border_top[0] in ("", "none", "hidden")
            and styles.border_bottom[0] in ("", "none", "hidden")
            and all(edge[0] in ("", "none", "hidden") for edge in styles.outline)
            and self._border_title is None
            and self._border_subtitle is None
        )

    def arrange(self, size: Size, optimal: bool = False) -> Any:
        """Arranged at height 0 when no child's height can depend on this container's (the
        container's height is its content's; each child's is ``auto`` or cells, neither
        docked nor split): Textual keys each child's box model by the size of its container,
        so when a growing block made the container taller every block beside it was measured
        again, each frame of a stream (issue 44); and the measure pass (``get_content_height``)
        and the compositor's pass now share one arrangement."""
        if size.height and _heights_free(self):
            size = size.with_height(0)
        return super().arrange(size, optimal)

    def render_lines(self, crop: Region) -> list[Strip]:
        if crop.height <= 1 or not self._uniform_rows():
            return super().render_lines(crop)
        # row 0 as Textual draws it (styles, left and right border and padding, filters)
        return super().render_lines(Region(crop.x, 0, crop.width, 1)) * crop.height

    def render_line(self, y: int) -> Strip:
        if not self._uniform_rows():
            return super().render_line(y)
        style = self.visual_style
        key = (self.size.width, style, self.background_colors)
        cached = self._blank_row
        if cached is None or cached[0] != key:
            # Textual renders the container's blank visual at its full height: one row of it
            strips = Visual.to_strips(self, self._render(), self.size.width, 1, style)
            cached = self._blank_row = (key, strips[0] if strips else Strip.blank(self.size.width, style.rich_style))
        return cached[1]


# ------------------------------------------------------------------ read-only facts

#: Notifications at the top right, not the bottom: Textual docks each screen's toast container
#: (``Screen._extend_compose``: a ``ToastRack`` of id ``textual-toastrack``) at the bottom, one row
#: up, where it covered the prompt's right half (at 80x24 all of what was typed after 40 columns,
#: for six seconds) and the newest output; at the top it covers the oldest rows on screen.
TOAST_RACK_ID = "textual-toastrack"
TOASTS_CSS = f"""
#{TOAST_RACK_ID} {{ dock: top; align: right top; margin-bottom: 0; }}
"""


def live_notifications(ui: object) -> list[Any]:
    """The app's notifications not yet expired, oldest first (``App._notifications``, Textual's
    ``Notifications``: iterating it drops the expired ones). The main screen draws them in its
    notice line (``widgets.notice_line``), in the layout: a toast covered what was under it."""
    notifications = getattr(ui, "_notifications", None)
    return list(notifications) if notifications is not None else []


def drop_notifications(ui: object, starting: str) -> int:
    """Take away the live notifications whose message starts with ``starting`` (a notice that
    became untrue: "The agent needs your answer" once it was answered) before their timeout;
    Textual's ``App._unnotify``. Returns how many went."""
    unnotify = getattr(ui, "_unnotify", None)
    if unnotify is None:
        return 0
    gone = [n for n in live_notifications(ui) if str(n.message).startswith(starting)]
    for notification in gone:
        unnotify(notification)
    return len(gone)


def stream_has_pending(stream: object) -> bool:
    """Whether a ``MarkdownStream`` holds text it has not handed to its ``Markdown`` yet
    (``MarkdownStream._pending``: the fragments written since its last update)."""
    return bool(getattr(stream, "_pending", None))


def app_driver(ui: object) -> Any:
    """The app's driver (``App._driver``; ``None`` headless or before it runs): the one way to
    write a control sequence (OSC 52, the window title) to the terminal."""
    return getattr(ui, "_driver", None)


def parse_input(text: str, debug: bool = False) -> list[Any]:
    """The events Textual's own input parser (``textual._xterm_parser.XTermParser``) makes of ``text``,
    as its driver would of the same bytes read from the terminal (a pending Esc included)."""
    from textual._xterm_parser import XTermParser

    parser = XTermParser(debug)
    return [*parser.feed(text), *parser.tick()]


def character_key(character: str) -> str:
    """The key name Textual gives a printed character (``textual.keys._character_to_key``: ``"!"``
    is ``"exclamation_mark"``), so a key map names keys as Textual's bindings do."""
    from textual.keys import _character_to_key

    return _character_to_key(character)


def resolve_lengths(natural: list[int], total: int, gutter: int, minimums: list[int]) -> list[int]:
    """Column widths as Textual's own ``textual._resolve.resolve`` gives a ``Markdown`` table's
    grid (expanding and shrinking to ``total`` cells), so ``flat_table`` draws the same columns."""
    from textual._resolve import resolve
    from textual.css.scalar import Scalar
    from textual.geometry import Size

    inner = Size(total, 0)
    resolved = resolve([Scalar.from_number(value) for value in natural], total, gutter, inner, inner,
                       expand=True, shrink=True, minimums=minimums)
    return [size for _offset, size in resolved]


def footer_key_class() -> Any:
    """Textual's widget of one footer key (``textual.widgets._footer.FooterKey``: not exported), which
    ``widgets.key_footer.KeyFooter`` yields as Textual's ``Footer`` does (its CSS styles it)."""
    from textual.widgets._footer import FooterKey

    return FooterKey


def footer_bindings_ready(footer: Widget) -> bool:
    """Whether Textual's ``Footer`` has had its screen's bindings yet (``Footer._bindings_ready``)."""
    return bool(getattr(footer, "_bindings_ready", False))


#: at most this many separate crops in one partial update (more: Textual's one crop around all)
MAX_CROPS = 6

#: at most this many cells of dirty rows painted in one screen update once the screen has been painted
#: (or a ``MAX_BANDS``-th of the screen, if that is more): a bigger change (a layout that moved
#: everything, the end of a flood scrolled into view) is painted in bands, one band a screen update
#: (``split_partial_updates``)
PAINT_CELLS = 2400
#: a change of the whole screen is painted in at most this many bands
MAX_BANDS = 4


def paint_budget(width: int, height: int) -> int:
    """The cells one screen update paints at most, for a screen of this size."""
    return max(PAINT_CELLS, -(-width * height // MAX_BANDS))


def paint_band(regions: list[Region], budget: int = PAINT_CELLS,
               start: int = 0) -> tuple[list[Region], list[Region], int] | None:
    """The dirty regions split into those painted now and those left for the next update, and the
    row the next band starts at; ``None`` when all of them fit in ``budget`` cells.

    Rows are taken from ``start`` down, then from the top (where the last band stopped: rows made
    dirty above it meanwhile wait for their turn, so no row waits for ever however often the rows
    above change), at least one row, as long as their spans add up to at most ``budget`` cells."""
    cells: dict[int, int] = {}
    for y, x1, x2 in _regions_to_spans(regions):
        cells[y] = cells.get(y, 0) + x2 - x1
    if sum(cells.values()) <= budget:
        return None
    rows = sorted(cells)
    ordered = [y for y in rows if y >= start] + [y for y in rows if y < start]
    taken: set[int] = set()
    total = 0
    for y in ordered:
        if taken and total + cells[y] > budget:
            break
        taken.add(y)
        total += cells[y]
    now: list[Region] = []
    later: list[Region] = []
    for region in regions:
        for top, bottom, painted in _row_runs(region.y, region.bottom, taken):
            part = Region(region.x, top, region.width, bottom - top)
            (now if painted else later).append(part)
    following = [y for y in ordered if y not in taken]
    if not following:  # (one row wider than the budget: painted alone, nothing left)
        return None
    return now, later, following[0]


def _row_runs(top: int, bottom: int, taken: set[int]) -> list[tuple[int, int, bool]]:
    """Rows ``top`` to ``bottom`` (excluded) as runs of rows in ``taken`` or not."""
    runs: list[tuple[int, int, bool]] = []
    for y in range(top, bottom):
        painted = y in taken
        if runs and runs[-1][2] is painted and runs[-1][1] == y:
            runs[-1] = (runs[-1][0], y + 1, painted)
        else:
            runs.append((y, y + 1, painted))
    return runs


def _regions_to_spans(regions: list[Region]) -> Any:
    from textual._compositor import Compositor

    return Compositor._regions_to_spans(regions)


def _crop_clusters(regions: list[Region]) -> list[Region]:
    """The dirty regions grouped into boxes that do not overlap (each box the union of its
    regions; rows of one column or cells of one row that touch are one box too)."""
    boxes = [region for region in regions if region]
    merged = True
    while merged and len(boxes) > 1:
        merged = False
        out: list[Region] = []
        for box in boxes:
            for index, other in enumerate(out):
                if box.overlaps(other) or (
                    (box.x, box.width) == (other.x, other.width) and box.grow((1, 0, 1, 0)).overlaps(other)
                ) or ((box.y, box.height) == (other.y, other.height) and box.grow((0, 1, 0, 1)).overlaps(other)):
                    out[index] = other.union(box)
                    merged = True
                    break
            else:
                out.append(box)
        boxes = out
    return boxes


def split_partial_updates(screen: object) -> bool:
    """Paint a screen's partial updates one crop per cluster of dirty regions.

    Textual's ``Compositor.render_partial_update`` renders every widget that meets the *box
    around all* dirty regions: a full-width row (the footer's keys at a run's start and end, the
    title) dirty in the same update as the answer makes that box the whole screen, so the thread
    list and everything else are drawn again though nothing of them changed (issue 44); and a
    widget is drawn when its *clip* (its container's area) meets the box, so the thread list was
    drawn for an update of the answer alone too. Here each cluster of regions gets its own crop,
    only the widgets whose visible part meets it are drawn, and of each crop's rendering only the
    cuts that meet it are kept (every widget that covers such a cut meets the crop and was drawn,
    front first, as Textual does), so the same cells go out. Needs ``Screen._compositor``,
    ``Compositor._dirty_regions``, ``._regions_to_spans``, ``._render_chops``, ``.cuts`` and
    ``textual._compositor.ChopsUpdate``; ``False`` (Textual's own update kept) when they are not
    there.

    Once the screen has been painted, an update whose dirty rows hold more than ``PAINT_CELLS``
    cells (or a quarter of the screen: ``paint_budget``; a layout that moved everything, the end of
    a flood scrolled into view: 20-30 ms of one loop turn at 120x40, issue 44.1c) paints a band of
    rows (``paint_band``: from where the last band stopped) and leaves the rest for the screen's
    next update, which it asks for (the screen in
    ``Screen._dirty_widgets``, ``check_idle``): one band a screen update, so no loop turn paints
    the whole screen, and keys and the stream are served between bands. Every region left is
    painted at the next update whatever happened meanwhile (painting a region again is always
    right); ``render_update(full=True)`` (a screenshot) paints all and leaves what is left."""
    compositor = getattr(screen, "_compositor", None)
    split = _split_crops_class()
    if split is None or type(compositor) is not split.__base__:
        return False
    compositor.__class__ = split
    if all(hasattr(screen, name) for name in ("_dirty_widgets", "check_idle", "call_later")):
        compositor._paint_left = _paint_left_of(screen, compositor)  # type: ignore[attr-defined]
    return True


def _paint_left_of(screen: Any, compositor: Any) -> Any:
    """What asks the screen for one more update while a band is left (the screen marked dirty
    with no region of its own: its update paints what is left). Called from within an update,
    whose end clears the screen's dirty widgets: the request comes after it, as a message."""
    ref = weakref.ref(screen)

    def again() -> None:
        live = ref()
        if live is not None and compositor._left:
            live._dirty_widgets.add(live)
            live.check_idle()

    def later() -> None:
        live = ref()
        if live is not None:
            live.call_later(again)

    return later


_SPLIT_CROPS: list[type] = []


def _split_crops_class() -> type | None:
    """``Compositor`` with ``render_partial_update`` one crop per cluster (made once)."""
    if _SPLIT_CROPS:
        return _SPLIT_CROPS[0]
    try:
        from textual._compositor import ChopsUpdate, Compositor
    except ImportError:  # pragma: no cover - a Textual without it: its own update
        return None
    if not all(hasattr(Compositor, name) for name in ("_regions_to_spans", "_render_chops", "cuts")) or not \
            isinstance(getattr(Compositor, "visible_widgets", None), property):
        return None

    textual_visible = Compositor.visible_widgets.fget  # type: ignore[attr-defined]

    class SplitCrops(Compositor):
        #: while a crop is rendered: only the widgets whose visible part meets it
        _only: Region | None = None
        #: dirty regions left for the next update (a big change painted in bands: ``paint_band``)
        _left: tuple[Region, ...] = ()
        #: whether the screen has had an update (its first is painted whole)
        _painted = False
        #: the row the next band starts at (where the last one stopped)
        _band_start = 0
        #: asks the screen for one more update (``split_partial_updates``; ``None``: no bands)
        _paint_left: Any = None

        def render_update(self, full: bool = False, screen_stack: Any = None, simplify: bool = False) -> Any:
            if full:  # (asked for the whole screen: a screenshot; what is left stays left)
                return super().render_update(full, screen_stack, simplify)
            if self._left:
                self._dirty_regions.update(self._left)
                self._left = ()
            if self._painted and self._paint_left is not None and self._dirty_regions:
                screen_region = self.size.region
                band = paint_band([region.intersection(screen_region) for region in self._dirty_regions],
                                  paint_budget(*self.size), self._band_start)
                if band is not None:
                    now, later, self._band_start = band
                    self._dirty_regions.clear()
                    self._dirty_regions.update(now)
                    self._left = tuple(later)
                    self._paint_left()
            self._painted = True
            return super().render_update(full, screen_stack, simplify)

        @property
        def visible_widgets(self) -> dict[Widget, tuple[Region, Region]]:
            widgets: dict[Widget, tuple[Region, Region]] = textual_visible(self)
            only = self._only
            if only is None:
                return widgets
            meets = only.overlaps
            return {widget: (region, clip) for widget, (region, clip) in widgets.items()
                    if meets(region.intersection(clip))}

        def render_partial_update(self) -> Any:
            screen_region = self.size.region
            regions = [region.intersection(screen_region) for region in self._dirty_regions]
            clusters = _crop_clusters(regions)
            if not clusters or len(clusters) > MAX_CROPS:
                return super().render_partial_update()
            update_regions = self._dirty_regions.copy()
            self._dirty_regions.clear()
            spans = list(self._regions_to_spans(update_regions))
            cuts = self.cuts
            chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
            for crop in clusters:
                lines = {y for y, _, _ in self._regions_to_spans(r for r in regions if r and crop.contains_region(r))}
                self._only = crop
                try:
                    part = self._render_chops(crop, lines.__contains__)
                finally:
                    self._only = None
                x1, x2 = crop.x, crop.right
                for y in lines:
                    line = chops[y]
                    for (x, strip), end in zip(part[y].items(), cuts[y][1:], strict=False):
                        if strip is not None and x < x2 and end > x1 and line[x] is None:
                            line[x] = strip
            return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in cuts])

    _SPLIT_CROPS.append(SplitCrops)
    return SplitCrops


def keep_reflow_baseline(screen: object) -> bool:
    """A layout pass compares with the last layout pass, so every widget it places anew or resizes
    gets its ``Resize`` and its cells are painted again.

    Textual's compositor compares a new layout (``Compositor.reflow``) with ``_full_map``. An
    update that is not a layout (a widget just mounted is dirty, not yet placed) marks that map
    stale, and the next ``find_widget`` (any widget's ``size`` or ``region`` read, Textual's own
    ``_set_dirty`` among them) builds it again, lazily, from the widgets as they are *now*: the
    next layout pass then finds the new widget already there, at the same size. It sends it no
    ``Resize`` nor ``Show`` and marks none of its cells dirty. Seen: an approval card mounted in
    that gap never had a ``Resize``, so its answer buttons were never fitted to its width (the
    last one cut); and cells that changed were left as they were until something repainted them.
    Here the lazily built map serves lookups only: the layout pass compares with the map of the
    layout pass before. Needs ``Screen._compositor``, ``Compositor.full_map`` (a property),
    ``.reflow``, ``._full_map`` and ``._full_map_invalidated``; ``False`` (Textual's own
    behaviour) when they are not there."""
    compositor = getattr(screen, "_compositor", None)
    if compositor is None or not hasattr(compositor, "_full_map_invalidated") or \
            not hasattr(compositor, "_full_map"):
        return False
    keeps = _keeps_baseline_class(type(compositor))
    if keeps is None:
        return False
    compositor.__class__ = keeps
    return True


_KEEPS_BASELINE: dict[type, type] = {}


def _keeps_baseline_class(base: type) -> type | None:
    """``base`` (Textual's ``Compositor`` or a subclass here) whose layout pass compares with the
    layout pass before (made once per base)."""
    if base in _KEEPS_BASELINE or base in _KEEPS_BASELINE.values():
        return _KEEPS_BASELINE.get(base, base)
    full_map = getattr(base, "full_map", None)
    if not isinstance(full_map, property) or full_map.fget is None or not callable(getattr(base, "reflow", None)):
        return None
    textual_full_map = full_map.fget

    class KeepsReflowBaseline(base):
        #: the map of the last layout pass, while ``_full_map`` is one built lazily since
        _reflowed: Any = None

        @property
        def full_map(self) -> Any:
            if self._full_map_invalidated and self._reflowed is None:
                self._reflowed = self._full_map
            return textual_full_map(self)

        def reflow(self, parent: Widget, size: Size) -> Any:
            if self._reflowed is not None:
                self._full_map, self._reflowed = self._reflowed, None
            return super().reflow(parent, size)

    KeepsReflowBaseline.__name__ = f"KeepsReflowBaseline{base.__name__}"
    _KEEPS_BASELINE[base] = KeepsReflowBaseline
    return KeepsReflowBaseline
