"""The model adapter for OpenAI-compatible chat completions, streamed over ``httpx`` with this
project's own server-sent-events reader: no SDK, so no SDK internals (issue 46 item 3).

Works against any OpenAI-compatible base URL (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server,
OpenRouter). The request is the chat-completions body as JSON (``tests/runtime/test_openai_bytes.py``
checks it equals what the official ``openai`` client sends); the answer is read as bytes, bounded
(``runtime/limits.py``) before anything is decoded, split into events here and decoded as JSON
objects (no SDK object per chunk). What it smooths over:

* tool-call fragments are assembled by ``index``; servers that repeat ``id`` and ``name`` in every
  fragment (llama.cpp) do not produce doubled names;
* reasoning comes from the ``reasoning_content`` or ``reasoning`` extra fields of a delta, or from
  inline ``<think>...</think>`` blocks in the content (tags may be split across chunks);
* a ``stop`` finish reason with tool calls present is reported as ``tool_calls``;
* a refused connection and the statuses worth repeating (408, 409, 429, 5xx) are tried again
  ``max_retries`` times within the first-token timeout, waiting the server's ``Retry-After`` (up to a
  minute) or 1, 2, 4, 8 s, each retry said (a ``ModelRetry`` chunk: issue 39.5);
* the first chunk must arrive within ``first_token_timeout`` and later chunks within
  ``idle_timeout`` of each other, else ``ModelTimeout``;
* setting the ``cancel`` event closes the HTTP stream at once (``ModelCancelled``);
* a ``200`` answer whose event stream is empty (llama.cpp's server does that for a request over its
  window) is asked once more without streaming, to learn why: a refusal then says it, an answer
  is used;
* images tools returned are sent while the model takes them (``runtime/images.py``: ``images``).

What it refuses (every failure is wrapped here, where it happens, into the ``runtime/errors.py``
class that says so, its message naming ``the model server at <base URL>``):

* a request over the model's context window: ``ModelContextExceeded`` with the window and the
  request's size when the server says them (``runtime/context.py`` reads the wordings);
* an answer that is not an event stream (``text/html`` with status 200): ``ModelMalformedStream``;
* a stream that ends without a finish reason or ``[DONE]`` (a cut connection): ``ModelStreamCut``, and
  one that carried no usable chunk at all: ``ModelMalformedStream``; only a stream that ended as the
  protocol says yields ``ModelFinish``;
* more than ``limits`` allow (``runtime/limits.py``): one stream line past ``line_bytes`` is refused
  before it is decoded, an answer past ``max_answer_seconds`` is stopped: ``ModelLimitExceeded``.

The model server is also asked for the model's context window (``probe_context_window``: ``/models``
of vLLM and OpenRouter-like servers, llama.cpp's ``/props``, LM Studio's ``/api/v0/models``, Ollama's
``/api/show``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .context import ContextBudget, context_refusal
from .errors import (
    ModelCancelled,
    ModelContextExceeded,
    ModelError,
    ModelHTTPError,
    ModelMalformedStream,
    ModelRefused,
    ModelStreamCut,
    ModelTimeout,
    ModelUnreachable,
)
from .images import has_images, refuses_images, with_images
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
from .model_stream import StreamDone, ThinkSplitter, read_events, read_small, usage_from_openai
from .usage import Price, PriceTable, Usage

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

T = TypeVar("T")

#: statuses worth repeating
_RETRY_STATUSES = frozenset({408, 409, 429})


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
        # one cancellation only: a task cancelled already (``Run.abort`` cancels it too) would get a
        # second one inside httpcore's own shielded close of the connection, which then stays open
        if self._inside is not None and not self._inside.cancelling():
            self._inside.cancel()

    async def wait(self, aw: Awaitable[T], timeout: float | None, what: str, said: float | None = None) -> T:
        """``aw`` within ``timeout`` s, else ``ModelTimeout`` saying ``said`` s (the whole wait, when
        ``timeout`` is what was left of it: the first token's deadline spans several waits)."""
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
            waited = timeout if said is None else said
            raise ModelTimeout(
                f"{self.where} sent nothing for {waited:g} s ({what}, model {self.model!r}): it may be overloaded "
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




#: the longest wait for a retry a server may ask for (``Retry-After``); the first waits of our own
MAX_RETRY_WAIT = 60.0
RETRY_WAITS = (1.0, 2.0, 4.0, 8.0)


class _Retryable(Exception):
    """A failure of one request worth trying again: ``error`` (raised when the retries are spent),
    ``reason`` (the words of a retry: ``HTTP 429: <the server's message>``), the server's
    ``Retry-After`` when it said one."""

    def __init__(self, error: ModelError, reason: str, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.reason = reason
        self.retry_after = retry_after

    def delay(self, attempt: int, max_retries: int) -> float | None:
        """Seconds before try ``attempt + 1``, or None when the retries are spent."""
        if attempt > max_retries:
            return None
        if self.retry_after is not None:
            return self.retry_after
        return RETRY_WAITS[min(attempt, len(RETRY_WAITS)) - 1]


#: responses being closed (a strong reference each, until closed)
_CLOSING: set[asyncio.Task[Any]] = set()


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
        client: httpx.AsyncClient | None = None,
        limits: ModelLimits | None = None,
        context_windows: Mapping[str, int] | None = None,
        images: bool = True,
    ) -> None:
        import httpx

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
            key = "no-key"  # local servers accept any key; send one all the same (some proxies insist)
        self.api_base = (self.base_url or "https://api.openai.com/v1").rstrip("/")
        self.first_token_timeout = first_token_timeout
        self.idle_timeout = idle_timeout
        self.max_retries = max(0, max_retries)
        #: what the model may send (``runtime.limits``); read by the agent loop too
        self.limits = limits or DEFAULT_LIMITS
        #: the part that answers, in words (every error message starts with it)
        self.where = f"the model server at {self.base_url or 'https://api.openai.com/v1'}"
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable(prices)
        official = self.base_url is None or "api.openai.com" in self.base_url
        self._official = official
        #: whether tool schemas may be sent with ``strict: true``
        self.supports_strict_tools = official if strict_tools is None else strict_tools
        #: echo reasoning back as ``reasoning_content`` on assistant tool-call turns (Kimi, DeepSeek)
        self.replay_reasoning = replay_reasoning
        self.default_params = dict(default_params or {})
        #: send tools' images (``runtime/images.py``): off by ``model.images = false`` or a refusal of them
        self.images = images
        #: the model's context window and the estimate's correction (``runtime/context.py``)
        self.context = ContextBudget(model, overrides=context_windows)
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._http = client or httpx.AsyncClient(
            # no read timeout: first-token and idle timeouts are ours (see stream())
            timeout=httpx.Timeout(connect=15.0, read=None, write=60.0, pool=60.0),
            headers={"User-Agent": "instance-ai-tui"},
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
            context_windows=getattr(settings, "context_windows", None) or None,
            images=bool(getattr(settings, "images", True)),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- small requests --------------------------------------------------------------------------

    async def _get_json(self, url: str, *, method: str = "GET", body: Any = None, timeout: float = 5.0) -> Any:
        """A small JSON answer (at most ``SMALL_BODY`` bytes), or None when there is none."""
        request = self._http.build_request(method, url, headers=self._headers,
                                           content=None if body is None else json.dumps(body).encode())
        async with asyncio.timeout(timeout):
            response = await self._http.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    return None
                raw = await read_small(response)
            finally:
                await response.aclose()
        try:
            return json.loads(raw)
        except ValueError:
            return None

    async def list_models(self) -> list[str]:
        """The model server's ``GET /models`` ids (raises ``ModelError`` when it cannot)."""
        try:
            data = await self._get_json(self.api_base + "/models", timeout=10.0)
        except TimeoutError:
            raise ModelTimeout(f"{self.where} did not list its models in time") from None
        except Exception as exc:  # noqa: BLE001 - the transport's failure, in our words
            raise ModelUnreachable(_unreachable_text(self.where, exc)) from None
        entries = data.get("data") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ModelHTTPError(f"{self.where} did not list its models (GET /models)")
        return sorted(str(e["id"]) for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str | int))

    async def probe_context_window(self) -> int | None:
        """The model's context window as the server reports it, or None when it does not say:
        ``/models`` (vLLM's ``max_model_len``, OpenRouter-like ``context_length``, llama.cpp's
        ``meta``), then llama.cpp's ``/props``, LM Studio's ``/api/v0/models/<id>``, Ollama's
        ``/api/show`` (its ``num_ctx``, else the model's own length: Ollama cuts silently at ``num_ctx``)."""
        if self._official:
            return None  # api.openai.com reports no window: the table knows its models
        root = self.api_base[:-3] if self.api_base.endswith("/v1") else self.api_base
        data = await self._quiet(self.api_base + "/models")
        entries = data.get("data") if isinstance(data, dict) else None
        entry: dict[str, Any] | None = None
        if isinstance(entries, list):
            dicts = [e for e in entries if isinstance(e, dict)]
            entry = next((e for e in dicts if e.get("id") == self.model), dicts[0] if len(dicts) == 1 else None)
        if entry is not None:
            for key in ("loaded_context_length", "max_model_len", "context_length", "context_window",
                        "max_context_length"):
                found = _positive(entry.get(key))
                if found:
                    return found
        props = await self._quiet(root + "/props")
        if isinstance(props, dict):
            settings = props.get("default_generation_settings")
            found = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
            if found:
                return found
        studio = await self._quiet(f"{root}/api/v0/models/{self.model}")
        if isinstance(studio, dict):
            found = _positive(studio.get("loaded_context_length")) or _positive(studio.get("max_context_length"))
            if found:
                return found
        show = await self._quiet(root + "/api/show", method="POST", body={"model": self.model})
        if isinstance(show, dict):
            for line in str(show.get("parameters") or "").splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                    return int(parts[1])
            info = show.get("model_info")
            if isinstance(info, dict):
                for key, value in info.items():
                    if str(key).endswith(".context_length") and _positive(value):
                        return min(int(value), 4_096)  # Ollama's own num_ctx default when none is set
        return None

    async def _quiet(self, url: str, *, method: str = "GET", body: Any = None) -> Any:
        try:
            return await self._get_json(url, method=method, body=body, timeout=3.0)
        except Exception:  # noqa: BLE001 - a server that does not answer this does not say
            return None

    # -- errors ----------------------------------------------------------------------------------

    def _status_error(self, status: int, raw: bytes, content_type: str = "") -> ModelError:
        """An HTTP error status and its body as the ``ModelError`` that says what happened."""
        where, model = self.where, self.model
        body, message = _status_words(status, raw, content_type)
        said = f"HTTP {status}: {message}"
        if 400 <= status < 500:
            refusal = context_refusal(message, body)
            if refusal is not None:
                window, requested = refusal
                return ModelContextExceeded(
                    f"{where} refused the request for model {model!r} as too big for its context window ({said})",
                    window=window, requested=requested, status_code=status)
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

    def _transport_error(self, exc: Exception, *, streaming: bool) -> ModelError:
        """A failure of the HTTP transport in our words. ``streaming``: the answer was arriving (a
        broken connection then cuts it)."""
        import httpx

        where, model = self.where, self.model
        if isinstance(exc, httpx.TimeoutException):
            return ModelTimeout(f"{where} did not answer in time (model {model!r}): it may be overloaded; try again")
        if streaming:
            return ModelStreamCut(f"{where} broke off the answer of model {model!r} before it ended "
                                  f"({_cause_text(exc)}): what arrived is incomplete; try again")
        return ModelUnreachable(_unreachable_text(where, exc))

    async def _unreachable_or(self, timeout: ModelTimeout) -> ModelError:
        """``ModelUnreachable`` when the server's port refuses a connection right now (retries of a
        refused connection outlasted the first-token timeout), else ``timeout``."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.api_base)
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

    # -- the request -----------------------------------------------------------------------------

    def _params(self, request: ModelRequest, *, stream: bool = True) -> dict[str, Any]:
        messages = with_images(request.messages) if self.images else request.messages
        params: dict[str, Any] = {"messages": messages, "model": self.model}
        if stream:
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        if request.tools:
            params["tools"] = request.tools
            if request.tool_choice is not None:
                params["tool_choice"] = request.tool_choice
        params.update(self.default_params)
        params.update(request.params)
        if not stream:
            params.pop("stream", None)
            params.pop("stream_options", None)
        return params

    async def _send(self, params: dict[str, Any]) -> httpx.Response:
        """POST the body once; the response once its status is a success (its body not read yet). A
        failure worth trying again (a refused connection, 408, 409, 429, 5xx) is ``_Retryable``
        (``stream`` waits and says each retry: ``ModelRetry``); other statuses are ``ModelError``."""
        import httpx

        body = json.dumps(params, ensure_ascii=False, separators=(",", ":")).encode()
        stale = False
        while True:
            request = self._http.build_request("POST", self.api_base + "/chat/completions", content=body,
                                               headers=self._headers)
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                if not stale and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
                    # a kept-alive connection the server had closed meanwhile (llama.cpp's server closes
                    # it after an empty stream): once more on a new one, at once and unsaid
                    stale = True
                    continue
                error = self._transport_error(exc, streaming=False)
                if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    raise _Retryable(error, _preview_text(_cause_text(exc))[:120] or type(exc).__name__) from exc
                raise error from exc
            if response.status_code < 400:
                return response
            try:
                raw = await read_small(response)
            except httpx.TransportError:
                raw = b""
            finally:
                await response.aclose()
            status, kind = response.status_code, response.headers.get("content-type", "")
            error = self._status_error(status, raw, kind)
            if status in _RETRY_STATUSES or status >= 500:
                said = _status_words(status, raw, kind)[1]
                raise _Retryable(error, _preview_text(f"HTTP {status}: {said}")[:120],
                                 _retry_after(response.headers.get("retry-after")))
            raise error

    async def _send_retried(self, params: dict[str, Any], guard: _Guard, deadline: float | None
                            ) -> AsyncIterator[httpx.Response | ModelRetry]:
        """``_send`` tried again ``max_retries`` times within the first-token deadline: a ``ModelRetry``
        before each wait (the server's ``Retry-After`` up to a minute, else 1, 2, 4, 8 s), then the
        response."""
        loop = asyncio.get_running_loop()
        attempt = 1
        while True:
            left = self.first_token_timeout if deadline is None or attempt == 1 else max(0.0, deadline - loop.time())
            try:
                yield await guard.wait(self._send(params), left, "no response", self.first_token_timeout)
                return
            except _Retryable as retry:
                delay = retry.delay(attempt, self.max_retries)
                if delay is None or (deadline is not None and loop.time() + delay >= deadline):
                    raise retry.error from None
                attempt += 1
                yield ModelRetry(attempt, self.max_retries + 1, delay, retry.reason)
                await guard.wait(asyncio.sleep(delay), None, "retry")
            except ModelTimeout as exc:
                # the retries of a refused connection may have outlasted the first-token timeout: say that
                raise await self._unreachable_or(exc) from None

    def _check_stream(self, response: httpx.Response) -> None:
        """An answer that is not an event stream (an HTML page with status 200, a JSON body) is
        refused before it is read."""
        kind = str(response.headers.get("content-type") or "")
        if kind and "text/event-stream" not in kind.lower():
            raise ModelMalformedStream(
                f"{self.where} answered with {kind.split(';')[0].strip()} instead of a chat-completions stream "
                f"(model {self.model!r}): is OPENAI_BASE_URL the API's address (usually ending in /v1)?")

    # -- the stream ------------------------------------------------------------------------------

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[ModelChunk]:
        import httpx

        if cancel is not None and cancel.is_set():
            raise ModelCancelled()
        params = self._params(request)
        guard = _Guard(self.model, cancel, self.where)
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = None if self.first_token_timeout is None else started + self.first_token_timeout
        limits = self.limits
        answer_deadline = started + limits.max_answer_seconds if limits.max_answer_seconds > 0 else None
        response: httpx.Response | None = None
        iterator: AsyncIterator[dict[str, Any]] | None = None
        try:
            for attempt in (0, 1):
                try:
                    async for sent in self._send_retried(params, guard, deadline):
                        if isinstance(sent, ModelRetry):
                            yield sent  # said, not silent (issue 39.5)
                        else:
                            response = sent
                    break
                except ModelHTTPError as exc:  # a model that takes no images: their placeholders from now on
                    if attempt or not (has_images(params["messages"]) and refuses_images(exc)):
                        raise
                    log.warning("%s refused a request with images (%s): placeholders from now on", self.where, exc)
                    self.images = False
                    params = self._params(request)
            assert response is not None
            self._check_stream(response)
            iterator = read_events(response.aiter_bytes(), self.limits, self.where, self.model)
            tools = ToolCallAccumulator()
            think = ThinkSplitter()
            finish_reason: str | None = None
            usage: Usage | None = None
            model_name: str | None = None
            got_token = False
            opened = False
            chunks = 0
            done = False
            while True:
                said = None
                if got_token or deadline is None:
                    timeout, what = self.idle_timeout, "stream stalled"
                else:
                    timeout, what, said = max(0.0, deadline - loop.time()), "no first token", self.first_token_timeout
                capped = False
                if answer_deadline is not None:
                    left = max(0.0, answer_deadline - loop.time())
                    if timeout is None or left < timeout:
                        timeout, capped = left, True
                try:
                    data = await guard.wait(iterator.__anext__(), timeout, what, said)
                except StopAsyncIteration:
                    break
                except StreamDone:
                    done = True
                    break
                except ModelTimeout:
                    if capped:
                        raise exceeded(self.where, "an answer", f"for more than {limits.max_answer_seconds:g} s",
                                       "max_answer_seconds", limits.max_answer_seconds, "seconds") from None
                    raise
                except httpx.TransportError as exc:
                    raise self._transport_error(exc, streaming=True) from exc
                chunks += 1
                if answer_deadline is not None and loop.time() > answer_deadline:
                    raise exceeded(self.where, "an answer", f"for more than {limits.max_answer_seconds:g} s",
                                   "max_answer_seconds", limits.max_answer_seconds, "seconds")
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
                    opened = True  # the assistant's turn began (a chat-completion chunk, maybe only its role)
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
                            out = _tool_fragment(tools, position, tc)
                            if out is not None:
                                yield out
                reason = choice.get("finish_reason")
                if isinstance(reason, str) and reason:
                    got_token = True
                    finish_reason = reason
            if chunks == 0 and finish_reason is None:
                # an empty event stream: llama.cpp's server answers a request over its window so;
                # the same request unstreamed says why (or answers)
                await response.aclose()
                async for chunk in self._unstreamed(request, guard):
                    yield chunk
                return
            # success means success: the stream ended as the protocol says (a finish reason, or [DONE])
            if finish_reason is None and not (done and got_token):
                if got_token:
                    raise ModelStreamCut(
                        f"{self.where} ended the stream of model {self.model!r} before the answer was finished "
                        "(no finish reason, no [DONE]): what arrived is incomplete; try again")
                if done and opened:
                    # llama-cpp-python's server ends so a request that a newer one interrupts
                    raise ModelStreamCut(
                        f"{self.where} stopped the answer before it began (model {self.model!r}: the assistant's "
                        "turn opened, then [DONE] with no text and no finish reason; llama-cpp-python's server does "
                        "this when another request arrives, unless started with --interrupt_requests false): "
                        "try again")
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
            if response is not None:
                # a task of its own, held until done: an abort's second cancellation may interrupt
                # this await, never the close (the server must see the connection go at once)
                closing = asyncio.get_running_loop().create_task(_close(iterator, response))
                _CLOSING.add(closing)
                closing.add_done_callback(_CLOSING.discard)
                try:
                    await asyncio.shield(closing)
                except BaseException:  # noqa: BLE001 - closing an abandoned stream: nothing left to tell anyone
                    pass

    async def _unstreamed(self, request: ModelRequest, guard: _Guard) -> AsyncIterator[ModelChunk]:
        """The request once more without streaming (after an empty event stream): its refusal raised
        as what it is, or its answer as chunks."""
        import httpx

        where, model = self.where, self.model
        try:
            response = await guard.wait(self._send(self._params(request, stream=False)), self.first_token_timeout,
                                        "no response")
        except _Retryable as retry:  # (a check of why a stream was empty: its failure is the answer)
            raise retry.error from None
        try:
            raw = await guard.wait(read_small(response, self.limits.answer_bytes or None), self.idle_timeout,
                                   "answer stalled")
        except httpx.TransportError as exc:
            raise self._transport_error(exc, streaming=True) from exc
        finally:
            await response.aclose()
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelMalformedStream(
                f"{where} sent an empty stream for model {model!r}, and the same request unstreamed gave no "
                "answer either: is this an OpenAI-compatible chat-completions server?")
        found = choices[0].get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            yield ModelReasoningDelta(reasoning)
        content = message.get("content")
        if isinstance(content, str) and content:
            think = ThinkSplitter()
            for is_reasoning, piece in [*think.feed(content), *think.flush()]:
                yield ModelReasoningDelta(piece) if is_reasoning else ModelTextDelta(piece)
        tools = ToolCallAccumulator()
        for position, tc in enumerate(message.get("tool_calls") or []):
            out = _tool_fragment(tools, position, tc)
            if out is not None:
                yield out
        assert isinstance(data, dict)  # (choices came from it)
        raw_usage = data.get("usage")
        if isinstance(raw_usage, dict) and raw_usage:
            yield ModelUsage(self.prices.priced(self.model, usage_from_openai(raw_usage)))
        calls = tools.finish()
        reason = choices[0].get("finish_reason")
        reason = reason if isinstance(reason, str) and reason else "stop"
        if calls and reason in ("stop", "function_call"):
            reason = "tool_calls"
        yield ModelFinish(reason=reason, tool_calls=calls,
                          model=data.get("model") if isinstance(data.get("model"), str) else self.model)


async def _close(events: AsyncIterator[dict[str, Any]] | None, response: httpx.Response) -> None:
    """Close the event reader (and the byte readers under it), then the response (its connection goes
    with it when the answer was not read to its end)."""
    closer = getattr(events, "aclose", None)
    if closer is not None:
        try:
            await closer()
        except Exception:  # noqa: BLE001 - a reader that failed is closed all the same
            pass
    await response.aclose()


def _tool_fragment(tools: ToolCallAccumulator, position: int, tc: Any) -> Any:
    """One tool-call fragment of a delta (or a whole call of an unstreamed message) fed to ``tools``."""
    if not isinstance(tc, dict):
        return None
    fn = tc.get("function")
    fn = fn if isinstance(fn, dict) else {}
    index = tc.get("index")
    call_id, name = _text_or_none(tc.get("id")), _text_or_none(fn.get("name"))
    arguments = _text_or_none(fn.get("arguments"))
    if call_id is None and name is None and arguments is None:
        return None  # a fragment that says nothing (not a call of its own)
    return tools.feed(index if isinstance(index, int) else position, call_id, name, arguments)


def _status_words(status: int, raw: bytes, content_type: str = "") -> tuple[Any, str]:
    """An error answer's JSON body (None when it is not JSON) and its message, short."""
    body: Any = None
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    message = ""
    inner = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(inner, dict) and inner.get("message"):
        message = str(inner["message"])
    elif isinstance(inner, str):
        message = inner
    elif isinstance(body, dict) and isinstance(body.get("detail"), str):
        message = body["detail"]
    if not message:
        text = raw.decode("utf-8", "replace").strip()
        message = text if text and "html" not in content_type.lower() else f"Error code: {status}"
    return body, _preview_text(message)


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds <= MAX_RETRY_WAIT else None


def _positive(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


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


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


