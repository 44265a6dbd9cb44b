"""The model adapter interface: one streamed chat completion in, typed model chunks out.

An adapter takes a ``ModelRequest`` (messages in the OpenAI chat format, tool definitions in the
OpenAI ``tools`` format, extra parameters) and yields, in order:

* ``ModelTextDelta`` / ``ModelReasoningDelta`` as text arrives (each is the ``text-delta`` /
  ``reasoning-delta`` chunk of ``runtime.chunks`` itself, stamped with its run by the agent loop),
* ``ModelToolCallDelta`` fragments of tool calls, keyed by ``index`` (``id`` and ``name`` are set on
  the first fragment of an index only; ``arguments`` is the new piece of the JSON argument text),
* at most one ``ModelUsage``,
* exactly one ``ModelFinish`` last, carrying the assembled tool calls (``ModelToolCall``) and the
  finish reason (``stop`` | ``tool_calls`` | ``length`` | ``content_filter`` | ...).

Failures raise ``ModelError`` (the hierarchy is drawn in ``runtime/errors.py``): an adapter wraps
every failure of its transport into the class that says what happened. When the
``cancel`` event is set the adapter closes its HTTP stream at once and raises ``ModelCancelled``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..aio import aclose
from .chunks import ReasoningDeltaChunk, TextDeltaChunk
from .errors import (
    ModelCancelled,
    ModelError,
    ModelHTTPError,
    ModelLimitExceeded,
    ModelMalformedStream,
    ModelRefused,
    ModelStreamCut,
    ModelStreamError,
    ModelTimeout,
    ModelUnreachable,
)
from .usage import Usage

__all__ = [
    "ModelAdapter", "ModelCancelled", "ModelChunk", "ModelError", "ModelFinish", "ModelHTTPError",
    "ModelLimitExceeded", "ModelMalformedStream", "ModelReasoningDelta", "ModelRefused", "ModelRequest", "ModelRetry",
    "ModelStreamCut", "ModelStreamError", "ModelTextDelta", "ModelTimeout", "ModelToolCall", "ModelToolCallDelta",
    "ModelUnreachable", "ModelUsage", "ToolCallAccumulator", "content_text",
]


@dataclass(slots=True)
class ModelRequest:
    """One model call: OpenAI-format ``messages`` and ``tools``, plus extra request ``params``."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, ...

    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.tools]


def content_text(content: Any) -> str:
    """The text of an OpenAI ``content`` value (string or list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


class ModelTextDelta(TextDeltaChunk):
    """A piece of the answer's text, as an adapter yields it (``ModelTextDelta(text)``).

    It *is* the ``text-delta`` chunk the run's queue carries: the agent loop stamps ``run_id`` and
    ``response_id`` on it and emits this same object (one representation of the token, not two).
    ``text`` is ``delta``."""

    __slots__ = ()

    def __init__(self, text: str) -> None:
        TextDeltaChunk.__init__(self, "", "", text)

    @property
    def text(self) -> str:
        return self.delta


class ModelReasoningDelta(ReasoningDeltaChunk):
    """A piece of the model's reasoning, as an adapter yields it; the ``reasoning-delta`` chunk the
    agent loop stamps and emits (see ``ModelTextDelta``)."""

    __slots__ = ()

    def __init__(self, text: str) -> None:
        ReasoningDeltaChunk.__init__(self, "", "", text)

    @property
    def text(self) -> str:
        return self.delta


@dataclass(slots=True, frozen=True)
class ModelToolCallDelta:
    """A fragment of tool call ``index``. ``id``/``name`` only on the first fragment of an index."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    type: str = "tool-call-delta"


@dataclass(slots=True, frozen=True)
class ModelUsage:
    usage: Usage
    type: str = "usage"


@dataclass(slots=True, frozen=True)
class ModelRetry:
    """The request failed and the adapter tries again in ``delay`` seconds (try ``attempt`` of
    ``attempts``); the agent loop emits it as a ``RetryChunk``."""

    attempt: int
    attempts: int
    delay: float
    reason: str
    type: str = "retry"


@dataclass(slots=True, frozen=True)
class ModelToolCall:
    """An assembled tool call. ``arguments`` is the raw JSON text the model sent (may be invalid)."""

    index: int
    id: str
    name: str
    arguments: str


@dataclass(slots=True, frozen=True)
class ModelFinish:
    reason: str
    tool_calls: tuple[ModelToolCall, ...] = ()
    model: str | None = None
    type: str = "finish"


ModelChunk = ModelTextDelta | ModelReasoningDelta | ModelToolCallDelta | ModelUsage | ModelFinish | ModelRetry


@runtime_checkable
class ModelAdapter(Protocol):
    """Anything that streams a chat completion as ``ModelChunk`` values."""

    name: str

    def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[ModelChunk]: ...


class ToolCallAccumulator:
    """Assembles tool-call fragments by index.

    Handles servers that repeat ``id`` and ``name`` on every fragment (llama.cpp): a repeated
    name is not appended again. A call without an id gets a generated one on its first fragment. ``feed`` returns the normalised delta
    (``id``/``name`` set only on the first fragment of an index) or None when nothing is new.
    """

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}

    def feed(self, index: int, id: str | None, name: str | None, arguments: str | None) -> ModelToolCallDelta | None:
        call = self._calls.get(index)
        first = call is None
        if call is None:
            call = {"id": id or f"call_{uuid.uuid4().hex[:24]}", "name": "", "args": []}
            self._calls[index] = call
        new_name: str | None = None
        if name:
            current = call["name"]
            if not current:
                call["name"] = name
                new_name = name
            elif name != current and not current.endswith(name) and not name.startswith(current):
                # a genuinely split name ("get_", "weather"): append the piece
                call["name"] = current + name
                new_name = name
            elif name.startswith(current) and name != current:
                # a server sending the growing full name each time
                call["name"] = name
                new_name = name[len(current):]
        if arguments:
            call["args"].append(arguments)
        if not first and not new_name and not arguments:
            return None
        return ModelToolCallDelta(
            index=index,
            id=call["id"] if first else None,
            name=new_name if (first or new_name) else None,
            arguments=arguments or "",
        )

    def finish(self) -> tuple[ModelToolCall, ...]:
        return tuple(
            ModelToolCall(index=i, id=c["id"], name=c["name"], arguments="".join(c["args"]))
            for i, c in sorted(self._calls.items())
        )

    def __bool__(self) -> bool:
        return bool(self._calls)


async def answer_text(model: ModelAdapter, request: ModelRequest) -> tuple[str, Usage]:
    """The text of one answer of ``model`` and its usage: the stream read to its finish, then closed
    (the observer's notes, a thread's title). A ``ModelError`` of the stream is raised."""
    parts: list[str] = []
    usage = Usage()
    stream = model.stream(request)
    try:
        async for chunk in stream:
            if isinstance(chunk, ModelTextDelta):
                parts.append(chunk.text)
            elif isinstance(chunk, ModelUsage):
                usage = usage + chunk.usage
            elif isinstance(chunk, ModelFinish):
                break
    finally:
        await aclose(stream)
    return "".join(parts), usage
