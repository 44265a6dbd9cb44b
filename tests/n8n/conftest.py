"""Fixtures for the n8n dialect: a fake n8n on 127.0.0.1 and an ``N8nClient`` logged in to it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.n8n import N8nClient
from tests.support.fake_n8n import FakeN8n


@pytest.fixture
async def fake() -> AsyncIterator[FakeN8n]:
    server = FakeN8n(ping_interval=0.5)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def make_client(fake: FakeN8n, config_dir: Path, **kwargs: Any) -> N8nClient:
    options: dict[str, Any] = {
        "config_dir": config_dir,
        "interactive": False,
        "initial_backoff": 0.05,
        "max_backoff": 0.2,
        "keepalive_timeout": 5.0,
    }
    options.update(kwargs)
    return N8nClient(fake.base_url, options.pop("email", fake.email), options.pop("password", fake.password), **options)


@pytest.fixture
async def client(fake: FakeN8n, tmp_path: Path) -> AsyncIterator[N8nClient]:
    c = make_client(fake, tmp_path / "config")
    try:
        yield c
    finally:
        await c.close()
