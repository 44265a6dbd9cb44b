"""Finished Markdown drawn by one widget.

Textual's ``Markdown`` mounts a widget per block: a paragraph is one, a list item four
(``Horizontal``, bullet, ``Vertical``, paragraph), a fence two. Textual's layout cost grows
with the number of widgets, so a long finished answer made of hundreds of them makes every
relayout of the transcript slow (the stalls of ``benchmarks/tui_ingest.py``).

``FlatMarkdown`` draws the same document with one widget. It parses with the same
markdown-it "gfm-like" parser and lays the blocks out as Textual's ``Markdown`` does inside
our stream-layout ``LiveMarkdown``: same word wrapping, collapsed margins, bullets, heading,
inline and fence styles. So a chunk that stops streaming switches from ``LiveMarkdown`` to
``FlatMarkdown`` with no visible change (``tests/tui_parts/test_flat_markdown.py`` compares
the two cell by cell).

Only a subset is drawn flat: paragraphs, headings, bullet and ordered lists (nested), code
blocks and top-level tables (``flat_table.py``). ``parse_document`` (``markdown_document.py``)
returns ``None`` for
anything else (block quotes, rules, a table in a list), and such a chunk stays a
``LiveMarkdown``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.color import Color
from textual.content import Content, Span
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual
from textual.widget import Widget

from ..textual_internals import KeepsPaintedRows
from .flat_table import Table, lay_table
from .markdown_document import (
    NO_JOINS,
    Block,
    Document,
    Fence,
    Heading,
    Joins,
    MarkdownList,
    Paragraph,
    parse_document,
)

if TYPE_CHECKING:
    from textual.app import App

# --------------------------------------------------------------------------- layout


_BLANK = Content("")
#: (margin top, margin bottom, lines) of a laid-out block
_Laid = tuple[int, int, list[Content]]


@dataclass(frozen=True, slots=True)
class _Context:
    width: int
    dark: bool
    ansi: bool
    #: code blocks whose lines are cut at the right edge (Markdown scrolls them), and
    #: tables too narrow to draw here
    clipped: list[Fence | Table] = field(default_factory=list)


def _stack(parts: list[_Laid]) -> list[Content]:
    """Blocks one under the other, margins collapsed (Textual's vertical and stream
    layouts): the first top margin and the last bottom margin count in full."""
    lines: list[Content] = []
    previous: int | None = None
    for top, bottom, block_lines in parts:
        gap = top if previous is None else max(top, previous)
        lines.extend([_BLANK] * gap)
        lines.extend(block_lines)
        previous = bottom
    if previous:
        lines.extend([_BLANK] * previous)
    return lines


def _full_width(line: Content, width: int, style: str) -> Content:
    """``line`` padded to ``width``, ``style`` under everything (a block's own background)."""
    if line.cell_length < width:
        line = line.pad_right(width - line.cell_length)
    return line.stylize_before(style)


def _heading_lines(lines: list[Content], width: int, level: int) -> list[Content]:
    """A heading's lines: the text in the heading style, the rest of the width in the
    heading's background only (as the heading widget fills its region). An H1 is
    ``content-align: center``: its block of lines moves right by half the free width of
    its longest line."""
    style, fill = f".flat--h{level}", f".flat--h{level}-fill"
    widest = max((line.cell_length for line in lines), default=0)
    left = max(0, (width - widest) // 2) if level == 1 else 0
    out = []
    for line in lines:
        line = line.stylize_before(style)
        if left:
            line = Content(" " * left).stylize(fill) + line
        right = width - line.cell_length
        if right > 0:
            line = line + Content(" " * right).stylize(fill)
        out.append(line)
    return out


def _lay_block(block: Block, ctx: _Context, top_level: bool, in_list: bool) -> _Laid:
    width = max(1, ctx.width)
    if isinstance(block, Paragraph):
        return (0, 1 if top_level else 0, block.content.wrap(width))
    if isinstance(block, Heading):
        lines = _heading_lines(block.content.wrap(width), width, block.level)
        return (2, 1, lines) if block.level <= 2 else (1, 1, lines)
    if isinstance(block, Fence):
        return _lay_fence(block, ctx)
    if isinstance(block, Table):
        # (each line is ``width`` wide, the table's own background under it)
        table_lines = lay_table(block, width, dark=ctx.dark, base=".flat--table")
        if table_lines is None:
            ctx.clipped.append(block)
            return (0, 1, [])
        return (0, 1, table_lines)
    return _lay_list(block, ctx, top_level, in_list)


def _lay_fence(fence: Fence, ctx: _Context) -> _Laid:
    """A code block as ``MarkdownFence`` draws it: a ``Label`` with padding (1, 2) (ANSI
    themes: (1, 0)) that is as wide as the longest line, wrapped at that width, in a
    fence scrolled to its left edge."""
    key = (ctx.dark, ctx.ansi)
    code = fence.highlighted.get(key)
    if code is None:
        code = fence.highlighted[key] = _highlight(fence.code, fence.lexer, dark=ctx.dark, ansi=ctx.ansi)
    indent = 0 if ctx.ansi else 2
    width = ctx.width
    # the Label's width: its longest line (tabs as the Label measures them), at least the fence's
    longest = max((cell_len(line) for line in code.plain.split("\n")), default=0)
    label_width = max(width - 2 * indent, longest, 1)
    if longest > width - indent:
        ctx.clipped.append(fence)
    lines = [_full_width(_BLANK, width, ".flat--fence")]
    for wrapped in code.wrap(label_width):
        line = wrapped.pad_left(indent) if indent else wrapped
        if line.cell_length > width:
            line = line.truncate(width)
        lines.append(_full_width(line, width, ".flat--fence"))
    lines.append(_full_width(_BLANK, width, ".flat--fence"))
    return (0, 0, lines) if ctx.ansi else (1, 1, lines)


def _highlight(code: str, lexer: str, *, dark: bool, ansi: bool) -> Content:
    from textual.highlight import ANSIDarkHighlightTheme, ANSILightHighlightTheme, HighlightTheme, highlight

    theme = (ANSIDarkHighlightTheme if dark else ANSILightHighlightTheme) if ansi else HighlightTheme
    return highlight(code, language=lexer or None, theme=theme)


def list_numbers(block: MarkdownList, start: int | None = None) -> list[str]:
    """The numbers of an ordered list as drawn ('8. ', '9. ', '10. ')."""
    items = block.items
    if start is None:
        start = 1
        if items:
            try:
                start = int(items[0].bullet)
            except ValueError:
                pass
    return [f"{number}. " for number in range(start, start + len(items))]


def _lay_list(
    block: MarkdownList, ctx: _Context, top_level: bool, in_list: bool, start: int | None = None, width: int = 0
) -> _Laid:
    items = block.items
    symbols: list[str]
    if block.ordered:
        numbers = list_numbers(block, start)
        size = max(width, max((len(number) for number in numbers), default=0))
        symbols = [number.rjust(size + 1) for number in numbers]
    else:
        symbols = [item.bullet for item in items]
    lines: list[Content] = []
    for item, symbol in zip(items, symbols, strict=True):
        bullet = Content.styled(symbol, ".flat--bullet")
        indent = bullet.cell_length
        inner = _Context(max(1, ctx.width - indent), ctx.dark, ctx.ansi, ctx.clipped)
        body = _stack([_lay_block(child, inner, False, True) for child in item.blocks])
        if not body:
            lines.append(bullet)
            continue
        lines.append(bullet + body[0])
        pad = Content(" " * indent)
        lines.extend(pad + line if line else _BLANK for line in body[1:])
    bottom = 0 if in_list else 1
    return (0, bottom, lines)


def lay_out(
    document: Document, width: int, *, dark: bool = True, ansi: bool = False, joins: Joins = NO_JOINS
) -> tuple[list[Content], bool]:
    """The document's lines at ``width`` cells (each at most ``width`` wide), and whether a code line
    is cut at the right edge (Textual's Markdown lets the reader scroll such a code block sideways; a
    flat one cannot). ``joins``: the document is a chunk of a longer text (see ``Joins``)."""
    ctx = _Context(max(1, width), dark, ansi)
    if joins is NO_JOINS:
        return _stack([_lay_block(block, ctx, True, False) for block in document]), bool(ctx.clipped)
    parts: list[_Laid] = []
    last = len(document) - 1
    for index, block in enumerate(document):
        first_joined = index == 0 and joins.continues
        last_joined = index == last and joins.open_end
        if isinstance(block, MarkdownList) and (first_joined or last_joined):
            top, bottom, lines = _lay_list(
                block, ctx, True, False, joins.start if first_joined else None, joins.number_width
            )
        else:
            top, bottom, lines = _lay_block(block, ctx, True, False)
        if isinstance(block, Fence) and lines:
            if first_joined:
                lines = lines[1:]
            if last_joined:
                lines = lines[:-1]
        if first_joined:
            top = 0
        if last_joined:
            bottom = 0
        parts.append((top, bottom, lines))
    return _stack(parts), bool(ctx.clipped)


def joined_number_width(document: Document, joins: Joins) -> int:
    """How wide the numbers of the ordered list(s) this chunk shares with its neighbours
    are (0: it shares none)."""
    widths = [0]
    last = len(document) - 1
    for index in {0, last} if document else ():
        block = document[index]
        first_joined = index == 0 and joins.continues
        if not isinstance(block, MarkdownList) or not block.ordered:
            continue
        if first_joined or (index == last and joins.open_end):
            numbers = list_numbers(block, joins.start if first_joined else None)
            widths.append(max((len(number) for number in numbers), default=0))
    return max(widths)


# --------------------------------------------------------------------------- drawing


def _resolve(content: Content, styles: dict[str, Style]) -> Content:
    """``content`` with its block style names replaced by resolved styles."""
    spans = content.spans
    if not spans:
        return content
    return Content(
        content.plain,
        [Span(s.start, s.end, styles.get(s.style, s.style)) if isinstance(s.style, str) else s for s in spans],
    )


def _solid(strip: Strip, y: int) -> Strip:
    """``strip`` without empty segments (Textual draws a blank line as one run of cells),
    its text-selection offsets on row ``y`` of the document (a line drawn as part of a
    window of lines has the row it had in the window)."""
    segments: list[Segment] = []
    changed = False
    for segment in strip:
        text, style, control = segment
        if not text:
            changed = True
            continue
        if style is not None and style._meta is not None:
            offset = style.meta.get("offset")
            if offset is not None and offset[1] != y:
                segment = Segment(text, style + RichStyle.from_meta({"offset": (offset[0], y)}), control)
                changed = True
        segments.append(segment)
    return Strip(segments, strip.cell_length) if changed else strip


# --------------------------------------------------------------------------- the widget

def style_markup(
    name: str, variables: dict[str, str], *, dark: bool, ansi: bool
) -> str:
    """The style (markup) a style name of the layout stands for: the rules of Textual's
    Markdown blocks (``Markdown``, ``MarkdownBlock``, ``MarkdownH1``..., ``MarkdownBullet``,
    ``MarkdownFence``) for the current theme."""
    if name == ".em":
        return "italic"
    if name == ".strong":
        return "bold"
    if name == ".s":
        return "strike"
    if name == ".code_inline":
        markup = "$text-warning 95% on $warning 10%" if dark else "$text-error 95% on $error 5%"
        return markup.split(" on ")[0] + " on ansi_default" if ansi else markup
    if name == ".flat--th":
        return "$primary"
    if name == ".flat--keyline":
        return "$foreground 20%"
    if name == ".flat--table":
        return "" if dark else "on white 30%"
    if name == ".flat--bullet":
        return "$text-primary" if dark else "$text-secondary"
    if name == ".flat--fence":
        if ansi:
            return "rgb(210,210,210)"
        return "rgb(210,210,210) on black 10%" if dark else "rgb(210,210,210) on white 30%"
    if name.startswith(".flat--h"):
        level = name[8]
        if name.endswith("-fill"):
            return f"on $markdown-h{level}-background"
        text_style = variables.get(f"markdown-h{level}-text-style", "")
        text_style = "" if text_style in ("", "none") else f" {text_style}"
        return f"$markdown-h{level}-color{text_style} on $markdown-h{level}-background"
    raise KeyError(name)


#: the style names a layout uses
STYLE_NAMES = (
    ".em",
    ".strong",
    ".s",
    ".code_inline",
    ".flat--bullet",
    ".flat--fence",
    ".flat--th",
    ".flat--keyline",
    ".flat--table",
    *(f".flat--h{level}" for level in range(1, 7)),
    *(f".flat--h{level}-fill" for level in range(1, 7)),
)
#: id of the theme object, ANSI -> (the theme, style name -> style); shared by every
#: FlatMarkdown (a theme file that is reloaded is a new theme object)
_THEME_STYLES: dict[tuple[int, bool], tuple[object, dict[str, Style]]] = {}


def theme_styles(ui: App[object]) -> dict[str, Style]:
    """Every style name of the layout, resolved for the app's current theme."""
    theme, ansi = ui.current_theme, ui.native_ansi_color
    cached = _THEME_STYLES.get((id(theme), ansi))
    if cached is not None and cached[0] is theme:
        return cached[1]
    variables = ui.theme_variables
    styles = {name: Style.parse(style_markup(name, variables, dark=theme.dark, ansi=ansi)) for name in STYLE_NAMES}
    # inline code resolves as MarkdownBlock's component class does (a partial style: its
    # translucent background is blended on its own)
    code = styles[".code_inline"]
    if code.background is not None and code.background.a < 1:
        partial = Color(0, 0, 0, 0).blend(code.background, 1 - code.background.a)
        styles[".code_inline"] = Style(partial, code.foreground)
    if len(_THEME_STYLES) > 32:
        _THEME_STYLES.clear()
    _THEME_STYLES[(id(theme), ansi)] = (theme, styles)
    return styles


class FlatMarkdown(KeepsPaintedRows, Widget):
    """A finished Markdown document in one widget (see the module docstring).

    The same interface as ``LiveMarkdown`` (``target``, ``set_target``, ``flush``,
    ``finish``, ``settled``), so a ``ChunkedMarkdown`` can hold either. Its styles come
    from the theme by name (``style_markup``), not from component classes, which would
    make mounting one cost milliseconds.
    """

    ALLOW_SELECT = True
    #: lines drawn at once by ``render_line`` (about a screen)
    DRAW_LINES = 40

    DEFAULT_CSS = """
    FlatMarkdown {
        width: 1fr;
        height: auto;
        color: $foreground;
        text-wrap: nowrap;
        text-overflow: clip;
    }
    """

    @dataclass
    class Unsupported(Message):
        """The document needs the Markdown widget: a deferred one turned out to hold a
        table, quote or rule, or a code line is wider than the widget (Markdown scrolls
        a code block sideways)."""

        widget: FlatMarkdown

    def __init__(
        self,
        content: str = "",
        document: Document | None = None,
        *,
        classes: str | None = None,
        defer: bool = False,
        joins: Joins = NO_JOINS,
    ) -> None:
        """``document``: ``parse_document(content)`` when the caller has it already.
        ``defer``: parse in a worker thread once mounted (nothing is drawn until then;
        ``Unsupported`` is posted if the text needs the Markdown widget). Otherwise
        raises ``ValueError`` if the content cannot be drawn flat."""
        super().__init__(classes=classes)
        self.joins = joins
        if document is None and not defer:
            document = parse_document(joins.head + content)
            if document is None:
                raise ValueError("this Markdown needs the Markdown widget (tables, quotes or rules)")
        self._target = content
        self._document: Document | None = document
        self._lines: tuple[tuple[int, bool, bool], list[Content]] | None = None
        self._layouts = 0
        self._joined: tuple[object, Content] | None = None
        self._resolved: dict[str, Style] | None = None
        self._clipped = False
        #: drawn lines (``render_line``) and what they were drawn for
        self._drawn: dict[int, Strip] = {}
        self._drawn_key: object = None
        #: for ``ChunkedMarkdown`` (a flat chunk never streams)
        self.stream_writes = 0

    # ------------------------------------------------------------------ LiveMarkdown's interface
    @property
    def target(self) -> str:
        return self._target

    @property
    def source(self) -> str:
        return self._target

    @property
    def settled(self) -> bool:
        """Drawn (a deferred document is parsed)."""
        return self._document is not None

    async def on_mount(self) -> None:
        if self._document is None:
            # a long document is parsed off the event loop (markdown-it is pure Python)
            text = self._target
            document = await asyncio.to_thread(parse_document, self.joins.head + text)
            if text != self._target or self._document is not None:
                return  # set_target drew something newer meanwhile
            if document is None:
                self.post_message(self.Unsupported(self))
                return
            self._document = document
            self._lines = self._joined = None
            self.refresh(layout=True)

    def set_target(self, content: str, document: Document | None = None) -> bool:
        """Show ``content`` (drawn at once). ``False`` if it is what is shown already;
        ``ValueError`` if it cannot be drawn flat (see ``parse_document``)."""
        if content == self._target:
            return False
        if document is None:
            document = parse_document(self.joins.head + content)
            if document is None:
                raise ValueError("this Markdown needs the Markdown widget (tables, quotes or rules)")
        self._target = content
        self._document = document
        self._joined = None
        self._relay()
        return True

    def _relay(self) -> None:
        """Lay the new document out at once where the old one was laid out, and repaint
        only the lines from the first that changed (a streaming chunk grows at its end);
        layout only when the line count changed (the rows above stay painted:
        ``KeepsPaintedRows``)."""
        old, width = self._lines, self.size.width
        if old is None or width <= 0 or self._document is None or old[0] != self._state(width):
            self._lines = None
            self.refresh(layout=True)
            return
        old_lines = old[1]
        self._lines = None
        lines = self.lines(width)
        first = 0
        for first, (a, b) in enumerate(zip(old_lines, lines, strict=False)):  # noqa: B007
            # (a table's unchanged rows are the same objects; ``Content ==`` compares text only)
            if a is not b and (a.plain != b.plain or a.spans != b.spans):
                break
        else:
            first = min(len(old_lines), len(lines))
        # drawn strips of the unchanged lines above stay valid
        drawn_key = self._drawn_key
        if isinstance(drawn_key, tuple) and drawn_key[0] == self._layouts - 1:
            self._drawn = {y: strip for y, strip in self._drawn.items() if y < first}
            self._drawn_key = (self._layouts, *drawn_key[1:])
        changed = max(len(lines), len(old_lines)) - first
        if len(lines) != len(old_lines):
            self.refresh(Region(0, first, width, changed), layout=True)
        elif changed > 0:
            self.refresh(Region(0, first, width, changed))

    def set_joins(self, joins: Joins) -> None:
        """How this chunk meets its neighbours changed (the head must stay the same)."""
        if joins != self.joins:
            self.joins = joins
            self._lines = self._joined = None
            self.refresh(layout=True)

    @property
    def document(self) -> Document | None:
        return self._document

    async def flush(self) -> None:
        """Nothing to do: ``set_target`` draws at once."""

    def finish(self) -> None:
        """Nothing to stop."""

    # ------------------------------------------------------------------ drawing
    def _state(self, width: int) -> tuple[int, bool, bool]:
        try:
            app = self.app
        except Exception:  # noqa: BLE001 - not in an app yet: the defaults
            return width, True, False
        return width, app.current_theme.dark, app.native_ansi_color

    def lines(self, width: int) -> list[Content]:
        """The document laid out at ``width`` cells (cached)."""
        key = self._state(width)
        cached = self._lines
        if cached is not None and cached[0] == key:
            return cached[1]
        if self._document is None:
            return []  # parsing (deferred)
        lines, clipped = lay_out(self._document, width, dark=key[1], ansi=key[2], joins=self.joins)
        self._lines = (key, lines)
        self._layouts += 1
        if clipped and not self._clipped:
            self._clipped = True  # a code line is wider than this: Markdown can scroll it
            self.post_message(self.Unsupported(self))
        return lines

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines(width)) if width > 0 else 0

    def _block_styles(self) -> dict[str, Style]:
        """The style names of the layout, resolved for the current theme."""
        styles = self._resolved
        if styles is None:
            styles = self._resolved = theme_styles(self.app)
        return styles

    def render(self) -> Content:
        """The whole document (text selection draws and reads it; otherwise lines are
        drawn one by one by ``render_line``)."""
        width = self.content_size.width
        if width <= 0:
            return _BLANK
        lines = self.lines(width)
        styles = self._block_styles()
        key = (self._layouts, id(styles))
        joined = self._joined
        if joined is None or joined[0] != key:
            joined = self._joined = (key, _resolve(Content("\n").join(lines), styles))
        return joined[1]

    def render_line(self, y: int) -> Strip:
        """Line ``y``. Lines are drawn ``DRAW_LINES`` at a time from ``y`` on, so a long
        document draws little more than its visible part (Textual caches drawn lines)."""
        if self.text_selection is not None:
            return _solid(super().render_line(y), y)  # the selection is drawn over the whole text
        width = self.size.width
        lines = self.lines(width) if width > 0 else []
        if not 0 <= y < len(lines):
            return Strip.blank(width, self.visual_style.rich_style)
        style = self.visual_style
        key = (self._layouts, width, style, id(self._block_styles()))
        if key != self._drawn_key:
            self._drawn_key = key
            self._drawn = {}
        strip = self._drawn.get(y)
        if strip is None:
            end = min(len(lines), y + self.DRAW_LINES)
            window = _resolve(Content("\n").join(lines[y:end]), self._block_styles())
            strips = Visual.to_strips(self, window, width, end - y, style)
            for index, drawn in enumerate(strips):
                self._drawn[y + index] = _solid(drawn, y + index)
            strip = self._drawn.get(y) or Strip.blank(width, style.rich_style)
        return strip

    def notify_style_update(self) -> None:
        self._resolved = None
        # a theme switch may change dark/ANSI (fence highlighting and margins)
        cached = self._lines
        if cached is not None and cached[0] != self._state(cached[0][0]):
            self._lines = self._joined = None
            self.refresh(layout=True)
        super().notify_style_update()

    def action_link(self, href: str) -> None:
        """Links in agent output are not opened (as in ``LiveMarkdown``)."""
