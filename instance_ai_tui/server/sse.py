"""The SSE side of the server: one ``EventStream`` per ``GET events/:threadId`` connection.

A pump task moves stored events from the service's iterator (replay, then live) into a small
bounded queue; the response body drains the queue, writing every frame that is ready in one
chunk (``id: N`` + ``data: <wire JSON>``). When the queue is full the pump stops pulling, so a
slow client pushes back on the bus, which then resumes it from storage instead of buffering
without bound. A ``: ping`` comment goes out every ``ping_interval`` seconds. ``StreamHub``
tracks the open streams so that a graceful shutdown can let them flush the last events (the
``run-finish`` of cancelled runs) and then end them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator

from ..store.base import StoredEvent

log = logging.getLogger(__name__)

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}
SSE_MEDIA_TYPE = "text/event-stream"

_PING = b": ping\n\n"
_END = object()
#: frames written in one chunk at most
_MAX_BATCH = 256


def encode_frame(event_id: int, data: str) -> bytes:
    """One SSE frame. Multi-line data (never produced by our JSON) gets one ``data:`` per line."""
    if "\n" in data or "\r" in data:
        lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        body = "".join(f"data: {line}\n" for line in lines)
    else:
        body = f"data: {data}\n"
    return f"id: {event_id}\n{body}\n".encode()


class EventStream:
    """The body of one SSE response (an async iterator of byte chunks)."""

    def __init__(
        self,
        source: AsyncIterator[StoredEvent],
        *,
        ping_interval: float,
        hub: StreamHub,
        queue_size: int = 512,
        close_grace: float = 0.25,
    ) -> None:
        self._source = source
        self._ping_interval = ping_interval
        self._hub = hub
        self._queue: asyncio.Queue[object] = asyncio.Queue(maxsize=queue_size)
        self._close_grace = close_grace
        self._closing = False
        self._pump_task: asyncio.Task[None] | None = None
        self._ping_handle: asyncio.TimerHandle | None = None

    def close(self) -> None:
        """Ask the stream to write what is still arriving and then end (graceful shutdown)."""
        self._closing = True
        self._offer(None)

    def _offer(self, item: object) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            pass  # the stream is busy anyway: the ping or wake-up is not needed

    def _schedule_ping(self) -> None:
        loop = asyncio.get_running_loop()
        self._ping_handle = loop.call_later(self._ping_interval, self._ping)

    def _ping(self) -> None:
        self._offer(_PING)
        self._schedule_ping()

    async def _pump(self) -> None:
        try:
            async for event in self._source:
                await self._queue.put(encode_frame(event.id, event.json))
        except Exception:  # a broken source ends this stream only; the client reconnects
            log.exception("event source failed")
        await self._queue.put(_END)

    async def _next(self) -> object:
        if not self._closing:
            return await self._queue.get()
        try:
            return await asyncio.wait_for(self._queue.get(), self._close_grace)
        except asyncio.TimeoutError:
            return _END

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._hub.add(self)
        self._pump_task = asyncio.create_task(self._pump(), name="sse-pump")
        self._schedule_ping()
        try:
            # A comment first, so the client sees the stream open at once even with no history.
            yield b": connected\n\n"
            while True:
                item = await self._next()
                chunks: list[bytes] = []
                while True:
                    if item is _END:
                        if chunks:
                            yield b"".join(chunks)
                        return
                    if isinstance(item, bytes) and (item is not _PING or not chunks):
                        chunks.append(item)
                    if self._queue.empty() or len(chunks) >= _MAX_BATCH:
                        break
                    item = self._queue.get_nowait()
                if chunks:
                    yield b"".join(chunks)
        finally:
            self._hub.discard(self)
            if self._ping_handle is not None:
                self._ping_handle.cancel()
            self._pump_task.cancel()
            try:
                await self._pump_task
            except (asyncio.CancelledError, Exception):
                pass
            aclose = getattr(self._source, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    log.debug("closing the event source failed", exc_info=True)


class StreamHub:
    """The open event streams of one app."""

    def __init__(self) -> None:
        self._streams: set[EventStream] = set()
        self.closing = False

    def add(self, stream: EventStream) -> None:
        self._streams.add(stream)
        if self.closing:
            stream.close()

    def discard(self, stream: EventStream) -> None:
        self._streams.discard(stream)

    def __len__(self) -> int:
        return len(self._streams)

    def close_all(self) -> None:
        self.closing = True
        for stream in list(self._streams):
            stream.close()
