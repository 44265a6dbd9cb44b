"""A real n8n 2.41.1 for the whole directory (one process per session: it takes ~25 s to boot).

Skipped with a one-line reason and the install command when the cache has no n8n; ``.ci/run`` sets
``LIVE_N8N_REQUIRED=1`` so that a missing n8n is a failure there instead. Both n8n's Instance AI and
our embedded agent talk to one scripted OpenAI-compatible server (``MockOpenAIServer``, run on its
own thread); each test sets its ``responder``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.openai_server import MockOpenAIServer, MockResponse

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("n8n_peer", REPO / "scripts" / "n8n_peer.py")
assert _spec is not None and _spec.loader is not None
n8n_peer = importlib.util.module_from_spec(_spec)
sys.modules["n8n_peer"] = n8n_peer
_spec.loader.exec_module(n8n_peer)

Responder = Callable[[dict[str, Any]], MockResponse]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live_n8n: needs a real n8n 2.41.1 (scripts/n8n_peer.py install)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "live_n8n" in str(item.fspath):
            item.add_marker(pytest.mark.live_n8n)


class ModelServer:
    """``MockOpenAIServer`` on a thread of its own: it outlives every test's event loop."""

    def __init__(self) -> None:
        self.responder: Responder = lambda body: MockResponse(text="(no responder set)")
        self.server = MockOpenAIServer(self._respond, openai_null_content=True)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="live-model", daemon=True)

    def _respond(self, body: dict[str, Any]) -> MockResponse:
        return self.responder(body)

    def start(self) -> ModelServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(15)
        return self

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


@pytest.fixture(scope="session")
def model() -> Iterator[ModelServer]:
    server = ModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def n8n(model: ModelServer) -> Iterator[Any]:
    if not n8n_peer.installed():
        reason = n8n_peer.missing_reason()
        if os.environ.get("LIVE_N8N_REQUIRED"):
            pytest.fail(f"LIVE_N8N_REQUIRED is set but there is {reason}")
        pytest.skip(reason)
    peer = n8n_peer.N8nPeer(model_url=model.base_url)
    try:
        peer.start()
    except n8n_peer.PeerError as exc:
        peer.close()
        pytest.fail(f"the real n8n did not start: {exc}")
    yield peer
    peer.close()


@pytest.fixture
def responder(model: ModelServer) -> Iterator[Callable[[Responder], None]]:
    def set_responder(fn: Responder) -> None:
        model.responder = fn

    yield set_responder
    model.responder = lambda body: MockResponse(text="(no responder set)")


#: cookie + browser-id of a fresh login (n8n's REST API, not the public one)
login_headers = n8n_peer.login_headers


@pytest.fixture(scope="session")
def node_catalogue(n8n: Any) -> list[dict[str, Any]]:
    """The instance's own node catalogue (``/types/nodes.json``, readable when logged in)."""
    response = httpx.get(f"{n8n.url}/types/nodes.json", headers=login_headers(n8n), timeout=60)
    response.raise_for_status()
    data = response.json()
    assert isinstance(data, list) and len(data) > 500
    return data


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user")


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]


def called(body: dict[str, Any]) -> list[str]:
    """The tools the model called so far in this request's history, in order."""
    return [c.get("function", {}).get("name") for m in body.get("messages") or [] if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []]


def last_tool_result(body: dict[str, Any]) -> str | None:
    """The request's last message when it is a tool result (what the model is answering)."""
    messages = body.get("messages") or []
    return str(messages[-1].get("content")) if messages and messages[-1].get("role") == "tool" else None


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name") for t in body.get("tools") or []]
