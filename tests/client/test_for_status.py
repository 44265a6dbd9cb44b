"""One mapping from an HTTP status to the client error, used by every client: our server's
answers (``client.remote``), n8n's (``client.n8n``) and the embedded assistant's errors."""

from __future__ import annotations

import httpx
import pytest

from instance_ai_tui.assistant.errors import (
    ConfirmationExpired,
    ConfirmationNotFound,
    InvalidRequest,
    RunActive,
    ThreadNotFound,
)
from instance_ai_tui.client import base
from instance_ai_tui.client.base import AuthError, ClientError, NotFoundError, RunActiveError, for_status
from instance_ai_tui.client.embedded import client_error
from instance_ai_tui.client.n8n import _error_for
from instance_ai_tui.client.remote import status_error


def n8n_answer(status: int, message: str) -> ClientError:
    request = httpx.Request("POST", "http://n8n.test/rest/instance-ai/chat/t1")
    response = httpx.Response(status, json={"message": message}, request=request)
    return _error_for(response, "POST", "/rest/instance-ai/chat/t1")


@pytest.mark.parametrize(("status", "expected"), [
    (401, AuthError), (403, AuthError), (404, NotFoundError), (409, RunActiveError),
    (400, ClientError), (429, ClientError), (500, ClientError), (503, ClientError),
])
def test_every_client_maps_a_status_to_the_same_class(status: int, expected: type[ClientError]) -> None:
    made = [for_status(status, "why"), status_error(status, "why", "send"), n8n_answer(status, "why")]
    assert [type(error) for error in made] == [expected] * 3
    assert [error.status for error in made] == [status] * 3
    assert all("why" in str(error) for error in made)


@pytest.mark.parametrize(("error", "expected"), [
    (RunActive("busy"), RunActiveError), (ThreadNotFound("no t1"), NotFoundError),
    (ConfirmationNotFound("no c1"), NotFoundError), (InvalidRequest("bad"), ClientError),
    (ConfirmationExpired("late"), ClientError),
])
def test_the_embedded_client_maps_assistant_errors_by_their_status(error: Exception, expected: type) -> None:
    mapped = client_error(error)  # type: ignore[arg-type]
    assert type(mapped) is expected and mapped.status == error.status  # type: ignore[attr-defined]
    assert str(mapped) == error.message  # type: ignore[attr-defined]


def test_the_mapping_is_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Changing the one table changes what every client raises (no client keeps a copy)."""

    class Teapot(ClientError):
        pass

    monkeypatch.setitem(base.STATUS_ERRORS, 418, Teapot)
    assert type(status_error(418, "tea")) is Teapot
    assert type(n8n_answer(418, "tea")) is Teapot
    assert type(client_error(type("Tea", (InvalidRequest,), {"status": 418})("tea"))) is Teapot
