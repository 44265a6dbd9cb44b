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
import itertools
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

_MAX_DIAGNOSTICS_SHOWN = 50
#: bytes read at a time: the file is folded as it is read, so memory does not grow with its size
_CHUNK = 1 << 20


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


def _json_items(chunks: Iterator[str], diagnostics: _Diagnostics) -> Iterator[tuple[int | None, Any]]:
    """JSON lines, folded line by line as they are read; a single JSON array is read whole."""
    from .protocol.sse import MAX_JSON_DEPTH, json_too_deep

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
            for index, obj in enumerate(whole):
                item = _item(index + 1, obj, diagnostics)
                if item is not None:
                    yield item
            return
        chunks = iter([text])
    else:
        chunks = itertools.chain([head], chunks)
    pending = ""
    number = 0
    loads = json.loads
    for chunk in itertools.chain(chunks, ["\n"]):
        lines = (pending + chunk).split("\n")
        pending = lines.pop()
        for line in lines:
            number += 1
            if not line.strip():
                continue
            # (a line cannot nest deeper than it is long: the check is for long lines only)
            if len(line) > MAX_JSON_DEPTH and json_too_deep(line):
                diagnostics.append(f"line {number}: nested deeper than {MAX_JSON_DEPTH} levels; skipped")
                continue
            try:
                obj = loads(line)
            except (ValueError, RecursionError) as exc:
                diagnostics.append(f"line {number}: not JSON ({exc})")
                continue
            if type(obj) is dict and "id" not in obj and obj.get("type", "run-sync") != "run-sync":
                yield None, obj  # the common line: a bare event object, as it is
                continue
            item = _item(number, obj, diagnostics)
            if item is not None:
                yield item


def _sse_items(chunks: Iterator[str], diagnostics: _Diagnostics) -> Iterator[tuple[int | None, Any]]:
    """Raw SSE text, decoded a chunk at a time."""
    from .protocol.sse import EventStreamDecoder

    decoder = EventStreamDecoder(raw_events=True, max_diagnostics=10_000)
    for chunk in chunks:
        yield from decoder.feed(chunk)
        diagnostics.extend(decoder.diagnostics)
        decoder.diagnostics.clear()
    yield from decoder.close(dispatch_incomplete=True)
    diagnostics.extend(decoder.diagnostics)


def replay(name: str, *, as_json: bool = False, ascii: bool = False) -> int:
    """Fold the recorded stream in file ``name`` ('-': stdin) and print its tree; the exit code
    (``instance-ai replay``, see ``cli.replay``). The file is folded as it is read: memory holds the
    conversation, not the file or its events."""
    from .protocol.conversation import Conversation
    from .protocol.safe_text import json_safe, visible
    from .protocol.text_render import render_text
    from .protocol.tree import RunSyncPayload

    diagnostics = _Diagnostics()
    conversation = Conversation()
    try:
        stream = _open(name)
        try:
            is_json, chunks = _split_format(_chunks(stream))
            items = _json_items(chunks, diagnostics) if is_json else _sse_items(chunks, diagnostics)
            for event_id, item in items:
                if isinstance(item, RunSyncPayload):
                    conversation.apply(event_id, item)
                else:
                    conversation.apply_wire(event_id, item)
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
        out.write(json_safe(json.dumps(payload, indent=2, ensure_ascii=False)) + "\n")
        return 0
    blocks: list[str] = []
    if conversation.title:
        blocks.append(f"Thread: {conversation.title}")
    for message in conversation.messages:
        if message.reducer is None:
            blocks.append(("[user] " if ascii else "👤 ") + message.content)
        else:
            blocks.append(render_text(message.reducer.tree(), ascii=ascii))
    out.write(visible("\n\n".join(blocks)) + "\n")
    return 0


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
