"""``instance-ai run --url`` to our server, for a new thread, on the standard library alone (issue 44.3).

A short run spent most of its CPU importing what it never needs: httpx (with anyio, httpcore,
h11, ssl) and the protocol's pydantic models, ~0.3 CPU-s against curl's 0.02 for the same
requests. ``LeanRun`` makes the new thread and sends the message itself over ``asyncio`` streams
(one connection a request; ``https`` with the system's certificates) before anything else is
imported, and follows the run's event stream with the protocol's own SSE parser, as long as the
stream is the plain case it can print exactly as ``cli.run.HeadlessRun`` would:

* events of the run sent, in order, each with an id going up: ``run-start`` (first), the root
  agent's ``text-delta`` of one response (or one ``text-block`` before them: a run that had
  finished when the stream was read), ``thread-title-updated`` and ``run-finish``;
* each event in the exact form ``Event.to_wire()`` gives for it (``is_wire_form``), so that
  ``--json`` prints the same line as the typed path.

Anything else — another event type (a tool call, a confirmation, an error), another run, a frame
that is not that form, a lost connection, or no event of the run for ``QUIET_S`` seconds (the
typed path's watch then says what the server does) — hands over: ``follow`` returns a
``Handoff`` with the events taken so far, and ``HeadlessRun`` folds them into its conversation and
follows the stream from there with the typed client (``RemoteClient``), which reads that event
again. What was printed is never printed twice.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote, urlsplit

from ..protocol.hot_events import UNSAFE_IDS
from ..protocol.safe_text import json_safe, visible
from ..protocol.sse import SSEParser

#: seconds without an event of the run before the typed path takes over (its watch says what waits)
QUIET_S = 5.0
#: seconds to connect and to read a response's head and body (httpx's default of the typed path: 30)
REQUEST_TIMEOUT_S = 30.0
#: bytes of a response head / of a JSON answer the lean client reads at most
MAX_HEAD = 64 * 1024
MAX_BODY = 1024 * 1024
#: the longest frame the lean path takes (a longer one goes to the typed path, which bounds it itself)
MAX_FRAME_CHARS = 1024 * 1024

_API_PREFIX = "/instance-ai"


class LeanHttpError(Exception):
    """The lean client could not make a request (connection refused or reset, a response it does not read)."""


@dataclass
class Handoff:
    """Where ``follow`` stopped: the last event id taken (the typed path reads after it) and the
    events taken (decoded JSON, in order), what was printed of the answer and whether its last line is open."""

    cursor: int
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    printed: str = ""
    line_open: bool = False


class LeanHttp:
    """HTTP/1.1 over ``asyncio`` streams to one ``http://host:port``: a connection a request
    (``Connection: close``), bounded head and body, ``Content-Length`` or chunked bodies."""

    def __init__(self, base: str, token: str | None) -> None:
        parts = urlsplit(base)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        self.authority = parts.netloc
        self.token = token

    async def open(self, method: str, path: str, body: Any = None,
                   accept: str = "application/json") -> tuple[int, dict[str, str], asyncio.StreamReader,
                                                               asyncio.StreamWriter]:
        try:
            tls: Any = None
            if self.tls:  # (the system's certificates; one it does not trust: the typed path's, certifi's, says)
                import ssl

                tls = ssl.create_default_context()
            reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port, ssl=tls),
                                                    REQUEST_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise LeanHttpError(str(exc) or type(exc).__name__) from None
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.authority}", f"Accept: {accept}",
                 "Connection: close", "User-Agent: instance-ai-run"]
        if self.token:
            lines.append(f"Authorization: Bearer {self.token}")
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        try:
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
        except (OSError, TimeoutError, UnicodeEncodeError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            writer.close()
            raise LeanHttpError(str(exc) or type(exc).__name__) from None
        status, headers = _head(head)
        if status is None:
            writer.close()
            raise LeanHttpError("not an HTTP response")
        return status, headers, reader, writer

    async def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """The status and the decoded JSON body (``None`` when it is not JSON)."""
        status, headers, reader, writer = await self.open(method, path, body)
        try:
            raw = await asyncio.wait_for(_read_body(reader, headers), REQUEST_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise LeanHttpError(str(exc) or type(exc).__name__) from None
        finally:
            writer.close()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, None


def _head(head: bytes) -> tuple[int | None, dict[str, str]]:
    if len(head) > MAX_HEAD:
        return None, {}
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        return None, {}
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        async for chunk in _chunks(reader):
            out += chunk
            if len(out) > MAX_BODY:
                raise ValueError("answer too long")
        return bytes(out)
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit() or int(length) > MAX_BODY:
            raise ValueError("answer too long")
        return await reader.readexactly(int(length))
    data = bytearray()
    while piece := await reader.read(65536):  # to the end of the connection
        data += piece
        if len(data) > MAX_BODY:
            raise ValueError("answer too long")
    return bytes(data)


async def _chunks(reader: asyncio.StreamReader) -> Any:
    """The chunks of a chunked body, as they arrive."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ValueError("a broken chunk") from None
        if size == 0:
            return
        if size > MAX_FRAME_CHARS * 4:
            raise ValueError("a chunk too long")
        chunk = await reader.readexactly(size + 2)
        yield chunk[:-2]


