"""Live: the confirmation shapes a real n8n 2.41.1 produces offline, answered with keys in the TUI (issue 27).

n8n's agent talks to the suite's scripted OpenAI-wire model; each test makes it call the tool that
suspends with one shape (found in n8n's agent source, ``@n8n/instance-ai/dist/tools``), drives the
real app with Pilot against the real n8n (Ctrl+G reaches the card, as a person would), answers with
keys, and checks n8n's next model request (the tool result n8n computed from the answer) or its
REST state.

Live here or elsewhere in ``tests/live_n8n``:

* ``questions`` — ``ask-user`` (always loaded): here.
* ``plan-review`` — ``create-tasks`` (deferred: ``load_tool`` first): rejected and "request
  changes" here; approving starts build-workflow sub-agents that need a sandbox (n8n's sandbox
  service or Daytona), not available offline, so approve is fake only.
* ``credentialRequests`` — ``credentials`` ``action: "setup"``: pick and skip here.
* ``setupRequests`` — ``workflows`` ``action: "setup"`` on a workflow made through the public API
  (a Slack node without a credential): apply with a picked credential (n8n's REST then shows it
  on the node) and the test-trigger key on a Slack trigger (n8n applies the picks, runs the
  trigger and asks again with its outcome) here.
* approval with ``approvalDetails`` (``archive-workflow``) — ``workflows`` ``action: "delete"``:
  here (and by ``run`` / the client in ``test_n8n_instance_ai.py``).
* ``domainAccess`` — ``research`` ``fetch-url``: ``test_n8n_cards_live.py``.
* ``webSearch`` — ``research`` ``web-search``: n8n asks before searching even with no search
  provider configured (its search service is resolved lazily, after the gate): denied here.
* ``resource-decision`` — the local gateway's ``GATEWAY_CONFIRMATION_REQUIRED`` (a hard link in the
  folder shared with ``--gateway``): denied with keys here; by the client in ``test_gateway_live.py``.
* a card of a run another client started (curl's ``POST /chat``): here.
* ``credentialDestination`` — ``workflows`` ``setup`` with a ``credentialHints`` recipe (the model's
  argument: n8n checks its form, not its source) on an HTTP Request node with Simplified Custom Auth:
  allowed (n8n then asks the setup on the same call) and refused here.
* a destructive approval (``credentials`` ``delete``): no always-allow, here.
* ``mcpConnectRequest`` — ``mcp-servers`` ``connect`` behind n8n's flags: ``test_mcp_connect_live.py``.
* ``targetApproval`` — an Agent Builder test run's tool approval (``build-agent`` → ``call_agent`` → a draft
  agent's tool with ``requireApproval``): approved and denied in ``test_target_approval_live.py``.

Fake only (``tests/n8n/test_n8n_cards.py``), because this n8n cannot produce them offline:

* ``channelConfig`` — the Agent Builder's ``configure_channel`` (a Slack/Telegram/... channel of the agent
  being built); not driven live.
* ``continue`` and ``text`` input types — no tool of n8n 2.41.1's agent suspends with them
  (``grep inputType`` in ``@n8n/instance-ai/dist/tools``: only questions, plan-review and
  resource-decision); they exist in api-types for other producers.
* unknown shapes — by definition n8n does not send them.
* ``credentialAutoSetup`` (the credentials card's "n8n sets it up") — needs browser use and a
  connected browser (the Browser Use extension); the live peer has browser use off, and the
  test above checks that the card does not offer it then.
* the background-tasks panel — planned tasks run after a plan is approved, as build-workflow
  sub-agents that need the sandbox.

Not driven here although this n8n could produce them: the other ``approvalDetails`` variants of the
approval card (data-table changes through ``data-tables``, workflow versions); they use the same
approval card and body as ``archive-workflow``, and the fake covers their texts.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.tui.widgets import n8n_cards
from instance_ai_tui.tui.widgets.confirmations import ConfirmCard, PlanReviewCard
from instance_ai_tui.tui.widgets.questions_card import QuestionsCard
from tests.support.cards import card_text, go_to_card
from tests.support.openai_server import MockResponse
from tests.support.waiting import until

from .conftest import called, last_tool_result, login_headers, tool_names, user_text
from .driving import SIZE, app_on_new_thread, card_reached, send, thread_open

pytestmark = pytest.mark.timeout(300)




class Scenario:
    """One scripted model turn sequence: ``load`` a deferred tool if needed, call ``tool`` with ``args``,
    then answer; every request of this scenario is kept in ``seen``."""

    def __init__(self, mark: str, tool: str, args: dict[str, Any], *, load: bool = False) -> None:
        self.mark, self.tool, self.args, self.load = mark, tool, args, load
        self.seen: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> MockResponse:
        if self.mark not in user_text(body):
            return MockResponse(text="Live shapes")  # titles and other side calls
        self.seen.append(body)
        done = called(body)
        if self.tool in done and last_tool_result(body) is not None:
            return MockResponse(text=f"{self.mark}-DONE")
        if self.tool in tool_names(body):
            return MockResponse.call(self.tool, self.args)
        if self.load and "load_tool" in tool_names(body) and done[-1:] != ["load_tool"]:
            return MockResponse.call("load_tool", {"toolName": self.tool})
        return MockResponse(text=f"{self.mark}-NO-TOOL {tool_names(body)}")

    def result(self) -> str | None:
        """The tool result n8n sent to the model after the answer (its next request)."""
        for body in self.seen:
            if called(body)[-1:] == [self.tool] and last_tool_result(body) is not None:
                return last_tool_result(body)
        return None


async def drive(n8n: Any, tmp_path: Path, scenario: Scenario, keys: tuple[str, ...],
                card_class: type) -> tuple[ConfirmCard, str, str]:
    """Send the scenario's message in the real app, answer its card with ``keys``; the card, its text
    before the answer and the tool result."""
    async with card_reached(n8n, tmp_path / f"cfg-{scenario.mark}", f"{scenario.mark}: please") as (app, pilot, card):
        shown = card_text(card)
        assert isinstance(card, card_class), (type(card), shown)
        await pilot.press(*keys)
        await until(lambda: scenario.result() is not None, pilot, 90, f"n8n's next model request ({scenario.mark})")
        await until(lambda: not app.conversation.is_streaming, pilot, 60, "run end")
    result = scenario.result()
    assert result is not None
    return card, shown, result


# --------------------------------------------------------------------------- questions (ask-user)


async def test_questions_answered_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    scenario = Scenario("live-q-" + uuid.uuid4().hex[:6], "ask-user", {
        "introMessage": "Two things first",
        "questions": [{"id": "freq", "question": "How often?", "type": "single", "options": ["Daily", "Weekly"]},
                      {"id": "chan", "question": "Where to post?", "type": "single", "options": ["#ops", "#dev"]}]})
    responder(scenario)
    _card, _shown, result = await drive(n8n, tmp_path, scenario, ("2", "1", "enter"), QuestionsCard)
    answers = {a["questionId"]: a for a in json.loads(result)["answers"]}
    assert answers["freq"]["selectedOptions"] == ["Weekly"] and answers["chan"]["selectedOptions"] == ["#ops"], result


# --------------------------------------------------------------------------- plan review (create-tasks)

PLAN = {"tasks": [{"id": "t1", "title": "Build the digest workflow", "kind": "build-workflow",
                   "spec": "A schedule trigger and a Slack message", "deps": []}],
        "planningContext": {"source": "planning-skill", "summary": "One workflow for the daily digest"}}


@pytest.mark.parametrize(("keys", "expect"), [(("n",), "denied"), (("r", *"fewer steps", "enter"), "fewer steps")],
                         ids=["reject", "request-changes"])
async def test_plan_review_rejected_or_changed_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path,
                                                       keys: tuple[str, ...], expect: str) -> None:
    scenario = Scenario("live-plan-" + uuid.uuid4().hex[:6], "create-tasks", PLAN, load=True)
    responder(scenario)
    _card, _shown, result = await drive(n8n, tmp_path, scenario, keys, PlanReviewCard)
    assert expect in result.lower(), result


# --------------------------------------------------------------------------- credentials (pick, skip)


def make_credential(peer: Any, name: str) -> str:
    response = httpx.post(f"{peer.url}/rest/credentials", headers=login_headers(peer), timeout=30,
                          json={"name": name, "type": "slackApi", "data": {"accessToken": "xoxb-live-test"}})
    response.raise_for_status()
    return str(response.json()["data"]["id"])


@pytest.mark.parametrize(("keys", "picked"), [(("1", "enter"), True), (("n",), False)], ids=["pick", "skip"])
async def test_credentials_picked_or_skipped_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path,
                                                     keys: tuple[str, ...], picked: bool) -> None:
    cred_id = make_credential(n8n, f"Slack live {uuid.uuid4().hex[:4]}")
    scenario = Scenario("live-cred-" + uuid.uuid4().hex[:6], "credentials", {
        "action": "setup", "credentials": [{"credentialType": "slackApi", "reason": "Post the digest"}],
        "requireUserSelection": True})
    responder(scenario)
    card, shown, result = await drive(n8n, tmp_path, scenario, keys, n8n_cards.CredentialsCard)
    assert "s n8n sets it up" not in shown and "browser" not in shown  # browser use is off on the live peer
    if picked:
        data = json.loads(result)
        assert data["success"] is True and list(data["credentials"].values()) == [card.chosen["slackApi"]], result
        assert any(c["id"] == card.chosen["slackApi"] for c in card.requests[0]["existingCredentials"])
        assert cred_id in {c["id"] for c in card.requests[0]["existingCredentials"]}
    else:
        assert json.loads(result).get("deferred") is True, result


# --------------------------------------------------------------------------- approval (archive-workflow)


def make_workflow(peer: Any, name: str) -> str:
    body = {"name": name, "nodes": [{"id": str(uuid.uuid4()), "name": "Start", "type": "n8n-nodes-base.manualTrigger",
                                     "typeVersion": 1, "position": [0, 0], "parameters": {}}],
            "connections": {}, "settings": {}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", json=body, headers={"X-N8N-API-KEY": peer.api_key},
                          timeout=30)
    response.raise_for_status()
    return str(response.json()["id"])


def is_archived(peer: Any, workflow_id: str) -> bool:
    response = httpx.get(f"{peer.url}/rest/workflows/{workflow_id}", headers=login_headers(peer), timeout=30)
    response.raise_for_status()
    return response.json()["data"]["isArchived"] is True


async def test_archive_approval_answered_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    workflow_id = make_workflow(n8n, f"Live archive {uuid.uuid4().hex[:4]}")
    scenario = Scenario("live-arch-" + uuid.uuid4().hex[:6], "workflows", {"action": "delete", "workflowId": workflow_id})
    responder(scenario)
    _card, shown, _result = await drive(n8n, tmp_path, scenario, ("y",), ConfirmCard)
    assert "archive" in shown.lower(), shown
    assert await asyncio.to_thread(is_archived, n8n, workflow_id)  # n8n's own state: archived after the key


# --------------------------------------------------------------------------- a run started by another client


async def test_the_card_of_a_run_started_by_curl(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    """Another client (a browser tab, curl) POSTs /chat on the thread the app has open: its card is
    drawn like the app's own, reached by Ctrl+G and answered with the same keys."""
    scenario = Scenario("live-curl-" + uuid.uuid4().hex[:6], "ask-user", {
        "questions": [{"id": "freq", "question": "How often?", "type": "single", "options": ["Daily", "Weekly"]}]})
    responder(scenario)
    _client, thread, app = await app_on_new_thread(n8n, tmp_path / "cfg")
    async with app.run_test(size=SIZE) as pilot:
        await thread_open(app, pilot, thread)
        headers = login_headers(n8n)  # a separate login, as curl would have
        response = await asyncio.to_thread(
            httpx.post, f"{n8n.url}/rest/instance-ai/chat/{thread}", headers=headers, timeout=30,
            json={"message": f"{scenario.mark}: from curl", "timeZone": "UTC"})
        assert response.status_code == 200, response.text
        card = await go_to_card(app, pilot, 90)
        assert isinstance(card, QuestionsCard) and "How often?" in card_text(card)
        await pilot.press("1", "enter")
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
    answers = json.loads(scenario.result() or "{}")["answers"]
    assert answers[0]["selectedOptions"] == ["Daily"]


