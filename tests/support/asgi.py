"""Serve an ASGI app with a real uvicorn in this process, on 127.0.0.1: the one server helper.

``AsgiServer`` starts and stops one (for objects that own their server: the fake n8n, the
OpenAI wire-format model server); ``serve_asgi`` is the ``async with`` form; the root conftest's
``asgi_server`` fixture serves apps until the test ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn


class AsgiServer:
    """One uvicorn serving ``app`` on a socket bound here (``port=0``: any free one, no race for it).

    ``server`` builds a configured ``uvicorn.Server`` for the socket instead of the default one
    (e.g. ``instance-ai serve``'s own server class). ``start`` returns once the server accepts
    connections (or raises what stopped it); ``stop`` asks it to exit and waits ``stop_timeout``
    seconds at most before cancelling it. The server never installs signal handlers: the test
    process keeps its own."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0,
                 lifespan: Literal["on", "off", "auto"] = "off",
                 server: Callable[[socket.socket], uvicorn.Server] | None = None,
                 graceful_shutdown: float | None = None) -> None:
        self.app = app
        self.host = host
        self.port = port
        self._lifespan = lifespan
        self._factory = server
        self._graceful = graceful_shutdown
        self.server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self, start_timeout: float = 10.0) -> str:
        """Serve; returns the base URL (``http://127.0.0.1:PORT``)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(128)
        sock.setblocking(False)
        self._socket = sock
        self.port = int(sock.getsockname()[1])
        if self._factory is None:
            config = uvicorn.Config(self.app, log_level="warning", lifespan=self._lifespan, access_log=False,
                                    timeout_graceful_shutdown=self._graceful)
            instance = uvicorn.Server(config)
        else:
            instance = self._factory(sock)
        instance.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # (uvicorn < 0.29)
        # uvicorn >= 0.29 takes SIGINT/SIGTERM in serve() and puts back, at stop, the handler it found at
        # start: a test's Ctrl+C only stopped this server, and a fixture's stale asyncio Runner handler came back
        instance.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
        self.server = instance

        async def run() -> None:
            try:
                await instance.serve(sockets=[sock])
            except SystemExit as exc:  # uvicorn exits when the app's startup fails: not this process
                raise RuntimeError(f"the server could not start (uvicorn exit code {exc.code})") from None

        self._task = task = asyncio.create_task(run(), name=f"asgi-server-{self.port}")
        try:
            async with asyncio.timeout(start_timeout):
                while not instance.started and not task.done():
                    await asyncio.sleep(0.005)
            if task.done():
                task.result()  # raises what stopped it
                raise RuntimeError("the server stopped while starting")
        except BaseException:
            await self.stop()
            raise
        return self.url

    async def stop(self, stop_timeout: float = 15.0) -> None:
        """Ask the server to exit and wait for it (cancelled after ``stop_timeout`` seconds)."""
        task, self._task = self._task, None
        if self.server is not None:
            self.server.should_exit = True
        try:
            if task is not None and not task.done():
                try:
                    await asyncio.wait_for(asyncio.shield(task), stop_timeout)
                except TimeoutError:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            elif task is not None and not task.cancelled():
                task.exception()  # retrieved: a failed start was raised by start()
        finally:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
            self.server = None


@asynccontextmanager
async def serve_asgi(
    app: Any,
    *,
    port: int = 0,
    lifespan: Literal["on", "off", "auto"] = "off",
    server: Callable[[socket.socket], uvicorn.Server] | None = None,
    start_timeout: float = 10.0,
) -> AsyncIterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT``) while ``app`` is served (``AsgiServer``).

    If the server cannot start, its exception is raised here; on leaving, the server is shut
    down and awaited.
    """
    served = AsgiServer(app, port=port, lifespan=lifespan, server=server)
    url = await served.start(start_timeout)
    try:
        yield url
    finally:
        await served.stop()
