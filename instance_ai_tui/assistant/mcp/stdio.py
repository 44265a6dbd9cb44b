"""The stdio transport of an MCP server, bounded while it reads (ours, not the SDK's ``stdio_client``).

Why our own: the server runs exactly as configured — the command as written (a venv's
``bin/python`` is a symlink whose target is the base interpreter: resolving it loses the venv),
in an environment holding only what the config names (no ``HOME``, ``USER``… added) — and its
output is outside input with a size limit enforced *while it is read*: a line (one JSON-RPC
message) is kept up to ``line_limit`` bytes, the rest of it is skipped as it arrives (never
buffered, never parsed). The SDK's reader joins strings per chunk (quadratic: a 100 MB answer
held a run for minutes) and has no limit.

An answer cut this way still answers its request: a ``tools/call`` gets a result holding the
text read so far with a note of the cut (``cut_result``); any other request an error saying the
answer was over the limit. A line that is not JSON-RPC is logged in one line and skipped.

Shutdown follows the MCP lifecycle: stdin closed, up to ``grace`` seconds to exit, then SIGTERM
and SIGKILL to the server's process group (``grace=0``: at once, for a start being abandoned).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

#: bytes of a message beyond the result limit kept for its JSON envelope (ids, types, escapes)
ENVELOPE_BYTES = 64 * 1024
#: the largest message of any other kind (a tool list of thousands of tools)
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
#: bytes of a cut message's end kept (an ``id`` written after the result, as the TypeScript SDK does)
_TAIL_BYTES = 256
#: the ``_meta`` key of a result standing for an answer cut while it was read
CUT_META = "instance-ai/cut"
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


class Cut:
    """One message cut at the limit: its first bytes, its last ones, and its whole size."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.tail = bytearray()
        self.size = len(head)

    def skip(self, data: bytes) -> None:
        self.size += len(data)
        self.tail += data
        if len(self.tail) > _TAIL_BYTES:
            del self.tail[: len(self.tail) - _TAIL_BYTES]

    def request_id(self) -> int | str | None:
        for part in (self.head[:512], bytes(self.tail)):
            match = _ID.search(part)
            if match is not None:
                value = json.loads(match.group(1))
                return value if isinstance(value, int | str) else None
        return None


def _text_of(head: bytes) -> str:
    """The first text part of a cut ``tools/call`` answer, as far as it was read."""
    start = head.find(b'"text"')
    if start < 0:
        return ""
    colon = head.find(b'"', head.find(b":", start) + 1)
    if colon < 0:
        return ""
    raw = head[colon + 1 :].decode("utf-8", "ignore")
    end = _string_end(raw)
    if end is not None:
        raw = raw[:end]
    for trim in range(0, 7):  # an escape cut in the middle (``\u12``) is dropped
        try:
            value = json.loads('"' + raw[: len(raw) - trim] + '"')
        except ValueError:
            continue
        return value if isinstance(value, str) else ""
    return ""


def _string_end(raw: str) -> int | None:
    """The index of the quote that closes a JSON string starting at ``raw[0]`` (None: not closed)."""
    escaped = False
    for index, char in enumerate(raw):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return None


def cut_answer(cut: Cut, method: str | None, limit: int) -> dict[str, Any]:
    """The JSON-RPC answer standing for a message cut at ``limit`` bytes."""
    request_id = cut.request_id()
    size = _size(cut.size)
    if method == "tools/call":
        note = (f"[... cut: the MCP server's answer is {size}, over its limit of {_size(limit)} "
                "(max_result_bytes); the rest was not read ...]")
        room = max(limit - len(note.encode()) - 1, 0)
        text = _text_of(cut.head).encode()[:room].decode("utf-8", "ignore")
        # marked an error (the SDK checks a result against the tool's output schema, which a cut one
        # cannot meet) and as cut: ``tools.McpTool`` reads it as the result it is, cut
        return {"jsonrpc": "2.0", "id": request_id, "result": {
            "content": [{"type": "text", "text": f"{text}\n{note}" if text else note}], "isError": True,
            "_meta": {CUT_META: True}}}
    return {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": -32603, "message": f"the MCP server's answer to {method or 'a request'} is {size}, "
                                    f"over the limit of {_size(limit)}; it was not read"}}


def _size(num: int) -> str:
    if num < 1024 * 1024:
        return f"{num / 1024:.0f} KB"
    return f"{num / (1024 * 1024):.1f} MB"


