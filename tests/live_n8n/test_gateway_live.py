"""Live: the local gateway (``--gateway DIR``) against a real n8n 2.41.1, through a ``kill -9`` (issue 27).

n8n keeps gateway session keys in memory only: after a crash it answers the old key with 403
"Invalid API key" and sends no ``gateway-disconnect`` first. The gateway must pair again by
itself (bounded backoff) within 30 s of n8n answering, and n8n's agent must then read a file
through it: the scripted model calls the gateway's ``read_file`` tool and n8n's next model request
carries the file's text. A hard link in the shared folder is asked about (a resource decision
n8n turns into a ``confirmation-request``), a symlink loop does not break the listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.gateway import LocalGateway
from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.protocol.api import ResourceDecisionConfirm
from tests.support.openai_server import MockResponse
from tests.support.waiting import until

from .conftest import called, tool_names, tool_results, user_text

pytestmark = pytest.mark.timeout(420)

FILE_TEXT = "Deploys go through the staging pipeline (gw-live)."



def read_result(body: dict[str, Any]) -> str | None:
    """The text of the read_file result when it is the last message (n8n's next model request)."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool" and called(body)[-1:] == ["read_file"]:
        return str(messages[-1].get("content"))
    return None


def script(seen: list[dict[str, Any]]) -> Callable[[dict[str, Any]], MockResponse]:
    """``gw-live-<n> read PATH`` makes n8n's agent load the gateway's read_file (n8n 2.41 defers MCP
    tools behind ``load_tool``) and call it; then it answers."""

    def respond(body: dict[str, Any]) -> MockResponse:
        user = user_text(body)
        if "gw-live-" not in user:
            return MockResponse(text="Gateway thread")  # titles and other side calls
        seen.append(body)
        if read_result(body) is not None:
            return MockResponse(text="GW-LIVE-DONE")
        path = user.rsplit("read ", 1)[-1].split()[0].strip("\"'")
        tool = "list_files" if path == "." else "read_file"
        if tool in tool_names(body):
            return MockResponse.call(tool, {"path": path} if tool == "read_file" else {"recursive": True})
        if "load_tool" in tool_names(body) and "load_tool" not in called(body)[-1:]:
            return MockResponse.call("load_tool", {"toolName": tool})
        return MockResponse(text="GW-LIVE-NO-TOOL " + ",".join(str(n) for n in tool_names(body)))

    return respond


async def ask(client: N8nClient, seen: list[dict[str, Any]], path: str, *, timeout: float = 120) -> str:
    """Ask n8n's agent to read ``path``; the text of the tool result n8n sent to the model next."""
    thread = await client.create_thread()
    before = len(seen)
    await client.send(thread.id, f"gw-live-{uuid.uuid4().hex[:6]} read {path}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for body in seen[before:]:
            messages = body.get("messages") or []
            if messages and messages[-1].get("role") == "tool" and called(body)[-1:] in (["read_file"], ["list_files"]):
                return str(messages[-1].get("content"))
        await asyncio.sleep(0.2)
    raise AssertionError(f"n8n's agent did not get a gateway result in {timeout} s (model requests: "
                         f"{[(called(b), tool_results(b)[-1:]) for b in seen[before:]]})")


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "readme.md").write_text(FILE_TEXT + "\n", encoding="utf-8")
    os.symlink("loop", root / "loop")  # a symlink loop: skipped with a note, never a failed listing
    return root


async def test_the_gateway_pairs_again_after_n8n_is_killed(
    n8n: Any, responder: Callable[[Any], None], shared: Path, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []
    responder(script(seen))
    states: list[tuple[float, ConnectionState, str]] = []
    client = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=tmp_path / "cfg", interactive=False)
    gateway: LocalGateway = await client.start_gateway(
        shared, pair_again=True, initial_backoff=0.5, max_backoff=5.0,
        set_state=lambda state, detail: states.append((time.monotonic(), state, detail)))
    try:
        first = await ask(client, seen, "docs/readme.md")
        assert FILE_TEXT in first, first

        await asyncio.to_thread(n8n.kill)  # kill -9: no gateway-disconnect, keys gone with the process
        await asyncio.sleep(2)  # the scenario: n8n stays down a while
        await asyncio.to_thread(n8n.start_again)
        answering = time.monotonic()
        with contextlib.suppress(AssertionError):  # the asserts below say what happened instead
            await until(lambda: gateway.repairs >= 1 and bool(states) and states[-1][1] == ConnectionState.CONNECTED,
                        timeout=30, interval=0.2)
        paired_in = time.monotonic() - answering
        words = [f"{s.value} {d}".strip() for _, s, d in states]
        assert gateway.repairs >= 1 and states[-1][1] == ConnectionState.CONNECTED, (paired_in, words[-8:])
        assert paired_in < 30, words[-8:]
        assert any("pairing again" in w for w in words), words
        print(f"gateway connected again {paired_in:.1f} s after n8n answered; states: {words[-6:]}")

        after = await ask(client, seen, "docs/readme.md")
        assert FILE_TEXT in after, after
        listing = await ask(client, seen, ".")
        assert "docs/" in listing and "'loop' skipped: a symlink loop" in listing, listing
    finally:
        await gateway.stop()
        await client.close()


async def test_a_hard_link_in_the_shared_folder_is_asked_about(
    n8n: Any, responder: Callable[[Any], None], shared: Path, tmp_path: Path
) -> None:
    """n8n turns the gateway's GATEWAY_CONFIRMATION_REQUIRED into a resource-decision card."""
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("password=gw-live-hunter2\n", encoding="utf-8")
    os.link(secret, shared / "linked.txt")
    seen: list[dict[str, Any]] = []
    responder(script(seen))
    client = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=tmp_path / "cfg", interactive=False)
    gateway = await client.start_gateway(shared, pair_again=True, initial_backoff=0.5, max_backoff=5.0)
    try:
        thread = await client.create_thread()
        request = None
        async with asyncio.timeout(120), contextlib.aclosing(client.events(thread.id)) as stream:
            await client.send(thread.id, "gw-live-link read linked.txt")
            async for item in stream:
                event = item.event
                if getattr(event, "type", "") == "confirmation-request":
                    request = event.payload
                    break
        assert request is not None and request.input_type == "resource-decision"
        assert request.resource_decision.resource == "linked.txt"
        assert "2 hard links" in request.resource_decision.description
        assert all("hunter2" not in json.dumps(b) for b in seen)
        await client.confirm(request.request_id, ResourceDecisionConfirm(resource_decision="denyOnce"))
        with contextlib.suppress(AssertionError):  # the assert below says what n8n's model got instead
            await until(lambda: any(read_result(b) is not None for b in seen), timeout=90, interval=0.2)
        denied = [read_result(b) for b in seen if read_result(b) is not None]
        assert denied and "hunter2" not in str(denied) and "denied" in str(denied).lower(), denied
    finally:
        await gateway.stop()
        await client.close()


