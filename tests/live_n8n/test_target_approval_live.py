"""Live: ``targetApproval`` — a tool approval of an Agent Builder sub-run — from the real n8n 2.41.1.

How n8n produces it (``node_modules`` of the peer):

* the ``agents`` module on (``N8N_ENABLED_MODULES=agents``, ``@n8n/instance-ai/dist/utils/agent-feature-enabled.js``;
  the peer sets it) gives n8n's agent the ``build-agent`` tool (``tools/index.js``: only with a ``builderDelegate``);
* ``build-agent`` runs the Agent Builder, a sub-agent on the same model as n8n's agent (here the suite's
  scripted OpenAI-wire model); its ``call_agent`` tool test-runs the draft agent;
* the draft agent's model is its own config's (``openai/...`` with an ``openAiApi`` credential whose Base URL
  is the scripted model: ``json-config/credential-field-mapping.js``); a tool of it with
  ``requireApproval: true`` suspends, ``call_agent`` suspends with that approval
  (``builder/agents-builder-tools.service.js``), ``build-agent`` suspends with it plus a ``builderCheckpoint``
  (``tools/orchestration/build-agent.tool.js``), and n8n's stream maps that to ``targetApproval``
  (``stream/map-chunk.js``).

The test makes the draft agent (its config written through n8n's REST, as n8n's agent editor does) call a
Date & Time node tool that needs approval; the app shows n8n's request as ``TargetApprovalCard`` and answers
it with keys; n8n resumes the builder's checkpoint and runs the node only when approved (the draft's next
model request carries the node's output, or n8n's denial).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.tui.widgets.n8n_cards import TargetApprovalCard
from tests.support.cards import card_text
from tests.support.openai_server import MockResponse
from tests.support.waiting import until

from .conftest import ModelServer, called, last_tool_result, login_headers, tool_names, user_text
from .driving import card_reached

pytestmark = pytest.mark.timeout(300)




def draft_agent(peer: Any, model_url: str, tool: str) -> str:
    """An Agent in n8n whose model is the scripted one (an OpenAI credential with its Base URL) and whose one
    tool, a Date & Time node, needs approval; its id."""
    headers = login_headers(peer)
    with httpx.Client(base_url=peer.url, headers=headers, timeout=60) as http:
        project = http.get("/rest/projects/personal").json()["data"]["id"]
        credential = http.post("/rest/credentials", json={
            "name": f"scripted model {tool}", "type": "openAiApi", "data": {"apiKey": "sk-local", "url": model_url}})
        assert credential.status_code == 200, credential.text
        made = http.post(f"/rest/projects/{project}/agents/v2", json={"name": f"Clock agent {tool}"})
        assert made.status_code == 200, made.text
        agent = made.json()["data"]["id"]
        current = http.get(f"/rest/projects/{project}/agents/v2/{agent}/config").json()["data"]
        config = {**current["config"], "model": "openai/gpt-4o-mini", "credential": credential.json()["data"]["id"],
                  "instructions": "Tell the date with the clock tool.",
                  "tools": [{"type": "node", "name": tool, "description": "The current date", "requireApproval": True,
                             "node": {"nodeType": "n8n-nodes-base.dateTimeTool", "nodeTypeVersion": 2,
                                      "nodeParameters": {"operation": "getCurrentDate"}}}]}
        written = http.put(f"/rest/projects/{project}/agents/v2/{agent}/config",
                           json={"config": config, "baseConfigHash": current["configHash"]})
        assert written.status_code == 200, written.text
        valid = http.get(f"/rest/projects/{project}/agents/v2/{agent}/validation").json()["data"]
        assert valid["status"] == "valid", valid
        return str(agent)


class BuilderScenario:
    """Three scripted models in one: n8n's agent calls ``build-agent`` on the draft agent, the Agent Builder
    calls ``call_agent``, the draft agent calls its ``tool``; each answers in words once its tool returned."""

    def __init__(self, agent_id: str, tool: str) -> None:
        self.mark = "live-target-" + uuid.uuid4().hex[:6]
        self.agent_id, self.tool = agent_id, tool
        self.draft_results: list[str] = []
        self.builder_results: list[str] = []

    def __call__(self, body: dict[str, Any]) -> MockResponse:
        names, done = tool_names(body), called(body)
        if self.tool in names:  # the draft agent (its only tool)
            if self.tool in done and last_tool_result(body) is not None:
                self.draft_results.append(str(last_tool_result(body)))
                return MockResponse(text=f"{self.mark}-DRAFT-DONE")
            return MockResponse.call(self.tool, {})
        if self.mark not in user_text(body):
            return MockResponse(text="Agent builder")  # titles and other side calls
        if "call_agent" in names:  # the Agent Builder
            if "call_agent" in done and last_tool_result(body) is not None:
                self.builder_results.append(str(last_tool_result(body)))
                return MockResponse(text=f"{self.mark}-BUILDER-DONE")
            return MockResponse.call("call_agent", {"message": f"{self.mark}: what is the date?"})
        if "build-agent" in names:  # n8n's agent
            if "build-agent" in done and last_tool_result(body) is not None:
                return MockResponse(text=f"{self.mark}-DONE")
            return MockResponse.call("build-agent", {"agentId": self.agent_id, "message": f"{self.mark}: test it"})
        return MockResponse(text=f"{self.mark}-NO-TOOL {names}")


@pytest.mark.parametrize("key", ["y", "n"])
async def test_a_target_approval_is_shown_and_answered_and_n8n_acts_on_it(
        n8n: Any, model: ModelServer, responder: Callable[[Any], None], tmp_path: Path, key: str) -> None:
    tool = "clock_" + uuid.uuid4().hex[:6]
    agent = await asyncio.to_thread(draft_agent, n8n, model.base_url, tool)
    scenario = BuilderScenario(agent, tool)
    responder(scenario)
    async with card_reached(n8n, tmp_path / "cfg", f"{scenario.mark}: test my agent") as (app, pilot, card):
        shown = card_text(card)
        assert isinstance(card, TargetApprovalCard), (type(card), shown)
        assert f"The agent under test wants to run {tool}" in shown and f"runs {tool}" in shown, shown
        assert "always" not in shown.lower(), shown  # n8n's own card offers no lasting grant for it
        await pilot.press(key)
        await until(lambda: scenario.draft_results or scenario.builder_results, pilot, 60,
                    "n8n resuming the builder's checkpoint")
        await until(lambda: not app.conversation.is_streaming, pilot, 60, "run end")
    if key == "y":  # n8n resumed the builder's checkpoint and ran the Date & Time node for the draft agent
        assert len(scenario.draft_results) == 1 and '"currentDate"' in scenario.draft_results[0], scenario.draft_results
    else:  # n8n did not run it: the draft agent was told so
        assert len(scenario.draft_results) == 1, scenario.draft_results
        assert 'was not approved' in scenario.draft_results[0] and "currentDate" not in scenario.draft_results[0]
    # and the builder's test run completed with the draft's answer, back to n8n's agent
    assert scenario.builder_results and f"{scenario.mark}-DRAFT-DONE" in scenario.builder_results[0]