class LineReader:
    """Splits a byte stream into lines of at most ``limit`` bytes (longer ones become ``Cut``s)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._cut: Cut | None = None

    def feed(self, data: bytes) -> list[bytes | Cut]:
        out: list[bytes | Cut] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if self._cut is not None:
                self._cut.skip(piece)
            else:
                room = self.limit - len(self._buf)
                if len(piece) > room:
                    self._buf += piece[: max(room, 0)]
                    self._cut = Cut(bytes(self._buf))
                    self._cut.skip(piece[max(room, 0):])
                    self._buf.clear()
                else:
                    self._buf += piece
            if end < 0:
                break
            if self._cut is not None:
                out.append(self._cut)
                self._cut = None
            elif self._buf.strip():
                out.append(bytes(self._buf))
            self._buf.clear()
            start = end + 1
        return out


@contextlib.asynccontextmanager
async def stdio_transport(
    argv: list[str],
    env: dict[str, str],
    cwd: Path | None,
    stderr: int,
    *,
    name: str,
    result_limit: int,
    on_process: Callable[[anyio.abc.Process], None] | None = None,
    grace: Callable[[], float] = lambda: 2.0,
    describe_line: Callable[[str], str] = lambda text: text,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    """The server ``argv`` started as written, its streams for a ``ClientSession``.

    ``stderr``: a file descriptor the server's stderr goes to. ``result_limit``: a ``tools/call``
    answer is cut past this many bytes of text; any other message past ``MAX_MESSAGE_BYTES``.
    ``describe_line`` scrubs a line before it is logged (secrets); ``grace()``: the seconds the
    server has to exit once its stdin is closed (0: stopped at once)."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(argv, env=env, cwd=cwd, stderr=stderr, start_new_session=True)
    if on_process is not None:
        on_process(process)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    #: requests in flight (id -> method): a cut answer is told by its request's method
    pending: dict[int | str, str] = {}
    call_limit = 2 * result_limit + ENVELOPE_BYTES

    async def deliver(item: bytes | Cut, reader: LineReader) -> None:
        if isinstance(item, Cut):
            request_id = item.request_id()
            calls = [rid for rid, method in pending.items() if method == "tools/call"]
            if request_id is None and len(calls) == 1:
                request_id = calls[0]  # the id is not in what was kept: the one call in flight
            method = pending.get(request_id) if request_id is not None else None
            answer = cut_answer(item, method, result_limit if method == "tools/call" else reader.limit)
            answer["id"] = request_id
            if request_id is None:
                log.warning("MCP server %r sent a message of %s, over the limit and without an id: skipped",
                            name, _size(item.size))
                return
            item_bytes = json.dumps(answer).encode()
        else:
            item_bytes = item
        try:
            message = mcp_types.jsonrpc_message_adapter.validate_json(item_bytes, by_name=False)
        except ValueError:
            shown = describe_line(item_bytes[:200].decode("utf-8", "replace"))
            log.warning("MCP server %r wrote a line that is not JSON-RPC (skipped): %r", name, shown)
            return
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError) and message.id is not None:
            pending.pop(message.id, None)
        await read_send.send(SessionMessage(message))

    async def read_stdout() -> None:
        assert process.stdout is not None
        reader = LineReader(MAX_MESSAGE_BYTES)
        try:
            async with read_send:
                async for chunk in process.stdout:
                    # a tools/call in flight: its answer is cut at the result limit
                    reader.limit = call_limit if "tools/call" in pending.values() else max(MAX_MESSAGE_BYTES, call_limit)
                    for item in reader.feed(chunk):
                        await deliver(item, reader)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for session_message in write_recv:
                    message = session_message.message
                    if isinstance(message, mcp_types.JSONRPCRequest):
                        pending[message.id] = message.method
                    data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_stdout)
            group.start_soon(write_stdin)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await stop_process(process, grace=grace())
                group.cancel_scope.cancel()
    finally:
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()


async def stop_process(process: anyio.abc.Process, grace: float = 2.0) -> None:
    """Close its stdin, give it ``grace`` seconds, then SIGTERM its group and SIGKILL what is left.
    ``grace=0`` (a start given up): the group is terminated first, its stdin closed after."""
    if grace > 0 and process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if await _exited(process, grace):
            return
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:
            log.debug("no permission to signal the group of %d", process.pid)
        if await _exited(process, wait) and not _group_alive(process.pid):
            break
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await pipe.aclose()
    with contextlib.suppress(Exception), anyio.move_on_after(1.0):
        await process.aclose()  # reaps it (a child that kept its pipes open cannot hold this)


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        # polled: ``wait()`` also waits for the pipes' end, which a child holding them delays
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        return True
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def bounded_http_transport(result_limit: int) -> Any:
    """An httpx2 transport whose JSON answers (Streamable HTTP's answer to a POST) are read up to
    the same limits as a stdio server's lines: past them the reading stops and the request gets
    ``cut_answer`` (its text so far with a note for a ``tools/call``, an error otherwise). Event
    streams are bounded per event by the SDK (``max_sse_event_size``)."""
    import httpx2

    call_limit = 2 * result_limit + ENVELOPE_BYTES

    class Bounded(httpx2.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await super().handle_async_request(request)
            kind = response.headers.get("content-type", "").lower()
            if request.method != "POST" or not kind.startswith("application/json"):
                return response
            try:
                sent = json.loads(request.content or b"{}")
            except ValueError:
                sent = {}
            method = sent.get("method") if isinstance(sent, dict) else None
            limit = call_limit if method == "tools/call" else max(MAX_MESSAGE_BYTES, call_limit)
            body = bytearray()
            cut: Cut | None = None
            try:
                async for chunk in response.aiter_bytes():
                    if cut is not None:
                        cut.skip(chunk)
                        if cut.size > limit + MAX_MESSAGE_BYTES:
                            break  # stop reading: the connection is closed below
                        continue
                    body += chunk
                    if len(body) > limit:
                        cut = Cut(bytes(body[:limit]))
                        cut.skip(bytes(body[limit:]))
                        body.clear()
            finally:
                await response.aclose()
            if cut is not None:
                answer = cut_answer(cut, method, result_limit if method == "tools/call" else limit)
                if answer["id"] is None and isinstance(sent, dict):
                    answer["id"] = sent.get("id")
                body = bytearray(json.dumps(answer).encode())
            headers = [(k, v) for k, v in response.headers.items()
                       if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
            return httpx2.Response(response.status_code, headers=headers, content=bytes(body), request=request,
                                   extensions=response.extensions)

    return Bounded()
