"""Run the app on uvicorn with a graceful shutdown that flushes the SSE streams first.

uvicorn waits for open connections before the lifespan shutdown, and SSE connections never
end by themselves, so ``InstanceAIServer`` ends the runs and the streams *before* uvicorn
starts waiting: every subscriber gets the final ``run-finish {cancelled, service_shutdown}``.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import uvicorn
from starlette.applications import Starlette


class InstanceAIServer(uvicorn.Server):
    """``uvicorn.Server`` that calls ``app.state.shutdown_gracefully()`` before closing."""

    def __init__(self, config: uvicorn.Config, app: Starlette) -> None:
        super().__init__(config)
        self._instance_app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await self._instance_app.state.shutdown_gracefully()
        except Exception:  # never block the shutdown itself
            logging.getLogger("instance_ai_tui.server").exception("graceful shutdown of the service failed")
        await super().shutdown(sockets)


def make_server(app: Starlette, host: str, port: int, **config: Any) -> InstanceAIServer:
    """A server for ``app``. uvicorn's access log is off: ours never prints query strings."""
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "access_log": False,
        "log_level": "warning",
        "timeout_graceful_shutdown": 5,
        "lifespan": "on",
    }
    options.update(config)
    return InstanceAIServer(uvicorn.Config(app, **options), app)