# ----------------------------------------------------------------------------- the wire form
#: each lean event's payload: its declared fields in the models' order (``protocol.events``), the
#: required ones, whether other (extra) fields may follow, and the type of each declared field
_PAYLOADS: dict[str, tuple[tuple[str, ...], frozenset[str], bool]] = {
    "run-start": (("messageId", "traceId", "messageGroupId"), frozenset({"messageId"}), True),
    "text-delta": (("text",), frozenset({"text"}), False),
    "text-block": (("text",), frozenset({"text"}), False),
    "thread-title-updated": (("title",), frozenset({"title"}), False),
    "run-finish": (("status", "reason"), frozenset({"status"}), True),
}
#: the snake_case names of declared fields, which pydantic would take for those fields
_SNAKE = frozenset({"message_id", "trace_id", "message_group_id", "archived_workflow_ids", "archivedWorkflowIds"})
_ENVELOPE = ("type", "runId", "agentId", "responseId", "ts", "payload")


def is_wire_form(data: Any) -> bool:
    """Whether ``data`` (decoded JSON) is one of the lean events exactly as ``Event.to_wire()``
    writes it (so that printing it is printing the model's form): the envelope's keys in the
    model's order (``runId`` and ``agentId`` present, no ``userId``), declared payload fields in
    their order and of their type (strings), extras after them, and no ``null`` anywhere (the
    models' form leaves those out)."""
    if type(data) is not dict:
        return False
    spec = _PAYLOADS.get(data.get("type"))  # type: ignore[arg-type]
    payload = data.get("payload")
    if spec is None or type(payload) is not dict:
        return False
    keys = list(data)
    if [key for key in _ENVELOPE if key in data] != keys or "runId" not in data or "agentId" not in data:
        return False
    if type(data["runId"]) is not str or type(data["agentId"]) is not str:
        return False
    if "responseId" in data and type(data["responseId"]) is not str:
        return False
    if "ts" in data and type(data["ts"]) not in (int, float):
        return False
    declared, required, extras = spec
    fields = list(payload)
    present = [key for key in declared if key in payload]
    if fields[:len(present)] != present or not required <= set(present):
        return False
    if any(type(payload[key]) is not str for key in present):
        return False
    rest = fields[len(present):]
    if rest and (not extras or any(key in _SNAKE or key in declared for key in rest)):
        return False
    return not _has_null(payload)


def _has_null(value: Any, depth: int = 0) -> bool:
    if value is None or depth > 32:
        return True
    if type(value) is dict:
        return any(_has_null(item, depth + 1) for item in value.values())
    if type(value) is list:
        return any(_has_null(item, depth + 1) for item in value)
    return False


# ----------------------------------------------------------------------------- the run
@dataclass
class Sent:
    """What ``LeanRun.send`` did: the thread it made and the run it started (``None``: the server
    refused the message, and the typed path sends it again to report the server's words)."""

    thread_id: str
    run_id: str | None


