"""The TUI (Pilot) on the embedded agent working on the real n8n: a run that cannot finish shows why."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.widgets import Static

from instance_ai_tui.assistant.n8n_client import N8nPublicApi
from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets.long_markdown import ChunkedMarkdown


def screen_text(app: InstanceAiApp) -> str:
    """What the widgets on screen show: Static text and the answer's markdown."""
    parts = []
    for widget in app.screen.query("*"):
        if not (widget.display and widget.is_attached):
            continue
        if isinstance(widget, ChunkedMarkdown):  # the answer, as the conversation draws it
            parts.append(widget.source)
        elif isinstance(widget, Static):
            parts.append(str(widget.render()))
    return "\n".join(parts)


async def test_tui_shows_a_stopped_run_and_the_workflow_it_did_build(n8n: Any, tmp_path: Path) -> None:
    def stuck(request: ModelRequest) -> ScriptedResponse:
        calls = [m for m in request.messages if m.get("role") == "tool"]
        if not calls:  # first a real success on the real n8n, then one mistake over and over
            return ScriptedResponse.call("create-workflow", {"name": "TUI live", "nodes": [
                {"type": "n8n-nodes-base.webhook", "parameters": {"path": "tui-live"}},
                {"type": "n8n-nodes-base.noOp"}]})
        return ScriptedResponse.call("get-workflow", {"workflowId": "does-not-exist"})

    db = tmp_path / "db.sqlite3"
    store = SqliteStore(db)
    api = N8nPublicApi(n8n.url, n8n.api_key)
    ai = InstanceAI(store, InProcessBus(store), model=ScriptedModel(stuck, name="live-scripted"), n8n=api,
                    options=AssistantOptions(generate_titles=False))
    await ai.start()
    try:
        app = InstanceAiApp(EmbeddedClient(ai), Settings.model_validate({"db_path": db}), watch_themes=False,
                            persist_theme=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.wait_until_ready()
            app.prompt.focus()
            app.prompt.load_text("build a webhook workflow and show it to me")
            await pilot.press("enter")
            deadline = asyncio.get_running_loop().time() + 60
            while "stopped after" not in screen_text(app):
                assert asyncio.get_running_loop().time() < deadline, screen_text(app)[-3000:]
                await pilot.pause(0.1)
            text = screen_text(app)
            assert "stopped after 4 steps: the same tool call failed 3 times; the last error was workflow " \
                   "does-not-exist not found" in " ".join(text.split()), text[-3000:]
            assert "create-workflow" in text
        listed = await api.list_workflows(name="TUI live")
        assert [w["nodeCount"] for w in listed] == [2]
    finally:
        await ai.shutdown()
        await api.aclose()
