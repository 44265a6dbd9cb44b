"""A real HTTP server that speaks the OpenAI chat-completions wire format, scripted.

For tests and demos that must exercise the real ``openai`` client end to end::

    async with MockOpenAIServer([MockResponse(text="Hello!"), MockResponse.call("get_weather", {"city": "Paris"})]) as srv:
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x")
        ...
        srv.requests[0].body          # what the client sent
        srv.requests[0].disconnected_at   # time.monotonic() when the client hung up mid-stream

A script is a list of ``MockResponse`` (one per request, in order), a list of ``Rule`` (first
match wins, reusable), or a callable ``(body: dict) -> MockResponse`` (may be async). Responses
stream text, ``reasoning_content`` (or ``reasoning``) deltas, tool calls as proper fragments
(optionally llama.cpp style: id and name repeated on every fragment), a usage chunk when the
client asks for it (``stream_options.include_usage``), errors with any HTTP status, errors in the
middle of a stream, and slow or hanging streams (for timeout and abort tests). Hostile modes: an
HTML page with status 200 (``content_type``), junk data lines (``raw_lines``), a stream cut after N
bytes (``cut_after_bytes``, closed cleanly or reset), one huge chunk (``big_chunk_chars``), huge tool
arguments (a long ``arguments`` string with a large ``args_chunk_size``) and a stream that never
ends (``endless``). A closed port is ``closed_port_url()``.

It also runs as a process: ``python -m tests.support.openai_server --port 0 --script
script.json`` prints ``{"base_url": ...}`` on its first stdout line. ``GET /_mock/requests`` lists
the recorded requests; ``POST /_mock/script`` replaces the script (JSON body, same format as the file).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from .asgi import AsgiServer


class MockToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] | str | None = None  # a str is sent verbatim (may be broken JSON)
    id: str | None = None

    def arguments_text(self) -> str:
        if self.arguments is None:
            return ""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


class MockResponse(BaseModel):
    """One scripted answer."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"  # or "reasoning" (OpenRouter style)
    tool_calls: list[MockToolCall] = Field(default_factory=list)
    finish_reason: str | None = None  # default: tool_calls when there are calls, else stop
    # usage; None -> estimated (4 characters per token)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    # errors
    status: int = 200
    error: str | None = None  # with status >= 400: the error message of the JSON error body
    error_after_chunks: int | None = None  # send an SSE error event after this many chunks
    # timing
    first_chunk_delay: float = 0.0  # before the response headers
    chunk_delay: float = 0.0  # between chunks
    hang_after_chunks: int | None = None  # stop sending (keep the connection open) after N chunks
    # shape
    words_per_chunk: int = 1
    args_chunk_size: int = 6
    llama_cpp_style: bool = False  # repeat id and function.name in every tool-call delta
    omit_role_chunk: bool = False
    #: sent as the stream's chunks instead (each any JSON value: a broken or hostile server)
    raw_chunks: list[Any] | None = None
    # hostile modes (issue 26 / 31): what broken or hostile servers do
    #: answer 200 with this content type and ``body`` instead of a stream (e.g. "text/html": a login page)
    content_type: str | None = None
    body: str = "<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>Sign in</form></body></html>"
    #: sent as the stream's data lines verbatim, before the chunks (junk that is not JSON)
    raw_lines: list[str] | None = None
    #: stop after this many bytes of the stream: ``cut_mode`` "close" ends the body cleanly (no
    #: finish reason, no [DONE]); "reset" breaks the connection in the middle of the body
    cut_after_bytes: int | None = None
    cut_mode: Literal["close", "reset"] = "close"
    #: one content chunk of this many characters first (a 50 MB chunk)
    big_chunk_chars: int = 0
    #: after the text, send "more " chunks for ever (every ``chunk_delay`` s) until the client hangs up
    endless: bool = False

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any] | str | None = None, **kw: Any) -> MockResponse:
        return cls(tool_calls=[MockToolCall(name=name, arguments=arguments)], **kw)

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any] | str | None], **kw: Any) -> MockResponse:
        return cls(tool_calls=[MockToolCall(name=n, arguments=a) for n, a in calls], **kw)


