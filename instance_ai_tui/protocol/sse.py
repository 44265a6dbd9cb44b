"""Server-Sent Events: an incremental frame parser and a decoder to protocol items.

``SSEParser`` follows the WHATWG event-stream rules: lines end with ``\\r\\n``, ``\\r`` or
``\\n`` (also when split across chunks), a leading BOM is dropped, ``:`` lines are
comments (counted), ``data:`` lines join with ``\\n``, an ``id`` containing NUL is
ignored, ``retry`` must be all digits, a blank line dispatches the frame and a frame
without ``data`` is not dispatched. Bytes are decoded as UTF-8 incrementally, so a
multi-byte character may be split between chunks.

``EventStreamDecoder`` turns frames into ``(id, item)`` pairs where ``item`` is an
``Event`` (or its raw dict with ``raw_events=True``, for the reducer's fast path) or, for
``event: run-sync`` frames, a ``RunSyncPayload``. Bad frames never raise: they are
skipped and described in ``diagnostics``.
"""

from __future__ import annotations

import codecs
import json
import re
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

if TYPE_CHECKING:  # the models load when the first frame is decoded, not with the parser (a client's
    # reader, ``delta_runs``, and the TUI's first frame import this module)
    from .events import Event
    from .tree import RunSyncPayload

__all__ = [
    "MAX_FRAME_CHARS", "MAX_JSON_DEPTH", "EventStreamDecoder", "SSEFrame", "SSEParser", "StreamItemData", "frame_id",
    "json_too_deep",
]


class SSEFrame(NamedTuple):
    """One dispatched frame. ``id`` is the id given in this frame (``None`` if it had no
    ``id:`` line); ``retry`` likewise. (A named tuple: immutable, and built at a fraction of a
    frozen dataclass's cost, once per event of a flood.)"""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


#: the longest line or frame the parser keeps (characters); longer ones are dropped whole
MAX_FRAME_CHARS = 16 * 1024 * 1024
#: the deepest JSON nesting a frame may have before it is dropped (``json`` recurses per level)
MAX_JSON_DEPTH = 200

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON ``text`` nests arrays/objects more than ``limit`` deep (strings are skipped).

    Linear; a quick count first so that ordinary frames cost one pass in C."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif token in ("]", "}"):
            depth -= 1
    return False


