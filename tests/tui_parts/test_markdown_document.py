"""The quick answer to "is this text drawn flat?" (``drawn_flat``) is always the parser's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.tui.widgets import markdown_document
from instance_ai_tui.tui.widgets.markdown_document import WARM_UP, drawn_flat, parse_document

#: lines that build every block the parser knows, and near misses of the Markdown-only ones
LINES = [
    "", "text with *em* and `code`", "- item", "  - nested item", "1. first", "12) twelfth", "* star item",
    "+ plus item", "    indented code", "```python", "```", "~~~", "# heading", "Setext", "===", "---", "***",
    "* * *", "- - -", "___", "-- not a rule", "> quote", "- > quote in a list", "1. > quoted item", "   > quote",
    "a > b", "x -> y", "| a | b |", "|---|---|", "a | b", "--|--", "| 1 | 2 |", "<div>html</div>", "<!-- c -->",
    "http://example.com", "me@example.com", "\tcode after a tab", "- ---", "2. ***", "term | value",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=14))
def test_drawn_flat_is_what_the_parser_says(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    assert drawn_flat(text) == (parse_document(text) is not None)
    assert (parse_document(text, inline=False) is None) == (parse_document(text) is None)


def test_the_block_only_parse_has_the_same_blocks() -> None:
    text = "# Title\n\n- one\n  - two\n\n1. three\n\n```py\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    full, blocks = parse_document(text), parse_document(text, inline=False)
    assert full is not None and blocks is not None
    assert [type(block) for block in full] == [type(block) for block in blocks]


def test_a_list_without_quotes_rules_or_tables_is_known_flat_without_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(f"- step {i}: the **node** and `field_{i}` at http://example.com/{i}\n" for i in range(60))
    assert parse_document(text) is not None

    def no_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(markdown_document, "parse_document", no_parse)
    assert drawn_flat(text)
    with pytest.raises(AssertionError, match="parsed"):
        drawn_flat(text + "\n> a quote\n")


def test_the_warm_up_text_holds_what_compiles_lazily() -> None:
    # links, addresses, a table, a quote and a rule: each makes the parser compile something
    for needle in ("http://", "https://", "mailto:", "@example.com", "www.", "| a |", "> quote", "---"):
        assert needle in WARM_UP
    assert parse_document(WARM_UP) is None and not drawn_flat(WARM_UP)


INLINE_LINES = [
    "", "plain words", "*em* and **strong** and ~~gone~~", "`code` with http://example.com/a?b=1", "me@example.com",
    "a [link](http://x.org \"title\") here", "![alt](img.png)", "[ref link][id]", "[id]: http://ref.example",
    "- item with *em*", "1. **bold** item", "  - nested `code`", "# heading *em*", "| a | *b* |", "|---|---|",
    "| `1` | www.example.org |", "line with trailing spaces  ", "back\\\\slash \\* escaped", "\"quotes\" -- dash (c)",
    "<span>html</span> inline", "```", "code **not em**",
]


def _inline_texts(text: str, *, whole: bool) -> list[tuple[str, tuple[object, ...]]]:
    """Every inline text of ``text`` as (plain, spans): from one whole parse, or as
    ``parse_document`` builds it (the blocks, then each inline text on its own)."""
    env: dict[str, object] = {}
    if whole:
        tokens = markdown_document.markdown_parser().parse(text)
        of = markdown_document.inline_content
    else:
        tokens = markdown_document.markdown_parser(inline=False).parse(text, env)
        of = markdown_document._cached_inline
    if env.get("references"):
        return _inline_texts(text, whole=True)
    out = []
    for token in tokens:
        if token.type == "inline":
            content = of(token)
            out.append((content.plain, tuple(content.spans)))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(INLINE_LINES), max_size=12))
def test_inline_text_parsed_on_its_own_is_what_a_whole_parse_gives(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    assert _inline_texts(text, whole=False) == _inline_texts(text, whole=True)


def test_a_document_with_link_references_is_parsed_whole() -> None:
    document = parse_document("see [the docs][d]\n\n[d]: http://example.com/docs\n")
    assert document is not None
    paragraph = document[0]
    assert isinstance(paragraph, markdown_document.Paragraph) and paragraph.content.plain == "see the docs"
    assert any("link" in str(span.style) for span in paragraph.content.spans)
