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

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from . import keymap
from .flat_markdown import FlatMarkdown, parse_document

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
            self.update(target)

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
        return stream is None or not getattr(stream, "_pending", None)


def _is_fence(line: str) -> bool:
    stripped = line.lstrip(" ")
    return len(line) - len(stripped) <= 3 and (stripped.startswith("```") or stripped.startswith("~~~"))


class _Splitter:
    """Finds chunk starts in a growing text, incrementally (complete lines only)."""

    __slots__ = ("starts", "_pos", "_fence", "_blank")

    def __init__(self) -> None:
        self.starts: list[int] = [0]
        self._pos = 0
        self._fence = False
        self._blank = False

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
            else:
                if (
                    blank
                    and not fence
                    and pos - starts[-1] >= CHUNK_CHARS
                    and pos >= written
                    and not line.startswith((" ", "\t"))
                ):
                    starts.append(pos)
                blank = False
                if _is_fence(line):
                    fence = not fence
            pos = nl + 1
        self._pos, self._fence, self._blank = pos, fence, blank


class EarlierLine(Static, can_focus=True):
    """'… earlier text' above the mounted chunks; Enter/click mounts one more."""

    KEY_SCOPES = ("earlier_text",)
    BINDINGS = keymap.bindings("earlier_text")

    def __init__(self, owner: ChunkedMarkdown) -> None:
        super().__init__("", classes="earlier-text", markup=False)
        self.owner = owner

    def set_hidden(self, chars: int) -> None:
        self.update(Content.styled(f"… {chars:,} earlier characters (Enter or click to show)", "italic $text-muted"))

    def action_more(self) -> None:
        self.owner.show_earlier()

    def on_click(self) -> None:
        self.owner.show_earlier()


Chunk = LiveMarkdown | FlatMarkdown


class ChunkedMarkdown(Vertical, can_focus=True):
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
        self.earlier = EarlierLine(self)
        #: stream writes of chunks that were replaced by a flat one
        self._retired_writes = 0

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
    def mounted_chunk_count(self) -> int:
        """How many chunks this block mounts (the newest ``keep``)."""
        return len(self._splitter.starts) - self.first

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

    def _new_chunk(self, index: int) -> Chunk:
        """A final chunk is flat, parsed in a worker thread once mounted (it switches to
        ``LiveMarkdown`` if it holds what only Markdown draws); the open chunk streams."""
        text = self._slice(index)
        if self._final_chunk(index):
            return FlatMarkdown(text, classes=self._chunk_classes, defer=True)
        return LiveMarkdown(text, classes=self._chunk_classes)

    def _make(self, index: int) -> Chunk:
        chunk = self._new_chunk(index)
        self.chunks[index] = chunk
        return chunk

    def on_flat_markdown_unsupported(self, event: FlatMarkdown.Unsupported) -> None:
        event.stop()
        for index, chunk in self.chunks.items():
            if chunk is event.widget:
                self._swap(index, LiveMarkdown(chunk.target, classes=self._chunk_classes))
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

    async def flush(self) -> None:
        if not self.is_attached:
            return
        if self._replaced:
            self._rebuild()
            return
        starts = self._splitter.starts
        old_count = len(starts)
        self._splitter.scan(self._target, self._flushed)
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

    async def _update_chunk(self, index: int, chunk: Chunk) -> None:
        """Give a mounted chunk its current text; a chunk that closed becomes flat."""
        text = self._slice(index)
        if isinstance(chunk, FlatMarkdown):
            if text == chunk.target:
                return
            document = parse_document(text)
            if document is not None:
                chunk.set_target(text, document)
            else:  # now holds something only Markdown draws
                self._swap(index, LiveMarkdown(text, classes=self._chunk_classes))
            return
        if self._final_chunk(index):
            document = parse_document(text)
            if document is not None:
                self._swap(index, FlatMarkdown(text, document, classes=self._chunk_classes))
                return
        chunk.set_target(text)
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
            document = parse_document(self._slice(last))
            if document is not None:
                self._swap(last, FlatMarkdown(self._slice(last), document, classes=self._chunk_classes))
        self.release()

    def release(self) -> None:
        """Stop the streams (the block is going away, or its text is final)."""
        for chunk in self.chunks.values():
            chunk.finish()

    @property
    def settled(self) -> bool:
        if self._replaced:
            return False
        return all(chunk.settled and chunk.target == self._slice(i) for i, chunk in self.chunks.items())
