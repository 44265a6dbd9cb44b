"""Live: the workflow canvas on workflows created in a real n8n 2.41.1 (issue 29).

Each shape of ``tests/protocol/workflow_shapes.py`` (linear chain, IF merging, Switch with 4 outputs, a
loop, an AI agent with model/memory/tools, 60 nodes) is created through the public API and read back
both ways the canvas reads workflows — the public API (embedded ``N8N_URL``/``N8N_API_KEY``) and n8n's REST
with a login session (n8n by ``--url``) — and must draw exactly as the same JSON does offline (whose
drawings are the snapshots of ``tests/protocol/test_workflow_drawing.py``). A workflow whose Code node
throws runs on its schedule; the canvas shows which node failed, from the public API's execution and
from the REST one (``flatted`` text), and ``instance-ai workflow show`` prints it piped, without escape codes.
The app with the embedded agent (scripted model) building on that n8n: the canvas opens on its
create-workflow call and marks what its approved update-workflow added and rewired; the app connected
to that n8n by URL shows the failed node and its error (``/workflow ID``, Enter).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.n8n_client import N8nPublicApi
from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.client.workflows import BackendSource, N8nRestSource
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.workflow_graph import RunState, parse_execution, parse_workflow
from instance_ai_tui.protocol.workflow_layout import Detail
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.screens.workflow import panel_of
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS
from tests.protocol.workflow_shapes import SHAPES
from tests.support.drawings import workflow_text
from tests.support.waiting import until, until_async

FAILING = {"name": "Canvas: a failing node", "nodes": [
    {"name": "Every second", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2, "position": [0, 0],
     "parameters": {"rule": {"interval": [{"field": "seconds", "secondsInterval": 1}]}}},
    {"name": "Boom", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [220, 0],
     "parameters": {"jsCode": "throw new Error('boom from the canvas test');"}},
    {"name": "After", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [440, 0], "parameters": {}},
], "connections": {"Every second": {"main": [[{"node": "Boom", "type": "main", "index": 0}]]},
                   "Boom": {"main": [[{"node": "After", "type": "main", "index": 0}]]}}}


@pytest.fixture
async def sources(n8n: Any) -> AsyncIterator[tuple[N8nPublicApi, BackendSource, N8nRestSource]]:
    api = N8nPublicApi(n8n.url, n8n.api_key)
    client = N8nClient(n8n.url, n8n.email, n8n.password, interactive=False)
    try:
        yield api, BackendSource(api), N8nRestSource(client)
    finally:
        await api.aclose()
        await client.close()


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_real_n8n_workflow_draws_as_the_same_json_offline(
        shape: str, sources: tuple[N8nPublicApi, BackendSource, N8nRestSource]) -> None:
    api, public, rest = sources
    data = SHAPES[shape]()
    created = await api.create_workflow({**data, "settings": {"executionOrder": "v1"}})
    wid = created["id"]
    try:
        offline = parse_workflow(data)
        for source in (public, rest):
            live = parse_workflow(await source.get_workflow(wid))
            assert live.id == wid and len(live.nodes) == len(offline.nodes) and set(live.edges) == set(offline.edges)
            for detail in (Detail.FULL, Detail.COMPACT):
                assert workflow_text(live, detail) == workflow_text(offline, detail)
        assert rest.editor_url(wid) == f"{api.base.removesuffix('/api/v1')}/workflow/{wid}"
        assert public.editor_url(wid) == rest.editor_url(wid)
    finally:
        await api.delete_workflow(wid)


async def ran_and_failed(api: N8nPublicApi, public: BackendSource) -> tuple[str, dict[str, Any]]:
    """``FAILING`` created, run by its schedule (activated until the first execution began), and its last
    execution once finished: on a busy machine (CI beside two other jobs, load 13) the first one found was
    still ``running``, and the tests that read it as failed failed."""
    wid = (await api.create_workflow({**FAILING, "settings": {"executionOrder": "v1"}}))["id"]
    await api.activate_workflow(wid)
    runs: list[Any] = []

    async def ran() -> bool:
        runs.append(await public.last_execution(wid))
        return runs[-1] is not None

    await until_async(ran, 30, "the schedule ran the workflow", interval=0.5)
    await api.deactivate_workflow(wid)

    async def finished() -> bool:
        runs.append(await public.last_execution(wid))
        view = parse_execution(runs[-1])
        return view is not None and view.status not in ("new", "running", "waiting")

    await until_async(finished, 60, "the workflow's last execution finished", interval=0.5)
    execution = runs[-1]
    assert execution is not None
    return wid, execution


async def test_a_failing_node_shows_which_one_failed(
        n8n: Any, sources: tuple[N8nPublicApi, BackendSource, N8nRestSource], tmp_path: Path) -> None:
    api, public, rest = sources
    wid, execution = await ran_and_failed(api, public)
    try:
        for raw in (execution, await rest.last_execution(wid)):
            view = parse_execution(raw)
            assert view is not None and view.status == "error"
            assert view.run("Every second").state is RunState.RAN
            assert view.run("Boom").state is RunState.FAILED and "boom from the canvas test" in view.run("Boom").error
            assert view.run("After").state is RunState.NOT_REACHED
            text = workflow_text(parse_workflow(await rest.get_workflow(wid)), runs=view.runs)
            boom_col = text.splitlines()[1].index("Boom")
            status_row = text.splitlines()[3]
            assert status_row[boom_col - 2:].lstrip(" │").startswith("✗ failed")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("N8N_", "INSTANCE_AI_"))},
               "N8N_PASSWORD": n8n.password, "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data")}
        shown = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "instance_ai_tui", "workflow", "show", wid, "--url", n8n.url,
                             "--email", n8n.email], env=env, capture_output=True, text=True, timeout=120, check=False)
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert "\x1b" not in shown.stdout
        # every state whole, also zoomed out to the default 80 columns (it was "○ not rea…")
        assert "✗ failed" in shown.stdout and "○ not reached" in shown.stdout and "✓ ran" in shown.stdout
        assert all(len(line) <= 80 for line in shown.stdout.splitlines())
        head = " ".join(shown.stdout.split("\n\n")[0].splitlines())  # the title and notes, wrapped to 80
        assert "execution" in head and "boom from the canvas test" in head, shown.stdout
    finally:
        await api.delete_workflow(wid)


async def test_the_canvas_follows_the_embedded_agent_building_on_the_real_n8n(n8n: Any, tmp_path: Path) -> None:
    """The app (Pilot) with the embedded agent (scripted model) on the real n8n: create-workflow opens the
    canvas with every node new; the approved update-workflow marks the node it added and the one it rewired."""
    trigger = {"type": "n8n-nodes-base.scheduleTrigger", "name": "Hourly",
               "parameters": {"rule": {"interval": [{"field": "hours", "hoursInterval": 1}]}}}
    mark = {"type": "n8n-nodes-base.set", "name": "Mark", "parameters": {}}

    def build(request: ModelRequest) -> ScriptedResponse:
        results = [m for m in request.messages if m.get("role") == "tool"]
        if not results:
            return ScriptedResponse.call("create-workflow", {"name": "Canvas live", "nodes": [trigger, mark]})
        if len(results) == 1:
            created = json.loads(str(results[0]["content"]))
            return ScriptedResponse.call("update-workflow", {
                "workflowId": created["id"], "nodes": [trigger, mark, {"type": "n8n-nodes-base.noOp", "name": "Done"}],
                "connections": {"Hourly": ["Mark"], "Mark": ["Done"]}})
        return ScriptedResponse(text="Built and extended.")

    db = tmp_path / "db.sqlite3"
    store = SqliteStore(db)
    api = N8nPublicApi(n8n.url, n8n.api_key)
    ai = InstanceAI(store, InProcessBus(store), model=ScriptedModel(build, name="live-scripted"), n8n=api,
                    options=AssistantOptions(generate_titles=False))
    await ai.start()
    try:
        app = InstanceAiApp(EmbeddedClient(ai), Settings.model_validate({"db_path": db}), watch_themes=False,
                            persist_theme=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await app.wait_until_ready()
            await app.thread.outbox.send("build it, then add a final step")
            await until(lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).workflow_id is not None,
                        pilot, timeout=60)
            panel = panel_of(app.main_screen)
            assert panel is not None
            canvas = panel.canvas
            assert panel.saved is not None and [n.name for n in panel.saved.nodes] == ["Hourly", "Mark"]
            assert panel.source is not None and panel.source.editor_url(panel.workflow_id or "") == \
                f"{n8n.url}/workflow/{panel.workflow_id}"
            await until(lambda: bool(app.thread.pending), pilot, timeout=60)  # update-workflow asks first
            # while it waits, the canvas draws what the update asks for, marked against the workflow now
            await until(lambda: canvas.workflow is not None and len(canvas.workflow.nodes) == 3, pilot, timeout=30)
            assert canvas.marks == {"Done": "new", "Mark": "changed"}  # against the workflow as created
            assert "update-workflow running" in str(panel.status_line.render())
            await pilot.press("ctrl+g")
            await asyncio.sleep(GRACE_SECONDS + 0.2)
            await pilot.press("y")
            await until(lambda: "update-workflow at" in str(panel.status_line.render()), pilot, timeout=60)
            assert canvas.workflow is not None and len(canvas.workflow.nodes) == 3
            assert canvas.marks == {"Done": "new", "Mark": "changed"}
            assert canvas.drawing is not None
            text = canvas.drawing.text()
            assert "+ new" in text and "~ changed" in text and "Hourly" in text
        await api.delete_workflow(panel.workflow_id or "")
    finally:
        await ai.shutdown()
        await api.aclose()


async def test_the_app_by_url_shows_which_node_failed(
        n8n: Any, sources: tuple[N8nPublicApi, BackendSource, N8nRestSource]) -> None:
    """The app connected to n8n by URL (its REST with the login session): ``/workflow ID``, the failed
    node's details with Enter."""
    api, public, _rest = sources
    wid, _execution = await ran_and_failed(api, public)
    client = N8nClient(n8n.url, n8n.email, n8n.password, interactive=False)
    try:
        app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.wait_until_ready()
            app.prompt.focus()
            app.prompt.load_text(f"/workflow {wid}")
            await pilot.press("enter")
            # the execution is read, then the canvas laid out again with its runs (off the loop: later on a busy machine)
            await until(lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).execution is not None
                        and panel_of(app.main_screen).canvas.drawing is not None
                        and "✗ failed" in panel_of(app.main_screen).canvas.drawing.text(), pilot, timeout=60)
            panel = panel_of(app.main_screen)
            assert panel is not None and panel.canvas.drawing is not None
            text = panel.canvas.drawing.text()
            assert "✗ failed" in text and "○ not reached" in text and "✓ ran" in text
            assert "✗ failed: Boom" in str(panel.status_line.render())
            await pilot.press("right")
            assert panel.canvas.cursor == "Boom"
            await pilot.press("enter")
            details = str(panel.details.render())
            assert "✗ failed" in details and "boom from the canvas test" in details
    finally:
        await client.close()
        await api.delete_workflow(wid)
