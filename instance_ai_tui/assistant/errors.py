"""Errors the assistant layer raises for things a user (or a client) did.

Each carries the HTTP status the server answers with; the embedded client turns it into the
``client.base`` error of that status (``client.base.for_status``), so a caller gets the same class
from the embedded and the remote client. The storage's errors (``store.errors``) pass through
this layer as they are; a failed *run* is not raised but ends with an ``error`` event whose code
is the failure's class (``describe_failure``: ``runtime.errors``, ``store.errors``)::

    AssistantError          400   base class; ``status`` is the HTTP status
    ├── InvalidRequest      400   a malformed or impossible request
    ├── ConfirmationExpired 400   the confirmation's run is gone
    ├── ThreadNotFound      404   no such thread
    ├── PermissionNotFound  404   revoking an "always allow" the thread does not have
    ├── ConfirmationNotFound 404  no such pending confirmation
    ├── MessageNotFound     409   rewinding to a message the thread lacks
    ├── ModelNotAvailable   409   switching to a model that is not offered
    ├── RunActive           409   a run is active or suspended in the thread
    ├── UnknownMcpServer    404   no MCP server of that name is configured
    └── McpRequestFailed    502   an MCP server could not do it (409: not in a state to: no sign-in to forget)

On the client side (``for_status``): 400 -> ``ClientError``, 404 -> ``NotFoundError``, 409 ->
``RunActiveError``.
"""

from __future__ import annotations

# the storage's errors reach the embedded client through this layer (client/ imports no store/)
from ..store.errors import StoreError as StoreError


class AssistantError(Exception):
    """Base class. ``status`` is the HTTP status the server answers with."""

    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(AssistantError):
    status = 400


class ThreadNotFound(AssistantError):
    status = 404


class PermissionNotFound(AssistantError):
    """Revoking an "always allow" the thread does not have."""

    status = 404


class ConfirmationNotFound(AssistantError):
    status = 404


class MessageNotFound(AssistantError):
    """``rewind`` to a user message the thread does not have: 409, a conflict with the thread's
    state (the thread exists, so not 404; the request is well formed, so not 400)."""

    status = 409


class ModelNotAvailable(AssistantError):
    """``set_model`` to a model this service cannot use (unknown, or no key for it): 409, a
    conflict with the service's configuration."""

    status = 409


class ConfirmationExpired(AssistantError):
    status = 400


class RunActive(AssistantError):
    """A run is active or suspended in the thread."""

    status = 409


class UnknownMcpServer(AssistantError):
    status = 404


class McpRequestFailed(AssistantError):
    def __init__(self, message: str, status: int = 502) -> None:
        super().__init__(message)
        self.status = status


def describe_failure(exc: BaseException | None, error: str, status_code: int | None) -> tuple[str, str, str | None]:
    """A failed run's words: ``(content, reason, code)`` for its ``error`` event and ``run-finish``.

    Classified by where the failure was raised: the model adapter raised a ``runtime.errors.ModelError``
    (its message names the model server), the storage a ``store.errors.StoreError`` or a storage
    driver's error; anything else is ours. ``content`` is what every view shows; ``code`` the class
    (``error`` event ``payload.code``)."""
    from ..runtime.errors import ModelCancelled, ModelError
    from ..store.errors import is_unavailable, storage_error

    if isinstance(exc, ModelError) and not isinstance(exc, ModelCancelled):
        content = str(exc) or error
        if getattr(exc, "incomplete", False) and "incomplete" not in content:
            content += " (the answer above is incomplete)"
        return content, content, exc.code
    stored = storage_error(exc) if exc is not None else None
    if stored is not None or (exc is not None and is_unavailable(exc)):
        detail = str(stored or exc) or error
        content = f"{STORAGE_UNAVAILABLE} ({detail})"
        return content, STORAGE_UNAVAILABLE, stored.code if stored is not None else "storage_unavailable"
    if error.startswith("stopped after "):  # runtime.agent.RunStopped: the step limit / a repeated failure
        return error, error, "run_stopped"
    return error, FAILED_REASON if not error else f"{FAILED_REASON} ({error})", None


#: the reason of a run that failed because the server's storage (Redis, SQLite) was unavailable
#: (said by the embedded app as by a server: no "server" in it; the detail after it names the part)
STORAGE_UNAVAILABLE = "storage unavailable: this run's progress could not be saved. Please try again."
FAILED_REASON = "I hit an error before I could finish that response. Please try again."