class LeanRun:
    """The requests and the plain stream of one ``run --url`` on a new thread of our server."""

    def __init__(self, base: str, token: str | None, *, json_mode: bool, out: TextIO | None = None,
                 err: TextIO | None = None) -> None:
        self.base = base.strip().rstrip("/").removesuffix(_API_PREFIX)
        self.http = LeanHttp(self.base + _API_PREFIX, token)
        self.token = token
        self.json_mode = json_mode
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.thread_id = ""
        self.run_id = ""

    @staticmethod
    def takes(url: str) -> bool:
        """Whether the lean client can make the requests: an ``http://`` or ``https://`` URL."""
        return url.strip().lower().startswith(("http://", "https://"))

    async def start(self, message: str, *, follow: bool, idle_timeout: float) -> int | tuple[Sent | None, Handoff | None]:
        """Send ``message`` on a new thread (``send``) and, with ``follow``, follow the run while it is
        the plain case, Ctrl-C cancelling it as the typed path does: the exit code when the run ended
        here, else what was sent (``None``: nothing) and where the typed path takes over."""
        sent = await self.send(message)
        if sent is None or sent.run_id is None or not follow:
            return sent, None
        outcome = await self._interruptible(self.follow(min(QUIET_S, idle_timeout) if idle_timeout else QUIET_S))
        return outcome if isinstance(outcome, int) else (sent, outcome)

    async def _interruptible(self, following: Any) -> int | Handoff:
        import signal

        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(following)
        interrupted = False

        def on_sigint() -> None:
            nonlocal interrupted
            interrupted = True
            task.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        except (NotImplementedError, RuntimeError):
            pass
        try:
            return await task
        except asyncio.CancelledError:
            if not interrupted:
                raise
            self._note("\ninstance-ai run: interrupted; cancelling the run")
            await self.cancel()
            return 130
        finally:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError):
                pass

    async def send(self, message: str) -> Sent | None:
        """The protocol's requests as ``RemoteClient`` makes them: ``GET /instance-ai/health`` (is it
        ours?), ``POST /instance-ai/threads`` ``{"threadId"}``, ``POST /instance-ai/chat/:id``
        ``{"message"}`` answering ``{"runId"}``. ``None``: not our server, one that wants a token not
        given, or one that refused the thread (nothing sent: the typed path says why). A ``run_id``
        of None: the send was refused, and the typed path sends again and reports the server's words.
        Raises ``ServerUnreachable`` when the message could not reach the server (not sent twice)."""
        import uuid

        thread_id = str(uuid.uuid4())
        try:
            status, health = await self.http.json("GET", "/health")
            if status != 200 or not isinstance(health, dict) or health.get("service") != "instance-ai" or (
                    health.get("authRequired") and not self.token):
                return None
            status, _ = await self.http.json("POST", "/threads", {"threadId": thread_id})
            if not 200 <= status < 300:
                return None
        except LeanHttpError:
            return None
        try:
            status, answer = await self.http.json("POST", f"/chat/{quote(thread_id, safe='')}", {"message": message})
        except LeanHttpError as exc:
            from ..client.base import ServerUnreachable

            raise ServerUnreachable(f"send: cannot reach the server at {self.base}: {exc}; is it running? (--url)") \
                from None
        self.thread_id = thread_id
        if not 200 <= status < 300:
            return Sent(thread_id, None)
        run_id = answer.get("runId") if isinstance(answer, dict) else None
        if not isinstance(run_id, str) or not run_id:
            from ..client.base import ServerProtocolError

            raise ServerProtocolError(f"send: the server at {self.base} answered without a run id")
        self.run_id = run_id
        return Sent(thread_id, run_id)

    async def cancel(self) -> None:
        """Ask the server to cancel the run (Ctrl-C while the lean path follows it)."""
        try:
            await asyncio.wait_for(self.http.json("POST", f"/chat/{quote(self.thread_id, safe='')}/cancel"), 5)
        except (LeanHttpError, TimeoutError) as exc:
            self._note(f"instance-ai run: could not cancel: {exc or type(exc).__name__}")

    async def follow(self, quiet_s: float = QUIET_S) -> int | Handoff:
        """Print the run's events while they are the plain case: its exit code (0 completed, 1
        otherwise) when it finished so, else the ``Handoff`` to the typed path."""
        if not self.json_mode:
            self._note(f"[thread {self.thread_id} · run {self.run_id}]")
        state = Handoff(0)
        try:
            status, headers, reader, writer = await self.http.open(
                "GET", f"/events/{quote(self.thread_id, safe='')}", accept="text/event-stream")
        except LeanHttpError:
            return state
        try:
            if status != 200 or "text/event-stream" not in headers.get("content-type", ""):
                return state
            return await self._read(reader, headers, state, quiet_s)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return state  # the typed path reconnects and says what was wrong
        finally:
            writer.close()

    async def _read(self, reader: asyncio.StreamReader, headers: dict[str, str], state: Handoff,
                    quiet_s: float) -> int | Handoff:
        loop = asyncio.get_running_loop()
        parser = SSEParser(max_frame_chars=MAX_FRAME_CHARS)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        chunks = _chunks(reader) if chunked else None
        root = ""
        texts, response = 0, None
        progress = loop.time()
        while True:
            left = progress + quiet_s - loop.time()
            if left <= 0:
                return state
            try:
                if chunks is not None:
                    piece = await asyncio.wait_for(anext(chunks, b""), left)
                else:
                    piece = await asyncio.wait_for(reader.read(65536), left)
            except TimeoutError:
                return state
            if not piece:
                return state  # the stream ended before the run did
            for frame in parser.feed(piece):
                if frame.event not in ("", "message") or frame.id is None or not frame.id.isdigit():
                    return state
                event_id = int(frame.id)
                try:
                    data = json.loads(frame.data)
                except (ValueError, RecursionError):
                    return state
                if event_id <= state.cursor or not is_wire_form(data) or data["runId"] != self.run_id:
                    return state
                kind = data["type"]
                if kind == "run-start":
                    if state.events or not data["agentId"] or data["agentId"] in UNSAFE_IDS:
                        return state
                    root = data["agentId"]
                elif not state.events:
                    return state  # the run's start comes first
                elif kind in ("text-delta", "text-block"):
                    # the root agent's text of one response: the answer is their text joined; a block (a
                    # run that had finished when the stream was read) only before any text
                    rid = data.get("responseId") or None
                    if data["agentId"] != root or (texts and rid != response) or (kind == "text-block" and texts):
                        return state
                    texts, response = texts + 1, rid
                state.events.append((event_id, data))
                state.cursor = event_id
                progress = loop.time()
                self._emit(data, state)
                if kind == "run-finish":
                    return self._finish(data, state)
            if parser.rejected:
                return state

    # ----------------------------------------------------------------- output (HeadlessRun's words)
    def _emit(self, data: dict[str, Any], state: Handoff) -> None:
        if self.json_mode:
            line = {**data, "threadId": self.thread_id} if "threadId" not in data else data
            self.out.write(json_safe(json.dumps(line, ensure_ascii=False, separators=(",", ":"))) + "\n")
            self.out.flush()
            return
        kind = data["type"]
        if kind in ("text-delta", "text-block"):
            text = data["payload"]["text"]
            if text:
                self.out.write(visible(text))
                self.out.flush()
                state.printed += text
                state.line_open = not text.endswith("\n")
        elif kind == "thread-title-updated":
            self._note(f"[title: {data['payload']['title']}]")

    def _finish(self, data: dict[str, Any], state: Handoff) -> int:
        payload = data["payload"]
        status = payload["status"]
        if not self.json_mode:
            if state.line_open:
                self.out.write("\n")
                self.out.flush()
            if status != "completed":
                reason = payload.get("reason")
                self._note(f"run {status}" + (f": {reason}" if reason else ""))
            from ..protocol.usage_words import usage_line

            spent = usage_line(payload.get("usage"))
            if spent:
                self._note(f"[{spent}]")
        return 0 if status == "completed" else 1

    def _note(self, text: str) -> None:
        print(visible(text), file=self.err, flush=True)
