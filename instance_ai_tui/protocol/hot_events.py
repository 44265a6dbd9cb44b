"""The cheap exact check that lets a client hand a hot event over as decoded JSON.

Text deltas, reasoning deltas and status events are the bulk of every stream. A client keeps
them as the dicts it decoded (``client.base.StreamItem.wire``) and the fold takes them without a
pydantic model, when ``is_plain_hot_event`` says the dict is one that ``protocol.events.parse_event``
accepts. This module imports nothing heavy (the client base uses it before the models load).
"""

from __future__ import annotations

from typing import Any

__all__ = ["HOT_TYPES", "is_plain_hot_event"]

#: the event types handed over as decoded JSON
HOT_TYPES = frozenset({"text-delta", "reasoning-delta", "status"})


#: the text field of each hot event's payload (the events a stream is made of, folded from their JSON)
_HOT_TEXT_FIELD = {"text-delta": "text", "reasoning-delta": "text", "status": "message"}
#: the envelope keys a hot event may have for ``is_plain_hot_event`` (the wire names of ``EventBase``)
_HOT_ENVELOPE_KEYS = frozenset({"type", "runId", "agentId", "userId", "responseId", "ts", "payload"})
_TS_TYPES = (int, float)


def is_plain_hot_event(data: Any) -> bool:
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
    kind = data.get("type")
    if type(kind) is not str:
        return False
    field = _HOT_TEXT_FIELD.get(kind)
    if field is None or not data.keys() <= _HOT_ENVELOPE_KEYS:
        return False
    payload = data.get("payload")
    if type(payload) is not dict or len(payload) > 1 or type(payload.get(field, "")) is not str:
        return False
    if len(payload) == 1 and field not in payload:
        return False
    if type(data.get("runId", "")) is not str or type(data.get("agentId", "")) is not str:
        return False
    value = data.get("responseId")
    if value is not None and type(value) is not str:
        return False
    value = data.get("userId")
    if value is not None and type(value) is not str:
        return False
    value = data.get("ts")
    return value is None or type(value) in _TS_TYPES