class Rule(BaseModel):
    """Answer ``respond`` when every given condition holds (first matching rule wins).

    ``contains``: text in the last user message; ``last_role``: role of the last message;
    ``tool_result_contains``: text in the last tool message; ``has_tool``: a tool of that name is
    offered; ``model``: the requested model name."""

    contains: str | None = None
    last_role: str | None = None
    tool_result_contains: str | None = None
    has_tool: str | None = None
    model: str | None = None
    respond: MockResponse

    def matches(self, body: dict[str, Any]) -> bool:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if self.last_role is not None and last.get("role") != self.last_role:
            return False
        if self.contains is not None:
            user: dict[str, Any] = next((m for m in reversed(messages) if m.get("role") == "user"), {})
            if self.contains.lower() not in _text(user.get("content")).lower():
                return False
        if self.tool_result_contains is not None:
            tool = next((m for m in reversed(messages) if m.get("role") == "tool"), None)
            if tool is None or self.tool_result_contains not in _text(tool.get("content")):
                return False
        if self.has_tool is not None:
            names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
            if self.has_tool not in names:
                return False
        if self.model is not None and body.get("model") != self.model:
            return False
        return True


Responder = Callable[[dict[str, Any]], MockResponse | Awaitable[MockResponse]]
Script = Sequence[MockResponse] | Sequence[Rule] | Responder


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass
class RecordedRequest:
    """One request the server received. Times are ``time.monotonic()`` of this process."""

    index: int
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float
    response: MockResponse | None = None
    chunks_sent: int = 0
    first_chunk_at: float | None = None
    #: when the last chunk with answer text (``delta.content``) went out
    last_content_at: float | None = None
    completed_at: float | None = None
    disconnected_at: float | None = None
    #: the request's tokens as this server counts them (with ``context_window``)
    tokens: int = 0
    _disconnected: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "path": self.path,
            "body": self.body,
            "received_at": self.received_at,
            "chunks_sent": self.chunks_sent,
            "first_chunk_at": self.first_chunk_at,
            "last_content_at": self.last_content_at,
            "completed_at": self.completed_at,
            "disconnected_at": self.disconnected_at,
        }


def _parse_script(data: Any) -> list[MockResponse] | list[Rule]:
    if not isinstance(data, list):
        raise ValueError("a script is a JSON list of responses or of rules ({when..., respond})")
    if data and all(isinstance(d, dict) and "respond" in d for d in data):
        return [Rule.model_validate({**(d.get("when") or {}), "respond": d["respond"]}) for d in data]
    return [MockResponse.model_validate(d) for d in data]


