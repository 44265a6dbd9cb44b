"""Markdown that streams, and stays cheap however long it gets.

``LiveMarkdown`` is one Textual ``Markdown`` whose text grows through a ``MarkdownStream``
(``Markdown.get_stream``) while it is live.

``ChunkedMarkdown`` holds one text segment of any length as a series of chunks of about
``CHUNK_CHARS`` characters, split at paragraph boundaries outside code fences. Only the
newest ``KEEP_CHUNKS`` chunks are mounted (older ones on request), so a 100 kB answer costs
the widgets of a few kB, and appending never re-parses more than the open chunk.

Only the open chunk of a live segment streams (a ``LiveMarkdown``: a widget per paragraph,
list item, fence, ...). A chunk whose text is final (closed, or its segment finished) is a
``FlatMarkdown``: the same picture drawn by one widget, so finished text costs Textual's
layout next to nothing. Chunks Textual's ``Markdown`` alone can draw (tables, quotes) stay
``LiveMarkdown``. Both take the segment's whole text (``set_target``) and apply it in
``flush``, which the frame awaits.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from .. import keymap
from ..textual_internals import BlankRows, stream_has_pending
from .flat_markdown import FlatMarkdown, joined_number_width
from .markdown_document import NO_JOINS, Joins, drawn_flat, markdown_parser, parse_document

CHUNK_CHARS = 2000
KEEP_CHUNKS = 2
#: characters of finished text per frame-budget unit (``ChunkedMarkdown.cost``)
COST_CHARS = 400
#: characters of streaming text per frame-budget unit
LIVE_COST_CHARS = 300


class LiveMarkdown(Markdown):
    """Markdown whose content grows through a ``MarkdownStream`` while it is live.

    ``set_target(text)`` records what the text is; ``flush()`` writes the new tail to the
    stream, or replaces the document when the text changed other than by appending.
    """

    def __init__(self, content: str = "", *, classes: str | None = None) -> None:
        super().__init__(content, classes=classes, open_links=False)
        self._target = content
        self._written = content
        self._ready = False
        self._stream: MarkdownStream | None = None
        #: fragments written through the stream (tests and benchmarks read it)
        self.stream_writes = 0

    def on_mount(self) -> None:
        # runs before Markdown's own mount handler parses the initial text: become ready after it
        self.call_later(self._become_ready)

    async def _become_ready(self) -> None:
        self._ready = True
        self._resume_at_last_block()
        if self._target != self._written:
            await self.flush()

    @property
    def target(self) -> str:
        return self._target

    def set_target(self, content: str) -> bool:
        if content is self._target or content == self._target:
            return False
        self._target = content
        return True

    async def flush(self) -> None:
        if not self._ready or not self.is_attached:
            return
        target, written = self._target, self._written
        if target == written:
            return
        self._written = target
        if len(target) > len(written) and target.startswith(written):
            if self._stream is None:
                self._stream = Markdown.get_stream(self)
            self.stream_writes += 1
            await self._stream.write(target[len(written) :])
        else:
            await self._stop_stream()
            await self.update(target)
            self._resume_at_last_block()

    def _resume_at_last_block(self) -> None:
        """After ``update``, Markdown would parse appended text from the last line on, so a
        table whose header came in the first text would lose it (its rows re-parsed alone
        as a paragraph): appends re-parse from the start of the last top-level block, as
        they do after an append."""
        line = 0
        for token in reversed(markdown_parser().parse(self.source)):
            if token.map is not None and token.level == 0:
                line = token.map[0]
                break
        self._last_parsed_line = line

    async def _stop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()

    def finish(self) -> None:
        """The text is final: stop the stream (in the background)."""
        if self._stream is not None:
            self.call_later(self._stop_stream)

    @property
    def settled(self) -> bool:
        """Everything set has been handed to the widget and parsed."""
        return self._ready and self.source == self._target and not self.lock.is_locked and self._stream_idle()

    def _stream_idle(self) -> bool:
        stream = self._stream
        return stream is None or not stream_has_pending(stream)


def _is_fence(line: str) -> bool:
    stripped = line.lstrip(" ")
    return len(line) - len(stripped) <= 3 and (stripped.startswith("```") or stripped.startswith("~~~"))


#: a list item's first line at the left edge: its marker (bullet character, or the
#: ordered delimiter after the number)
_ITEM = re.compile(r"([-*+]|(\d{1,9})([.)]))(?:[ \t]|$)")
_RULE = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
#: blocks with a top margin of their own (headings, code blocks) or drawn only by
#: Markdown (quotes, tables): no chunk starts with one, as the previous chunk's bottom
#: margin and its top margin would both be drawn where the whole text collapses them
_OWN_MARGIN = ("#", "```", "~~~", ">", "|")
#: how a col-0 line may go on a list item's paragraph (a lazy continuation line)
_LAZY_START = re.compile(r"[\w*_\[!(\"'$]")


class _Splitter:
    """Finds chunk starts in a growing text, incrementally (complete lines only).

    A chunk starts at a paragraph boundary (a line after a blank line), or, inside a long
    list or code block, at the next item of a top-level list or the next line of a
    top-level code block: the chunk then *continues* the previous one (``conts``: the
    text parsed before it, and a continued ordered list's next number), so a growing list
    or code block is drawn as pieces of bounded size and the settled pieces never change.
    """

    __slots__ = ("_blank", "_fence", "_fence_head", "_list", "_no_join", "_number", "_pos", "conts", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = [0]
        #: chunk index -> (head, start number) of a chunk that continues the previous one
        self.conts: dict[int, tuple[str, int | None]] = {}
        self._pos = 0
        self._fence = False
        #: the opening line of the top-level code block we are in ("" if nested)
        self._fence_head = ""
        self._blank = False
        #: the marker of the top-level list we are in, and its next item's number
        self._list: str | None = None
        self._number = 1
        #: chunk indexes that cannot be continued (they hold what only Markdown draws)
        self._no_join: set[int] = set()

    def _can_join(self, text: str, pos: int) -> bool:
        """The open chunk (up to ``pos``) is drawn flat, so it can leave its end open."""
        index = len(self.starts) - 1
        if index in self._no_join:
            return False
        head = self.conts.get(index, ("", None))[0]
        if not drawn_flat(head + text[self.starts[-1] : pos]):
            self._no_join.add(index)
            return False
        return True

    def _split(self, pos: int, cont: tuple[str, int | None] | None) -> None:
        if cont is not None:
            self.conts[len(self.starts)] = cont
        self.starts.append(pos)

    def scan(self, text: str, written: int = 0) -> None:
        """Find new chunk starts; none before ``written`` (text already shown in the open
        chunk stays there, so a chunk never has to be re-rendered)."""
        end = text.rfind("\n") + 1
        pos, fence, blank, starts = self._pos, self._fence, self._blank, self.starts
        while pos < end:
            nl = text.index("\n", pos)
            line = text[pos:nl]
            if not line.strip():
                blank = True
                pos = nl + 1
                continue
            room = pos - starts[-1] >= CHUNK_CHARS and pos >= written
            if fence:
                if _is_fence(line):
                    fence = False
                elif room and self._fence_head and not blank and self._can_join(text, pos):
                    # (not after a blank line: a piece's code loses its trailing blank lines)
                    self._split(pos, (self._fence_head + "\n", None))
            else:
                item = _ITEM.match(line) if not _RULE.match(line) else None
                if item is not None:
                    marker = item.group(3) or item.group(1)
                    if marker == self._list:
                        if room and self._can_join(text, pos):
                            self._split(pos, ("", self._number if item.group(2) else None))
                        self._number += 1
                    else:
                        if blank and room:
                            self._split(pos, None)
                        self._list = marker
                        self._number = int(item.group(2)) + 1 if item.group(2) else 1
                elif not line.startswith((" ", "\t")):
                    if blank and room and not line.startswith(_OWN_MARGIN):
                        self._split(pos, None)
                    if blank or not _LAZY_START.match(line) or _is_fence(line):
                        self._list = None
                if _is_fence(line):
                    fence = True
                    self._fence_head = line.rstrip() if not line.startswith((" ", "\t")) else ""
            blank = False
            pos = nl + 1
        self._pos, self._fence, self._blank = pos, fence, blank


class ShowEarlierLine(Static, can_focus=True):
    """A '… earlier' line above what is mounted: Enter/click calls ``show`` (its owner's
    ``show_earlier``); the subclass names what is earlier and its keys."""

    def __init__(self, show: Callable[[], object], classes: str) -> None:
        super().__init__("", classes=classes, markup=False)
        self.show_earlier = show

    def say(self, earlier: str) -> None:
        self.update(Content.styled(f"… {earlier} (Enter or click to show)", "italic $text-muted"))

    def action_more(self) -> None:
        self.show_earlier()

    def on_click(self) -> None:
        self.show_earlier()


class EarlierLine(ShowEarlierLine):
    """'… earlier text' above the mounted chunks; Enter/click mounts one more."""

    KEY_SCOPES = ("earlier_text",)
    BINDINGS = keymap.bindings("earlier_text")

    def set_hidden(self, chars: int) -> None:
        self.say(f"{chars:,} earlier characters")


Chunk = LiveMarkdown | FlatMarkdown


class ChunkedMarkdown(BlankRows, Vertical, can_focus=True):
    """One text segment as Markdown chunks, the newest ``KEEP_CHUNKS`` mounted.

    ``live``: the segment may still grow; its last chunk streams. ``finish()`` says the
    text is final (every chunk becomes a ``FlatMarkdown`` where possible).
    """

    DEFAULT_CSS = """
    ChunkedMarkdown { height: auto; layout: vertical; }
    """

    def __init__(
        self,
        content: str = "",
        *,
        classes: str | None = None,
        chunk_classes: str | None = None,
        live: bool = True,
    ) -> None:
        super().__init__(classes=classes)
        self._target = content
        self._chunk_classes = chunk_classes
        self._splitter = _Splitter()
        self._splitter.scan(content)
        self._replaced = False
        self._flushed = len(content)
        self.live = live
        self.chunks: dict[int, Chunk] = {}
        self.keep = KEEP_CHUNKS
        self.first = max(0, len(self._splitter.starts) - self.keep)
        self.earlier = EarlierLine(self.show_earlier, "earlier-text")
        #: stream writes of chunks that were replaced by a flat one
        self._retired_writes = 0
        #: first chunk of a run of joined chunks -> the width of its ordered numbers
        self._run_widths: dict[int, int] = {}

    # ------------------------------------------------------------------ reading
    @property
    def target(self) -> str:
        return self._target

    @property
    def source(self) -> str:
        """The text the mounted chunks hold, in order (equals ``target`` once settled and
        when every chunk is mounted)."""
        return "".join(self.chunks[i].source for i in sorted(self.chunks))

    @property
    def cost(self) -> int:
        """Frame-budget units of mounting this block: a unit per ``COST_CHARS`` characters
        drawn flat (parsing and wrapping them is the work), and for the streaming chunk a
        unit per ``LIVE_COST_CHARS`` (Markdown mounts a widget per paragraph, list item,
        ...)."""
        starts = self._splitter.starts
        shown = len(self._target) - starts[min(self.first, len(starts) - 1)]
        if not self.live:
            return 1 + shown // COST_CHARS
        live = len(self._target) - starts[-1]
        return 3 + (shown - live) // COST_CHARS + live // LIVE_COST_CHARS

    @property
    def stream_writes(self) -> int:
        """Fragments written through a ``MarkdownStream`` (tests read it)."""
        return self._retired_writes + sum(chunk.stream_writes for chunk in self.chunks.values())

    def _slice(self, index: int) -> str:
        starts = self._splitter.starts
        end = starts[index + 1] if index + 1 < len(starts) else len(self._target)
        return self._target[starts[index] : end]

    def _final_chunk(self, index: int) -> bool:
        """The chunk's text is final: a later chunk started, or the segment finished."""
        return not self.live or index < len(self._splitter.starts) - 1

    def _run_first(self, index: int) -> int:
        conts = self._splitter.conts
        while index in conts:
            index -= 1
        return index

    def _joins(self, index: int) -> Joins:
        """How chunk ``index`` meets its neighbours (a list or code block across chunks)."""
        conts = self._splitter.conts
        cont = conts.get(index)
        open_end = index + 1 in conts
        if cont is None and not open_end:
            return NO_JOINS
        head, start = cont if cont is not None else ("", None)
        width = self._run_widths.get(self._run_first(index), 0)
        return Joins(head, cont is not None, start, open_end, width)

    def _parse(self, index: int, text: str | None = None) -> tuple[str, Joins, list | None]:
        joins = self._joins(index)
        text = self._slice(index) if text is None else text
        return text, joins, parse_document(joins.head + text)

    def _new_chunk(self, index: int) -> Chunk:
        """A final chunk is flat, parsed in a worker thread once mounted (it switches to
        ``LiveMarkdown`` if it holds what only Markdown draws). The open chunk is flat too
        when it can be (re-parsing and laying out one bounded chunk costs far less than
        Markdown's widgets); else it streams."""
        if self._final_chunk(index):
            return FlatMarkdown(self._slice(index), classes=self._chunk_classes, defer=True, joins=self._joins(index))
        text, joins, document = self._parse(index)
        if document is not None:
            return FlatMarkdown(text, document, classes=self._chunk_classes, joins=joins)
        return LiveMarkdown(joins.head + text, classes=self._chunk_classes)

    def _make(self, index: int) -> Chunk:
        chunk = self._new_chunk(index)
        self.chunks[index] = chunk
        return chunk

    def on_flat_markdown_unsupported(self, event: FlatMarkdown.Unsupported) -> None:
        event.stop()
        for index, chunk in self.chunks.items():
            if chunk is event.widget:
                text = chunk.target
                if isinstance(chunk, FlatMarkdown) and chunk.joins.head:
                    text = chunk.joins.head + text  # a continued code block as one of its own
                self._swap(index, LiveMarkdown(text, classes=self._chunk_classes))
                return

    def _update_earlier(self) -> None:
        hidden = self._splitter.starts[self.first] if self.first < len(self._splitter.starts) else 0
        self.earlier.display = hidden > 0
        if hidden:
            self.earlier.set_hidden(hidden)

    def compose(self) -> ComposeResult:
        self._update_earlier()
        yield self.earlier
        for index in range(self.first, len(self._splitter.starts)):
            yield self._make(index)

    # ------------------------------------------------------------------ writing
    def set_target(self, content: str) -> bool:
        if content is self._target:
            return False
        if not content.startswith(self._target):
            self._replaced = True
        elif len(content) == len(self._target):
            return False
        self._target = content
        return True

    def take_change(self, text: str, replaced: bool, length: int) -> bool | None:
        """Take the reducer's change of this text (``SegmentChange``): ``text`` was appended, or is the
        whole new content when ``replaced``; ``length`` is the content's length after it. Costs the
        size of the change, not of the text (no re-diff). Returns whether there is something to
        flush, or None when this widget is out of step with the change (it was built from the
        reducer after the change was drained): the caller then sets the whole text."""
        if replaced:
            if text == self._target:
                return False
            self._target = text
            self._replaced = True
            return True
        have = len(self._target)
        if have == length:
            return False  # built after the drain: it already shows this text
        if have != length - len(text):
            return None
        self._target += text
        return True

    async def flush(self) -> None:
        if not self.is_attached:
            return
        if self._replaced:
            self._rebuild()
            return
        starts = self._splitter.starts
        old_count = len(starts)
        # text a streaming chunk shows stays in it (its document only grows); a flat chunk
        # is drawn anew anyway, so its text may move on into the next chunk
        written = self._flushed if isinstance(self.chunks.get(old_count - 1), LiveMarkdown) else 0
        self._splitter.scan(self._target, written)
        self._flushed = len(self._target)
        count = len(starts)
        # the open chunk (and any chunk that just closed) get their text
        for index in range(old_count - 1, count):
            chunk = self.chunks.get(index)
            if chunk is not None:
                await self._update_chunk(index, chunk)
        if count > old_count:
            new = [self._make(i) for i in range(max(old_count, count - self.keep), count)]
            self.mount_all(new)
            self._prune()
        self._widen_numbers(count - 1)

    def _widen_numbers(self, index: int) -> None:
        """An ordered list across chunks draws its numbers as wide as its last one (as the
        whole list does): when the open chunk's numbers grow wider, the chunks before it in
        the same list are laid out again (once per extra digit)."""
        if index not in self._splitter.conts:
            return
        chunk = self.chunks.get(index)
        if not isinstance(chunk, FlatMarkdown) or chunk.document is None:
            return
        first = self._run_first(index)
        width = joined_number_width(chunk.document, chunk.joins)
        if width <= self._run_widths.get(first, 0):
            return
        self._run_widths[first] = width
        for i in range(first, index + 1):
            other = self.chunks.get(i)
            if isinstance(other, FlatMarkdown):
                other.set_joins(self._joins(i))

    async def _update_chunk(self, index: int, chunk: Chunk) -> None:
        """Give a mounted chunk its current text; a chunk that closed becomes flat."""
        text = self._slice(index)
        if isinstance(chunk, FlatMarkdown):
            joins = self._joins(index)
            if text == chunk.target:
                chunk.set_joins(joins)
                return
            # the chunk's text grew: what it had parsed is where parsing starts (a table)
            old = chunk.document
            grown_from = (chunk.joins.head + chunk.target, old) if old is not None else None
            document = parse_document(joins.head + text, grown_from=grown_from)
            if document is not None:
                chunk.set_joins(joins)
                chunk.set_target(text, document)
            else:  # now holds something only Markdown draws
                self._swap(index, LiveMarkdown(joins.head + text, classes=self._chunk_classes))
            return
        if self._final_chunk(index):
            text, joins, document = self._parse(index, text)
            if document is not None:
                self._swap(index, FlatMarkdown(text, document, classes=self._chunk_classes, joins=joins))
                return
        chunk.set_target(self._splitter.conts.get(index, ("", None))[0] + text)
        await chunk.flush()
        if self._final_chunk(index):
            chunk.finish()

    def _swap(self, index: int, new: Chunk) -> None:
        """Put ``new`` where chunk ``index`` is (same text: no visible change)."""
        old = self.chunks[index]
        self.chunks[index] = new
        self._retired_writes += old.stream_writes
        old.finish()
        if old.is_attached:
            self.mount(new, before=old)
            old.remove()

    def _rebuild(self) -> None:
        """The text changed other than by appending: start the chunks over."""
        self._replaced = False
        for chunk in self.chunks.values():
            chunk.finish()
            self._retired_writes += chunk.stream_writes
        self.remove_children(list(self.chunks.values()))
        self.chunks = {}
        self._run_widths = {}
        self._splitter = _Splitter()
        self._splitter.scan(self._target)
        self._flushed = len(self._target)
        self.first = max(0, len(self._splitter.starts) - self.keep)
        self._update_earlier()
        self.mount_all([self._make(i) for i in range(self.first, len(self._splitter.starts))])

    def _prune(self) -> None:
        limit = len(self._splitter.starts) - self.keep
        doomed = [self.chunks.pop(i) for i in range(self.first, limit) if i in self.chunks]
        self.first = max(self.first, limit)
        if doomed:
            for chunk in doomed:
                self._retired_writes += chunk.stream_writes
            self.remove_children(doomed)
        self._update_earlier()

    def show_earlier(self) -> None:
        if self.first == 0:
            return
        self.keep += 1
        self.first -= 1
        self.mount(self._make(self.first), after=self.earlier)
        self._update_earlier()

    def finish(self) -> None:
        """The text is final: the streaming chunk becomes flat (where it can)."""
        was_live, self.live = self.live, False
        last = len(self._splitter.starts) - 1
        chunk = self.chunks.get(last)
        if (
            was_live
            and isinstance(chunk, LiveMarkdown)
            and chunk.is_attached
            and not self._replaced
            and self._flushed == len(self._target)
        ):
            text, joins, document = self._parse(last)
            if document is not None:
                self._swap(last, FlatMarkdown(text, document, classes=self._chunk_classes, joins=joins))
        self.release()

    def release(self) -> None:
        """Stop the streams (the block is going away, or its text is final)."""
        for chunk in self.chunks.values():
            chunk.finish()

    @property
    def settled(self) -> bool:
        if self._replaced:
            return False
        return all(chunk.settled and chunk.target.endswith(self._slice(i)) for i, chunk in self.chunks.items())
