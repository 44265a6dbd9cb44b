"""The bytes of a chat-completions answer, read by this project (no SDK): bounded before anything is
decoded (``runtime/limits.py``: one line past ``line_bytes``, an answer past ``answer_bytes``),
split into server-sent events (``data``/``event`` fields, comments, ``\r\n`` and ``\r`` line ends,
``[DONE]``), each event's data decoded as a JSON object; an ``error`` event (or a chunk carrying
``error``) is the server's error in the middle of the answer. Also what the chunks carry that needs
reading: inline ``<think>`` reasoning split from the text across chunks (``ThinkSplitter``) and the
``usage`` object. Used by ``runtime/openai_model.py``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .errors import ModelHTTPError, ModelMalformedStream
from .limits import ModelLimits, exceeded
from .usage import Usage

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


class ThinkSplitter:
    """Splits content into text and reasoning on ``<think>``/``</think>`` tags, across chunks."""

    OPEN = "<think>"
    CLOSE = "</think>"

    def __init__(self) -> None:
        self.in_think = False
        self._buffer = ""

    def feed(self, text: str) -> list[tuple[bool, str]]:
        """Returns ``(is_reasoning, piece)`` pairs; a possible partial tag at the end is held back."""
        self._buffer += text
        out: list[tuple[bool, str]] = []
        while self._buffer:
            tag = self.CLOSE if self.in_think else self.OPEN
            pos = self._buffer.find(tag)
            if pos >= 0:
                if pos:
                    out.append((self.in_think, self._buffer[:pos]))
                self._buffer = self._buffer[pos + len(tag) :]
                self.in_think = not self.in_think
                continue
            keep = 0
            for n in range(min(len(tag) - 1, len(self._buffer)), 0, -1):
                if tag.startswith(self._buffer[-n:]):
                    keep = n
                    break
            emit = self._buffer[: len(self._buffer) - keep]
            if emit:
                out.append((self.in_think, emit))
            self._buffer = self._buffer[len(self._buffer) - keep :]
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        rest, self._buffer = self._buffer, ""
        return [(self.in_think, rest)] if rest else []


def _count(data: Any, key: str) -> int:
    """A token count of a usage object as the server sent it (JSON); 0 when absent or not a
    non-negative number."""
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0
    return int(value)


def usage_from_openai(data: dict[str, Any]) -> Usage:
    """A stream's ``usage`` object (JSON) as ``Usage``; counts of the wrong type count 0."""
    prompt = _count(data, "prompt_tokens")
    completion = _count(data, "completion_tokens")
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=_count(data, "total_tokens") or prompt + completion,
        cached_input_tokens=_count(data.get("prompt_tokens_details"), "cached_tokens"),
        reasoning_tokens=_count(data.get("completion_tokens_details"), "reasoning_tokens"),
        requests=1,
    )
