"""Folding test inputs through the one way into the reducer (``protocol.ingest``).

The product folds typed items only (``Conversation.fold``, ``RunReducer.apply``); tests often hold
an event as a model or as its wire JSON. These helpers decode and fold it the way a client hands
it over (``protocol.ingest.decode``: a delta as a ``DeltaRun`` of one), so a test says what it
means in one call. A frame that is not an event is noted in the conversation's diagnostics, as a
client notes it in its own."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import EventParseError
from instance_ai_tui.protocol.ingest import StreamItem, decode
from instance_ai_tui.protocol.reducer import RunReducer, fold_json


def _taken(conversation: Conversation, event_id: int | None, before: int, notes: int) -> bool:
    """Whether a fold took the frame: not a repeat, nothing noted about it."""
    return (event_id is None or event_id > before) and len(conversation.diagnostics) == notes


def apply(target: Any, event_id: Any, event: Any = None) -> bool:
    """Fold one event model (or run-sync payload) into a ``Conversation`` (``apply(c, id, event)``)
    or a ``RunReducer`` (``apply(r, event)``); whether it was taken."""
    if isinstance(target, RunReducer):
        notes = target.diagnostic_count
        target.apply(event_id)
        return target.diagnostic_count == notes
    before, notes = target.cursor, len(target.diagnostics)
    target.fold([StreamItem(event_id, event)])
    return _taken(target, event_id, before, notes)


def apply_wire(target: Any, event_id: Any, data: Any = None) -> bool:
    """Fold one event given as JSON (text or decoded) into a ``Conversation``
    (``apply_wire(c, id, data)``) or a ``RunReducer`` (``apply_wire(r, data)``); whether it was taken."""
    if isinstance(target, RunReducer):
        notes = target.diagnostic_count
        fold_json(target, [event_id])
        return target.diagnostic_count == notes
    before, notes = target.cursor, len(target.diagnostics)
    try:
        item = decode(event_id, data)
    except EventParseError as exc:
        target.diagnostics.append(str(exc))
        return False
    target.fold([item])
    return _taken(target, event_id, before, notes)


def apply_all(target: Any, frames: Iterable[Any]) -> Any:
    """``apply`` of each: ``(id, event)`` pairs for a ``Conversation``, events for a ``RunReducer``."""
    if isinstance(target, RunReducer):
        return target.apply_all(frames)
    for event_id, event in frames:
        apply(target, event_id, event)
    return target


def apply_all_wire(target: Any, frames: Iterable[Any]) -> Any:
    """``apply_wire`` of each: ``(id, data)`` pairs for a ``Conversation``, JSON for a ``RunReducer``."""
    if isinstance(target, RunReducer):
        return fold_json(target, frames)
    for event_id, data in frames:
        apply_wire(target, event_id, data)
    return target
