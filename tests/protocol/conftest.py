"""Helpers for the protocol tests: the seed document's examples and listings, event builders."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

#: a copy of ../shared/seeds/streaming-protocol.md (the spec), kept with the tests so a
#: clean clone can run them
SEED_PATH = Path(__file__).parent / "data" / "streaming-protocol.md"


def seed_text() -> str:
    return SEED_PATH.read_text(encoding="utf-8")


def fenced_blocks(text: str, lang: str | None = None) -> list[str]:
    """Bodies of ```lang fenced blocks (any language if ``lang`` is None)."""
    blocks = []
    for match in re.finditer(r"^```([\w-]*)\n(.*?)^```", text, flags=re.S | re.M):
        if lang is None or match.group(1) == lang:
            blocks.append(match.group(2))
    return blocks


def seed_json_examples() -> list[Any]:
    return [json.loads(block) for block in fenced_blocks(seed_text(), "json")]


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    return text[start:]


def listing_events(heading: str) -> list[dict[str, Any]]:
    """The seed's 'Typical Event Sequence' listing under ``heading`` as event dicts.

    Each line reads ``← type {runId: "r1", agentId: "a1", payload: {...}}`` in JavaScript
    object notation; ``[...]`` stands for "some list" and ``, ...`` for "more fields".
    Lines that are not events (``← ...loop continues...``) are skipped.
    """
    block = fenced_blocks(_section(seed_text(), heading))[0]
    events = []
    for line in block.splitlines():
        match = re.match(r"^←\s+([a-z-]+)\s+(\{.*\})\s*$", line.strip())
        if match is None:
            continue
        body = match.group(2).replace("[...]", "[]").replace(", ...}", "}")
        body = re.sub(r'([{,]\s*)([A-Za-z_]\w*)\s*:', r'\1"\2":', body)
        event = json.loads(body)
        events.append({"type": match.group(1), **event})
    return events


def ev(kind: str, agent: str, payload: dict[str, Any] | None = None, run: str = "r1", **envelope: Any) -> dict[str, Any]:
    """A wire event dict."""
    out: dict[str, Any] = {"type": kind, "runId": run, "agentId": agent, "payload": payload or {}}
    out.update(envelope)
    return out


@pytest.fixture
def simple_listing() -> list[dict[str, Any]]:
    return listing_events("### Simple Query")


@pytest.fixture
def autonomous_listing() -> list[dict[str, Any]]:
    return listing_events("### Autonomous Loop")
