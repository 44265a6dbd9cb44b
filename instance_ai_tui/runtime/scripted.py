"""A deterministic model that speaks through the ``ModelAdapter`` interface.

It is the runtime's test double and the base of the offline demo model: each call answers with
the next ``ScriptedResponse`` of a list, or with what a callable returns for the request. Text and
reasoning stream in small pieces, tool calls stream as argument fragments, usage is estimated
deterministically (about four characters per token) unless the response gives its own.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .model import (
    ModelCancelled,
    ModelChunk,
    ModelError,
    ModelFinish,
    ModelReasoningDelta,
    ModelRequest,
    ModelTextDelta,
    ModelToolCall,
    ModelToolCallDelta,
    ModelUsage,
)
from .usage import PriceTable, Usage


@dataclass(slots=True)
class ScriptedToolCall:
    name: str
    arguments: dict[str, Any] | str | None = None  # a str is sent verbatim (e.g. broken JSON)
    id: str | None = None

    def arguments_text(self) -> str:
        if self.arguments is None:
            return ""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(slots=True)
class ScriptedResponse:
    """One model response. ``error`` raises instead of answering; ``delay`` is per chunk."""

    text: str = ""
    reasoning: str = ""
    tool_calls: Sequence[ScriptedToolCall] = ()
    finish_reason: str | None = None  # default: "tool_calls" when there are calls, else "stop"
    usage: Usage | None = None
    delay: float | None = None
    error: ModelError | None = None

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any] | str | None = None, *, id: str | None = None,
             text: str = "") -> ScriptedResponse:
        return cls(text=text, tool_calls=[ScriptedToolCall(name, arguments, id)])


Script = (
    Sequence[ScriptedResponse | str]
    | Callable[[ModelRequest], ScriptedResponse | str | Awaitable[ScriptedResponse | str]]
)

_PIECE = re.compile(r"\S+\s*|\s+")


def split_text(text: str, words_per_chunk: int = 1) -> list[str]:
    """Split text into pieces of ``words_per_chunk`` words (whitespace kept)."""
    words = _PIECE.findall(text)
    if words_per_chunk <= 1:
        return words
    return ["".join(words[i : i + words_per_chunk]) for i in range(0, len(words), words_per_chunk)]


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class ScriptedModel:
    """A scripted ``ModelAdapter``. ``requests`` records the last ``keep_requests`` (64) ``ModelRequest``s
    it received (bounded: the demo model serves a long-lived server), ``calls`` counts them all."""

    def __init__(
        self,
        script: Script,
        *,
        name: str = "scripted",
        words_per_chunk: int = 1,
        delay: float = 0.0,
        prices: PriceTable | None = None,
        keep_requests: int = 64,
    ) -> None:
        self.name = name
        self._script = script
        self._position = 0
        self.words_per_chunk = words_per_chunk
        self.delay = delay
        self.prices = prices
        self.requests: deque[ModelRequest] = deque(maxlen=max(0, keep_requests))
        self._calls = 0

    @property
    def calls(self) -> int:
        return self._calls

    async def _next_response(self, request: ModelRequest) -> ScriptedResponse:
        if callable(self._script):
            out = self._script(request)
            if inspect.isawaitable(out):
                out = await out
        else:
            if self._position >= len(self._script):
                raise ModelError(f"scripted model {self.name!r}: no response left for call {self._position + 1}")
            out = self._script[self._position]
            self._position += 1
        return ScriptedResponse(text=out) if isinstance(out, str) else out

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[ModelChunk]:
        self.requests.append(request)
        self._calls += 1
        response = await self._next_response(request)
        delay = self.delay if response.delay is None else response.delay

        async def pause() -> None:
            if cancel is not None and cancel.is_set():
                raise ModelCancelled()
            if delay > 0:
                if cancel is None:
                    await asyncio.sleep(delay)
                else:
                    try:
                        await asyncio.wait_for(cancel.wait(), delay)
                    except TimeoutError:
                        return
                    raise ModelCancelled()

        if response.error is not None:
            await pause()
            raise response.error
        for piece in split_text(response.reasoning, self.words_per_chunk):
            await pause()
            yield ModelReasoningDelta(piece)
        for piece in split_text(response.text, self.words_per_chunk):
            await pause()
            yield ModelTextDelta(piece)
        calls: list[ModelToolCall] = []
        for index, call in enumerate(response.tool_calls):
            call_id = call.id or f"call_{self._calls}_{index}"
            args = call.arguments_text()
            pieces = [args[i : i + 8] for i in range(0, len(args), 8)] or [""]
            for n, piece in enumerate(pieces):
                await pause()
                yield ModelToolCallDelta(
                    index=index, id=call_id if n == 0 else None, name=call.name if n == 0 else None, arguments=piece
                )
            calls.append(ModelToolCall(index=index, id=call_id, name=call.name, arguments=args))
        await pause()
        usage = response.usage
        if usage is None:
            prompt = sum(estimate_tokens(json.dumps(m, default=str)) for m in request.messages)
            completion = estimate_tokens(response.text) + estimate_tokens(response.reasoning) + sum(
                estimate_tokens(c.arguments_text()) + estimate_tokens(c.name) for c in response.tool_calls
            )
            usage = Usage(
                input_tokens=prompt,
                output_tokens=completion,
                total_tokens=prompt + completion,
                reasoning_tokens=estimate_tokens(response.reasoning),
            )
        usage = usage.model_copy(update={"requests": max(usage.requests, 1)})
        if self.prices is not None:
            usage = self.prices.priced(self.name, usage)
        yield ModelUsage(usage)
        reason = response.finish_reason or ("tool_calls" if calls else "stop")
        yield ModelFinish(reason=reason, tool_calls=tuple(calls), model=self.name)
