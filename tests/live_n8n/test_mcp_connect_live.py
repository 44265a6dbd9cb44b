"""Live: n8n 2.41.1's ``mcpConnectRequest`` card (issue 42.8), on an n8n of its own.

What n8n's source gates the ``mcp-servers`` tool with (``instance-ai.adapter.service.js``
``resolveExperimentGates``/``mcpPreconditionsHold``): the ``mcp-registry`` module active, the admin
setting ``mcpAccessEnabled`` (default true), and the PostHog flag ``089_instance_ai_mcp_connections``
= ``variant``, which ``PostHogClient.applyEnvOverrides`` sets from ``N8N_INSTANCE_AI_MCP_CONNECTIONS_ENABLED``
(no PostHog needed). The registry's servers come from api.n8n.io (offline: none), so this n8n runs with
``E2E_TESTS=true``, whose ``POST /rest/mcp-registry/test/seed`` stores n8n's own mock servers (Notion,
Linear). A separate n8n: the session's one keeps ``mcp-registry`` off and no E2E mode.

Connecting a server is a sign-in in n8n's web UI (OAuth): the test does what the browser does after
it (``POST /rest/instance-ai/mcp/connections`` with a credential) while the card waits, then answers.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.tui.widgets import n8n_cards
from tests.support.cards import card_text
from tests.support.waiting import until

from .conftest import ModelServer, login_headers, n8n_peer
from .driving import card_reached
from .test_confirmation_shapes_live import Scenario

pytestmark = pytest.mark.timeout(400)

MCP_ENV = {"E2E_TESTS": "true", "N8N_DISABLED_MODULES": "", "N8N_INSTANCE_AI_MCP_CONNECTIONS_ENABLED": "true"}


@pytest.fixture(scope="module")
def mcp_n8n(model: ModelServer) -> Iterator[Any]:
    if not n8n_peer.installed():
        pytest.skip(n8n_peer.missing_reason())
    peer = n8n_peer.N8nPeer(model_url=model.base_url, extra_env=MCP_ENV)
    try:
        peer.start()
    except n8n_peer.PeerError as exc:
        peer.close()
        pytest.fail(f"the MCP n8n did not start: {exc}")
    try:
        seeded = httpx.post(f"{peer.url}/rest/mcp-registry/test/seed", headers=login_headers(peer), timeout=60)
        assert seeded.status_code == 200, seeded.text
        yield peer
    finally:
        peer.close()


def connect_in_n8n(peer: Any, slug: str) -> None:
    """What n8n's web UI does once the person signed in to the service: a credential of the server's
    type, and the connection (``POST /rest/instance-ai/mcp/connections``)."""
    headers = login_headers(peer)
    servers = httpx.get(f"{peer.url}/rest/mcp-registry/servers", headers=headers, timeout=30)
    kinds = [c for s in (servers.json().get("data") or []) if s.get("slug") == slug
             for c in (s.get("credentialTypes") or [])] if servers.status_code == 200 else []
    credential_type = kinds[0] if kinds else f"{slug}McpOAuth2Api"
    made = httpx.post(f"{peer.url}/rest/credentials", headers=headers, timeout=30,
                      json={"name": f"{slug} live", "type": credential_type, "data": {}})
    assert made.status_code == 200, made.text
    connected = httpx.post(f"{peer.url}/rest/instance-ai/mcp/connections", headers=headers, timeout=30,
                           json={"serverSlug": slug, "credentialId": made.json()["data"]["id"]})
    assert connected.status_code == 200, connected.text


def connect_scenario() -> Scenario:
    return Scenario("live-mcp-" + uuid.uuid4().hex[:6], "mcp-servers", {
        "action": "connect", "serverSlugs": ["notion", "linear"], "reason": "Read your issues and pages here."})


async def test_the_mcp_connect_card_not_now(mcp_n8n: Any, model: ModelServer, tmp_path: Path) -> None:
    scenario = connect_scenario()
    model.responder = scenario
    async with card_reached(mcp_n8n, tmp_path / "cfg", f"{scenario.mark}: connect") as (_app, pilot, card):
        assert isinstance(card, n8n_cards.McpConnectCard), (type(card), card_text(card))
        shown = card_text(card)
        assert "Notion" in shown and "Linear" in shown and f"{mcp_n8n.url}/instance-ai/" in shown, shown
        await pilot.press("n")
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
    assert "The user chose not to connect." in json.loads(scenario.result() or "{}")["message"]


async def test_the_mcp_connect_card_after_connecting_in_n8ns_web_ui(
    mcp_n8n: Any, model: ModelServer, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    scenario = connect_scenario()
    model.responder = scenario
    async with card_reached(mcp_n8n, tmp_path / "cfg", f"{scenario.mark}: connect") as (_app, pilot, card):
        assert isinstance(card, n8n_cards.McpConnectCard)
        await asyncio.to_thread(connect_in_n8n, mcp_n8n, "linear")  # in the browser, meanwhile
        notion = [s["serverSlug"] for s in card.servers].index("notion") + 1
        await pilot.press(str(notion), "enter")  # Notion not ticked: Linear was connected
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
    result = json.loads(scenario.result() or "{}")
    assert result["connectedSlugs"] == ["linear"] and result["message"].startswith("Connected: linear"), result
