"""What waits behind a piece (issue 44.1): the SSE reader says how many frames were still on the
socket when it read each piece (``client.sse.Piece.queued``, from ``FIONREAD``), so the app tells a
flood by what is queued, not by the rate frames arrive at. Over a real socket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket

import httpx

from instance_ai_tui.client.sse import reconnecting_sse_batches, waiting_bytes

FRAME = b'data: {"type":"text-delta","runId":"r","agentId":"a","payload":{"text":"' + b"x" * 60 + b'"}}\n\n'


def test_waiting_bytes_are_what_the_socket_holds() -> None:
    left, right = socket.socketpair()
    try:
        assert waiting_bytes(right) == 0
        left.sendall(b"a" * 5000)
        assert waiting_bytes(right) == 5000
        right.recv(3000)
        assert waiting_bytes(right) == 2000
        assert waiting_bytes(None) == 0
    finally:
        left.close()
        right.close()


async def test_a_piece_read_while_more_waits_says_so_and_the_last_one_says_nothing() -> None:
    count = 8000
    body = FRAME * count  # ~800 KB, written at once: the kernel holds far more than a piece of
    # httpx's reads (64 KiB) when the client reads the first

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + body)
        await writer.drain()
        await asyncio.Event().wait()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pieces = []
    async with httpx.AsyncClient() as http:
        stream = reconnecting_sse_batches(http, f"http://127.0.0.1:{port}/", max_attempts=0)
        seen = 0
        while seen < count:
            piece = await asyncio.wait_for(anext(stream), 30)
            pieces.append(piece)
            seen += len(piece.frames)
        await stream.aclose()
    server.close()
    assert seen == count
    assert any(piece.queued > 0 for piece in pieces[:-1])  # frames waited behind a piece read mid-flood
    assert pieces[-1].queued == 0  # nothing was left behind the last one
