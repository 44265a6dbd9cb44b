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

import json
import sys
from pathlib import Path
from typing import Any

_MAX_DIAGNOSTICS_SHOWN = 50


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    return Path(name).expanduser().read_bytes()


def _looks_like_json(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[0] in "{["
    return False


def _json_items(text: str, diagnostics: list[str]) -> list[tuple[int | None, Any]]:
    from .protocol.sse import MAX_JSON_DEPTH, json_too_deep
    from .protocol.tree import RunSyncPayload

    objects: list[tuple[int, Any]] = []
    stripped = text.strip()
    whole: Any = None
    if stripped.startswith("["):
        try:
            whole = json.loads(stripped)
        except (ValueError, RecursionError):
            whole = None
    if isinstance(whole, list):
        objects = [(index + 1, obj) for index, obj in enumerate(whole)]
    else:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            if json_too_deep(line):
                diagnostics.append(f"line {number}: nested deeper than {MAX_JSON_DEPTH} levels; skipped")
                continue
            try:
                objects.append((number, json.loads(line)))
            except (ValueError, RecursionError) as exc:
                diagnostics.append(f"line {number}: not JSON ({exc})")
    items: list[tuple[int | None, Any]] = []
    for number, obj in objects:
        if not isinstance(obj, dict):
            diagnostics.append(f"line {number}: expected a JSON object, got {type(obj).__name__}")
            continue
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
                items.append((event_id, RunSyncPayload.model_validate(obj.get("payload", obj))))
            except ValueError as exc:
                diagnostics.append(f"line {number}: invalid run-sync payload: {str(exc).splitlines()[0]}")
            continue
        if event_id is not None and "type" in obj and "id" in obj:
            obj = {k: v for k, v in obj.items() if k != "id"}
        items.append((event_id, obj))
    return items


def _sse_items(text: str, diagnostics: list[str]) -> list[tuple[int | None, Any]]:
    from .protocol.sse import EventStreamDecoder

    decoder = EventStreamDecoder(raw_events=True, max_diagnostics=10_000)
    items = decoder.feed(text)
    items.extend(decoder.close(dispatch_incomplete=True))
    diagnostics.extend(decoder.diagnostics)
    return items


def replay(name: str, *, as_json: bool = False, ascii: bool = False) -> int:
    """Fold the recorded stream in file ``name`` ('-': stdin) and print its tree; the exit code
    (``instance-ai replay``, see ``cli.replay``)."""
    from .protocol.conversation import Conversation
    from .protocol.text_render import render_text
    from .protocol.tree import RunSyncPayload

    try:
        data = _read(name)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"instance-ai replay: cannot read {name!r}: {reason}", file=sys.stderr)
        return 2
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    diagnostics: list[str] = []
    items = _json_items(text, diagnostics) if _looks_like_json(text) else _sse_items(text, diagnostics)

    conversation = Conversation()
    for event_id, item in items:
        if isinstance(item, RunSyncPayload):
            conversation.apply(event_id, item)
        else:
            conversation.apply_wire(event_id, item)
    diagnostics.extend(conversation.diagnostics)
    for message in conversation.messages:
        if message.reducer is not None:
            diagnostics.extend(f"message {message.id}: {d}" for d in message.reducer.diagnostics)
    for line in diagnostics[:_MAX_DIAGNOSTICS_SHOWN]:
        print(f"replay: {line}", file=sys.stderr)
    if len(diagnostics) > _MAX_DIAGNOSTICS_SHOWN:
        print(f"replay: ... and {len(diagnostics) - _MAX_DIAGNOSTICS_SHOWN} more diagnostics", file=sys.stderr)

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
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    blocks: list[str] = []
    if conversation.title:
        blocks.append(f"Thread: {conversation.title}")
    for message in conversation.messages:
        if message.reducer is None:
            blocks.append(("[user] " if ascii else "👤 ") + message.content)
        else:
            blocks.append(render_text(message.reducer.tree(), ascii=ascii))
    out.write("\n\n".join(blocks) + "\n")
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
