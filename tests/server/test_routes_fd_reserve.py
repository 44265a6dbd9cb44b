"""Health stays answerable when descriptors run out (issue 31 item 5).

``instance-ai serve`` runs in a subprocess whose ``RLIMIT_NOFILE`` is 256 (soft and hard: the
server cannot raise it), so it keeps at most 192 connections. 400 slow-header connections
are opened (a request head that never ends), and 5 more before each of 30 health probes: every
probe is answered, because a new connection takes the place of the oldest one still waiting
for its head instead of being closed itself (before: the probes were refused while slow
connections held every place).
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .live import REPO, free_port

LIMIT = 256
SLOW_HEAD = b"GET /instance-ai/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def _low_descriptor_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


async def _slow(port: int, held: list[asyncio.StreamWriter]) -> None:
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    writer.write(SLOW_HEAD)
    held.append(writer)


async def test_health_is_answered_under_a_flood_of_slow_header_connections(tmp_path: Path) -> None:
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(  # noqa: ASYNC220 - starting the server under test; returns at once
            [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--db",
             str(tmp_path / "s.sqlite3"), "--model", "demo"],
            stdout=log, stderr=log, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(REPO),
            preexec_fn=_low_descriptor_limit,
        )
    held: list[asyncio.StreamWriter] = []
    url = f"http://127.0.0.1:{port}/instance-ai/health"
    try:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as http:
            while True:
                assert proc.poll() is None, log_path.read_text()[-2000:]
                try:
                    if (await http.get(url, timeout=1)).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not start"
                await asyncio.sleep(0.1)
        for _batch in range(8):  # 400 slow connections, 50 at a time
            await asyncio.gather(*[_slow(port, held) for _ in range(50)])
        answered = 0
        for _probe in range(30):
            await asyncio.gather(*[_slow(port, held) for _ in range(5)])
            async with httpx.AsyncClient() as http:  # a new connection per probe
                try:
                    answered += (await http.get(url, timeout=5)).status_code == 200
                except httpx.TransportError:
                    pass
        assert answered == 30, f"{answered} of 30 health probes answered"
        assert proc.poll() is None
    finally:
        for writer in held:
            writer.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
