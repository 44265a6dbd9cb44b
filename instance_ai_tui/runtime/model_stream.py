"""The bytes of a chat-completions answer, read by this project (no SDK): bounded before anything is
decoded (``runtime/limits.py``: one line past ``line_bytes``, an answer past ``answer_bytes``),
split into server-sent events (``data``/``event`` fields, comments, ``\r\n`` and ``\r`` line ends,
``[DONE]``), each event's data decoded as a JSON object; an ``error`` event (or a chunk carrying
``error``) is the server's error in the middle of the answer. Used by ``runtime/openai_model.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .errors import ModelHTTPError, ModelMalformedStream
from .limits import ModelLimits, exceeded

if TYPE_CHECKING:
    import httpx

#: an error answer (or a window probe's answer) is read up to this many bytes
SMALL_BODY = 256 * 1024


class StreamDone(Exception):
    """The stream said ``[DONE]``."""


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _words(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def read_events(source: AsyncIterator[bytes], limits: ModelLimits, where: str, model: str,
                      ) -> AsyncIterator[dict[str, Any]]:
    """The chunks of a chat-completions stream: its events' data decoded as JSON objects, until
    ``[DONE]`` (``StreamDone`` is raised then). The bytes are bounded before anything is decoded."""
    data: list[bytes] = []
    event = b""
    rest = b""
    async for piece in bounded_bytes(source, limits, where):
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = (rest + piece).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line:
                if line[0] == 58:  # ":" a comment
                    continue
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    data.append(value)
                elif name == b"event":
                    event = value
                continue
            if not data:
                event = b""
                continue
            text = b"\n".join(data)
            data, kind, event = [], event, b""
            if text.startswith(b"[DONE]"):
                raise StreamDone()
            try:
                chunk = json.loads(text)
            except ValueError as exc:
                raise ModelMalformedStream(
                    f"{where} sent a stream chunk that is not JSON (model {model!r}): {exc}; "
                    "is this an OpenAI-compatible chat-completions server?") from None
            if kind == b"error" or (isinstance(chunk, dict) and chunk.get("error")):
                inner = chunk.get("error") if isinstance(chunk, dict) else None
                words = inner.get("message") if isinstance(inner, dict) else inner
                raise ModelHTTPError(f"{where} reported an error in the answer of model {model!r}: "
                                     f"{_words(str(words or 'An error occurred during streaming'))}")
            if not isinstance(chunk, dict):
                raise ModelMalformedStream(
                    f"{where} sent a malformed stream chunk (model {model!r}): {_preview(chunk)}")
            yield chunk



async def read_small(response: httpx.Response, limit: int | None = SMALL_BODY) -> bytes:
    """A response's body, at most ``limit`` bytes (the rest is not read)."""
    parts: list[bytes] = []
    size = 0
    async for piece in response.aiter_bytes():
        parts.append(piece)
        size += len(piece)
        if limit is not None and size >= limit:
            break
    return b"".join(parts)[: limit or None]


async def bounded_bytes(source: AsyncIterator[bytes], limits: ModelLimits, where: str) -> AsyncIterator[bytes]:
    """The response's bytes, refused past ``line_bytes`` on one line or ``answer_bytes`` in all: a
    50 MB chunk is never held whole for decoding (nor a copy of it)."""
    line_limit, total_limit = limits.line_bytes, limits.answer_bytes
    line = total = 0
    async for chunk in source:
        total += len(chunk)
        if total_limit and total > total_limit:
            raise exceeded(where, "an answer", f"of more than {total_limit:,} bytes", "max_answer_chars",
                           total_limit, f"bytes (the wire guard of max_answer_chars = {limits.max_answer_chars:,} "
                                        "characters)")
        probe = chunk.replace(b"\r", b"\n") if b"\r" in chunk else chunk
        first = probe.find(b"\n")
        if first < 0:
            line += len(probe)
        else:
            longest = line + first
            if line_limit and len(probe) > line_limit:
                longest = max([longest, *(len(part) for part in probe.split(b"\n")[1:-1])])
            if line_limit and longest > line_limit:
                line = longest
            else:
                line = len(probe) - probe.rfind(b"\n") - 1
        if line_limit and line > line_limit:
            raise exceeded(where, "one stream chunk", f"of more than {line_limit:,} bytes", "max_delta_chars",
                           line_limit, f"bytes (the wire guard of max_delta_chars and max_tool_args_chars, "
                                       f"{max(limits.max_delta_chars, limits.max_tool_args_chars):,} characters)")
        yield chunk