class SSEParser:
    """Feed chunks (``str`` or ``bytes``) and get the frames they complete.

    Hostile input is bounded: a line or frame longer than ``max_frame_chars`` is dropped whole
    (its text is not even kept: a stream of data without newlines costs no memory), a frame
    whose JSON nests deeper than ``max_depth`` is dropped; each drop is counted in ``rejected``
    and described in ``last_rejection``. Parsing is linear in the input, whatever the chunking.
    """

    def __init__(self, *, max_frame_chars: int = MAX_FRAME_CHARS, max_depth: int = MAX_JSON_DEPTH) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.max_frame_chars = max_frame_chars
        self.max_depth = max_depth
        self._parts: list[str] = []  # the unfinished line, in pieces (joined once, at its end)
        self._partial = 0  # its length
        self._skipping = False  # the unfinished line is over the limit: discard it up to its end
        self._poisoned = False  # the current frame lost a line: drop it when it ends
        self._started = False
        self._pending_cr = False
        self._data: list[str] = []
        self._data_chars = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        #: the last id seen in the stream (the spec's "last event ID"); persists across frames
        self.last_event_id = ""
        #: the last valid ``retry`` value seen
        self.retry: int | None = None
        #: number of comment lines (``:`` ...) seen, e.g. keep-alive pings
        self.comments = 0
        #: frames dropped for being too long or too deep, and why the last one was
        self.rejected = 0
        self.last_rejection = ""

    def feed(self, chunk: str | bytes | bytearray | memoryview) -> list[SSEFrame]:
        text = chunk if isinstance(chunk, str) else self._decoder.decode(bytes(chunk))
        return self._feed_text(text)

    def close(self, *, dispatch_incomplete: bool = False) -> list[SSEFrame]:
        """End of stream. Per the spec a frame not ended by a blank line is discarded;
        ``dispatch_incomplete=True`` dispatches it instead (for truncated captures)."""
        frames = self._feed_text(self._decoder.decode(b"", final=True))
        if self._parts and not self._skipping:
            line = "".join(self._parts)
            self._parts, self._partial = [], 0
            self._line(line, frames)
        self._parts, self._partial, self._skipping = [], 0, False
        if dispatch_incomplete:
            self._dispatch(frames)
        else:
            self._reset_frame()
        return frames

    def _reject(self, why: str) -> None:
        self.rejected += 1
        self.last_rejection = why

    def _feed_text(self, text: str) -> list[SSEFrame]:
        frames: list[SSEFrame] = []
        if not text:
            return frames
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._pending_cr:
            self._pending_cr = False
            if text.startswith("\n"):
                text = text[1:]
        if not text:
            return frames
        # line ends are normalised within this chunk only (the buffer is never rescanned)
        trailing_cr = text.endswith("\r")
        if trailing_cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if trailing_cr:
            # a CR at the end of the chunk ends a line now; a LF at the start of the
            # next chunk belongs to it
            text += "\n"
            self._pending_cr = True
        if "\n\n" in text:
            # the frames this chunk completes, taken whole once the parser is between two frames
            # (after the blank line that ends the frame in progress, and after each frame)
            if (self._parts or self._skipping or self._data or self._poisoned or self._event
                    or self._id is not None or self._retry is not None):
                cut = text.index("\n\n") + 2
                self._feed_lines(text[:cut], frames)
                text = text[cut:]
            end = text.rfind("\n\n")
            if end >= 0:
                self._frames(text[:end], frames)
                text = text[end + 2:]
        self._feed_lines(text, frames)
        return frames

    def _feed_lines(self, text: str, frames: list[SSEFrame]) -> None:
        """``text`` line by line (its last line may be unfinished: it is kept for the next chunk)."""
        if not text:
            return
        if "\n" not in text:
            self._append_partial(text)
            return
        lines = text.split("\n")
        rest = lines.pop()
        skip_first = False
        if self._skipping:
            skip_first = True
        elif self._parts:
            self._parts.append(lines[0])
            self._partial += len(lines[0])
            if self._partial > self.max_frame_chars:
                self._overlong()
                skip_first = True
            else:
                lines[0] = "".join(self._parts)
            self._parts, self._partial = [], 0
        self._lines(lines, frames, skip_first)
        self._skipping = False
        if rest:
            self._append_partial(rest)

    def _frames(self, text: str, frames: list[SSEFrame]) -> None:
        """Whole frames: ``text`` is complete lines, each frame followed by a blank line (the last
        one's is not in ``text``). The usual frame (``id: N`` and one ``data:`` line, or only the
        ``data:`` line) is read at once; any other goes through the lines, as ``_feed_text`` would."""
        limit, depth = self.max_frame_chars, self.max_depth
        append = frames.append
        for block in text.split("\n\n"):
            if len(block) <= limit:
                if block.startswith("id: "):
                    newline = block.find("\n")
                    if (newline > 0 and block.startswith("data: ", newline + 1) and block.find("\n", newline + 1) < 0
                            and "\x00" not in block[:newline]):
                        data = block[newline + 7:]
                        event_id = self.last_event_id = block[4:newline]
                        if data.count("[") + data.count("{") <= depth or not json_too_deep(data, depth):
                            append(SSEFrame(data, "message", event_id, None))
                        else:
                            self._reject(f"a frame nested deeper than {depth} levels was dropped")
                        continue
                elif block.startswith("data: ") and "\n" not in block:
                    data = block[6:]
                    if data.count("[") + data.count("{") <= depth or not json_too_deep(data, depth):
                        append(SSEFrame(data, "message", None, None))
                    else:
                        self._reject(f"a frame nested deeper than {depth} levels was dropped")
                    continue
            lines = block.split("\n")
            lines.append("")
            self._lines(lines, frames, False)

    def _lines(self, lines: list[str], frames: list[SSEFrame], skip_first: bool) -> None:
        """Complete lines (the first one skipped with ``skip_first``: the end of an overlong line)."""
        limit = self.max_frame_chars
        data = self._data
        for index, line in enumerate(lines):
            if index == 0 and skip_first:
                continue
            length = len(line)
            if length > limit:
                self._overlong()
                data = self._data
                continue
            # the common lines inline (``_line`` does the same): a data line of a frame within its
            # limits, an id line, the blank line that ends a frame
            if line.startswith("data: ") and not self._poisoned and self._data_chars + length - 5 <= limit:
                data.append(line[6:])
                self._data_chars += length - 5
            elif not line:
                self._dispatch(frames)
                data = self._data
            elif line.startswith("id: ") and "\x00" not in line:
                self._id = self.last_event_id = line[4:]
            else:
                self._line(line, frames)
                data = self._data

    def _append_partial(self, text: str) -> None:
        if self._skipping:
            return
        self._parts.append(text)
        self._partial += len(text)
        if self._partial > self.max_frame_chars:
            self._parts, self._partial = [], 0
            self._skipping = True
            self._overlong()

    def _overlong(self) -> None:
        if not self._poisoned:
            self._reject(f"a line longer than {self.max_frame_chars} characters; its frame was dropped")
        self._poisoned = True
        self._data, self._data_chars = [], 0

    def _line(self, line: str, frames: list[SSEFrame]) -> None:
        if not line:
            self._dispatch(frames)
            return
        if line[0] == ":":
            self.comments += 1
            return
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            if self._poisoned:
                return
            self._data_chars += len(value) + 1
            if self._data_chars > self.max_frame_chars:
                self._reject(f"a frame longer than {self.max_frame_chars} characters was dropped")
                self._poisoned = True
                self._data, self._data_chars = [], 0
                return
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._id = value
                self.last_event_id = value
        elif name == "retry":
            if value and value.isascii() and value.isdigit():
                self._retry = int(value)
                self.retry = self._retry
        # any other field name is ignored

    def _reset_frame(self) -> None:
        self._data, self._data_chars, self._event, self._id, self._retry = [], 0, "", None, None
        self._poisoned = False

    def _dispatch(self, frames: list[SSEFrame]) -> None:
        if self._data and not self._poisoned:
            data = "\n".join(self._data)
            if json_too_deep(data, self.max_depth):
                self._reject(f"a frame nested deeper than {self.max_depth} levels was dropped")
            else:
                frames.append(SSEFrame(data, self._event or "message", self._id, self._retry))
        self._reset_frame()


