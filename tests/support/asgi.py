"""Serve an ASGI app with a real uvicorn in this process, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn


@asynccontextmanager
async def serve_asgi(
    app: Any,
    *,
    port: int = 0,
    lifespan: Literal["on", "off", "auto"] = "off",
    server: Callable[[socket.socket], uvicorn.Server] | None = None,
    start_timeout: float = 10.0,
) -> AsyncIterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT``) while ``app`` is served.

    The socket is bound here (``port=0``: any free one), so there is no race for the port.
    ``server`` builds a configured ``uvicorn.Server`` for the socket instead of the default
    one (e.g. ``instance-ai serve``'s own server class). If the server cannot start, its
    exception is raised here; on leaving, the server is shut down and awaited.
    """
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    bound = int(sock.getsockname()[1])
    if server is None:
        instance = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan, access_log=False))
    else:
        instance = server(sock)

    async def run() -> None:
        try:
            await instance.serve(sockets=[sock])
        except SystemExit as exc:  # uvicorn exits when the app's startup fails: not this process
            raise RuntimeError(f"the server could not start (uvicorn exit code {exc.code})") from None

    task = asyncio.create_task(run())
    try:
        async with asyncio.timeout(start_timeout):
            while not instance.started and not task.done():
                await asyncio.sleep(0.01)
        if task.done():
            task.result()  # raises what stopped it
            raise RuntimeError("the server stopped while starting")
        yield f"http://127.0.0.1:{bound}"
    finally:
        instance.should_exit = True
        try:
            await asyncio.wait_for(task, 15)
        finally:
            sock.close()
