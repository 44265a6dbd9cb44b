"""A reconnecting Server-Sent Events reader on ``httpx`` (shared by every remote dialect).

Usage::

    async for frame in reconnecting_sse(http, url, last_event_id=cursor, set_state=on_state):
        ...  # frame.id (int | None), frame.event ("" = default "message"), frame.data (str)

What it does, so that callers only see a clean stream of frames:

* **Resume.** Every (re)connection sends ``Last-Event-ID: <last id seen>`` (the ``last_event_id``
  argument for the first connection, then the highest integer ``id:`` received). A frame whose
  id is ``<=`` the last id seen is dropped, so a server that replays a little too much never
  produces a duplicate. Frames without an ``id:`` line (n8n deltas and control frames) are
  passed through unchanged and never move the cursor. ``on_skip`` hears of each dropped frame. ``SseFrame.id`` is the frame's *own* id
  (unlike a browser's ``lastEventId``, it does not carry over to later frames).
* **Reconnect.** A dropped connection, a stream the server ends, a network error, a 5xx, 408 or
  429 answer all lead to a new attempt after an exponential backoff with jitter
  (``initial_backoff * 2**n``, capped at ``max_backoff`` and never more than ``MAX_BACKOFF_CAP``
  = 30 s, each delay drawn from its upper half; a server's ``retry:`` field replaces
  ``initial_backoff``). ``max_attempts`` consecutive failed attempts (default: unlimited, i.e.
  for as long as the caller keeps reading) end the stream with ``SseGaveUp``.
* **A server that restarts.** Once a stream has worked (``resumed=True`` says it worked in an
  earlier call), a 404, any other 4xx except 400/401/403, and a 200 that is not an event stream
  (n8n answers its events route with its HTML page, then ``404 text/html`` for several seconds
  while its Instance AI module boots) are retried like a dropped connection, unless ``is_gone()``
  (the caller's check of the thread's status or history route) says the thread really is gone.
* **A line without end.** More than ``max_line_bytes`` (16 MB) without a line end drops the
  connection (reason "a line of more than ... bytes without an end") instead of buffering for ever.
* **Keep-alive timeout.** If no byte (not even a ``: ping`` comment) arrives for
  ``keepalive_timeout`` seconds, the connection is considered dead and is replaced.
* **Fatal answers.** 400 (bad cursor), 401/403 (auth), and before the stream ever worked any
  other 4xx or a 200 that is not ``text/event-stream``, raise ``SseStatusError`` carrying the
  status and body text, and are not retried: the caller maps it to a user-facing error.
* **Connection state.** ``set_state(state, detail)`` is called with ``ConnectionState``
  values: ``CONNECTING`` before the first attempt, ``CONNECTED`` once a stream is open,
  ``RECONNECTING`` with detail ``"(attempt N, next try in Ns)"`` while retrying (and
  ``"(attempt N)"`` while that attempt runs), and ``OFFLINE`` with the reason when giving up or
  on a fatal answer.

Frames are parsed by ``protocol.sse.SSEParser`` (WHATWG event-stream rules); an unterminated
frame at the end of a connection is discarded, its event comes again after the reconnect.
"""

from __future__ import annotations

import array
import asyncio
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, NamedTuple

import httpx

from ..protocol.delta_runs import DeltaRun, RunSSEParser
from ..protocol.sse import SSEFrame
from .base import ConnectionState

StateSetter = Callable[[ConnectionState, str], None]

#: statuses that are worth retrying (everything else below 500 is final until a stream worked)
RETRYABLE_STATUSES = frozenset({408, 425, 429})
#: statuses that stay final even after a stream worked: a bad cursor, refused credentials
FINAL_STATUSES = frozenset({400, 401, 403})
#: the longest wait between two attempts, whatever the caller asks for
MAX_BACKOFF_CAP = 30.0

GoneCheck = Callable[[], Awaitable[bool]]


class SseFrame(NamedTuple):
    """One dispatched SSE frame. ``id`` is the frame's own integer id, or ``None``. (A named
    tuple: immutable, and cheap to build once per event of a flood.)"""

    data: str
    event: str = ""
    id: int | None = None
    raw_id: str | None = None


class Piece(NamedTuple):
    """The frames of one piece received (never empty), and ``queued``: an estimate of the frames
    still waiting on the connection when it was read (the bytes the socket holds, at the piece's
    frames per byte; 0 when it holds none, or cannot say)."""

    frames: list[SseFrame | DeltaRun]
    queued: int


