"""Errors of the runtime: what a model call can fail with, and what a caller of the API can get wrong.

Model failures are raised by the model adapter (``openai_model.py``), which wraps every ``openai`` /
HTTP error it meets into one of these, at the place it happens: a failure is classified by where it
was raised, never by the type of some exception further down its chain. A run that fails with one
of them ends with an ``error`` event whose ``code`` is the class's ``code`` (``assistant.run_manager``),
so the screen, ``run`` and exports name the part that failed. Every message says the part ("the
model server at http://…/v1"), what happened and the next step::

    ModelError                      code "model"            part: the model server (or the model)
    ├── ModelUnreachable            "model_unreachable"     connection refused, no such host, TLS
    ├── ModelTimeout                "model_timeout"         no response / no first token / stream stalled
    ├── ModelHTTPError              "model_http"            an HTTP error status, with the provider's message
    │   └── ModelRefused            "model_refused"         4xx: the request or the credentials were refused
    │       └── ModelContextExceeded "model_context"       the request is over the model's context window
    ├── ModelStreamError            "model_stream"          the answer is not a proper chat-completions stream
    │   ├── ModelMalformedStream    "model_malformed"       not a stream (text/html 200), junk chunks, no usable chunk
    │   └── ModelStreamCut          "model_cut"             the stream ended before a finish reason or [DONE]
    ├── ModelLimitExceeded          "model_limit"           the model sent more than a configured limit allows
    └── ModelCancelled              "cancelled"             the run was cancelled while the model streamed

    RuntimeApiError                 a caller's mistake (resume requests and the like)
    ├── CheckpointNotFound
    ├── RunNotSuspended
    │   └── ResumeConflict
    ├── UnknownToolCall
    └── InvalidResumeData
"""

from __future__ import annotations


class ModelError(Exception):
    """A model call failed. ``status_code`` is the HTTP status when there was one; ``retryable``
    says whether trying again may help; ``code`` names the class on the wire (``error`` events)."""

    code = "model"
    #: the part that failed, in words
    part = "the model server"

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable


class ModelUnreachable(ModelError):
    """The model server could not be reached (connection refused, unknown host, TLS failure)."""

    code = "model_unreachable"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class ModelTimeout(ModelError):
    """No first token within ``first_token_timeout``, or silence longer than ``idle_timeout``."""

    code = "model_timeout"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class ModelHTTPError(ModelError):
    """The model server answered an HTTP error status; the message carries the provider's words."""

    code = "model_http"


class ModelRefused(ModelHTTPError):
    """A 4xx answer: the server refused the request or its credentials (not worth repeating as is)."""

    code = "model_refused"


class ModelContextExceeded(ModelRefused):
    """The request is bigger than the model's context window: refused by the server (``sent``), or
    known to be too big before it was sent (``runtime/context.py``: then it never left).
    ``window``: the window in tokens when known (the server's words often say it); ``requested``:
    the request's size in tokens when known."""

    code = "model_context"

    def __init__(self, message: str, *, window: int | None = None, requested: int | None = None,
                 sent: bool = True, status_code: int | None = None) -> None:
        super().__init__(message, status_code=status_code)
        self.window = window
        self.requested = requested
        self.sent = sent


class ModelStreamError(ModelError):
    """The answer did not arrive as a chat-completions stream should."""

    code = "model_stream"


class ModelMalformedStream(ModelStreamError):
    """Not a stream at all (an HTML page with status 200), chunks that are not JSON objects, or a
    stream that carried no usable chunk."""

    code = "model_malformed"


class ModelStreamCut(ModelStreamError):
    """The stream ended (or the connection broke) before a finish reason or ``[DONE]``: what
    arrived is incomplete."""

    code = "model_cut"

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class ModelLimitExceeded(ModelError):
    """The model sent more than a limit of ``model.limits`` allows (a text delta, a tool call's
    arguments, an answer's characters or seconds, a run's total); nothing over the limit is kept."""

    code = "model_limit"

    def __init__(self, message: str, *, limit: str = "") -> None:
        super().__init__(message)
        #: the setting that was exceeded (``model.limits.<name>``)
        self.limit = limit


class ModelCancelled(ModelError):
    """The ``cancel`` event was set while the model was streaming."""

    code = "cancelled"

    def __init__(self, message: str = "model call cancelled") -> None:
        super().__init__(message)


class RuntimeApiError(Exception):
    """Base class of caller errors (bad resume requests and the like)."""


class CheckpointNotFound(RuntimeApiError):
    """No checkpoint for this run id (never suspended, already finished, or expired)."""


class RunNotSuspended(RuntimeApiError):
    """The run exists but is not waiting (e.g. another resume is already running it)."""


class ResumeConflict(RunNotSuspended):
    """Another resume claimed the checkpoint first."""


class UnknownToolCall(RuntimeApiError):
    """The run has no suspended tool call with this id."""


class InvalidResumeData(RuntimeApiError):
    """The resume data does not match the tool's resume schema."""
