"""MCP servers nobody here wrote (``scripts/mcp_peers.py``): the protocol's reference
``@modelcontextprotocol/server-everything`` (npm) and ``mcp-server-time`` (PyPI), for tests.

``peers()`` skips the test (with the install command) when the cache has none, unless
``MCP_PEERS_REQUIRED=1`` (``.ci/run``), which makes that a failure. ``everything_http()`` runs the
reference server on Streamable HTTP (or its legacy SSE transport) on a free port, and stops it by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from .net import free_port, wait_for_port

_spec = importlib.util.spec_from_file_location("mcp_peers", Path(__file__).resolve().parents[2] / "scripts" / "mcp_peers.py")
assert _spec is not None and _spec.loader is not None
mcp_peers = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mcp_peers", mcp_peers)
_spec.loader.exec_module(mcp_peers)


def peers() -> dict[str, list[str]]:
    """The command line of each peer (``everything`` takes ``stdio``/``streamableHttp``/``sse`` after it)."""
    if not mcp_peers.installed():
        message = f"the MCP peers are not installed: {mcp_peers.INSTALL_HINT}"
        if os.environ.get("MCP_PEERS_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return mcp_peers.commands()


def everything_stdio(**extra: Any) -> dict[str, Any]:
    """A ``[mcp.servers.NAME]`` table running the reference server over stdio."""
    argv = peers()["everything"]
    return {"command": argv[0], "args": [*argv[1:], "stdio"], **extra}


def time_stdio(**extra: Any) -> dict[str, Any]:
    argv = peers()["time"]
    return {"command": argv[0], "args": argv[1:], **extra}


@contextlib.asynccontextmanager
async def everything_http(transport: str = "streamableHttp") -> AsyncIterator[str]:
    """The reference server on ``transport`` (``streamableHttp``: yields ``http://…/mcp``; ``sse``:
    ``http://…/sse``) on a free port of 127.0.0.1."""
    argv = peers()["everything"]
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port), "HOST": "127.0.0.1"}
    proc = await asyncio.create_subprocess_exec(*argv, transport, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    try:
        if not await asyncio.to_thread(wait_for_port, port, 60.0):
            raise RuntimeError(f"server-everything ({transport}) did not listen on {port}")
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'streamableHttp' else 'sse'}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 10)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
