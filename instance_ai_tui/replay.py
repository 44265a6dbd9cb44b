"""``instance-ai replay FILE``: fold a recorded event stream into agent trees and print them.

Input (detected from the first non-blank line):

* raw SSE text exactly as a server sent it: ``id:`` / ``event:`` / ``data:`` lines,
  ``:`` comments, ``event: run-sync`` frames (seed and n8n dialects);
* JSON lines: one event object per line (``{"type": ..., "runId": ..., ...}``), optionally
  wrapped as ``{"id": N, "event": {...}}`` or ``{"id": N, "data": {...}}``; run-sync
  payloads as ``{"type": "run-sync", "payload": {...}}``. A single JSON array of such
  objects works too.

Output: by default a text drawing of each message's tree (the seed's "Frontend
Rendering"); with ``--json`` the agent tree JSON (the messages endpoint's ``agentTree``)
when the stream holds one message group, else a JSON list of all messages
(``InstanceAiMessage``). Malformed frames are reported on stderr and skipped.
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from .protocol.conversation import Conversation

_MAX_DIAGNOSTICS_SHOWN = 50
#: bytes read at a time: the file is folded as it is read, so memory does not grow with its size
_CHUNK = 1 << 20
#: JSON lines decoded by one ``json.loads`` call (as one array)
_BATCH = 1000
#: pieces of the JSON document written at a time
_PIECES = 4096


class _Diagnostics:
    """The first ``_MAX_DIAGNOSTICS_SHOWN`` diagnostics and how many there were (bounded memory)."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.count = 0

    def append(self, line: str) -> None:
        self.count += 1
        if len(self.shown) < _MAX_DIAGNOSTICS_SHOWN:
            self.shown.append(line)

    def extend(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.append(line)


def _open(name: str) -> BinaryIO:
    return sys.stdin.buffer if name == "-" else Path(name).expanduser().open("rb")


def _chunks(stream: BinaryIO) -> Iterator[str]:
    """The stream's text, a chunk at a time (UTF-8; bad bytes replaced; a leading BOM dropped)."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    first = True
    while True:
        data = stream.read(_CHUNK)
        text = decoder.decode(data, final=not data)
        if first and text:
            text, first = text.lstrip("\ufeff"), False
        if text:
            yield text
        if not data:
            return


def _split_format(chunks: Iterator[str]) -> tuple[bool, Iterator[str]]:
    """Whether the stream is JSON (its first non-blank character is ``{`` or ``[``), and the chunks again."""
    seen: list[str] = []
    is_json = False
    for chunk in chunks:
        seen.append(chunk)
        stripped = chunk.lstrip()
        if stripped:
            is_json = stripped[0] in "{["
            break
    return is_json, itertools.chain(seen, chunks)


def _item(number: int, obj: Any, diagnostics: _Diagnostics) -> tuple[int | None, Any] | None:
    """One recorded JSON object as a stream item (None: reported and skipped)."""
    from .protocol.tree import RunSyncPayload

    if not isinstance(obj, dict):
        diagnostics.append(f"line {number}: expected a JSON object, got {type(obj).__name__}")
        return None
    event_id: int | None = None
    raw_id = obj.get("id")
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        event_id = raw_id
    inner = obj.get("event", obj.get("data")) if "type" not in obj else None
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except ValueError:
            inner = None
    if isinstance(inner, dict):
        obj = inner
    if obj.get("type") == "run-sync" or ("type" not in obj and "agentTree" in obj):
        try:
            return event_id, RunSyncPayload.model_validate(obj.get("payload", obj))
        except ValueError as exc:
            diagnostics.append(f"line {number}: invalid run-sync payload: {str(exc).splitlines()[0]}")
            return None
    if event_id is not None and "type" in obj and "id" in obj:
        obj = {k: v for k, v in obj.items() if k != "id"}
    return event_id, obj


def _json_items(chunks: Iterator[str], diagnostics: _Diagnostics) -> Iterator[list[tuple[int | None, Any]]]:
    """JSON lines, decoded a batch of lines per ``json.loads`` call as they are read (a list of
    ``(id, object)`` per batch); a single JSON array is read whole."""
    head = ""
    for chunk in chunks:  # up to the first non-blank chunk: the format shows there
        head += chunk
        if head.strip():
            break
    if head.lstrip().startswith("["):
        text = head + "".join(chunks)
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):
            whole = None
        if isinstance(whole, list):
            items = [_item(index + 1, obj, diagnostics) for index, obj in enumerate(whole)]
            yield [item for item in items if item is not None]
            return
        chunks = iter([text])
    else:
        chunks = itertools.chain([head], chunks)
    pending = ""
    number = 0  # lines before the batch
    for chunk in itertools.chain(chunks, ["\n"]):
        text = pending + chunk
        cut = text.rfind("\n")
        if cut < 0:
            pending = text
            continue
        pending = text[cut + 1 :]
        lines = text[:cut].split("\n")
        for start in range(0, len(lines), _BATCH):
            batch = lines[start : start + _BATCH]
            yield _decode_lines(batch, number, diagnostics)
            number += len(batch)


def _decode_lines(lines: list[str], number: int, diagnostics: _Diagnostics) -> list[tuple[int | None, Any]]:
    """``lines`` (following line ``number``) as items: each run of deltas in the plain form (our log's,
    ``run --json``'s) read in bulk as one ``DeltaRun`` without decoding its lines one by one
    (``protocol.delta_runs.line_runs``), the other lines by ``_decode_batch``."""
    from .protocol.delta_runs import line_runs

    runs = line_runs(None, lines) if len(lines) > 1 else []
    if not runs:
        return _decode_batch(lines, number, diagnostics)
    out: list[tuple[int | None, Any]] = []
    taken = 0
    for start, stop, run in runs:
        if start > taken:
            out.extend(_decode_batch(lines[taken:start], number + taken, diagnostics))
        out.append((None, run))
        taken = stop
    if taken < len(lines):
        out.extend(_decode_batch(lines[taken:], number + taken, diagnostics))
    return out


def _decode_batch(lines: list[str], number: int, diagnostics: _Diagnostics) -> list[tuple[int | None, Any]]:
    """``lines`` (following line ``number``) as ``(id, object)`` items: one ``json.loads`` of them
    all as one array when each is one JSON value, else line by line (blank lines, bad JSON, lines
    nested too deep: each reported with its number)."""
    from .protocol.sse import MAX_JSON_DEPTH, json_too_deep

    objects: Any = None
    numbers: list[int] | None = None  # each object's line, when decoded line by line
    # (a line cannot nest deeper than it is long: the depth is looked at for long lines only)
    if "" not in lines and (max(map(len, lines)) <= MAX_JSON_DEPTH or not any(
            len(line) > MAX_JSON_DEPTH and json_too_deep(line) for line in lines)):
        try:
            objects = json.loads("[" + ",".join(lines) + "]")
        except (ValueError, RecursionError):
            objects = None
        if objects is not None and len(objects) != len(lines):
            objects = None  # a line held more than one value ("{...}, {...}"): line by line says which
    if objects is None:
        objects, numbers = [], []
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            where = number + index + 1
            if len(line) > MAX_JSON_DEPTH and json_too_deep(line):
                diagnostics.append(f"line {where}: nested deeper than {MAX_JSON_DEPTH} levels; skipped")
                continue
            try:
                objects.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                diagnostics.append(f"line {where}: not JSON ({exc})")
                continue
            numbers.append(where)
    items: list[tuple[int | None, Any]] = []
    for index, obj in enumerate(objects):
        if type(obj) is dict and "id" not in obj and obj.get("type", "run-sync") != "run-sync":
            items.append((None, obj))  # the common line: a bare event object, as it is
            continue
        item = _item(number + index + 1 if numbers is None else numbers[index], obj, diagnostics)
        if item is not None:
            items.append(item)
    return items


def _sse_items(chunks: Iterator[str], diagnostics: _Diagnostics) -> Iterator[list[tuple[int | None, Any]]]:
    """Raw SSE text, decoded a chunk at a time (a list of ``(id, item)`` per chunk)."""
    from .protocol.sse import EventStreamDecoder

    decoder = EventStreamDecoder(raw_events=True, max_diagnostics=10_000)
    for chunk in chunks:
        yield decoder.feed(chunk)
        diagnostics.extend(decoder.diagnostics)
        decoder.diagnostics.clear()
    yield decoder.close(dispatch_incomplete=True)
    diagnostics.extend(decoder.diagnostics)


class _Fold:
    """Folds batches of recorded ``(id, object)`` items into a ``Conversation``: each decoded to its
    typed item (``protocol.ingest.decode``: a delta as a ``DeltaRun``, neighbouring ones joined,
    folded as one by one), what is not an event noted in the conversation's diagnostics."""

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    def feed(self, items: list[tuple[int | None, Any]]) -> None:
        from .protocol.events import EventParseError
        from .protocol.ingest import DeltaRun, Joiner, StreamItem
        from .protocol.tree import RunSyncPayload

        conversation = self.conversation
        joiner = Joiner()
        take = joiner.json
        for event_id, data in items:
            kind = type(data)
            if kind is DeltaRun:  # (a run of lines read in bulk)
                joiner.add(data)
                continue
            if kind is RunSyncPayload:
                joiner.add(StreamItem(event_id, data))
                continue
            try:
                take(event_id, data)
            except EventParseError as exc:
                conversation.fold(joiner.done())  # (what came before it first: the notes in order)
                conversation.diagnostics.append(str(exc))
        conversation.fold(joiner.done())


@contextlib.contextmanager
def _few_collections() -> Iterator[None]:
    """While decoding: the objects made so far (the imported modules) out of the cycle collector's
    sight (``gc.freeze``), and a young collection every 50,000 allocations instead of 700. Each
    batch's events are alive when a young collection comes and were traversed, promoted and
    traversed again; garbage cycles are still collected, later. (Some 30% of the decoding's time.)"""
    import gc

    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, threshold[1], threshold[2])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def replay(name: str, *, as_json: bool = False, ascii: bool = False) -> int:
    """Fold the recorded stream in file ``name`` ('-': stdin) and print its tree; the exit code
    (``instance-ai replay``, see ``cli.replay``). The file is folded as it is read: memory holds the
    conversation, not the file or its events."""
    from .protocol.conversation import Conversation
    from .protocol.safe_text import json_safe, visible

    diagnostics = _Diagnostics()
    conversation = Conversation()
    try:
        stream = _open(name)
        try:
            is_json, chunks = _split_format(_chunks(stream))
            batches = _json_items(chunks, diagnostics) if is_json else _sse_items(chunks, diagnostics)
            fold = _Fold(conversation)
            with _few_collections():
                for batch in batches:
                    fold.feed(batch)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"instance-ai replay: cannot read {name!r}: {reason}", file=sys.stderr)
        return 2
    diagnostics.extend(conversation.diagnostics)
    for message in conversation.messages:
        if message.reducer is not None:
            diagnostics.extend(f"message {message.id}: {d}" for d in message.reducer.diagnostics)
    for line in diagnostics.shown:  # (they quote the file: made visible)
        print(visible(f"replay: {line}"), file=sys.stderr)
    if diagnostics.count > _MAX_DIAGNOSTICS_SHOWN:
        print(f"replay: ... and {diagnostics.count - _MAX_DIAGNOSTICS_SHOWN} more diagnostics", file=sys.stderr)

    assistants = [m for m in conversation.messages if m.reducer is not None]
    if not assistants:
        print(f"instance-ai replay: no events found in {'stdin' if name == '-' else repr(name)}", file=sys.stderr)
        return 1
    out = sys.stdout
    if as_json:
        if len(assistants) == 1:
            payload: Any = assistants[0].reducer.tree().to_wire()  # type: ignore[union-attr]
        else:
            payload = [m.to_message().to_wire() for m in conversation.messages]
        _separate_reasoning(payload)
        # written as it is encoded, a few thousand pieces at a time: the document is never whole
        # in memory (for a long recording it is tens of MB, and its pieces several times that);
        # json_safe escapes single characters, so piece by piece is the same as all at once
        pieces: list[str] = []
        for piece in json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(payload):
            pieces.append(piece)
            if len(pieces) >= _PIECES:
                out.write(json_safe("".join(pieces)))
                pieces.clear()
        out.write(json_safe("".join(pieces)) + "\n")
        return 0
    # written as they are drawn, a few thousand lines at a time: the drawing is never whole in memory
    # (blocks are separated by a blank line; each line, visible, ends with a newline)
    pending: list[str] = []
    for line in _text_blocks(conversation, ascii):
        pending.append(line)
        if len(pending) >= _PIECES:
            pending.append("")
            out.write("\n".join(pending))
            pending.clear()
    pending.append("")
    out.write("\n".join(pending))
    return 0


def _text_blocks(conversation: Conversation, ascii: bool) -> Iterator[str]:
    """The text drawing's lines: the title, then each message (a user's text, an assistant's tree
    drawn line by line by ``text_render.text_lines``), a blank line between blocks."""
    from .protocol.safe_text import visible
    from .protocol.text_render import text_lines

    first = True
    if conversation.title:
        yield visible(f"Thread: {conversation.title}")
        first = False
    for message in conversation.messages:
        if not first:
            yield ""
        first = False
        if message.reducer is None:
            yield visible(("[user] " if ascii else "👤 ") + message.content)
        else:
            yield from text_lines(message.reducer.tree(), ascii=ascii)


def _separate_reasoning(value: Any) -> None:
    """In the printed JSON, an agent's ``reasoning`` keeps a blank line between its segments
    (thoughts before and after a tool call); n8n's tree joins the deltas with nothing, and the
    ``timeline`` still holds each segment on its own."""
    if isinstance(value, list):
        for item in value:
            _separate_reasoning(item)
        return
    if not isinstance(value, dict):
        return
    timeline = value.get("timeline")
    if isinstance(timeline, list):
        segments = [str(e.get("content") or "") for e in timeline if isinstance(e, dict) and e.get("type") == "reasoning"]
        if len(segments) > 1 and isinstance(value.get("reasoning"), str):
            value["reasoning"] = "\n\n".join(segment.strip() for segment in segments if segment.strip())
    for key in ("children", "agentTree"):
        child = value.get(key)
        if child is not None:
            _separate_reasoning(child)
