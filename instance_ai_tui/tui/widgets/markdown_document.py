"""A Markdown text as the blocks ``FlatMarkdown`` draws.

Parsed with the same markdown-it "gfm-like" parser as Textual's ``Markdown``; inline text
becomes ``Content`` with the span styles ``MarkdownBlock`` gives it. ``parse_document``
returns ``None`` for anything only ``Markdown`` draws (block quotes, rules, a table in a
list item), and the caller keeps ``Markdown`` for that text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.content import Content, Span
from textual.style import Style

from .flat_table import Table, TableBuilder

if TYPE_CHECKING:
    from collections.abc import Callable

    from markdown_it import MarkdownIt
    from markdown_it.token import Token


#: Textual's ``Markdown.BULLETS``: the unordered bullet by nesting depth
BULLETS = ("• ", "▪ ", "‣ ", "⭑ ", "◦ ")
#: block tokens that hold nothing ``Markdown`` would draw
_SKIPPED = frozenset({"html_block"})
_SPACES = re.compile(r"\s+")


# --------------------------------------------------------------------------- the document


@dataclass(slots=True)
class Paragraph:
    content: Content = field(default_factory=Content)


@dataclass(slots=True)
class Heading:
    level: int
    content: Content = field(default_factory=Content)


@dataclass(slots=True)
class Fence:
    code: str
    lexer: str
    #: (dark, ansi) -> the highlighted code
    highlighted: dict[tuple[bool, bool], Content] = field(default_factory=dict)


@dataclass(slots=True)
class ListItem:
    #: the ordered item's number as written, or the unordered bullet
    bullet: str
    ordered: bool
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class MarkdownList:
    ordered: bool
    items: list[ListItem] = field(default_factory=list)


Block = Paragraph | Heading | Fence | MarkdownList | Table
Document = list[Block]


@dataclass(frozen=True, slots=True)
class Joins:
    """How a chunk of a longer text meets its neighbours when a list or a code block runs
    across chunks (``ChunkedMarkdown`` splits inside them): the pieces then draw what the
    whole block draws.

    ``head``: text parsed before the chunk's own (a continued code block's opening fence).
    ``continues``: the first block continues the previous chunk's last block (no top
    margin; a code block without its top padding line). ``start``: the number of the
    first item of a continued ordered list. ``open_end``: the last block continues in the
    next chunk (no bottom margin; a code block without its bottom padding line).
    ``number_width``: the least width of the numbers of an ordered list at either edge
    (the whole list's numbers are as wide as its last one)."""

    head: str = ""
    continues: bool = False
    start: int | None = None
    open_end: bool = False
    number_width: int = 0


NO_JOINS = Joins()

_parser_instance: MarkdownIt | None = None
_block_parser_instance: MarkdownIt | None = None
#: the core rules that work inside blocks (a block-only parse leaves inline tokens unparsed)
_INLINE_RULES = ["inline", "linkify", "replacements", "smartquotes", "text_join"]
#: a line that may hold what only ``Markdown`` draws: a block quote or a thematic break
#: (after any list markers), or a table row (any "|")
_MAYBE_MARKDOWN_ONLY = re.compile(
    r"^[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*(?:>|([-*_])(?:[ \t]*\1){2,}[ \t]*$)|\|", re.MULTILINE
)


def markdown_parser(inline: bool = True) -> MarkdownIt:
    """The markdown-it "gfm-like" parser ``Markdown`` uses by default; ``inline=False``: the
    same parser with the inline rules off (block structure only)."""
    global _parser_instance, _block_parser_instance
    if _parser_instance is None or _block_parser_instance is None:
        from markdown_it import MarkdownIt

        _parser_instance = MarkdownIt("gfm-like")
        _block_parser_instance = MarkdownIt("gfm-like").disable(_INLINE_RULES, ignoreInvalid=True)
    return _parser_instance if inline else _block_parser_instance


def drawn_flat(source: str) -> bool:
    """``parse_document(source) is not None``, at a fraction of the cost: text with no line
    that could start a block quote, a rule or a table is drawn flat; otherwise only its
    block structure is parsed (what makes it Markdown-only is never inline)."""
    if _MAYBE_MARKDOWN_ONLY.search(source) is None:
        return True
    return parse_document(source, inline=False) is not None


#: text that makes the parsers compile every regular expression they compile lazily (links,
#: e-mail addresses, tables, ...): 60 ms of ``re`` work on first use, done in a background
#: thread at start (``tui.startup.warm_up_markdown``) instead of in the middle of a stream
WARM_UP = (
    "# Warm *up*\n\nA [link](http://example.com/a), http://example.com/a?b=1 https://example.net ftp://example.org "
    "//example.com mailto:me@example.com me@example.com www.example.org, ~~old~~ `code` "
    "**bold** _em_ (c) -- \"quoted\"\n\n- item\n  1. one\n\n> quote\n\n---\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n"
    "```json\n{}\n```\n\n    indented\n\n<div>html</div>\n"
)


def warm_up() -> None:
    """Compile what the parsers compile lazily (see ``WARM_UP``): one parse runs the block
    parser over it and the whole parser over each inline text."""
    parse_document(WARM_UP)


#: inline text (a paragraph's, a heading's, a table cell's) -> its ``Content``
_INLINE_CACHE: dict[str, Content] = {}
INLINE_CACHE_SIZE = 4096


def _cached_inline(token: Token) -> Content:
    """``inline_content`` of an inline token the block-only parser left unparsed, parsed
    once per distinct text: a growing document re-parsed at every frame re-parses only its
    new paragraphs and items (inline parsing is most of a parse)."""
    text = token.content
    content = _INLINE_CACHE.get(text)
    if content is None:
        content = _content_of(markdown_parser().parseInline(text)[0].children)
        if len(_INLINE_CACHE) >= INLINE_CACHE_SIZE:
            _INLINE_CACHE.clear()
        _INLINE_CACHE[text] = content
    return content


def parse_document(
    source: str, *, inline: bool = True, grown_from: tuple[str, Document] | None = None
) -> Document | None:
    """The blocks of ``source``, or ``None`` if it uses something drawn only by
    Textual's ``Markdown`` widget (block quotes, horizontal rules, a table in a list, ...).
    ``inline=False``: the blocks' inline text is left empty (the same blocks, or ``None``,
    for a fraction of the cost).

    The blocks are parsed first; each block's inline text is parsed on its own (and kept:
    ``_cached_inline``), which gives the tokens a whole parse gives, except where link
    reference definitions (``[id]: url``) are in the text: their links need the whole
    parse's references, and such a text is parsed whole.

    ``grown_from``: an earlier text that ``source`` continues and its document. When that
    document ends with a table, only the table's last row and what follows are parsed
    again (``_grow_table``): a table streamed row by row costs a row per frame, not the
    whole table."""
    if grown_from is not None and inline:
        grown = _grow_table(source, *grown_from)
        if grown is not None:
            return grown
    env: dict[str, object] = {}
    tokens = markdown_parser(inline=False).parse(source, env)
    text_of = _cached_inline
    if not inline:
        text_of = inline_content  # (no children: empty)
    elif env.get("references"):
        tokens, text_of = markdown_parser().parse(source), inline_content
    return _document_of(tokens, text_of)


#: more cells than this and a table is parsed whole (markdown-it caps the empty cells it
#: fills in short rows at 65,536 per table, counted from the table's start)
_GROW_CELLS = 0x8000


def _line_start(source: str, line: int, start: int = 0, from_line: int = 0) -> int:
    """The offset of line ``line`` (counting from ``from_line`` at offset ``start``), or -1."""
    pos = start
    for _ in range(line - from_line):
        pos = source.find("\n", pos) + 1
        if pos == 0:
            return -1
    return pos


def _grow_table(source: str, old_source: str, old: Document) -> Document | None:
    """``parse_document(source)`` from the document of ``old_source``, which ``source``
    continues and which ends with a table, or ``None`` (parse it whole).

    GFM parses a table's body line by line, each row on its own (its cells, or the end of
    the table: a blank line, a line that starts another block, an indented one), and blocks
    that end before the table cannot change when text is added after it. So the header and
    delimiter rows and the text from the table's last row on are parsed, and their rows
    replace the last one; what follows the table comes from the same parse."""
    table = old[-1] if old else None
    if (
        not isinstance(table, Table)
        or table.line < 0
        or not table.row_lines
        or len(table.row_lines) != len(table.rows)
        or (len(table.rows) + 1) * max(1, len(table.headers)) > _GROW_CELLS
        or not source.startswith(old_source)
        or "\r" in source
        or "\0" in source
    ):
        return None
    last = table.row_lines[-1]
    if last < table.line + 2:
        return None
    head_at = _line_start(source, table.line)
    body_at = _line_start(source, table.line + 2, head_at, table.line) if head_at >= 0 else -1
    last_at = _line_start(source, last, body_at, table.line + 2) if body_at >= 0 else -1
    if last_at < 0 or last_at > len(old_source):
        return None
    env: dict[str, object] = {}
    tokens = markdown_parser(inline=False).parse(source[head_at:body_at] + source[last_at:], env)
    opening = tokens[0] if tokens else None
    if env.get("references") or opening is None or opening.type != "table_open" or not opening.map or opening.map[0]:
        return None
    tail = _document_of(tokens, _cached_inline)
    if not tail or not isinstance(tail[0], Table):
        return None
    grown, shift = tail[0], last - 2
    if [cell.plain for cell in grown.headers] != [cell.plain for cell in table.headers]:
        return None
    merged = Table(
        table.headers,
        table.rows[:-1] + grown.rows,
        table.line,
        table.row_lines[:-1] + [line + shift for line in grown.row_lines],
    )
    after: Document = []
    for block in tail[1:]:
        if isinstance(block, Table):  # another table after this one: its lines in ``source``
            block = Table(block.headers, block.rows, block.line + shift, [line + shift for line in block.row_lines])
        after.append(block)
    return [*old[:-1], merged, *after]


def _document_of(tokens: list[Token], text_of: Callable[[Token], Content]) -> Document | None:
    """The blocks of a block parse's tokens (see ``parse_document``)."""
    document: Document = []
    #: open blocks (list items hold their blocks; lists their items)
    stack: list[Paragraph | Heading | MarkdownList | ListItem] = []

    def add(block: Block) -> bool:
        if not stack:
            document.append(block)
            return True
        parent = stack[-1]
        if isinstance(parent, ListItem):
            parent.blocks.append(block)
            return True
        return False

    table: TableBuilder | None = None
    for token in tokens:
        kind = token.type
        if table is not None:
            if kind == "table_close":
                document.append(table.build())
                table = None
            else:
                table.feed(token, text_of(token) if kind == "inline" else None)
            continue
        if kind == "table_open":
            if stack:
                return None  # a table in a list item: Markdown draws it
            table = TableBuilder(token.map[0] if token.map else -1)
        elif kind == "paragraph_open":
            stack.append(Paragraph())
        elif kind == "heading_open":
            stack.append(Heading(int(token.tag[1:])))
        elif kind == "bullet_list_open" or kind == "ordered_list_open":
            stack.append(MarkdownList(kind == "ordered_list_open"))
        elif kind == "list_item_open":
            parent = stack[-1] if stack else None
            if not isinstance(parent, MarkdownList):
                return None
            if token.info:
                bullet = token.info
            else:
                depth = sum(1 for block in stack if isinstance(block, ListItem) and not block.ordered)
                bullet = BULLETS[depth % len(BULLETS)]
            stack.append(ListItem(bullet, bool(token.info)))
        elif kind.endswith("_close"):
            if not stack:
                return None
            block = stack.pop()
            if isinstance(block, ListItem):
                parent = stack[-1] if stack else None
                if not isinstance(parent, MarkdownList):
                    return None
                parent.items.append(block)
            elif not add(block):
                return None
        elif kind == "inline":
            target = stack[-1] if stack else None
            if not isinstance(target, (Paragraph, Heading)):
                return None
            target.content = text_of(token)
        elif kind == "fence" or kind == "code_block":
            if not add(Fence(token.content.rstrip(), token.info)):
                return None
        elif kind not in _SKIPPED:
            return None
    return None if stack or table is not None else document


def inline_content(token: Token) -> Content:
    """An inline token as styled ``Content``, as ``MarkdownBlock`` builds it."""
    return _content_of(token.children)


def _content_of(children: list[Token] | None) -> Content:
    if children is None:
        return Content("")
    parts: list[str] = []
    spans: list[Span] = []
    styles: list[tuple[Style | str, int]] = []
    position = 0

    def add(text: str) -> None:
        nonlocal position
        parts.append(text)
        position += len(text)

    def close() -> None:
        if styles:
            style, start = styles.pop()
            spans.append(Span(start, position, style))

    for child in children:
        kind = child.type
        if kind == "text":
            add(_SPACES.sub(" ", child.content))
        elif kind == "hardbreak":
            add("\n")
        elif kind == "softbreak":
            add(" ")
        elif kind == "code_inline":
            styles.append((".code_inline", position))
            add(child.content)
            close()
        elif kind == "em_open":
            styles.append((".em", position))
        elif kind == "strong_open":
            styles.append((".strong", position))
        elif kind == "s_open":
            styles.append((".s", position))
        elif kind == "link_open":
            href = child.attrs.get("href", "")
            styles.append((Style.from_meta({"@click": f"link({href!r})"}), position))
        elif kind == "image":
            href = child.attrs.get("src", "")
            alt = child.attrs.get("alt", "")
            styles.append((Style.from_meta({"@click": f"link({href!r})"}), position))
            add("🖼  ")
            if alt:
                add(f"({alt})")
            for grandchild in child.children or ():
                add(grandchild.content)
            close()
        elif kind.endswith("_close"):
            close()
    return Content("".join(parts), spans=spans)
