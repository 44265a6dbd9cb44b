"""Tiny raw TCP servers on 127.0.0.1 for fault tests: a scripted HTTP/SSE server and a cutting proxy."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str]


Handler = Callable[[RawRequest], AsyncIterator[bytes]]


def sse_head(status: int = 200, content_type: str = "text/event-stream") -> bytes:
    reason = {200: "OK", 404: "Not Found", 401: "Unauthorized", 503: "Service Unavailable"}.get(status, "X")
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncache-control: no-cache\r\n"
        "connection: close\r\n\r\n"
    ).encode()


def json_response(status: int, body: object) -> bytes:
    data = json.dumps(body).encode()
    return (
        f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + data


HEALTH = json_response(200, {"service": "instance-ai", "version": "test", "model": "raw", "authRequired": False})


@dataclass
class RawServer:
    """Calls ``handler`` per request; the bytes it yields are written raw, then the socket closes."""

    handler: Handler
    requests: list[RawRequest] = field(default_factory=list)
    server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            request = RawRequest(method, path, headers)
            self.requests.append(request)
            async for chunk in self.handler(request):
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the test is over and the server closes
        finally:
            writer.close()


class CuttingProxy:
    """Forwards TCP to ``upstream_port``; each response stream is cut after a random number of bytes."""

    def __init__(self, upstream_port: int, *, cuts: int, min_bytes: int = 30, max_bytes: int = 1500, seed: int = 7) -> None:
        self.upstream_port = upstream_port
        self.cuts_left = cuts
        self.cuts_done = 0
        self.rng = random.Random(seed)
        self.min_bytes, self.max_bytes = min_bytes, max_bytes
        self.server: asyncio.AbstractServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def __aenter__(self) -> CuttingProxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        budget: int | None = None

        def arm(data: bytes) -> None:
            nonlocal budget
            if b"GET /instance-ai/events/" in data and self.cuts_left > 0 and budget is None:
                self.cuts_left -= 1
                budget = self.rng.randint(self.min_bytes, self.max_bytes)

        async def upstream_to_client() -> None:
            nonlocal budget
            while True:
                data = await up_reader.read(4096)
                if not data:
                    return
                if budget is not None and len(data) >= budget:
                    client_writer.write(data[:budget])
                    await client_writer.drain()
                    self.cuts_done += 1
                    return  # cut: close both sides mid-stream
                if budget is not None:
                    budget -= len(data)
                client_writer.write(data)
                await client_writer.drain()

        async def client_to_upstream() -> None:
            while True:
                data = await client_reader.read(4096)
                if not data:
                    return
                arm(data)
                up_writer.write(data)
                await up_writer.drain()

        tasks = [asyncio.create_task(upstream_to_client()), asyncio.create_task(client_to_upstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except ConnectionError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in (client_writer, up_writer):
                writer.transport.abort()
