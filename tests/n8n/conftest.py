"""Fixtures for the n8n dialect: a fake n8n on 127.0.0.1 and an ``N8nClient`` logged in to it."""

from __future__ import annotations

import asyncio
import socket
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


class AppServer:
    """Serve any ASGI app with uvicorn on a free 127.0.0.1 port."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.port = 0
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> AppServer:
        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        self.port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off"))
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            await asyncio.sleep(0.01)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.should_exit = True
        assert self._task is not None
        await self._task
