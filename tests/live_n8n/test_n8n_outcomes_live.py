"""Live: ✓ only where a real n8n 2.41.1 reports success (issue 42.6), the same words live, restored
(a new app opening the thread) and exported (``instance-ai export``'s Markdown of n8n's history).

* a credential picked on the card that n8n could not verify (``credentials`` answers ``success: true``
  with ``verified: false`` and the failed connection test: offline, Slack's test cannot reach Slack);
* a web search denied on the card (n8n answers ``{query, results: []}``, as for a search that found
  nothing: live the app knows it was denied; n8n's history keeps no word of it, so restored it reads
  "no results", never ✓);
* ``create-tasks`` whose planning context n8n refuses (its result is a text starting "Error:").
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.display_state import display_state
from instance_ai_tui.protocol.transcript import to_markdown
from tests.support.cards import go_to_card
from tests.support.waiting import until

from .driving import SIZE, app_on_new_thread, make_app, peer_client, send, thread_open
from .test_confirmation_shapes_live import Scenario, make_credential

pytestmark = pytest.mark.timeout(400)


def call_of(conversation: Conversation, tool: str) -> Any:
    for msg in reversed(conversation.messages):
        if msg.reducer is None:
            continue
        for call in msg.reducer.tree().tool_calls:
            if call.tool_name == tool:
                return call
    return None


def shown(conversation: Conversation, tool: str) -> tuple[str, str]:
    call = call_of(conversation, tool)
    assert call is not None, f"no {tool} call"
    state = display_state(call, run_active=False)
    return state.kind, state.label


async def drive_and_reload(n8n: Any, tmp_path: Path, scenario: Scenario, keys: tuple[str, ...] | None,
                           tool: str) -> tuple[tuple[str, str], tuple[str, str], str]:
    """The scenario's card answered with ``keys`` (no card: ``None``) in the app; the tool's state live,
    then in a new app on the same thread, and the thread exported as Markdown."""
    _client, thread, app = await app_on_new_thread(n8n, tmp_path / "cfg")
    async with app.run_test(size=SIZE) as pilot:
        await thread_open(app, pilot, thread)
        await send(app, pilot, f"{scenario.mark}: please")
        if keys is not None:
            await go_to_card(app, pilot, 90)
            await pilot.press(*keys)
        await until(lambda: scenario.result() is not None, pilot, 90, "n8n's next model request")
        await until(lambda: not app.conversation.is_streaming and call_of(app.conversation, tool) is not None
                    and not call_of(app.conversation, tool).is_loading, pilot, 60, "the run's end")
        live = shown(app.conversation, tool)
    app2 = make_app(peer_client(n8n, tmp_path / "cfg2"), thread_id=thread)
    async with app2.run_test(size=SIZE) as pilot:
        await thread_open(app2, pilot, thread)
        await until(lambda: call_of(app2.conversation, tool) is not None, pilot, 30, "the restored call")
        restored = shown(app2.conversation, tool)
    exporter = peer_client(n8n, tmp_path / "cfg3")  # (the apps closed theirs): as ``instance-ai export`` reads it
    try:
        history = await exporter.messages(thread)
    finally:
        await exporter.close()
    exported = Conversation(thread)
    exported.load_history(history)
    return live, restored, to_markdown(exported)


async def test_a_credential_n8n_could_not_verify_is_never_a_success(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    await asyncio.to_thread(make_credential, n8n, f"Slack unverified {uuid.uuid4().hex[:4]}")
    scenario = Scenario("live-unv-" + uuid.uuid4().hex[:6], "credentials", {
        "action": "setup", "credentials": [{"credentialType": "slackApi", "reason": "Post the digest"}],
        "requireUserSelection": True})
    responder(scenario)
    live, restored, exported = await drive_and_reload(n8n, tmp_path, scenario, ("1", "enter"), "credentials")
    assert '"verified":false' in (scenario.result() or "").replace(" ", "")  # what n8n said
    for kind, label in (live, restored):
        assert kind == "failed" and label.startswith("picked, not verified: slackApi failed its connection test"), \
            (kind, label)
    assert "**🔧 credentials** (picked, not verified: slackApi failed its connection test" in exported, exported


async def test_a_denied_web_search_is_denied_live_and_never_a_success_restored(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    scenario = Scenario("live-wsd-" + uuid.uuid4().hex[:6], "research",
                        {"action": "web-search", "query": f"n8n notes {uuid.uuid4().hex[:4]}"})
    responder(scenario)
    live, restored, exported = await drive_and_reload(n8n, tmp_path, scenario, ("n",), "research")
    assert live == ("denied", "denied")
    assert restored == ("not-run", "no results")  # n8n's history: {query, results: []}, no word of the denial
    assert "**🔧 research** (no results)" in exported and "(approval, answered)" in exported, exported
    assert "✓" not in exported


async def test_a_create_tasks_error_text_is_a_failure(
    n8n: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    plan = {"tasks": [{"id": "t1", "title": "Build the digest", "kind": "build-workflow", "spec": "A schedule",
                       "deps": []}],
            # "replan" outside a planned-task follow-up: n8n's create-tasks answers "Error: ..." (plan.tool.js)
            "planningContext": {"source": "replan", "summary": "digest"}}
    scenario = Scenario("live-err-" + uuid.uuid4().hex[:6], "create-tasks", plan, load=True)
    responder(scenario)
    live, restored, exported = await drive_and_reload(n8n, tmp_path, scenario, None, "create-tasks")
    assert json.loads(scenario.result() or "{}")["result"].startswith("Error:"), scenario.result()
    for kind, label in (live, restored):
        assert kind == "failed" and label.startswith("failed: `planningContext.source: \"replan\"` is only valid"), \
            (kind, label)
    assert "**🔧 create-tasks** (failed: `planningContext.source" in exported, exported