# --------------------------------------------------------------------------- web search (research)


async def test_web_search_denied_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    query = f"n8n release notes {uuid.uuid4().hex[:4]}"
    scenario = Scenario("live-search-" + uuid.uuid4().hex[:6], "research", {"action": "web-search", "query": query})
    responder(scenario)
    _card, shown, result = await drive(n8n, tmp_path, scenario, ("n",), n8n_cards.DomainAccessCard)
    assert query in shown, shown
    assert json.loads(result) == {"query": query, "results": []}, result  # nothing searched


# --------------------------------------------------------------------------- resource decision (--gateway)


async def test_a_hard_link_in_the_gateway_folder_is_denied_with_keys(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    import os

    from instance_ai_tui.client.gateway_flag import GatewayRequest

    shared = tmp_path / "shared"
    shared.mkdir()
    secret = tmp_path / "outside.txt"
    secret.write_text("password=live-rd-hunter2\n", encoding="utf-8")
    os.link(secret, shared / "linked.txt")
    mark = "live-rd-" + uuid.uuid4().hex[:6]
    seen: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> MockResponse:
        if mark not in user_text(body):
            return MockResponse(text="Resource decision")
        seen.append(body)
        if called(body)[-1:] == ["read_file"] and last_tool_result(body) is not None:
            return MockResponse(text=f"{mark}-DONE")
        if "read_file" in tool_names(body):
            return MockResponse.call("read_file", {"path": "linked.txt"})
        if "load_tool" in tool_names(body) and called(body)[-1:] != ["load_tool"]:
            return MockResponse.call("load_tool", {"toolName": "read_file"})
        return MockResponse(text="no read_file")

    responder(respond)
    _client, thread, app = await app_on_new_thread(n8n, tmp_path / "cfg", gateway=GatewayRequest(shared.resolve()))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.gateway_state == "sharing", pilot, 60, "the gateway sharing")
        await thread_open(app, pilot, thread)
        await send(app, pilot, f"{mark}: read linked.txt")
        card = await go_to_card(app, pilot, 90)
        shown = card_text(card)
        assert "linked.txt" in shown and "2 hard links" in shown, shown
        await pilot.press("n")
        await until(lambda: any(called(b)[-1:] == ["read_file"] and last_tool_result(b) for b in seen), pilot, 90,
                    "n8n's next model request")
    results = [last_tool_result(b) for b in seen if called(b)[-1:] == ["read_file"] and last_tool_result(b)]
    assert results and "hunter2" not in str(results) and "denied" in str(results).lower(), results


