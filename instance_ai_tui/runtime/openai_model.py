"""The model adapter on the official ``openai`` package (chat completions, streamed).

Works against any OpenAI-compatible base URL (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server,
OpenRouter). What it smooths over:

* tool-call fragments are assembled by ``index``; servers that repeat ``id`` and ``name`` in every
  fragment (llama.cpp) do not produce doubled names;
* reasoning comes from the ``reasoning_content`` or ``reasoning`` extra fields of a delta, or from
  inline ``<think>...</think>`` blocks in the content (tags may be split across chunks);
* a ``stop`` finish reason with tool calls present is reported as ``tool_calls``;
* the first chunk must arrive within ``first_token_timeout`` and later chunks within
  ``idle_timeout`` of each other, else ``ModelTimeout``;
* setting the ``cancel`` event closes the HTTP stream at once (``ModelCancelled``).

What it refuses (every failure is wrapped here, where it happens, into the ``runtime/errors.py``
class that says so, its message naming ``the model server at <base URL>``):

* an answer that is not an event stream (``text/html`` with status 200): ``ModelMalformedStream``;
* a stream that ends without a finish reason or ``[DONE]`` (a cut connection): ``ModelStreamCut``, and
  one that carried no usable chunk at all: ``ModelMalformedStream``; only a stream that ended as the
  protocol says yields ``ModelFinish``;
* more than ``limits`` allow (``runtime/limits.py``): one stream line past ``line_bytes`` is refused
  before it is decoded, an answer past ``max_answer_seconds`` is stopped: ``ModelLimitExceeded``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, TypeVar

from .errors import (
    ModelCancelled,
    ModelError,
    ModelHTTPError,
    ModelMalformedStream,
    ModelRefused,
    ModelStreamCut,
    ModelTimeout,
    ModelUnreachable,
)
from .limits import DEFAULT_LIMITS, ModelLimits, exceeded
from .model import (
    ModelChunk,
    ModelFinish,
    ModelReasoningDelta,
    ModelRequest,
    ModelRetry,
    ModelTextDelta,
    ModelUsage,
    ToolCallAccumulator,
)
from .usage import Price, PriceTable, Usage

T = TypeVar("T")

_FINISH_REASONS = {"stop", "tool_calls", "length", "content_filter", "function_call"}


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


class _Guard:
    """Awaits under a timeout and aborts the await when the cancel event fires.

    No task per await: the event's waiter cancels the task that is awaiting inside the adapter
    (only while it is inside), and the cancellation is turned into ``ModelCancelled``."""

    def __init__(self, model: str, cancel: asyncio.Event | None, where: str = "the model server") -> None:
        self.model = model
        self.where = where
        self.fired = cancel is not None and cancel.is_set()
        self._inside: asyncio.Task[Any] | None = None
        self._waiter: asyncio.Future[Any] | None = None
        if cancel is not None and not self.fired:
            self._waiter = asyncio.ensure_future(cancel.wait())
            self._waiter.add_done_callback(self._on_cancel)

    def _on_cancel(self, fut: asyncio.Future[Any]) -> None:
        if fut.cancelled():
            return
        self.fired = True
        if self._inside is not None:
            self._inside.cancel()

    async def wait(self, aw: Awaitable[T], timeout: float | None, what: str) -> T:
        if self.fired:
            if inspect.iscoroutine(aw):
                aw.close()
            raise ModelCancelled()
        task = self._inside = asyncio.current_task()
        try:
            if timeout is None:
                return await aw
            async with asyncio.timeout(timeout):
                return await aw
        except TimeoutError:
            raise ModelTimeout(
                f"{self.where} sent nothing for {timeout:g} s ({what}, model {self.model!r}): it may be overloaded "
                "or stuck; try again, or raise model.first_token_timeout / model.idle_timeout") from None
        except asyncio.CancelledError:
            if self.fired and task is not None:
                task.uncancel()
                raise ModelCancelled() from None
            raise
        finally:
            self._inside = None

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.cancel()


class OpenAIModel:
    """A ``ModelAdapter`` for an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        first_token_timeout: float | None = 60.0,
        idle_timeout: float | None = 60.0,
        prices: PriceTable | Mapping[str, Price | Mapping[str, float]] | None = None,
        max_retries: int = 2,
        strict_tools: bool | None = None,
        replay_reasoning: bool = False,
        default_params: dict[str, Any] | None = None,
        client: Any = None,
        limits: ModelLimits | None = None,
    ) -> None:
        import openai

        self.name = model
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise ValueError(
                    "no API key for the OpenAI API: set OPENAI_API_KEY (or model.api_key in the config file), "
                    "or set OPENAI_BASE_URL for a local OpenAI-compatible server"
                )
            key = "no-key"  # local servers accept any key; the client insists on one
        self.first_token_timeout = first_token_timeout
        self.idle_timeout = idle_timeout
        #: what the model may send (``runtime.limits``); read by the agent loop too
        self.limits = limits or DEFAULT_LIMITS
        #: the part that answers, in words (every error message starts with it)
        self.where = f"the model server at {self.base_url or 'https://api.openai.com/v1'}"
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable(prices)
        official = self.base_url is None or "api.openai.com" in self.base_url
        #: whether tool schemas may be sent with ``strict: true``
        self.supports_strict_tools = official if strict_tools is None else strict_tools
        #: echo reasoning back as ``reasoning_content`` on assistant tool-call turns (Kimi, DeepSeek)
        self.replay_reasoning = replay_reasoning
        self.default_params = dict(default_params or {})
        self._skeleton_cache: tuple[dict[str, Any], dict[str, Any]] | None = None
        #: how often a failed request is tried again (by ``stream``, which says each retry: ``ModelRetry``)
        self.max_retries = max_retries
        self._client = client or openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            # no read timeout: first-token and idle timeouts are ours (see stream())
            timeout=openai.Timeout(connect=15.0, read=None, write=60.0, pool=60.0),
        )

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAIModel:
        """Build from ``config.ModelSettings`` (env already merged in by ``load_settings``)."""
        if not settings.name or settings.name == "demo":
            raise ValueError("no model name configured (set INSTANCE_AI_MODEL or model.name in the config file)")
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return cls(
            settings.name,
            base_url=settings.base_url,
            api_key=key,
            first_token_timeout=settings.first_token_timeout,
            idle_timeout=settings.idle_timeout,
            prices=settings.prices,
            limits=ModelLimits.from_settings(settings.limits) if getattr(settings, "limits", None) else None,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def list_models(self) -> list[str]:
        """The model server's ``GET /models`` ids (raises ``openai`` errors when it cannot)."""
        page = await self._client.with_options(max_retries=self.max_retries).models.list()
        return sorted(str(model.id) for model in page.data)

    # -- the stream ------------------------------------------------------------------------------

    def _error(self, exc: Exception, *, streaming: bool = False) -> ModelError:
        """An ``openai`` error as the ``ModelError`` that says what happened (``runtime/errors.py``).
        ``streaming``: it happened while the answer was arriving (a broken connection then cuts it)."""
        import openai

        where, model = self.where, self.model
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(f"{where} did not answer in time (model {model!r}): it may be overloaded; try again")
        if isinstance(exc, openai.APIConnectionError):
            if streaming:
                return ModelStreamCut(f"{where} broke off the answer of model {model!r} before it ended "
                                      f"({_cause_text(exc)}): what arrived is incomplete; try again")
            return ModelUnreachable(_unreachable_text(where, exc))
        if isinstance(exc, openai.APIStatusError):
            message = exc.message
            body = exc.body
            if isinstance(body, dict):
                inner = body.get("error", body)
                if isinstance(inner, dict) and inner.get("message"):
                    message = str(inner["message"])
                elif isinstance(inner, str):
                    message = inner
            message = _preview_text(message)
            status = exc.status_code
            said = f"HTTP {status}: {message}"
            if status in (401, 403):
                return ModelRefused(f"{where} refused the credentials ({said}): check the API key "
                                    "(OPENAI_API_KEY or model.api_key)", status_code=status)
            if status == 404:
                return ModelRefused(f"{where} does not know model {model!r} or the path ({said}): check the model "
                                    "name (INSTANCE_AI_MODEL) and that OPENAI_BASE_URL ends in /v1", status_code=status)
            if status == 429:
                return ModelHTTPError(f"{where} is rate-limiting requests ({said}): wait a moment and try again",
                                      status_code=status, retryable=True)
            if status in (408, 409) or status >= 500:
                return ModelHTTPError(f"{where} failed to answer model {model!r} ({said}): try again later",
                                      status_code=status, retryable=True)
            return ModelRefused(f"{where} refused the request for model {model!r} ({said})", status_code=status)
        if isinstance(exc, openai.APIError):
            return ModelHTTPError(f"{where} reported an error in the answer of model {model!r}: "
                                  f"{_preview_text(exc.message)}")
        return ModelError(f"{where} failed for model {model!r}: {exc}")

    async def _unreachable_or(self, timeout: ModelTimeout) -> ModelError:
        """``ModelUnreachable`` when the server's port refuses a connection right now (the SDK's own
        retries of a refused connection outlasted the first-token timeout), else ``timeout``."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.base_url or "https://api.openai.com/v1")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            async with asyncio.timeout(1.0):
                _reader, writer = await asyncio.open_connection(parts.hostname or "localhost", port)
        except (OSError, TimeoutError) as exc:
            if isinstance(exc, ConnectionRefusedError | socket.gaierror):
                return ModelUnreachable(_unreachable_text(self.where, exc))
            return timeout
        writer.close()
        return timeout

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = request.tools
            if request.tool_choice is not None:
                params["tool_choice"] = request.tool_choice
        params.update(self.default_params)
        params.update(request.params)
        return params

    async def _open_stream(self, params: dict[str, Any]) -> Any:
        """Start the streamed request: the same bytes ``chat.completions.create(**params)`` sends,
        without the SDK walking the whole message history on every request.

        ``create`` passes its body through the SDK's TypedDict transform, which visits every message
        of the history each time: O(history) per request, O(n²) for a run (about 90 % of the runtime's
        own cost for 100 tool round trips). The transform is the identity for the chat messages we
        build (plain JSON: no aliased keys, no dates, no file objects). So the SDK itself is asked,
        once per distinct rest of the body (model, tools, options), what ``create`` would send with
        an empty message list — through a transport that keeps the bytes and sends nothing — and the
        messages are put back at their place. ``tests/runtime/test_openai_bytes.py`` checks that the
        bytes and headers sent are identical to ``create``'s. A client that is not the SDK's own (a
        test double), or request options beyond the body, go through ``create`` itself."""
        fast = _sdk_fast_path(self._client)
        messages = params.get("messages")
        if fast is None or not isinstance(messages, list) or any(
            name in params for name in ("extra_headers", "extra_query", "timeout")
        ) or isinstance(params.get("response_format"), type):
            return await self._client.chat.completions.create(**params)
        make_options, cast_to, stream_cls, _http = fast
        rest = {name: value for name, value in params.items() if name != "messages"}
        skeleton = await self._skeleton(rest)
        body = {key: (messages if key == "messages" else value) for key, value in skeleton.items()}
        return await self._client.post(
            "/chat/completions", body=body, options=make_options(), cast_to=cast_to, stream=True, stream_cls=stream_cls
        )

    async def _skeleton(self, rest: dict[str, Any]) -> dict[str, Any]:
        """The body ``create`` sends for ``rest`` with no messages (its key order and transformed values
        included), asked of the SDK through a transport that sends nothing; cached while ``rest`` is
        the same (tools and options rarely change within a thread)."""
        cached = self._skeleton_cache
        if cached is not None and cached[0] == rest:
            return cached[1]
        fast = _sdk_fast_path(self._client)
        assert fast is not None
        http = fast[3]  # the HTTP package this SDK is built on (httpx, or httpx2 in newer releases)
        sent: list[bytes] = []

        class _Keep(http.AsyncBaseTransport):  # type: ignore[name-defined]
            async def handle_async_request(self, request: Any) -> Any:
                sent.append(await request.aread())
                return http.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: [DONE]\n\n")

        async with http.AsyncClient(transport=_Keep()) as keep:
            probe = self._client.copy(http_client=keep, max_retries=0)
            stream = await probe.chat.completions.create(messages=[], **rest)
            await stream.close()
        skeleton: dict[str, Any] = json.loads(sent[-1])
        self._skeleton_cache = (copy.deepcopy(rest), skeleton)
        return skeleton

    def _check_stream(self, stream: Any) -> None:
        """An answer that is not an event stream (an HTML page with status 200, a JSON body) is
        refused before it is read; a stream of our own class learns its byte limits."""
        response = getattr(stream, "response", None)
        headers = getattr(response, "headers", None)
        kind = str(headers.get("content-type") or "") if headers is not None else ""
        if kind and "text/event-stream" not in kind.lower():
            raise ModelMalformedStream(
                f"{self.where} answered with {kind.split(';')[0].strip()} instead of a chat-completions stream "
                f"(model {self.model!r}): is OPENAI_BASE_URL the API's address (usually ending in /v1)?")
        if isinstance(stream, _BoundedStreamBase):
            stream.ia_limits = self.limits
            stream.ia_where = self.where

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[ModelChunk]:
        import openai

        if cancel is not None and cancel.is_set():
            raise ModelCancelled()
        params = self._params(request)
        extra_body = {k: params.pop(k) for k in list(params) if k not in _KNOWN_PARAMS}
        if extra_body:
            params["extra_body"] = extra_body
        guard = _Guard(self.model, cancel, self.where)
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = None if self.first_token_timeout is None else started + self.first_token_timeout
        limits = self.limits
        answer_deadline = started + limits.max_answer_seconds if limits.max_answer_seconds > 0 else None
        stream = None
        try:
            attempt = 1
            while True:  # a refused connection, 429, 408/409 and 5xx are tried again, each retry said (ModelRetry)
                left = self.first_token_timeout if deadline is None or attempt == 1 else max(0.0, deadline - loop.time())
                try:
                    stream = await guard.wait(self._open_stream(params), left, "no response")
                    break
                except openai.OpenAIError as exc:
                    delay = _retry_delay(exc, attempt, self.max_retries)
                    error = self._error(exc)
                    if delay is None or (deadline is not None and loop.time() + delay >= deadline):
                        raise error from exc
                    attempt += 1
                    yield ModelRetry(attempt, self.max_retries + 1, delay, _retry_reason(exc))
                    await guard.wait(asyncio.sleep(delay), None, "retry")
                except ModelTimeout as exc:
                    # the retries of a refused connection may have outlasted the first-token timeout: say that
                    raise await self._unreachable_or(exc) from None
            assert stream is not None
            self._check_stream(stream)
            iterator = stream.__aiter__()
            tools = ToolCallAccumulator()
            think = ThinkSplitter()
            finish_reason: str | None = None
            usage: Usage | None = None
            model_name: str | None = None
            got_token = False
            while True:
                if got_token or deadline is None:
                    timeout, what = self.idle_timeout, "stream stalled"
                else:
                    timeout, what = max(0.0, deadline - loop.time()), "no first token"
                capped = False
                if answer_deadline is not None:
                    left = max(0.0, answer_deadline - loop.time())
                    if timeout is None or left < timeout:
                        timeout, capped = left, True
                try:
                    chunk = await guard.wait(iterator.__anext__(), timeout, what)
                except StopAsyncIteration:
                    break
                except ModelTimeout:
                    if capped:
                        raise exceeded(self.where, "an answer", f"for more than {limits.max_answer_seconds:g} s",
                                       "max_answer_seconds", limits.max_answer_seconds, "seconds") from None
                    raise
                except openai.OpenAIError as exc:
                    raise self._error(exc, streaming=True) from exc
                except ValueError as exc:  # the SDK's json.loads of a data line
                    raise ModelMalformedStream(
                        f"{self.where} sent a stream chunk that is not JSON (model {self.model!r}): {exc}; "
                        "is this an OpenAI-compatible chat-completions server?") from None
                if answer_deadline is not None and loop.time() > answer_deadline:
                    raise exceeded(self.where, "an answer", f"for more than {limits.max_answer_seconds:g} s",
                                   "max_answer_seconds", limits.max_answer_seconds, "seconds")
                data = _chunk_data(chunk)
                if data is None:
                    raise ModelMalformedStream(
                        f"{self.where} sent a malformed stream chunk (model {self.model!r}): {_preview(chunk)}")
                if model_name is None and isinstance(data.get("model"), str):
                    model_name = data["model"]
                raw_usage = data.get("usage")
                if isinstance(raw_usage, dict) and raw_usage:
                    usage = usage_from_openai(raw_usage)
                choices = data.get("choices")
                if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                    continue
                choice = choices[0]
                delta = choice.get("delta")
                if isinstance(delta, dict):
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        got_token = True
                        yield ModelReasoningDelta(reasoning)
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        got_token = True
                        for is_reasoning, piece in think.feed(content):
                            yield ModelReasoningDelta(piece) if is_reasoning else ModelTextDelta(piece)
                    tool_calls = delta.get("tool_calls")
                    if isinstance(tool_calls, list) and tool_calls:
                        got_token = True
                        for position, tc in enumerate(tool_calls):
                            if not isinstance(tc, dict):
                                continue
                            fn = tc.get("function")
                            fn = fn if isinstance(fn, dict) else {}
                            index = tc.get("index")
                            call_id, name = _text_or_none(tc.get("id")), _text_or_none(fn.get("name"))
                            arguments = _text_or_none(fn.get("arguments"))
                            if call_id is None and name is None and arguments is None:
                                continue  # a fragment that says nothing (not a call of its own)
                            out = tools.feed(index if isinstance(index, int) else position, call_id, name, arguments)
                            if out is not None:
                                yield out
                reason = choice.get("finish_reason")
                if isinstance(reason, str) and reason:
                    got_token = True
                    finish_reason = reason
            # success means success: the stream ended as the protocol says (a finish reason, or [DONE])
            done = bool(getattr(stream, "ia_saw_done", False))
            if finish_reason is None and not (done and got_token):
                if got_token:
                    raise ModelStreamCut(
                        f"{self.where} ended the stream of model {self.model!r} before the answer was finished "
                        "(no finish reason, no [DONE]): what arrived is incomplete; try again")
                raise ModelMalformedStream(
                    f"{self.where} sent a stream with no usable chunk (model {self.model!r}): no text, no tool "
                    "call, no finish reason; is this an OpenAI-compatible chat-completions server?")
            for is_reasoning, piece in think.flush():
                yield ModelReasoningDelta(piece) if is_reasoning else ModelTextDelta(piece)
            if usage is not None:
                yield ModelUsage(self.prices.priced(self.model, usage))
            calls = tools.finish()
            reason = finish_reason or "stop"
            if calls and reason in ("stop", "function_call"):
                reason = "tool_calls"
            yield ModelFinish(reason=reason, tool_calls=calls, model=model_name or self.model)
        finally:
            guard.close()
            if stream is not None:
                try:
                    await asyncio.shield(stream.close())
                except BaseException:  # noqa: BLE001 - closing an abandoned stream: nothing left to tell anyone
                    pass


_FAST_PATH: Any = None


class _BoundedStreamBase:
    """Marks the SDK stream class of ``_bounded_stream_class`` (set up by ``OpenAIModel._check_stream``)."""

    ia_limits: ModelLimits = DEFAULT_LIMITS
    ia_where: str = "the model server"
    ia_saw_done: bool = False


async def _bounded_bytes(source: AsyncIterator[bytes], stream: _BoundedStreamBase) -> AsyncIterator[bytes]:
    """The response's bytes, refused past ``line_bytes`` on one line or ``answer_bytes`` in all: a
    50 MB chunk never reaches the SSE decoder (which would hold it whole, and a copy of it)."""
    limits = stream.ia_limits
    line_limit, total_limit = limits.line_bytes, limits.answer_bytes
    line = total = 0
    async for chunk in source:
        total += len(chunk)
        if total_limit and total > total_limit:
            raise exceeded(stream.ia_where, "an answer", f"of more than {total_limit:,} bytes", "max_answer_chars",
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
            raise exceeded(stream.ia_where, "one stream chunk", f"of more than {line_limit:,} bytes", "max_delta_chars",
                           line_limit, f"bytes (the wire guard of max_delta_chars and max_tool_args_chars, "
                                       f"{max(limits.max_delta_chars, limits.max_tool_args_chars):,} characters)")
        yield chunk


def _bounded_stream_class(base: Any) -> Any:
    """The SDK's ``AsyncStream[object]`` reading through ``_bounded_bytes`` and noting ``[DONE]``."""
    import openai._streaming as sdk_streaming

    translate = (getattr(sdk_streaming, "timeout_exceptions", None), getattr(sdk_streaming, "request_exceptions", None))

    class BoundedStream(base[object], _BoundedStreamBase):
        async def _iter_events(self) -> AsyncIterator[Any]:
            import openai

            try:
                async for sse in self._decoder.aiter_bytes(_bounded_bytes(self.response.aiter_bytes(), self)):
                    if sse.data.startswith("[DONE]"):
                        self.ia_saw_done = True
                    yield sse
            except ModelError:
                raise
            except Exception as err:
                timeouts = translate[0]() if callable(translate[0]) else ()
                requests = translate[1]() if callable(translate[1]) else ()
                if timeouts and isinstance(err, timeouts):
                    raise openai.APITimeoutError(request=self.response.request) from err
                if (requests and isinstance(err, requests)) or type(err).__module__.startswith("httpx"):
                    raise openai.APIConnectionError(request=self.response.request) from err
                raise

    return BoundedStream


def _cause_text(exc: BaseException) -> str:
    """The innermost cause's words (the transport's own reason), short."""
    seen: set[int] = set()
    current: BaseException | None = exc
    text = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        words = str(current).strip()
        if words and words != "Connection error.":
            text = words
        current = current.__cause__ or current.__context__
    return _preview_text(text or type(exc).__name__, 160)


def _unreachable_text(where: str, exc: BaseException) -> str:
    import socket
    import ssl

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return f"{where} refused the connection: is it running? (OPENAI_BASE_URL)"
        if isinstance(current, socket.gaierror):
            return f"{where} could not be found (no such host): check the address (OPENAI_BASE_URL)"
        if isinstance(current, ssl.SSLError):
            return f"{where} failed the TLS handshake ({current}): check the address and its certificate"
        current = current.__cause__ or current.__context__
    return f"{where} could not be reached ({_cause_text(exc)}): is it running? (OPENAI_BASE_URL)"


def _preview_text(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _chunk_data(chunk: Any) -> dict[str, Any] | None:
    """A stream chunk as the JSON object the server sent. The fast path asks the SDK for the
    decoded JSON itself (``AsyncStream[object]``: building a ``ChatCompletionChunk`` per token
    cost about 50 us, and the fields read here are a handful); ``create`` (a client that is not
    the SDK's own) gives SDK objects. None: not an object at all."""
    if isinstance(chunk, dict):
        return chunk
    dump = getattr(chunk, "model_dump", None)
    if callable(dump):
        data = dump()
        return data if isinstance(data, dict) else None
    return None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: the longest wait for a retry a server may ask for (``Retry-After``); the first waits of our own
MAX_RETRY_WAIT = 60.0
RETRY_WAITS = (1.0, 2.0, 4.0, 8.0)


def _retry_delay(exc: Exception, attempt: int, max_retries: int) -> float | None:
    """Seconds before trying a failed request again (the server's ``Retry-After`` when it says, capped),
    or None when it is not worth trying again (a refusal, an error past ``max_retries``)."""
    import openai

    if attempt > max_retries:
        return None
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code not in (408, 409, 429) and exc.status_code < 500:
            return None
        said = exc.response.headers.get("retry-after") if exc.response is not None else None
        try:
            if said is not None and 0 <= float(said) <= MAX_RETRY_WAIT:
                return float(said)
        except ValueError:
            pass
    elif not isinstance(exc, openai.APIConnectionError) or isinstance(exc, openai.APITimeoutError):
        return None
    return RETRY_WAITS[min(attempt, len(RETRY_WAITS)) - 1]


def _retry_reason(exc: Exception) -> str:
    """What failed, for a retry's words: ``HTTP 429: <the server's message>`` or the connection's failure."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else exc.body
        message = body.get("message") if isinstance(body, dict) else body if isinstance(body, str) else exc.message
        return _preview_text(f"HTTP {exc.status_code}: {message}")[:120]
    return _preview_text(_cause_text(exc))[:120] or type(exc).__name__


def _sdk_fast_path(client: Any) -> tuple[Any, Any, Any, Any] | None:
    """The SDK pieces the fast path needs, or None when the client is not an ``openai.AsyncOpenAI`` or
    this SDK version lacks them (then ``create`` is used, as before)."""
    global _FAST_PATH
    import openai

    if not isinstance(client, openai.AsyncOpenAI):
        return None
    if _FAST_PATH is None:
        try:
            from openai import AsyncStream
            from openai._base_client import make_request_options
            from openai.types.chat import ChatCompletion
        except ImportError:  # pragma: no cover - an SDK without these internals
            _FAST_PATH = False
            return None
        # newer SDKs name the auth scheme per request (``create`` passes it); older ones always send it
        security: dict[str, Any] = {"security": {"bearer_auth": True}} if "security" in inspect.signature(
            make_request_options
        ).parameters else {}

        def make_options() -> Any:
            return make_request_options(**security)

        from openai import _base_client

        http = getattr(_base_client, "httpx2", None) or getattr(_base_client, "httpx", None)
        if http is None:  # pragma: no cover
            _FAST_PATH = False
            return None
        # the stream yields each chunk's decoded JSON (``_chunk_data``); the SDK still decodes the
        # SSE, ends at [DONE] and turns an error event into ``APIError``
        _FAST_PATH = (make_options, ChatCompletion, _bounded_stream_class(AsyncStream), http)
    return _FAST_PATH or None


_KNOWN_PARAMS = {
    "model", "messages", "stream", "stream_options", "tools", "tool_choice", "temperature", "top_p",
    "max_tokens", "max_completion_tokens", "stop", "seed", "n", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "response_format", "parallel_tool_calls",
    "reasoning_effort", "metadata", "store", "service_tier", "modalities", "prediction", "audio",
    "web_search_options", "prompt_cache_key", "safety_identifier", "verbosity", "extra_body", "extra_headers",
    "extra_query", "timeout",
}
