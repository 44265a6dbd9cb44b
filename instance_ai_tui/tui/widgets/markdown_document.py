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


def _parser() -> MarkdownIt:
    global _parser_instance
    if _parser_instance is None:
        from markdown_it import MarkdownIt

        _parser_instance = MarkdownIt("gfm-like")  # what ``Markdown`` uses by default
    return _parser_instance


def parse_document(source: str) -> Document | None:
    """The blocks of ``source``, or ``None`` if it uses something drawn only by
    Textual's ``Markdown`` widget (tables, block quotes, horizontal rules, ...)."""
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
    for token in _parser().parse(source):
        kind = token.type
        if table is not None:
            if kind == "table_close":
                document.append(table.build())
                table = None
            else:
                table.feed(token, inline_content(token) if kind == "inline" else None)
            continue
        if kind == "table_open":
            if stack:
                return None  # a table in a list item: Markdown draws it
            table = TableBuilder()
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
            target.content = inline_content(token)
        elif kind == "fence" or kind == "code_block":
            if not add(Fence(token.content.rstrip(), token.info)):
                return None
        elif kind not in _SKIPPED:
            return None
    return None if stack or table is not None else document


def inline_content(token: Token) -> Content:
    """An inline token as styled ``Content``, as ``MarkdownBlock`` builds it."""
    if token.children is None:
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

    for child in token.children:
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
