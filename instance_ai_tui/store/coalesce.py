"""What a finished run's log keeps: n8n's coalesced ``text-block`` / ``reasoning-block`` for each
answer segment instead of one event per token (issue 14 item 6).

n8n persists one block per segment when it closes: when the agent's ``responseId`` changes, when
another event of that agent arrives, or at ``run-finish`` (which closes every agent's segment); the
block comes *before* the event that closed it and holds the segment's whole text. A finished run's
stored deltas are rewritten the same way: each segment's last delta becomes the block (its id, so ids
stay monotonic and the block sits before the closing event) and the segment's other deltas go.

A client that resumes inside a coalesced segment gets the block with an id above its cursor; the
reducer's REPLACE rule for blocks (its open entry's text is the start of the block's) turns its
partial text into the whole, so it never shows text twice. While a run is live nothing is rewritten:
a client resuming mid-run still gets every delta it missed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

DELTA_TO_BLOCK = {"text-delta": "text-block", "reasoning-delta": "reasoning-block"}


@dataclass
class CoalescePlan:
    """``remove``: ids of deltas that go; ``replace``: id -> (type, json) of each segment's block."""

    remove: list[int] = field(default_factory=list)
    replace: dict[int, tuple[str, str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.remove and not self.replace


@dataclass
class _Segment:
    kind: str
    response_id: Any
    ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)


def plan_coalesce(events: Iterable[tuple[int, str]]) -> CoalescePlan:
    """The rewrite of one run's events, given as ``(id, json)`` in id order."""
    plan = CoalescePlan()
    open_segments: dict[str, _Segment] = {}

    def close(agent: str) -> None:
        segment = open_segments.pop(agent, None)
        if segment is None or len(segment.ids) < 2:
            return  # a single delta stays as it is: nothing to gain
        block = dict(segment.last)
        block["type"] = DELTA_TO_BLOCK[segment.kind]
        payload = dict(block.get("payload") or {})
        payload["text"] = "".join(segment.texts)
        block["payload"] = payload
        plan.remove.extend(segment.ids[:-1])
        plan.replace[segment.ids[-1]] = (block["type"], json.dumps(block, separators=(",", ":"), ensure_ascii=False))

    for event_id, raw in events:
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        kind = data.get("type")
        raw_agent = data.get("agentId")
        agent: str = raw_agent if isinstance(raw_agent, str) else ""
        if kind in DELTA_TO_BLOCK:
            payload = data.get("payload")
            text = payload.get("text") if isinstance(payload, dict) else None
            if not isinstance(text, str):
                close(agent)
                continue
            response_id = data.get("responseId") or None
            segment = open_segments.get(agent)
            if segment is not None and (segment.kind != kind or segment.response_id != response_id):
                close(agent)
                segment = None
            if segment is None:
                segment = open_segments[agent] = _Segment(kind, response_id)
            segment.ids.append(event_id)
            segment.texts.append(text)
            segment.last = data
        elif kind == "run-finish":
            for name in list(open_segments):
                close(name)
        else:
            close(agent)
    for name in list(open_segments):
        close(name)
    return plan