# --------------------------------------------------------------------------- workflow setup (setupRequests)


def make_slack_workflow(peer: Any, name: str, *, slack_trigger: bool = False) -> str:
    """A trigger (a schedule, or a Slack trigger that needs a credential too) and a Slack node without a
    credential: what ``workflows setup`` asks about."""
    trigger = ({"id": str(uuid.uuid4()), "name": "Schedule", "type": "n8n-nodes-base.slackTrigger", "typeVersion": 1,
                "position": [0, 0], "parameters": {"trigger": ["message"], "watchWorkspace": True}, "webhookId":
                str(uuid.uuid4())}
               if slack_trigger else
               {"id": str(uuid.uuid4()), "name": "Schedule", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2,
                "position": [0, 0], "parameters": {"rule": {"interval": [{"field": "hours", "hoursInterval": 1}]}}})
    nodes = [
        trigger,
        {"id": str(uuid.uuid4()), "name": "Slack", "type": "n8n-nodes-base.slack", "typeVersion": 2.2,
         "position": [220, 0], "parameters": {"select": "channel", "channelId": {"__rl": True, "mode": "name",
                                                                                   "value": "#general"},
                                               "text": "daily digest", "otherOptions": {}}},
    ]
    body = {"name": name, "nodes": nodes, "connections": {"Schedule": {"main": [[{"node": "Slack", "type": "main",
                                                                                    "index": 0}]]}},
            "settings": {}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", json=body, headers={"X-N8N-API-KEY": peer.api_key},
                          timeout=30)
    response.raise_for_status()
    return str(response.json()["id"])