def _socket_of(response: httpx.Response) -> Any:
    """The response's socket (``fileno()``), or ``None`` (a transport without one: tests' mocks)."""
    stream = response.extensions.get("network_stream")
    try:
        return stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # noqa: BLE001 - a transport that cannot say: nothing known to wait
        return None


def waiting_bytes(sock: Any) -> int:
    """The bytes received on ``sock`` and not read yet (``FIONREAD``), 0 when it cannot say."""
    if sock is None:
        return 0
    try:
        import fcntl
        import termios

        buffer = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, buffer)
        return int(buffer[0])
    except (OSError, ValueError, ImportError, AttributeError):
        return 0


class SseStatusError(Exception):
    """The server answered with a status (or content type) that retrying will not fix."""

    def __init__(self, status: int, body: str, message: str | None = None) -> None:
        super().__init__(message or f"HTTP {status}: {body[:200]}")
        self.status = status
        self.body = body


class SseGaveUp(ConnectionError):
    """``max_attempts`` consecutive attempts to (re)connect failed."""


def backoff_delay(attempt: int, initial: float, maximum: float, rng: random.Random | None = None) -> float:
    """The delay before retry number ``attempt`` (1-based): upper-half jitter of an exponential."""
    ceiling = min(maximum, initial * (2 ** max(0, attempt - 1)))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def format_wait(seconds: float) -> str:
    """``0.4s``, ``3s``, ``30s``: short enough for a status line."""
    return f"{seconds:.1f}s" if seconds < 1 else f"{round(seconds)}s"


def _noop_state(state: ConnectionState, detail: str) -> None:
    return None


async def reconnecting_sse(http: httpx.AsyncClient, url: str, **options: Any) -> AsyncGenerator[SseFrame, None]:
    """Frames of the SSE stream at ``url``, one by one, reconnecting for ever (see the module
    docstring); ``options`` are those of ``reconnecting_sse_batches``. Close the generator
    (``aclose()``, or leaving ``async for``) to stop."""
    batches = reconnecting_sse_batches(http, url, **options)
    try:
        async for piece in batches:  # (no ``DeltaRun``: asked for without ``runs``)
            for frame in piece.frames:
                yield frame  # type: ignore[misc]
    finally:
        await batches.aclose()


