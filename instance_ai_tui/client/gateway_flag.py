"""``--gateway DIR`` (and ``--gateway-allow GLOB``): share a folder with a remote n8n's agent.

The TUI and ``instance-ai run`` take these flags (``factory.add_gateway_arguments``; this
module is imported only when a command runs). They only make sense with an n8n connection
(``--url`` of an n8n instance, with ``--email`` or ``--dialect n8n`` or detected): the local
gateway (``client.gateway.LocalGateway``) pairs with the logged-in session after the client
opens, serves read-only ``read_file`` / ``list_files`` / ``search_files`` calls confined to
``DIR``, and is stopped (and disconnected on the n8n side) when the command exits. Files
outside the ``--gateway-allow`` globs (all files when none is given) need the user's
resource decision, which n8n asks for as a ``confirmation-request``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .base import ClientError, ConnectionState

if TYPE_CHECKING:
    from ..config import Settings
    from .base import Client
    from .gateway import LocalGateway

NEEDS_N8N = (
    "--gateway shares a folder with a remote n8n instance: it needs --url of an n8n instance "
    "(with --email, or --dialect n8n)"
)

#: state word shown to the user for each connection state of the gateway's request stream
STATE_WORDS = {
    ConnectionState.CONNECTING: "connecting",
    ConnectionState.CONNECTED: "sharing",
    ConnectionState.RECONNECTING: "reconnecting",
    ConnectionState.OFFLINE: "stopped",
    ConnectionState.EMBEDDED: "sharing",
}


#: the longest wait between two tries to reach (or pair with) a restarting n8n, in seconds
RETRY_CAP = 8.0


class GatewayFlagError(ClientError):
    """The gateway flags are used wrongly (a usage error: exit status 2)."""


@dataclass(frozen=True, slots=True)
class GatewayRequest:
    """What the flags asked for: the folder, and the files readable without asking."""

    root: Path
    allow: tuple[str, ...] | None = None


def check_connection(request: GatewayRequest | None, settings: Settings, dialect: str | None = None) -> None:
    """Before connecting: refuse a gateway without a (possibly) n8n connection."""
    if request is None:
        return
    if not settings.remote.url or dialect == "instance-ai":
        raise GatewayFlagError(NEEDS_N8N)


class GatewayHandle:
    """A started gateway: ``stop()`` ends it; ``on_end`` hears when it stops by itself."""

    def __init__(self, gateway: LocalGateway, on_end: Callable[[str], None] | None = None) -> None:
        self.gateway = gateway
        self._on_end = on_end
        self._stopping = False
        self._watch = asyncio.get_running_loop().create_task(self._wait(), name="gateway-watch")

    @property
    def root(self) -> Path:
        return self.gateway.tools.root

    async def _wait(self) -> None:
        try:
            await self.gateway.wait()
        except Exception as exc:  # noqa: BLE001 - a fatal answer (refused key, feature disabled): tell the user
            if not self._stopping and self._on_end is not None:
                self._on_end(f"the local gateway stopped: {exc}")
            return
        if not self._stopping and self._on_end is not None:
            self._on_end("n8n ended the local gateway session")

    async def stop(self) -> None:
        """Stop serving and end the session on the n8n side. Idempotent."""
        if self._stopping:
            return
        self._stopping = True
        self._watch.cancel()
        await asyncio.gather(self._watch, return_exceptions=True)
        await self.gateway.stop()


async def start(client: Client, request: GatewayRequest, *, log: Callable[[str], None] | None = None,
                set_state: Callable[[ConnectionState, str], None] | None = None,
                on_end: Callable[[str], None] | None = None) -> GatewayHandle:
    """Pair and start the gateway on the opened n8n ``client``."""
    starter = getattr(client, "start_gateway", None)
    if client.mode != "n8n" or starter is None:
        raise GatewayFlagError(NEEDS_N8N + f"; {getattr(client, 'base_url', 'this server')} is not n8n")
    allow = list(request.allow) if request.allow is not None else None
    try:
        # n8n sends gateway-disconnect when it shuts down (nothing when it is killed): pair again once it
        # is back; at most RETRY_CAP seconds between tries, so sharing resumes soon after n8n answers
        gateway = await starter(request.root, allow=allow, log=log, set_state=set_state, pair_again=True,
                                max_backoff=RETRY_CAP)
    except OSError as exc:
        raise ClientError(f"--gateway {request.root}: {exc.strerror or exc}") from None
    return GatewayHandle(gateway, on_end)
