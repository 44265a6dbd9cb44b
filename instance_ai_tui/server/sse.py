"""The SSE side of the server: one ``EventStream`` per ``GET events/:threadId`` connection.

A pump task moves stored events from the service's iterator (replay, then live) into a small
bounded buffer; the response body drains it, writing every frame that is ready in one chunk
(``id: N`` + ``data: <wire JSON>``). When the buffer is full the pump stops pulling, so a slow
client pushes back on the bus, which then resumes it from storage instead of buffering without
bound. A ``: ping`` comment goes out every ``ping_interval`` seconds. ``StreamHub``
tracks the open streams so that a graceful shutdown can let them flush the last events (the
``run-finish`` of cancelled runs) and then end them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict, deque
from collections.abc import AsyncIterator

from ..aio import aclose
from ..store.base import StoredEvent
from ..store.errors import is_unavailable, storage_error

log = logging.getLogger(__name__)

SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}
SSE_MEDIA_TYPE = "text/event-stream"

_PING = b": ping\n\n"


def encode_frame(event_id: int, data: str) -> bytes:
    """One SSE frame. Multi-line data (never produced by our JSON) gets one ``data:`` per line."""
    if "\n" in data or "\r" in data:
        lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        body = "".join(f"data: {line}\n" for line in lines)
    else:
        body = f"data: {data}\n"
    return f"id: {event_id}\n{body}\n".encode()


#: ``retry:`` of an error frame (ms): the client's next try, while the storage comes back
ERROR_RETRY_MS = 2000


def error_frame(exc: BaseException) -> bytes:
    """The frame that ends a stream whose event source failed: ``event: error`` (no id: the
    client's cursor stays where it is) with ``{"code", "message"}``, and a ``retry:`` hint. A
    storage outage says so (its part and next step, ``store.errors``); any other failure is ours."""
    stored = storage_error(exc)
    if stored is not None and is_unavailable(stored):
        code, said = stored.code, f"the server's storage is unavailable ({stored}); reconnecting resumes the stream"
    else:
        code, said = "internal", "the server's event stream failed (a bug: see the server's log); reconnect to resume"
    data = json.dumps({"code": code, "message": said}, ensure_ascii=False)
    return f"event: error\nretry: {ERROR_RETRY_MS}\ndata: {data}\n\n".encode()


class EventStream:
    """The body of one SSE response (an async iterator of byte chunks).

    The pump appends encoded frames to a deque and wakes the writer; the writer sends every
    frame that is waiting in one chunk. Plain futures instead of ``asyncio.Queue`` keep the
    per-frame cost small when hundreds of subscribers follow one thread. With a
    ``flush_interval`` the writer waits that long after each write, so a fast stream goes out
    in fewer, larger writes (the first frame after a quiet spell is still sent at once).
    """

    def __init__(
        self,
        source: AsyncIterator[StoredEvent],
        *,
        ping_interval: float,
        hub: StreamHub,
        max_pending: int = 512,
        close_grace: float = 0.25,
        flush_interval: float = 0.0,
    ) -> None:
        self._source = source
        self._flush_interval = flush_interval
        self._ping_interval = ping_interval
        self._hub = hub
        self._max_pending = max_pending
        self._close_grace = close_grace
        self._frames: deque[bytes] = deque()
        self._ended = False
        self._ping_due = False
        self._closing_deadline: float | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._space: asyncio.Future[None] | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def close(self) -> None:
        """Ask the stream to write what is still arriving and then end (graceful shutdown)."""
        loop = asyncio.get_running_loop()
        if self._closing_deadline is None:
            self._closing_deadline = loop.time() + self._close_grace
            loop.call_later(self._close_grace, self._wake)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _ping(self) -> None:
        self._ping_due = True
        self._wake()
        self._timer = asyncio.get_running_loop().call_later(self._ping_interval, self._ping)

    async def _pump(self) -> None:
        frames, loop = self._frames, asyncio.get_running_loop()
        try:
            async for event in self._source:
                frames.append(self._hub.frame(event))
                self._wake()
                if len(frames) >= self._max_pending:
                    self._space = loop.create_future()
                    await self._space
        except Exception as exc:  # a broken source ends this stream only; the client reconnects
            if is_unavailable(exc):  # storage down: expected, one line (many streams end at once)
                log.warning("event source failed: storage unavailable (%s); the client will reconnect", exc)
            else:
                log.exception("event source failed")
            frames.append(error_frame(exc))  # the client is told why the stream ends, not left with a bare EOF
        finally:
            self._ended = True
            self._wake()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        self._hub.add(self)
        self._pump_task = loop.create_task(self._pump(), name="sse-pump")
        self._timer = loop.call_later(self._ping_interval, self._ping)
        frames = self._frames
        try:
            # A comment first, so the client sees the stream open at once even with no history.
            yield b": connected\n\n"
            while True:
                if frames:
                    chunk = b"".join(frames)
                    frames.clear()
                    self._ping_due = False
                    space = self._space
                    if space is not None and not space.done():
                        space.set_result(None)
                    yield chunk
                    if self._flush_interval > 0:
                        # at most one write per interval: frames arriving meanwhile share the next one
                        await asyncio.sleep(self._flush_interval)
                    continue
                if self._ended:
                    return
                if self._closing_deadline is not None and loop.time() >= self._closing_deadline:
                    return
                if self._ping_due:
                    self._ping_due = False
                    yield _PING
                    continue
                self._waiter = loop.create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
        finally:
            self._hub.discard(self)
            if self._timer is not None:
                self._timer.cancel()
            self._pump_task.cancel()
            try:
                await self._pump_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - the pump is being torn down; its failure was logged where it happened
                pass
            try:
                await aclose(self._source)
            except Exception:
                log.debug("closing the event source failed", exc_info=True)


class StreamHub:
    """The open event streams of one app."""

    def __init__(self, frame_cache_size: int = 512, frame_cache_bytes: int = 1 << 20) -> None:
        self._streams: set[EventStream] = set()
        self.closing = False
        self._frames: OrderedDict[tuple[str, int, str], bytes] = OrderedDict()
        self._frame_cache_size = frame_cache_size
        #: the cache holds at most this many bytes of frames (and of the JSON in its keys): by
        #: count alone (4,096) it held up to 4,096 whole events, and it kept growing for the
        #: first ~1,500 runs of a server (issue 31: RSS per run not flat after run 1,000)
        self._frame_cache_bytes = frame_cache_bytes
        self._cached_bytes = 0

    def frame(self, event: StoredEvent) -> bytes:
        """The encoded frame of ``event``, shared by every stream that sends it (a cache bounded
        in entries and bytes: it serves the streams of one moment, not history; a frame
        larger than an eighth of it is not kept).

        The key includes the JSON text (the same ``str`` object for every live subscriber, so
        the lookup is cheap) so that a recreated thread's reused ids never hit a stale frame.
        """
        key = (event.thread_id, event.id, event.json)
        frame = self._frames.get(key)
        if frame is None:
            frame = encode_frame(event.id, event.json)
            size = len(frame) + len(event.json)
            if size * 8 <= self._frame_cache_bytes:
                self._frames[key] = frame
                self._cached_bytes += size
                while len(self._frames) > self._frame_cache_size or self._cached_bytes > self._frame_cache_bytes:
                    (_thread, _id, json_text), old = self._frames.popitem(last=False)
                    self._cached_bytes -= len(old) + len(json_text)
        return frame

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
