"""Runs that cannot finish say so: the step limit, or the same failing tool call three times."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from instance_ai_tui.assistant.service import AssistantOptions
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from tests.support import serve_asgi

from .conftest import collect, finish_status, of_type
from .fake_n8n import API_KEY, make_fake_n8n


async def test_the_same_failing_call_three_times_stops_the_run_with_the_error(make_ai: Any) -> None:
    app, _ = make_fake_n8n()
    async with serve_asgi(app) as url:
        settings = Settings(n8n_url=url, n8n_api_key=SecretStr(API_KEY))
        bad = ScriptedResponse.call("create-workflow", {"name": "Broken", "nodes": [{"type": "n8n-nodes-base.nope"}]})
        model = ScriptedModel([bad, bad, bad, bad, "never reached"])
        ai = await make_ai(model, settings=settings)
        await ai.send("t", "build it")
        events = await collect(ai, "t")
    finish = finish_status(of_type(events, "run-finish")[-1])
    assert finish["status"] == "error"
    assert finish["reason"].startswith("stopped after 3 steps: the same tool call failed 3 times; the last error "
                                       "was unknown node type 'n8n-nodes-base.nope'"), finish
    errors = of_type(events, "error")
    assert errors and "stopped after 3 steps" in errors[-1]["payload"]["content"]
    assert len(of_type(events, "tool-error")) == 3
    thread = await ai.messages("t")  # the stored tree keeps the message
    assert "stopped after 3 steps" in str(thread)


async def test_the_step_limit_stops_the_run_with_a_visible_message(make_ai: Any) -> None:
    calls = [ScriptedResponse.call("list-workflows", {"limit": n}) for n in range(1, 6)]
    app, _ = make_fake_n8n()
    async with serve_asgi(app) as url:
        settings = Settings(n8n_url=url, n8n_api_key=SecretStr(API_KEY))
        ai = await make_ai(ScriptedModel([*calls, "never reached"]), settings=settings,
                           options=AssistantOptions(orchestrator_max_iterations=2))
        await ai.send("t", "loop")
        events = await collect(ai, "t")
    finish = finish_status(of_type(events, "run-finish")[-1])
    assert finish["status"] == "error" and finish["reason"] == \
        "stopped after 2 steps: no answer within the step limit", finish