def slack_credential_of(peer: Any, workflow_id: str) -> Any:
    response = httpx.get(f"{peer.url}/rest/workflows/{workflow_id}", headers=login_headers(peer), timeout=30)
    response.raise_for_status()
    node = next(n for n in response.json()["data"]["nodes"] if n["name"] == "Slack")
    return (node.get("credentials") or {}).get("slackApi")


async def test_workflow_setup_applied_by_keys(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    cred_id = make_credential(n8n, f"Slack setup {uuid.uuid4().hex[:4]}")
    workflow_name = f"Live setup {uuid.uuid4().hex[:4]}"
    workflow_id = make_slack_workflow(n8n, workflow_name)
    scenario = Scenario("live-setup-" + uuid.uuid4().hex[:6], "workflows", {"action": "setup", "workflowId": workflow_id})
    responder(scenario)
    async with card_reached(n8n, tmp_path / "cfg", f"{scenario.mark}: set it up") as (_app, pilot, card):
        shown = card_text(card)
        assert isinstance(card, n8n_cards.SetupWorkflowCard), (type(card), shown)
        assert "Slack" in shown, shown
        # the title names the workflow (n8n's request has only its id: the client reads its name, 42.7)
        assert f"Set up workflow {workflow_name} ({workflow_id})" in shown, shown
        # the Slack node's row: pick the credential we made (its number in the list), then apply
        slack = next(i for i, r in enumerate(card.nodes) if (r.get("node") or {}).get("name") == "Slack")
        options = [c.get("id") for c in card.nodes[slack].get("existingCredentials") or []]
        assert cred_id in options, (options, shown)
        for _ in range(slack - card.cursor):
            await pilot.press("down")
        await pilot.press(str(options.index(cred_id) + 1), "enter")
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
    assert await asyncio.to_thread(slack_credential_of, n8n, workflow_id) == {
        "id": cred_id, "name": next(c["name"] for c in card.nodes[slack]["existingCredentials"] if c["id"] == cred_id)}


async def test_workflow_setup_test_trigger_key(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    """``t`` on the trigger's row: n8n tests the trigger (``setupWorkflowTestTrigger``) with the credential
    picked on the card, and its next model request carries the outcome."""
    cred_id = make_credential(n8n, f"Slack trigger {uuid.uuid4().hex[:4]}")
    workflow_id = make_slack_workflow(n8n, f"Live trigger {uuid.uuid4().hex[:4]}", slack_trigger=True)
    scenario = Scenario("live-trig-" + uuid.uuid4().hex[:6], "workflows", {"action": "setup", "workflowId": workflow_id})
    responder(scenario)
    async with card_reached(n8n, tmp_path / "cfg", f"{scenario.mark}: set it up") as (app, pilot, card):
        assert isinstance(card, n8n_cards.SetupWorkflowCard)
        names = [(r.get("node") or {}).get("name") for r in card.nodes]
        trigger = next((i for i, r in enumerate(card.nodes) if r.get("isTrigger")), None)
        assert trigger is not None, (names, card_text(card))
        slack = names.index("Slack")
        options = [c.get("id") for c in card.nodes[slack].get("existingCredentials") or []]
        for _ in range(slack):
            await pilot.press("down")
        await pilot.press(str(options.index(cred_id) + 1))
        for _ in range(slack - trigger):
            await pilot.press("up")
        assert "t test trigger" in card_text(card)
        await pilot.press("t")

        def next_card() -> n8n_cards.SetupWorkflowCard | None:
            return next((c for c in app.query(n8n_cards.SetupWorkflowCard) if c is not card and not c.answered), None)

        # n8n applies the picks, runs the trigger (up to 30 s) and asks again with the trigger's outcome
        await until(lambda: next_card() is not None, pilot, 120, "the setup card again, with the trigger test")
        again = next_card()
        assert again is not None
        tested = next(n for n in again.nodes if (n.get("node") or {}).get("name") == names[trigger])
        assert (tested.get("triggerTestResult") or {}).get("status") in ("success", "listening", "error"), tested
        await until(lambda: "trigger test:" in card_text(again), pilot, 10, "the outcome on the card")
    # the credential picked before the test was applied to the workflow (n8n's own state)
    assert (await asyncio.to_thread(slack_credential_of, n8n, workflow_id) or {}).get("id") == cred_id


# --------------------------------------------------------------------------- credential destination


def make_templated_auth_workflow(peer: Any, name: str, origin: str) -> str:
    """A manual trigger and an HTTP Request node on ``origin`` with n8n's Simplified Custom Auth
    (``httpTemplatedCustomAuth``) and no credential yet: what ``workflows setup`` with a
    ``credentialHints`` recipe asks about (where the credential the person makes will be sent)."""
    nodes = [
        {"id": str(uuid.uuid4()), "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1,
         "position": [0, 0], "parameters": {}},
        {"id": str(uuid.uuid4()), "name": "Fetch things", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2,
         "position": [220, 0], "parameters": {"url": f"{origin}/v1/things", "authentication": "genericCredentialType",
                                               "genericAuthType": "httpTemplatedCustomAuth", "options": {}}},
    ]
    body = {"name": name, "nodes": nodes, "settings": {},
            "connections": {"Start": {"main": [[{"node": "Fetch things", "type": "main", "index": 0}]]}}}
    response = httpx.post(f"{peer.url}/api/v1/workflows", json=body, headers={"X-N8N-API-KEY": peer.api_key},
                          timeout=30)
    response.raise_for_status()
    return str(response.json()["id"])


@pytest.mark.parametrize(("key", "allowed"), [("y", True), ("n", False)], ids=["allow", "refuse"])
async def test_credential_destination_allowed_or_refused_by_keys(n8n: Any, responder: Callable[[Any], None],
                                                                 tmp_path: Path, key: str, allowed: bool) -> None:
    """``credentialDestination`` (issue 42.8): n8n 2.41.1's ``workflows setup`` with a recipe for a
    Simplified Custom Auth credential asks where that credential will go (the node's origin) before it
    sets anything up. The recipe is the model's argument (n8n checks its form, not where it came from),
    so the scripted model gives one. Allowed, n8n asks again on the same call with the setup (its card
    must come: the first answer hid it before); refused, n8n tells its agent the person did not
    approve that origin."""
    origin = f"https://api-{uuid.uuid4().hex[:6]}.example.com"
    workflow_id = make_templated_auth_workflow(n8n, f"Live destination {uuid.uuid4().hex[:4]}", origin)
    scenario = Scenario("live-dest-" + uuid.uuid4().hex[:6], "workflows", {
        "action": "setup", "workflowId": workflow_id,
        "credentialHints": [{"template": {"headers": {"Authorization": "Bearer {{api_key}}"}},
                             "placeholders": [{"name": "api_key", "title": "API key"}],
                             "suggestedName": "Example API key", "testUrl": f"{origin}/v1/me"}]})
    responder(scenario)
    async with card_reached(n8n, tmp_path / "cfg", f"{scenario.mark}: set it up") as (app, pilot, card):
        shown = card_text(card)
        assert isinstance(card, n8n_cards.CredentialDestinationCard), (type(card), shown)
        assert origin in shown and "Fetch things" in shown, shown
        assert "always" not in shown.lower(), shown
        await pilot.press(key)
        if allowed:
            # n8n records the approval for this origin and asks again on the same call, with the setup
            # itself (a new requestId on the same toolCallId): its card comes, with the node and the recipe
            def setup_card() -> n8n_cards.SetupWorkflowCard | None:
                return next((c for c in app.query(n8n_cards.SetupWorkflowCard) if not c.answered), None)
            await until(lambda: setup_card() is not None, pilot, 90, "the setup card after the destination")
            again = setup_card()
            assert again is not None
            # its node list is filled in once the card has read the workflow (CI saw the card a moment before)
            await until(lambda: "Fetch things" in card_text(again), pilot, 30, "the setup card's node")  # type: ignore[arg-type]
            assert scenario.result() is None  # n8n waits for the setup's answer
        else:
            await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
            result = scenario.result()
            assert result is not None and f"did not approve credential use with {origin}" in result, result


# --------------------------------------------------------------------------- a destructive request


def credential_exists(peer: Any, credential_id: str) -> bool:
    response = httpx.get(f"{peer.url}/rest/credentials/{credential_id}", headers=login_headers(peer), timeout=30)
    return response.status_code == 200


async def test_a_destructive_card_offers_no_always_allow(n8n: Any, responder: Callable[[Any], None],
                                                         tmp_path: Path) -> None:
    """n8n 2.41.1's ``credentials delete`` suspends with ``severity: destructive``; n8n's own card offers no
    "always allow" for it, nor does ours (issue 42.4): not on the card, and ``a`` answers nothing. ``y``
    deletes the credential in n8n."""
    cred_id = make_credential(n8n, f"Slack doomed {uuid.uuid4().hex[:4]}")
    scenario = Scenario("live-del-" + uuid.uuid4().hex[:6], "credentials",
                        {"action": "delete", "credentialId": cred_id, "credentialName": "Slack doomed"})
    responder(scenario)
    async with card_reached(n8n, tmp_path / "cfg", f"{scenario.mark}: delete it") as (app, pilot, card):
        shown = card_text(card)
        assert isinstance(card, ConfirmCard), (type(card), shown)
        assert card.confirmation.severity == "destructive", card.confirmation
        assert "always" not in shown.lower(), shown
        await pilot.press("a")
        await pilot.pause()
        assert not card.answered and "always" not in card_text(card).lower(), card_text(card)
        assert await asyncio.to_thread(credential_exists, n8n, cred_id)
        await pilot.press("y")
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
        await until(lambda: not app.conversation.is_streaming, pilot, 60, "run end")
    assert '"success":true' in (scenario.result() or "").replace(" ", ""), scenario.result()
    assert not await asyncio.to_thread(credential_exists, n8n, cred_id)