#: what a decoded frame carries
StreamItemData: TypeAlias = "Event | RunSyncPayload | dict[str, Any]"

_KEEPALIVE_EVENTS = frozenset({"ping", "heartbeat", "keepalive", "keep-alive"})


def frame_id(value: str | None) -> int | None:
    """A frame's id as the integer the protocol uses, or ``None`` (absent or not a number)."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    return int(value)


class EventStreamDecoder:
    """SSE text/bytes -> ``(id, Event | RunSyncPayload)`` (or ``(id, dict)`` with ``raw_events``)."""

    def __init__(self, *, raw_events: bool = False, max_diagnostics: int = 200) -> None:
        self.parser = SSEParser()
        self.raw_events = raw_events
        self.diagnostics: deque[str] = deque(maxlen=max_diagnostics)
        self.diagnostic_count = 0
        self.frames = 0
        from pydantic import ValidationError

        from .events import EventParseError, first_error, parse_event
        from .tree import RunSyncPayload

        #: the models (imported with the first decoder: the parser alone needs none)
        self._models = (ValidationError, EventParseError, parse_event, RunSyncPayload, first_error)

    def feed(self, chunk: str | bytes | bytearray | memoryview) -> list[tuple[int | None, StreamItemData]]:
        return self._decode_all(self._parsed(self.parser.feed, chunk))

    def close(self, *, dispatch_incomplete: bool = False) -> list[tuple[int | None, StreamItemData]]:
        return self._decode_all(self._parsed(lambda _: self.parser.close(dispatch_incomplete=dispatch_incomplete), b""))

    def _parsed(self, step: Any, chunk: Any) -> list[SSEFrame]:
        rejected = self.parser.rejected
        frames: list[SSEFrame] = step(chunk)
        if self.parser.rejected != rejected:
            self._diag(f"after frame {self.frames}: {self.parser.last_rejection}")
        return frames

    def _decode_all(self, frames: list[SSEFrame]) -> list[tuple[int | None, StreamItemData]]:
        out: list[tuple[int | None, StreamItemData]] = []
        for frame in frames:
            item = self.decode(frame)
            if item is not None:
                out.append(item)
        return out

    def _diag(self, message: str) -> None:
        self.diagnostic_count += 1
        self.diagnostics.append(message)

    def decode(self, frame: SSEFrame) -> tuple[int | None, StreamItemData] | None:
        """One frame -> ``(id, item)``, or ``None`` (skipped; see ``diagnostics``)."""
        self.frames += 1
        where = f"frame {self.frames}" + (f" (id {frame.id})" if frame.id is not None else "")
        event_id = frame_id(frame.id)
        if frame.id is not None and event_id is None and frame.id != "":
            self._diag(f"{where}: id {frame.id!r} is not a non-negative integer; ignored")
        if frame.event in _KEEPALIVE_EVENTS:
            return None
        try:
            data = json.loads(frame.data)
        except RecursionError:
            self._diag(f"{where}: data is nested too deeply; skipped")
            return None
        except ValueError as exc:
            self._diag(f"{where}: data is not JSON ({exc}): {frame.data[:80]!r}")
            return None
        ValidationError, EventParseError, parse_event, RunSyncPayload, first_error = self._models

        if frame.event == "run-sync":
            try:
                return event_id, RunSyncPayload.model_validate(data)
            except ValidationError as exc:
                self._diag(f"{where}: invalid run-sync frame: {first_error(exc)}")
                return None
        if isinstance(data, dict) and "type" not in data and frame.event not in ("message", ""):
            data = {"type": frame.event, **data}
        if self.raw_events:
            if not isinstance(data, dict) or not isinstance(data.get("type"), str) or not data["type"]:
                self._diag(f"{where}: not an event object: {frame.data[:80]!r}")
                return None
            return event_id, data
        try:
            return event_id, parse_event(data)
        except EventParseError as exc:
            self._diag(f"{where}: {exc}")
            return None
