"""Fixtures of the assistant tests: a real SQLite file, the in-process bus, an ``InstanceAI``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.protocol.api import parse_confirm_body
from instance_ai_tui.store.sqlite import SqliteStore

Factory = Callable[..., Awaitable[InstanceAI]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "assistant.sqlite3"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "README.md").write_text("# Demo project\nIt sends the weather to Slack.\n", encoding="utf-8")
    return root


@pytest.fixture
async def make_ai(db_path: Path) -> AsyncIterator[Factory]:
    """``await make_ai(model=..., **InstanceAI kwargs)``; every instance is shut down at the end."""
    made: list[InstanceAI] = []

    async def factory(model: Any = "demo", *, options: AssistantOptions | None = None, path: Path | None = None,
                      **kwargs: Any) -> InstanceAI:
        store = SqliteStore(path or db_path)
        bus = InProcessBus(store)
        ai = InstanceAI(store, bus, model=model, options=options or AssistantOptions(generate_titles=False), **kwargs)
        await ai.start()
        made.append(ai)
        return ai

    yield factory
    for ai in made:
        await ai.shutdown()


async def collect(ai: InstanceAI, thread_id: str, *, after: int = 0, until: tuple[str, ...] = ("run-finish",),
                  timeout: float = 10.0) -> list[dict[str, Any]]:
    """Events (dicts with an added ``id``) from ``after`` up to and including the first of ``until``."""
    out: list[dict[str, Any]] = []

    async def read() -> None:
        async for event in ai.events(thread_id, after=after):
            data = {**event.data(), "id": event.id}
            out.append(data)
            if data["type"] in until:
                return

    await asyncio.wait_for(read(), timeout)
    return out


async def answer(ai: InstanceAI, request_id: str, body: dict[str, Any]) -> None:
    await ai.confirm(request_id, parse_confirm_body(body))


def types(events: list[dict[str, Any]], *, deltas: bool = False) -> list[str]:
    """Event types; consecutive deltas of one kind collapse into one unless ``deltas``."""
    out: list[str] = []
    for e in events:
        t = e["type"]
        if not deltas and t in ("text-delta", "reasoning-delta", "status") and out and out[-1] == t:
            continue
        out.append(t)
    return out


def without_status(names: list[str]) -> list[str]:
    return [n for n in names if n != "status"]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def finish_status(event: dict[str, Any]) -> dict[str, Any]:
    """A ``run-finish`` payload without its ``usage`` (tests of usage: ``test_usage_events``)."""
    return {k: v for k, v in event["payload"].items() if k != "usage"}