async def reconnecting_sse_batches(
    http: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    last_event_id: int | None = None,
    set_state: StateSetter | None = None,
    initial_backoff: float = 0.25,
    max_backoff: float = 10.0,
    keepalive_timeout: float = 45.0,
    connect_timeout: float = 10.0,
    max_attempts: int | None = None,
    resumed: bool = False,
    is_gone: GoneCheck | None = None,
    max_line_bytes: int = 16 * 1024 * 1024,
    on_skip: Callable[[str], None] | None = None,
    runs: bool = False,
) -> AsyncGenerator[Piece, None]:
    """The frames of the SSE stream at ``url`` a piece received at a time (``Piece``: never empty,
    with what still waits on the connection), reconnecting for ever (see the module docstring): a
    client that reads a flood takes each piece's frames in one step.

    ``params`` go on every request unchanged; the cursor travels in the ``Last-Event-ID``
    header. Close the generator (``aclose()``, or leaving ``async for``) to stop.

    With ``runs``, a run of our server's delta frames received in one piece may come as one
    ``protocol.delta_runs.DeltaRun`` in their place (decoded in bulk by the consumer); a run that
    would repeat ids already read is taken frame by frame, as without it.
    """
    notify = set_state or _noop_state
    cursor = last_event_id
    failures = 0
    ever_connected = resumed
    max_backoff = min(max_backoff, MAX_BACKOFF_CAP)
    server_retry: float | None = None
    timeout = httpx.Timeout(connect=connect_timeout, read=keepalive_timeout, write=connect_timeout, pool=connect_timeout)
    notify(ConnectionState.CONNECTING, "")
    while True:
        request_headers = {"Accept": "text/event-stream", "Cache-Control": "no-store", **(headers or {})}
        if cursor is not None:
            request_headers["Last-Event-ID"] = str(cursor)
        reason = ""
        try:
            async with http.stream("GET", url, headers=request_headers, params=params, timeout=timeout) as response:
                status = response.status_code
                if status != 200:
                    body = (await response.aread()).decode("utf-8", "replace")
                    if status >= 500 or status in RETRYABLE_STATUSES:
                        reason = f"HTTP {status}"
                    elif ever_connected and status not in FINAL_STATUSES and not (
                        status == 404 and is_gone is not None and await _gone(is_gone)
                    ):
                        reason = f"HTTP {status}"  # a restarting server: its routes come back
                    else:
                        notify(ConnectionState.OFFLINE, f"HTTP {status}")
                        raise SseStatusError(status, body)
                else:
                    content_type = response.headers.get("content-type", "")
                    if "text/event-stream" not in content_type:
                        if not ever_connected:
                            notify(ConnectionState.OFFLINE, "not an event stream")
                            raise SseStatusError(
                                status, "", f"expected an event stream from {url}, got content type {content_type!r}"
                            )
                        reason = "not an event stream yet"  # e.g. n8n's HTML page while it boots
                    else:
                        failures = 0
                        ever_connected = True
                        notify(ConnectionState.CONNECTED, "")
                        parser = RunSSEParser(runs=runs)
                        line = 0  # bytes since the last line end: a line without end is cut off
                        sock = _socket_of(response)
                        async for chunk in response.aiter_bytes():
                            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
                            line = line + len(chunk) if end < 0 else len(chunk) - end - 1
                            if line > max_line_bytes:
                                reason = f"a line of more than {max_line_bytes:,} bytes without an end"
                                break
                            batch: list[SseFrame | DeltaRun] = []
                            for parsed in parser.feed_runs(chunk):
                                frames: tuple[SSEFrame, ...] | list[SSEFrame]
                                if isinstance(parsed, DeltaRun):
                                    run_ids = parsed.ids or [0]  # (a run read from frames: ids always)
                                    if cursor is None or run_ids[0] > cursor:
                                        cursor = run_ids[-1]
                                        batch.append(parsed)
                                        continue
                                    # (it would repeat ids already read: its frames one by one)
                                    frames = [SSEFrame(data, "message", raw) for raw, data in parsed.frames()]
                                else:
                                    frames = (parsed,)
                                for frame in frames:
                                    raw_id = frame.id  # (``frame_id``, inline: once per event of a flood)
                                    event_id = int(raw_id) if raw_id and raw_id.isdigit() and raw_id.isascii() else None
                                    if event_id is not None:
                                        if cursor is not None and event_id <= cursor:
                                            if on_skip is not None:
                                                if batch:  # the frames before it are taken first: in order
                                                    yield Piece(batch, 0)
                                                    batch = []
                                                on_skip(f"skipped frame id {event_id}: not after {cursor} (ids going "
                                                        "backwards, or a replay)")
                                            continue
                                        cursor = event_id
                                    event = "" if frame.event == "message" else frame.event
                                    batch.append(SseFrame(frame.data, event, event_id, raw_id))
                            if batch:
                                waiting = waiting_bytes(sock)
                                yield Piece(batch, max(1, waiting * _frames_in(batch) // len(chunk)) if waiting else 0)
                            if parser.retry is not None:
                                server_retry = parser.retry / 1000
                        else:
                            reason = "stream ended"
        except httpx.TimeoutException:
            reason = "keep-alive timeout" if ever_connected else "connect timeout"
        except (httpx.TransportError, httpx.DecodingError) as exc:
            reason = type(exc).__name__
        failures += 1
        if max_attempts is not None and failures > max_attempts:
            notify(ConnectionState.OFFLINE, reason)
            raise SseGaveUp(f"cannot reach {url} after {max_attempts} attempts ({reason})")
        delay = backoff_delay(failures, server_retry or initial_backoff, max_backoff)
        notify(ConnectionState.RECONNECTING, f"(attempt {failures}, next try in {format_wait(delay)})")
        await asyncio.sleep(delay)
        notify(ConnectionState.RECONNECTING, f"(attempt {failures})")


def _frames_in(batch: list[SseFrame | DeltaRun]) -> int:
    return sum([item.count if type(item) is DeltaRun else 1 for item in batch])


async def _gone(is_gone: GoneCheck) -> bool:
    """The caller's proof that the thread is gone; a check that fails proves nothing."""
    try:
        return bool(await is_gone())
    except Exception:  # noqa: BLE001 - any failure of the check means "not proven gone"
        return False
