"""Fixtures of the client tests: the same scenarios against EmbeddedClient and RemoteClient(our server)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from server.live import serve_app

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import Client, StreamItem
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app

DEMO_DELAY = 0.005


def demo_settings(tmp_path: Path) -> Settings:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "README.md").write_text("# Project\n", encoding="utf-8")
    return Settings(db_path=tmp_path / "client.sqlite3", workspace_root=workspace, model=ModelSettings(name="demo"))


@pytest.fixture(params=["embedded", "remote"])
async def client(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Client]:
    settings = demo_settings(tmp_path)
    if request.param == "embedded":
        async with EmbeddedClient(settings, demo_delay=DEMO_DELAY) as embedded:
            yield embedded
        return
    app = create_app(build_service(settings, demo_delay=DEMO_DELAY), ping_interval=1.0)
    async with serve_app(app) as url:
        async with RemoteClient(url, initial_backoff=0.05, max_backoff=0.5) as remote:
            yield remote


OnItem = Callable[[StreamItem], Awaitable[None]]


async def read_run(
    client: Client,
    thread_id: str,
    run_id: str,
    *,
    after: int | None = 0,
    on_item: OnItem | None = None,
    timeout: float = 20.0,
) -> list[StreamItem]:
    """Items of ``thread_id`` after ``after`` until the ``run-finish`` of ``run_id`` (inclusive)."""
    items: list[StreamItem] = []

    async def read() -> None:
        async with contextlib.aclosing(client.events(thread_id, after=after)) as stream:  # type: ignore[type-var]
            async for item in stream:
                items.append(item)
                if on_item is not None:
                    await on_item(item)
                event = item.event
                if event is not None and event.type == "run-finish" and event.run_id == run_id:
                    return

    await asyncio.wait_for(read(), timeout)
    return items


def types(items: list[StreamItem]) -> list[str]:
    return [item.event.type for item in items if item.event is not None]


def first(items: list[StreamItem], kind: str, **payload: Any) -> Any:
    for item in items:
        event = item.event
        if event is not None and event.type == kind:
            data = event.payload.to_wire() if hasattr(event.payload, "to_wire") else event.payload
            if all(data.get(k) == v for k, v in payload.items()):
                return event
    raise AssertionError(f"no {kind} {payload} in {types(items)}")
