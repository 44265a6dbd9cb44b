"""Errors the assistant layer raises for things a user (or a client) did.

The server maps them to HTTP statuses, the embedded client to ``client.base`` errors.
"""

from __future__ import annotations


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