def set_local_gateway_disabled(peer: Any, disabled: bool) -> None:
    from .conftest import login_headers

    response = httpx.put(f"{peer.url}/rest/instance-ai/settings", headers=login_headers(peer), timeout=30,
                         json={"localGatewayDisabled": disabled})
    response.raise_for_status()
    assert response.json()["data"]["localGatewayDisabled"] is disabled


async def test_a_forbidden_gateway_is_shown_with_n8ns_words(n8n: Any, shared: Path, tmp_path: Path) -> None:
    """The admin turned the local gateway off: n8n's 403 "Local gateway is disabled" is not a lost
    pairing; the TUI says it with n8n's words and does not retry."""
    from instance_ai_tui.client.gateway_flag import GatewayRequest
    from instance_ai_tui.config import Settings
    from instance_ai_tui.tui.app import InstanceAiApp

    await asyncio.to_thread(set_local_gateway_disabled, n8n, True)
    try:
        client = N8nClient(n8n.url, n8n.email, n8n.password, config_dir=tmp_path / "cfg", interactive=False)
        app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False,
                            gateway=GatewayRequest(shared.resolve()))
        errors: list[str] = []
        original = app.show_error
        app.show_error = lambda message, *a, **kw: (errors.append(str(message)), original(message, *a, **kw))[1]  # type: ignore[method-assign]
        async with app.run_test(size=(120, 40)) as pilot:
            await app.wait_until_ready()
            await until(lambda: app.status_info.gateway_state == "failed", pilot, 60, "the gateway failed")
            assert any("Local gateway is disabled (HTTP 403)" in e for e in errors), errors
    finally:
        await asyncio.to_thread(set_local_gateway_disabled, n8n, False)
