"""The cheap exact check that lets a client type a delta without a pydantic model.

Text and reasoning deltas are the bulk of every stream. ``protocol.ingest.decode`` types one as a
``DeltaRun`` (no model) when ``is_plain_hot_event`` says the decoded dict is one that
``protocol.events.parse_event`` accepts, with the same values. ``loads`` is ``json.loads`` for
one event's text, cheaper. This module imports nothing heavy (the client base uses it before the
models load).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

__all__ = ["HOT_TYPES", "UNSAFE_IDS", "is_plain_hot_event", "loads"]

#: ids the reducer never takes for an agent, tool call or run (JavaScript's object keys, as n8n's fold)
UNSAFE_IDS = frozenset({"__proto__", "constructor", "prototype"})

#: the event types handed over as decoded JSON
HOT_TYPES = frozenset({"text-delta", "reasoning-delta", "status"})


#: the text field of each hot event's payload (the events a stream is made of, folded from their JSON)
_HOT_TEXT_FIELD = {"text-delta": "text", "reasoning-delta": "text", "status": "message"}
_ABSENT = object()
_TS_TYPES = (int, float)


def is_plain_hot_event(data: Any) -> TypeGuard[dict[str, Any]]:
    """Whether ``data`` (decoded JSON) is a ``text-delta``, ``reasoning-delta`` or ``status`` event
    that ``parse_event`` accepts, in the plain form a fold can take without a model.

    A cheap exact check, never wider than the validation: ``True`` only for a dict whose keys are
    among the envelope's wire names and ``payload``, whose ``runId``/``agentId`` are strings,
    ``userId``/``responseId`` strings or null, ``ts`` a number (not a boolean) or null, and whose
    ``payload`` is an object with at most the text field (``text``; ``message`` for ``status``),
    a string. Such a dict always parses, to a model carrying exactly these values. Anything else
    (extra or snake_case keys, other types) gives ``False``: the caller parses it with
    ``parse_event``, which accepts it or raises its own ``EventParseError``, as without this check."""
    if type(data) is not dict:
        return False
    try:
        field = _HOT_TEXT_FIELD[data["type"]]
        payload = data["payload"]
    except (KeyError, TypeError):  # no type, not a hot one, an unhashable one; no payload
        return False
    if type(payload) is not dict or (payload and (len(payload) != 1 or type(payload.get(field)) is not str)):
        return False
    # each envelope key present is checked and counted: any other key makes the count short
    get = data.get
    known = 2
    value = get("runId", _ABSENT)
    if value is not _ABSENT:
        if type(value) is not str:
            return False
        known += 1
    value = get("agentId", _ABSENT)
    if value is not _ABSENT:
        if type(value) is not str:
            return False
        known += 1
    value = get("responseId", _ABSENT)
    if value is not _ABSENT:
        if value is not None and type(value) is not str:
            return False
        known += 1
    if len(data) == known:  # the usual event
        return True
    value = get("userId", _ABSENT)
    if value is not _ABSENT:
        if value is not None and type(value) is not str:
            return False
        known += 1
    value = get("ts", _ABSENT)
    if value is not _ABSENT:
        if value is not None and type(value) not in _TS_TYPES:
            return False
        known += 1
    return len(data) == known


_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner ``json.loads`` runs (default settings)


def loads(text: str) -> Any:
    """``json.loads(text)`` (the same value, the same errors), cheaper for the usual event: a JSON
    object with no white space around it goes straight to the C scanner, without the per-call
    layers of ``json.loads``. Anything else, or anything the scanner refuses, is handed to
    ``json.loads`` itself."""
    if text[:1] == "{" and text[-1:] == "}":
        try:
            value, end = _scan_once(text, 0)
        except (StopIteration, ValueError):
            pass  # json.loads says what is wrong
        else:
            if end == len(text):
                return value
    return json.loads(text)