class _ChatEndpoint:
    """The raw ASGI endpoint for ``/v1/chat/completions`` (own disconnect handling)."""

    def __init__(self, server: MockOpenAIServer) -> None:
        self.server = server

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body_bytes = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body_bytes += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            body = json.loads(body_bytes or b"{}")
        except json.JSONDecodeError:
            await self._json(send, 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        record = self.server._record(scope["path"], body, headers)
        problem = _validate_request(body, self.server.openai_null_content)
        if problem:
            await self._json(send, 400, {"error": {"message": problem, "type": "invalid_request_error"}})
            record.completed_at = time.monotonic()
            return
        window = self.server.context_window
        if window is not None:
            record.tokens = self.server.count_tokens(body)
            answer = body.get("max_completion_tokens") or body.get("max_tokens") or 0
            if record.tokens + int(answer) > window:
                self.server.refused += 1
                record.completed_at = time.monotonic()
                if body.get("stream") and self.server.empty_stream_over_window:
                    # llama.cpp's server (llama-cpp-python): 200 and an empty event stream
                    await send({"type": "http.response.start", "status": 200,
                                "headers": [(b"content-type", b"text/event-stream")]})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                said = (f"However, you requested {record.tokens + int(answer)} tokens ({record.tokens} in the messages, "
                        f"{answer} in the completion)." if answer else
                        f"However, your messages resulted in {record.tokens} tokens.")
                await self._json(send, 400, {"error": {
                    "message": f"This model's maximum context length is {window} tokens. {said} Please reduce the "
                               "length of the messages.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
                return
        try:
            response = await self.server._respond(body)
        except LookupError as exc:
            await self._json(send, 500, {"error": {"message": str(exc), "type": "mock_error"}})
            record.completed_at = time.monotonic()
            return
        record.response = response

        async def watch() -> None:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    record.disconnected_at = time.monotonic()
                    record._disconnected.set()
                    return

        watcher = asyncio.ensure_future(watch())
        sender = asyncio.ensure_future(self._send_response(send, body, response, record))
        try:
            await asyncio.wait({watcher, sender}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not sender.done():
                sender.cancel()
            watcher.cancel()
            await asyncio.gather(sender, watcher, return_exceptions=True)
        if sender.done() and not sender.cancelled() and sender.exception() is None and record.completed_at is None:
            record.completed_at = time.monotonic()

    async def _json(self, send: Any, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    async def _send_response(self, send: Any, body: dict[str, Any], r: MockResponse, record: RecordedRequest) -> None:
        if r.first_chunk_delay:
            await asyncio.sleep(r.first_chunk_delay)
        if r.status >= 400:
            await self._json(send, r.status, {"error": {"message": r.error or "mock error", "type": "mock_error",
                                                        "code": None}})
            return
        model = str(body.get("model", "mock"))
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        prompt_tokens = r.prompt_tokens if r.prompt_tokens is not None else (
            self.server.count_tokens(body) if self.server.context_window is not None else  # what it enforces
            sum(_tokens(json.dumps(m)) for m in body.get("messages", [])))
        completion_tokens = r.completion_tokens if r.completion_tokens is not None else (
            _tokens(r.text) + _tokens(r.reasoning) + sum(_tokens(c.arguments_text()) for c in r.tool_calls))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if r.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": r.cached_tokens}
        if r.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": r.reasoning_tokens}
        calls = [(c.id or f"call_{uuid.uuid4().hex[:16]}", c) for c in r.tool_calls]
        finish = r.finish_reason or ("tool_calls" if calls else "stop")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": r.text or (None if calls else "")}
            if r.reasoning:
                message[r.reasoning_field] = r.reasoning
            if calls:
                message["tool_calls"] = [
                    {"id": cid, "type": "function", "function": {"name": c.name, "arguments": c.arguments_text()}}
                    for cid, c in calls
                ]
            await self._json(send, 200, {
                "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage,
            })
            return
        if r.content_type is not None:  # not a stream at all (a proxy's or a web app's page)
            page = r.body.encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", r.content_type.encode()),
                                    (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})
            record.completed_at = time.monotonic()
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        if r.cut_after_bytes is not None:
            send = _Cutter(send, r.cut_after_bytes, r.cut_mode)
        for line in r.raw_lines or ():
            await send({"type": "http.response.body", "body": f"data: {line}\n\n".encode(), "more_body": True})
            record.chunks_sent += 1
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        events: list[dict[str, Any]] = []
        if not r.omit_role_chunk:
            events.append(chunk({"role": "assistant", "content": ""}))
        if r.big_chunk_chars:
            events.append(chunk({"content": "x" * r.big_chunk_chars}))
        for piece in _split_words(r.reasoning, r.words_per_chunk):
            events.append(chunk({r.reasoning_field: piece}))
        for piece in _split_words(r.text, r.words_per_chunk):
            events.append(chunk({"content": piece}))
        for index, (cid, c) in enumerate(calls):
            args = c.arguments_text()
            size = max(1, r.args_chunk_size)
            pieces = [args[i : i + size] for i in range(0, len(args), size)] or [""]
            for n, piece in enumerate(pieces):
                if n == 0 or r.llama_cpp_style:
                    tc = {"index": index, "id": cid, "type": "function", "function": {"name": c.name, "arguments": piece}}
                else:
                    tc = {"index": index, "function": {"arguments": piece}}
                events.append(chunk({"tool_calls": [tc]}))
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage") and self.server.stream_usage:
            events.append({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                           "choices": [], "usage": usage})
        if r.raw_chunks is not None:
            events = list(r.raw_chunks)
        for n, event in enumerate(events):
            if r.error_after_chunks is not None and n == r.error_after_chunks:
                await self._sse(send, {"error": {"message": r.error or "mock stream error", "type": "mock_error"}}, record)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if r.hang_after_chunks is not None and n == r.hang_after_chunks:
                await record._disconnected.wait()
                return
            if n and r.chunk_delay:
                await asyncio.sleep(r.chunk_delay)
            if r.endless and event.get("choices") and event["choices"][0].get("finish_reason"):
                while True:  # never the finish: more text for as long as the client reads
                    await self._sse(send, chunk({"content": "more "}), record)
                    await asyncio.sleep(r.chunk_delay)
            await self._sse(send, event, record)
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        record.completed_at = time.monotonic()

    async def _sse(self, send: Any, data: Any, record: RecordedRequest) -> None:
        await send({"type": "http.response.body", "body": b"data: " + json.dumps(data).encode() + b"\n\n",
                    "more_body": True})
        record.chunks_sent += 1
        now = time.monotonic()
        if record.first_chunk_at is None:
            record.first_chunk_at = now
        choices = data.get("choices") if isinstance(data, dict) else None
        if isinstance(choices, list) and any(
            isinstance(choice, dict) and isinstance(choice.get("delta"), dict) and choice["delta"].get("content")
            for choice in choices
        ):
            record.last_content_at = now


class _CutStream(Exception):
    """Raised by ``_Cutter`` in "reset" mode: uvicorn then drops the connection mid-body."""


class _Cutter:
    """An ASGI ``send`` that lets ``limit`` body bytes through, then ends the body ("close") or
    breaks the connection ("reset"); everything after is swallowed."""

    def __init__(self, send: Any, limit: int, mode: str) -> None:
        self._send, self._left, self._mode, self._done = send, limit, mode, False

    async def __call__(self, message: dict[str, Any]) -> None:
        if self._done:
            return
        body = message.get("body", b"")
        if len(body) <= self._left:
            self._left -= len(body)
            await self._send(message)
            return
        self._done = True
        await self._send({"type": "http.response.body", "body": body[: self._left], "more_body": True})
        if self._mode == "reset":
            raise _CutStream("cut in the middle of the stream")
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def _validate_request(body: dict[str, Any], null_content_with_tool_calls: bool = False) -> str | None:
    """The checks strict servers make (llama.cpp rejects ``content: null`` on assistant turns)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool", "developer"):
            return f"messages[{i}].role is invalid: {role!r}"
        if "content" in m and m["content"] is None and not (null_content_with_tool_calls and m.get("tool_calls")):
            return f"messages[{i}].content: Input should be a valid string"
        if role == "tool" and not m.get("tool_call_id"):
            return f"messages[{i}]: a tool message needs tool_call_id"
        for tc in m.get("tool_calls") or []:
            try:
                json.loads(tc["function"]["arguments"] or "{}")
            except (KeyError, TypeError, json.JSONDecodeError):
                return f"messages[{i}].tool_calls: arguments must be JSON text"
    return None


def answers_in_order(*steps: MockResponse, title: str = "MCP") -> Callable[[dict[str, Any]], MockResponse]:
    """A script for ``MockOpenAIServer``: the agent's requests get ``steps`` in order (then "Done."),
    a title request gets ``{"title": title}``."""
    queue = list(steps)

    def respond(body: dict[str, Any]) -> MockResponse:
        if "titles" in str(body["messages"][0].get("content", "")):
            return MockResponse(text=json.dumps({"title": title}))
        return queue.pop(0) if queue else MockResponse(text="Done.")

    return respond


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (a port just freed): connections are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _split_words(text: str, words: int) -> list[str]:
    import re

    pieces = re.findall(r"\S+\s*|\s+", text)
    if words <= 1:
        return pieces
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]


class MockOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1 (a random free port by default)."""

    def __init__(self, script: Script = (), *, host: str = "127.0.0.1", port: int = 0,
                 openai_null_content: bool = False, models: Sequence[str] = ("mock",),
                 context_window: int | None = None, chars_per_token: float = 3.0,
                 empty_stream_over_window: bool = False, stream_usage: bool = True) -> None:
        #: refuse a request over this many tokens (its messages and tools counted at ``chars_per_token``
        #: characters of their JSON a token, plus ``max_tokens``) with HTTP 400 and OpenAI's
        #: ``context_length_exceeded`` body; ``empty_stream_over_window``: a streamed one gets 200 and an
        #: empty event stream instead, as llama.cpp's server does (unstreamed, the 400)
        self.context_window = context_window
        self.chars_per_token = chars_per_token
        self.empty_stream_over_window = empty_stream_over_window
        #: False: a stream carries no usage even when asked for it, as llama-cpp-python's server
        self.stream_usage = stream_usage
        #: requests refused as over the window
        self.refused = 0
        #: what ``GET /v1/models`` lists
        self.models = list(models)
        #: accept ``content: null`` on an assistant turn with tool_calls, as OpenAI does (n8n's ai-sdk
        #: sends that); the default refuses it as llama.cpp does
        self.openai_null_content = openai_null_content
        self.host = host
        self.port = port
        self.requests: list[RecordedRequest] = []
        self._script: Script = script
        self._position = 0
        self._server: AsgiServer | None = None
        self._new_request = asyncio.Event()

    def count_tokens(self, body: dict[str, Any]) -> int:
        """A request's tokens as this server counts them: its messages' and tools' JSON text."""
        chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in body.get("messages") or [])
        chars += len(json.dumps(body.get("tools"), ensure_ascii=False)) if body.get("tools") else 0
        return int(chars / self.chars_per_token) + 1

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def set_script(self, script: Script) -> None:
        self._script = script
        self._position = 0

    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> RecordedRequest:
        record = RecordedRequest(len(self.requests), path, body, headers, time.monotonic())
        self.requests.append(record)
        self._new_request.set()
        return record

    async def _respond(self, body: dict[str, Any]) -> MockResponse:
        script = self._script
        if callable(script):
            out = script(body)
            if inspect.isawaitable(out):
                return await out
            return out
        items: list[Any] = list(script)
        if items and isinstance(items[0], Rule):
            for rule in items:
                if rule.matches(body):
                    return rule.respond
            raise LookupError("no rule matches this request")
        if self._position >= len(items):
            raise LookupError(f"the script has no response left for request {len(self.requests)}")
        response: MockResponse = items[self._position]
        self._position += 1
        return response

    async def wait_for_requests(self, count: int, timeout: float = 5.0) -> RecordedRequest:
        """Wait until ``count`` chat requests arrived; returns the latest."""
        async with asyncio.timeout(timeout):
            while len(self.requests) < count:
                self._new_request.clear()
                await self._new_request.wait()
        return self.requests[count - 1]

    async def wait_for_chunks(self, request_index: int, chunks: int, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.requests) <= request_index or self.requests[request_index].chunks_sent < chunks:
                await asyncio.sleep(0.002)

    async def wait_disconnect(self, request_index: int, timeout: float = 5.0) -> float:
        """Wait until the client hung up on request ``request_index``; returns the monotonic time."""
        record = self.requests[request_index]
        async with asyncio.timeout(timeout):
            await record._disconnected.wait()
        assert record.disconnected_at is not None
        return record.disconnected_at

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def models(request: Request) -> JSONResponse:
            return JSONResponse({"object": "list",
                                 "data": [{"id": name, "object": "model", "owned_by": "mock"} for name in self.models]})

        async def list_requests(request: Request) -> JSONResponse:
            return JSONResponse([r.to_dict() for r in self.requests])

        async def set_script(request: Request) -> JSONResponse:
            try:
                self.set_script(_parse_script(await request.json()))
            except (ValueError, json.JSONDecodeError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            return JSONResponse({"ok": True})

        return Starlette(routes=[
            Route("/v1/chat/completions", _ChatEndpoint(self), methods=["POST"]),
            Route("/chat/completions", _ChatEndpoint(self), methods=["POST"]),
            Route("/v1/models", models),
            Route("/_mock/requests", list_requests),
            Route("/_mock/script", set_script, methods=["POST"]),
        ])

    async def start(self) -> MockOpenAIServer:
        from .asgi import AsgiServer

        self._server = AsgiServer(self.app(), host=self.host, port=self.port, graceful_shutdown=1)
        await self._server.start()
        self.port = self._server.port
        return self

    async def stop(self) -> None:
        if self._server is not None:
            for record in self.requests:  # release hanging streams
                record._disconnected.set()
            await self._server.stop(stop_timeout=5)
        self._server = None

    async def __aenter__(self) -> MockOpenAIServer:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


async def _serve_forever(args: argparse.Namespace) -> None:
    script: Any = []
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            text = fh.read()
        if args.script.endswith((".yaml", ".yml")):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
        script = _parse_script(data)
    server = MockOpenAIServer(script, host=args.host, port=args.port, openai_null_content=args.openai_null_content,
                              context_window=args.context_window,
                              empty_stream_over_window=args.empty_stream_over_window)
    await server.start()
    print(json.dumps({"base_url": server.base_url, "port": server.port}), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted OpenAI chat-completions server for tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON or YAML file: a list of responses, or of rules {when..., respond}")
    parser.add_argument("--openai-null-content", action="store_true",
                        help="accept content: null on assistant messages with tool_calls, as api.openai.com does")
    parser.add_argument("--context-window", type=int, default=None,
                        help="refuse requests over this many tokens (3 characters of JSON a token) with HTTP 400 "
                             "context_length_exceeded, as OpenAI does")
    parser.add_argument("--empty-stream-over-window", action="store_true",
                        help="over the window, answer a streamed request with 200 and an empty stream (llama.cpp)")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve_forever(args))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
