"""The n8n public API client against a fake n8n served by uvicorn."""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.assistant.n8n_client import N8nApiError, N8nPublicApi, api_base
from tests.support import serve_asgi

from .fake_n8n import API_KEY, make_fake_n8n


def test_api_base() -> None:
    assert api_base("http://h:5678/") == "http://h:5678/api/v1"
    assert api_base("https://h/api/v1") == "https://h/api/v1"
    with pytest.raises(ValueError, match="http"):
        api_base("h:5678")


async def test_client_round_trip(asgi_server: Any) -> None:
    app, state = make_fake_n8n()
    api = N8nPublicApi(await asgi_server(app), API_KEY)
    assert API_KEY not in repr(api)
    try:
        listed = await api.list_workflows()
        assert listed == [{"id": "w1", "name": "Weather to Slack", "active": False, "nodeCount": 1}]
        created = await api.create_workflow({"name": "New", "nodes": [], "id": "ignored", "active": True})
        assert created["name"] == "New" and created["id"].startswith("new")
        updated = await api.update_workflow("w1", {"name": "Renamed"})
        assert updated["name"] == "Renamed"
        assert (await api.activate_workflow("w1"))["active"] is True
        assert [w["id"] for w in await api.list_workflows(active=True)] == ["w1"]
        assert (await api.deactivate_workflow("w1"))["active"] is False
        execs = await api.list_executions(workflow_id="w1")
        assert execs == [{"id": "e1", "workflowId": "w1", "status": "error"}]
        assert "data" in await api.get_execution("e1", include_data=True)
        await api.delete_workflow(created["id"])
        assert created["id"] not in state["workflows"]
        with pytest.raises(N8nApiError, match="workflow nope not found"):
            await api.get_workflow("nope")
        with pytest.raises(N8nApiError, match="invalid id"):
            await api.get_workflow("../x")
    finally:
        await api.aclose()


async def test_client_errors_are_clear_and_never_leak_the_key() -> None:
    app, _ = make_fake_n8n()
    async with serve_asgi(app) as url:
        api = N8nPublicApi(url, "wrong-key-xyz")
        with pytest.raises(N8nApiError) as err:
            await api.list_workflows()
        assert "N8N_API_KEY" in err.value.message and "wrong-key-xyz" not in err.value.message
        await api.aclose()
    # the server is gone now: unreachable
    api = N8nPublicApi(url, API_KEY, timeout=2)
    with pytest.raises(N8nApiError, match="cannot reach n8n"):
        await api.list_workflows()
    await api.aclose()
