"""Serve our app with a real uvicorn on 127.0.0.1 (in process), or as an ``instance-ai serve`` subprocess."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette

from instance_ai_tui.server.runner import make_server
from tests.support import free_port, serve_asgi

REPO = Path(__file__).resolve().parents[2]

__all__ = ["REPO", "ServeProcess", "free_port", "serve_app"]


@asynccontextmanager
async def serve_app(app: Starlette, port: int | None = None) -> AsyncIterator[str]:
    """Run ``app`` with our own server (``make_server``: lifespan on, header timeout, connection
    cap) until the block ends; yields the base URL. The socket, start and stop are
    ``tests.support.serve_asgi``'s."""

    def ours(sock: socket.socket) -> uvicorn.Server:
        return make_server(app, "127.0.0.1", int(sock.getsockname()[1]))

    async with serve_asgi(app, port=port or 0, server=ours) as url:
        yield url


class ServeProcess:
    """``python -m instance_ai_tui serve`` in a subprocess, on a fixed port (so it can restart)."""

    def __init__(self, db: Path, port: int | None = None, extra: Sequence[str] = (), env: dict[str, str] | None = None,
                 model: str = "demo") -> None:
        self.db = db
        self.model = model
        self.port = port or free_port()
        self.extra = list(extra)
        self.env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = db.parent / f"serve-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout: float = 20.0) -> None:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(  # noqa: ASYNC220 - starting a test server process; returns at once
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(self.port), "--db", str(self.db),
             "--model", self.model, *self.extra],
            stdout=log, stderr=log, env=self.env, cwd=str(REPO),
        )
        log.close()
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient() as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"serve exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
                try:
                    if (await http.get(f"{self.url}/instance-ai/health", timeout=1)).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise RuntimeError(f"serve did not start: {self.log_path.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, like a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self, timeout: float = 15.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)
