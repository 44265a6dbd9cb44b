"""Every n8n Instance AI confirmation shape has its own card (issue 16).

The real app, the real ``N8nClient`` and the fake n8n on 127.0.0.1 emitting each shape of
api-types 1.41's ``confirmationRequestPayloadSchema`` (``testing.n8n_shapes``): the keys
that answer each card and the exact JSON body the fake received; a card restored from a
``messages`` response (a second app opening the suspended thread) is the same card.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets import n8n_cards
from instance_ai_tui.tui.widgets.card_factory import build_card
from instance_ai_tui.tui.widgets.confirmations import ApprovalCard, ConfirmCard, TextCard
from tests.support.cards import card_text, go_to_card
from tests.support.fake_n8n import FakeN8n
from tests.support.n8n_shapes import SHAPES, ShapeScript
from tests.support.waiting import until

from .conftest import make_client

SIZE = (120, 44)


@pytest.fixture
async def shapes_fake() -> AsyncIterator[tuple[FakeN8n, ShapeScript]]:
    script = ShapeScript()
    server = FakeN8n(script=script, ping_interval=0.5)
    await server.start()
    script.project_id = server.project_id
    try:
        yield server, script
    finally:
        await server.stop()


def make_app(client: N8nClient, **kwargs: Any) -> InstanceAiApp:
    return InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, **kwargs)


async def open_card(app: InstanceAiApp, pilot: Any, shape: str) -> ConfirmCard:
    app.prompt.focus()
    app.prompt.load_text(f"shape:{shape}")
    await pilot.press("enter")
    # a card takes keys once the person goes to it (issue 32): Ctrl+G, as a person would
    return await go_to_card(app, pilot)


async def a_thread_answered(app: InstanceAiApp, pilot: Any) -> None:
    """The app ready, a first message sent and answered: a thread is open and nothing runs."""
    await app.wait_until_ready()
    app.prompt.focus()
    app.prompt.load_text("hello")
    await pilot.press("enter")
    await until(lambda: app.thread_id is not None and not app.conversation.is_streaming, pilot)


async def answered(shapes: ShapeScript, pilot: Any, count: int = 1) -> list[tuple[str, dict[str, Any]]]:
    await until(lambda: len(shapes.bodies) >= count, pilot)
    return shapes.bodies


# --------------------------------------------------------------------------- one case per card and key


CASES: list[tuple[str, type, tuple[str, ...], dict[str, Any]]] = [
    # credentials: requireUserSelection, so nothing is preselected; 2 then 1 pick per type
    ("credentials", n8n_cards.CredentialsCard, ("2", "1", "enter"),
     {"kind": "credentialSelection", "credentials": {"slackApi": "cred_s2", "openAiApi": "cred_o1"}}),
    # a type left without a credential: Enter says so, Enter again goes on with the one picked
    ("credentials-new", n8n_cards.CredentialsCard, ("enter", "enter"),
     {"kind": "credentialSelection", "credentials": {"slackApi": "cred_s1"}}),
    ("credentials", n8n_cards.CredentialsCard, ("n",), {"kind": "approval", "approved": False}),
    ("credential-destination", n8n_cards.CredentialDestinationCard, ("y",),
     {"kind": "credentialDestination", "approved": True, "origin": "https://api.example.com"}),
    ("credential-destination", n8n_cards.CredentialDestinationCard, ("n",),
     {"kind": "credentialDestination", "approved": False, "origin": "https://api.example.com"}),
    # setup: hour on the trigger, then the Slack node's credential and channel, skip Log, apply
    ("setup-workflow", n8n_cards.SetupWorkflowCard,
     ("e", "9", "enter", "down", "1", "e", *"#general", "enter", "down", "s", "enter"),
     {"kind": "setupWorkflowApply", "nodeCredentials": {"Slack": {"slackApi": "cred_s1"}},
      "nodeParameters": {"Schedule": {"hour": 9}, "Slack": {"channel": "#general"}}, "skippedNodes": ["Log"]}),
    ("setup-workflow", n8n_cards.SetupWorkflowCard, ("down", "2", "up", "t"),
     {"kind": "setupWorkflowTestTrigger", "testTriggerNode": "Schedule",
      "nodeCredentials": {"Slack": {"slackApi": "cred_s2"}}}),
    ("setup-workflow", n8n_cards.SetupWorkflowCard, ("n",), {"kind": "approval", "approved": False}),
    ("mcp-connect", n8n_cards.McpConnectCard, ("2", "enter"),
     {"kind": "mcpConnect", "approved": True, "connectedSlugs": ["linear"]}),
    ("mcp-connect", n8n_cards.McpConnectCard, ("n",), {"kind": "mcpConnect", "approved": False}),
    ("domain-access", n8n_cards.DomainAccessCard, ("y",),
     {"kind": "domainAccessApprove", "domainAccessAction": "allow_once"}),
    # a grant that lasts takes a second key (issue 32): the letter says what it grants, Enter grants it
    ("domain-access", n8n_cards.DomainAccessCard, ("d", "enter"),
     {"kind": "domainAccessApprove", "domainAccessAction": "allow_domain"}),
    ("domain-access", n8n_cards.DomainAccessCard, ("a", "enter"),
     {"kind": "domainAccessApprove", "domainAccessAction": "allow_all"}),
    ("domain-access", n8n_cards.DomainAccessCard, ("n",), {"kind": "domainAccessDeny"}),
    ("web-search", n8n_cards.DomainAccessCard, ("enter",),
     {"kind": "domainAccessApprove", "domainAccessAction": "allow_once"}),
    ("web-search", n8n_cards.DomainAccessCard, ("a", "enter"),
     {"kind": "domainAccessApprove", "domainAccessAction": "allow_all"}),
    ("channel-config", n8n_cards.ChannelConfigCard, ("y",), {"kind": "approval", "approved": True}),
    ("channel-config", n8n_cards.ChannelConfigCard, ("n",), {"kind": "approval", "approved": False}),
    # no "always" for another agent's tool (n8n's card has none): a does nothing, Enter approves once
    ("target-approval", n8n_cards.TargetApprovalCard, ("a", "enter"), {"kind": "approval", "approved": True}),
    # a destructive request (n8n's credentials delete): no "always" either
    ("delete-credential", ApprovalCard, ("a", "enter"), {"kind": "approval", "approved": True}),
    ("delete-credential", ApprovalCard, ("n",), {"kind": "approval", "approved": False}),
    ("target-approval", n8n_cards.TargetApprovalCard, ("n",), {"kind": "approval", "approved": False}),
    ("text", TextCard, (*"Daily digest", "enter"), {"kind": "approval", "approved": True, "userInput": "Daily digest"}),
    ("continue", n8n_cards.ContinueCard, ("enter",), {"kind": "approval", "approved": True}),
    ("continue", n8n_cards.ContinueCard, ("n",), {"kind": "approval", "approved": False}),
]


@pytest.mark.parametrize(
    ("shape", "card_class", "keys", "body"),
    CASES,
    ids=[f"{c[0]}-{'+'.join(c[2])[:24]}" for c in CASES],
)
async def test_each_card_answers_with_the_body_n8n_expects(
    shapes_fake: tuple[FakeN8n, ShapeScript],
    tmp_path: Path,
    shape: str,
    card_class: type,
    keys: tuple[str, ...],
    body: dict[str, Any],
) -> None:
    fake, shapes = shapes_fake
    client = make_client(fake, tmp_path / "config")
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, shape)
        assert type(card) is card_class
        if isinstance(card, TextCard):
            await until(lambda: not card.field.disabled and card.field.has_focus, pilot)
        await pilot.press(*keys)
        bodies = await answered(shapes, pilot)
        assert bodies == [(shape, body)]
        # the run goes on: the tool result arrives and the card gives way to the tool call's state
        await until(lambda: not app.thread.pending and not app.conversation.is_streaming, pilot)


async def test_keys_during_the_grace_period_answer_nothing(shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path) -> None:
    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "domain-access")
        card.shown_at = time.monotonic()
        await pilot.press("d", "y", "n")
        await pilot.pause(0.2)  # a window in which no answer may be sent (the scenario)
        assert shapes.bodies == [] and not card.answered
        await until(lambda: not card.in_grace, pilot)
        await pilot.press("d", "enter")  # a lasting grant: the letter, then Enter (issue 32)
        assert (await answered(shapes, pilot)) == [
            ("domain-access", {"kind": "domainAccessApprove", "domainAccessAction": "allow_domain"})
        ]


async def test_incomplete_answers_are_refused_with_a_hint(shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path) -> None:
    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "credentials")
        assert card.parent is not None and card.parent.body is None  # the tool's arguments would only repeat the card
        await pilot.press("enter")  # nothing picked yet (requireUserSelection)
        await until(lambda: any("Pick a credential for slackApi, openAiApi" in n.message for n in app._notifications),
                    pilot)
        assert shapes.bodies == [] and not card.answered
        await pilot.press("1")  # slackApi; openAiApi still missing
        await pilot.press("enter")
        await pilot.pause(0.2)  # a window in which no answer may be sent (the scenario)
        assert shapes.bodies == []
        await pilot.press("1", "enter")
        assert (await answered(shapes, pilot))[0][1] == {
            "kind": "credentialSelection", "credentials": {"slackApi": "cred_s1", "openAiApi": "cred_o1"}
        }


async def test_mcp_card_untick_everything_then_enter_sends_nothing(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "mcp-connect")
        assert "[x] Linear" in card_text(card) and "[x] Notion" in card_text(card)
        await pilot.press("1", "2", "enter")
        await pilot.pause(0.2)  # a window in which no answer may be sent (the scenario)
        assert shapes.bodies == [] and "[ ] Linear" in card_text(card)
        await pilot.press("1", "enter")
        assert (await answered(shapes, pilot))[0][1] == {"kind": "mcpConnect", "approved": True, "connectedSlugs": ["linear"]}


async def test_an_unknown_request_shows_every_field_and_the_n8n_url_and_sends_nothing(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "unknown")
        assert isinstance(card, n8n_cards.UnknownRequestCard)
        text = card_text(card)
        assert "cannot answer this kind of request" in text
        assert f"{fake.base_url}/instance-ai/{app.thread_id}" in text
        assert 'preferenceCard: {"preferenceId": "p1", "options": ["keep", "drop"]}' in text
        assert 'args: {"action": "x"}' in text and "toolName: future-tool" in text
        await pilot.press("y", "enter", "n", "a")
        await pilot.pause(0.3)  # a window in which no answer may be sent (the scenario)
        assert shapes.bodies == []
        assert not [r for r in fake.requests if r.path.startswith("/rest/instance-ai/confirm/")]
        assert app.thread.pending  # still waiting: it is answered in the browser


# --------------------------------------------------------------------------- restored from history


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "text"])
async def test_a_card_restored_from_messages_is_the_same_card(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path, shape: str
) -> None:
    """A second app (another terminal) opens the suspended thread: the card comes from the
    ``messages`` response and is the same card with the same text; answering it there works."""
    fake, shapes = shapes_fake
    first = make_app(make_client(fake, tmp_path / "one"))
    async with first.run_test(size=SIZE) as pilot:
        await first.wait_until_ready()
        live = await open_card(first, pilot, shape)
        live_text, live_class = card_text(live), type(live)
        thread_id = first.thread_id
    second_client = make_client(fake, tmp_path / "two")
    history = await second_client.messages(str(thread_id))
    restored_confirmations = [
        tc.confirmation
        for m in history.messages
        if m.agent_tree is not None
        for tc in m.agent_tree.tool_calls
        if tc.confirmation is not None
    ]
    assert len(restored_confirmations) == 1
    second = make_app(second_client, thread_id=thread_id)
    async with second.run_test(size=SIZE) as pilot:
        await second.wait_until_ready()
        card = await go_to_card(second, pilot)
        assert type(card) is live_class
        assert card_text(card) == live_text
        if shape != "unknown":
            await pilot.press("n")
            await until(lambda: len(shapes.bodies) == 1, pilot)
            await until(lambda: not second.thread.pending and not second.conversation.is_streaming, pilot)
    await second_client.close()


async def test_answered_cards_look_the_same_live_and_restored(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    """Once answered and finished, the tool call shows its outcome (no card) live and after a reload."""
    fake, _ = shapes_fake
    app = make_app(make_client(fake, tmp_path / "one"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await open_card(app, pilot, "mcp-connect")
        await pilot.press("enter")
        await until(lambda: not app.conversation.is_streaming and not app.thread.pending, pilot)
        live = app.view.assistant_turns()[-1].cards["call_mcp_connect"]
        await until(lambda: live.card is None, pilot)
        live_header, live_state = str(live.header.visual), live.state
        thread_id = app.thread_id
    again = make_app(make_client(fake, tmp_path / "two"), thread_id=thread_id)
    async with again.run_test(size=SIZE) as pilot:
        await again.wait_until_ready()
        await until(lambda: bool(again.view.assistant_turns()), pilot)
        await until(lambda: "call_mcp_connect" in again.view.assistant_turns()[-1].cards, pilot)
        restored = again.view.assistant_turns()[-1].cards["call_mcp_connect"]
        assert restored.card is None and not again.thread.pending
        assert (restored.state, str(restored.header.visual)) == (live_state, live_header)
        assert live_state == "done" and "mcp" in live_header


# --------------------------------------------------------------------------- dispatch without an app


def _conf(**fields: Any) -> Confirmation:
    return Confirmation.model_validate({"requestId": "r1", "severity": "info", "message": "m", **fields})


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"credentialRequests": [{"credentialType": "x", "reason": "", "existingCredentials": []}]}, "credentials"),
        ({"setupRequests": [{"node": {"name": "A"}, "isTrigger": False}], "workflowId": "w"}, "setup-workflow"),
        ({"setupRequests": [{"node": {"name": "A"}, "isTrigger": False}]}, "unknown"),  # no workflowId: cannot apply
        ({"credentialDestination": {"origin": "https://a.b", "nodeNames": ["A"]}}, "credential-destination"),
        ({"mcpConnectRequest": {"servers": []}}, "unknown"),
        ({"inputType": "preference-card"}, "unknown"),
        ({"inputType": "resource-decision", "resourceDecision": {"toolGroup": "fs", "resource": "/", "description": "",
                                                                 "options": ["allowOnce"]}}, None),
        ({"inputType": "questions", "questions": [{"id": "q", "question": "?", "type": "text"}]}, None),
        ({}, None),
        ({"inputThreadId": "t"}, None),  # a harmless scalar extra does not make it unknown
        # our server's approval with a diff preview stays the approval card
        ({"preview": {"summary": "new file, 2 lines", "diff": "+a\n+b\n", "language": "diff"}}, None),
    ],
)
def test_card_kind_dispatch(fields: dict[str, Any], kind: str | None) -> None:
    conf = _conf(**fields)
    assert n8n_cards.card_kind(conf) == kind
    card = build_card(ToolCallState(tool_call_id="c1"), conf)
    if kind is None:
        assert not isinstance(card, n8n_cards.N8nCard)
        if not fields:
            assert isinstance(card, ApprovalCard)
    else:
        assert isinstance(card, n8n_cards.CARD_CLASSES[kind])


async def test_the_fake_refuses_a_body_outside_n8ns_union(shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path) -> None:
    import httpx

    fake, _ = shapes_fake
    client = make_client(fake, tmp_path / "config")
    await client.open()
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{fake.base_url}/rest/instance-ai/confirm/nope",
            json={"kind": "domainAccessApprove", "domainAccessAction": "allow_forever"},
            headers=client.session.headers(),
        )
    assert response.status_code == 400
    assert response.json()["path"] == ["domainAccessAction"]
    await client.close()


def test_credentials_preselect_unless_the_user_must_choose() -> None:
    request = {"credentialType": "slackApi", "reason": "post", "existingCredentials": [{"id": "c1", "name": "Slack"}]}
    free = n8n_cards.CredentialsCard(ToolCallState(tool_call_id="c"), _conf(credentialRequests=[request]))
    assert free.chosen == {"slackApi": "c1"}
    must = n8n_cards.CredentialsCard(
        ToolCallState(tool_call_id="c"), _conf(credentialRequests=[request], requireUserSelection=True)
    )
    assert must.chosen == {}
    new = n8n_cards.CredentialsCard(ToolCallState(tool_call_id="c"), _conf(credentialRequests=[{**request, "preferNew": True}]))
    assert new.chosen == {}


@pytest.mark.parametrize(
    ("text", "param", "value"),
    [
        ("9", {"name": "hour", "type": "number"}, 9),
        ("1.5", {"name": "x", "type": "number"}, 1.5),
        ("yes", {"name": "on", "type": "boolean"}, True),
        ("off", {"name": "on", "type": "boolean"}, False),
        ("2", {"name": "mode", "type": "options", "options": [{"name": "Two", "value": 2}]}, 2),
        ("#general", {"name": "channel", "type": "string"}, "#general"),
        ("abc", {"name": "n", "type": "number"}, "abc"),  # not a number: sent as typed, n8n reports the issue
    ],
)
def test_setup_parameter_values_are_typed(text: str, param: dict[str, Any], value: Any) -> None:
    assert n8n_cards._typed(text, param) == value


@pytest.mark.parametrize(("browser_use", "connected"), [(False, False), (True, False), (True, True)])
async def test_auto_setup_is_offered_only_when_the_instance_can(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path, browser_use: bool, connected: bool
) -> None:
    """Issue 27: "n8n sets it up" was offered with browser use off; n8n answered needsBrowserSetup.
    The card reads the instance's module settings and browser status (as n8n's own card does)."""
    fake, shapes = shapes_fake
    fake.browser_use_enabled, fake.browser_connected = browser_use, connected
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "credentials-new")
        assert isinstance(card, n8n_cards.CredentialsCard)
        assert card.chosen == {"slackApi": "cred_s1"}  # the only Slack credential: preselected
        await pilot.press("down")  # notionApi: no credential of this type
        can = browser_use and connected
        # the card read the capabilities again when it was mounted
        await until(lambda: not [w for w in app.workers if w.group == "capabilities" and not w.is_finished], pilot)
        assert "s n8n sets it up" not in card_text(card)  # never offered when it cannot work as it says
        await pilot.press("s")
        # with the instance able to, the Slack pick on this card would be lost: refused too, with the way out
        expected = ("your pick for slackApi would be lost" if can else
                    "browser use is off" if not browser_use else "no browser is connected")
        await until(lambda: any(expected in n.message for n in app._notifications), pilot,
                    what=f"a note saying {expected!r}")
        assert shapes.bodies == [] and not card.answered
        if not can:
            assert "create one in n8n (http://127.0.0.1:" in card_text(card)
        await pilot.press("enter", "enter")  # the Slack pick is kept and sent
        assert (await answered(shapes, pilot)) == [
            ("credentials-new", {"kind": "credentialSelection", "credentials": {"slackApi": "cred_s1"}})]


async def test_auto_setup_alone_when_nothing_else_was_chosen(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    fake, shapes = shapes_fake
    fake.browser_use_enabled = fake.browser_connected = True
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "credentials-new")
        assert isinstance(card, n8n_cards.CredentialsCard)
        card.chosen.clear()  # as if the person had not kept the preselected Slack credential
        await pilot.press("down")
        await until(lambda: "s n8n sets it up" in card_text(card), pilot)
        await pilot.press("s")
        assert (await answered(shapes, pilot)) == [
            ("credentials-new", {"kind": "credentialAutoSetup", "credentialType": "notionApi"})]


async def test_a_card_of_a_run_started_by_another_client_is_reached_and_answered_like_the_others(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    """Issue 27: a run another client (a browser tab, curl) started on the open thread shows its card
    like the app's own: Ctrl+G reaches it, the same keys answer it."""
    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    other = make_client(fake, tmp_path / "other-config")
    async with app.run_test(size=SIZE) as pilot:
        await a_thread_answered(app, pilot)
        await other.send(app.thread_id, "shape:domain-access")  # as curl would POST /chat/<thread>
        card = await go_to_card(app, pilot)
        assert type(card) is n8n_cards.DomainAccessCard
        assert "docs.example.com" in card_text(card)
        await pilot.press("y")
        assert (await answered(shapes, pilot)) == [
            ("domain-access", {"kind": "domainAccessApprove", "domainAccessAction": "allow_once"})]
        await until(lambda: not app.thread.pending and not app.conversation.is_streaming, pilot)
    await other.close()


async def test_a_card_keeps_the_focus_and_its_key_when_another_clients_message_is_shown_above_its_answer(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    """Another client's user message is read from n8n's history after its run's card may already have
    the focus (CI saw the key lost: the view was rebuilt, the card replaced, ``y`` went nowhere). The
    message is mounted above its answer; the card the person is on stays, focused, and ``y`` answers it."""
    from instance_ai_tui.tui.widgets.turns import AssistantTurn, UserMessage
    from tests.support.cards import focused_card

    fake, shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        card = await open_card(app, pilot, "domain-access")
        answer = app.conversation.messages[-1]
        assert answer.role == "assistant"
        assert app.conversation.insert_user_message(answer.id, "msg-from-a-browser-tab", "from another tab")
        await until(lambda: any(w.message_id == "msg-from-a-browser-tab" for w in app.query(UserMessage)), pilot,
                    what="the other client's message shown")
        assert card.is_attached and focused_card(app) is card
        shown = [w for w in app.view.children if isinstance(w, (UserMessage, AssistantTurn))]
        above = shown[shown.index(next(w for w in shown if isinstance(w, AssistantTurn) and card in w.walk_children()))
                      - 1]
        assert isinstance(above, UserMessage) and above.message_id == "msg-from-a-browser-tab"
        await pilot.press("y")
        assert (await answered(shapes, pilot)) == [
            ("domain-access", {"kind": "domainAccessApprove", "domainAccessAction": "allow_once"})]


async def test_a_message_put_above_an_answer_that_came_in_the_same_frame_is_shown_above_it(
    shapes_fake: tuple[FakeN8n, ShapeScript], tmp_path: Path
) -> None:
    """A client whose ``send`` returns after the run's answer was published (the Redis chat webhook) has
    its bubble put above that answer; when both reach the view in one frame the bubble is still mounted,
    above the answer (CI saw it missing: the answer was not mounted yet when the bubble looked for it)."""
    from instance_ai_tui.protocol.events import RunStartEvent, RunStartPayload, TextDeltaEvent, TextPayload
    from instance_ai_tui.protocol.ingest import StreamItem
    from instance_ai_tui.tui.widgets.turns import AssistantTurn, UserMessage

    fake, _shapes = shapes_fake
    app = make_app(make_client(fake, tmp_path / "config"))
    async with app.run_test(size=SIZE) as pilot:
        await a_thread_answered(app, pilot)
        run, agent = "run-same-frame", "agent-same-frame"
        app.conversation.fold([
            StreamItem(None, RunStartEvent(run_id=run, agent_id=agent, payload=RunStartPayload(message_id="answer-x"))),
            StreamItem(None, TextDeltaEvent(run_id=run, agent_id=agent, payload=TextPayload(text="the answer"))),
        ])
        app.thread.sent(run, "the question")  # in the same turn of the loop: one frame draws both
        message = app.conversation.message_for_run(run)
        assert message is not None
        await until(lambda: any(isinstance(w, AssistantTurn) and w.message_id == message.id
                                for w in app.view.children), pilot, what="the answer drawn")
        await pilot.pause()
        shown = [w for w in app.view.children if isinstance(w, (UserMessage, AssistantTurn))]
        answer = next(i for i, w in enumerate(shown) if isinstance(w, AssistantTurn) and w.message_id == message.id)
        assert isinstance(shown[answer - 1], UserMessage) and shown[answer - 1].text == "the question"


@pytest.mark.parametrize(("options", "always"), [
    (["denyOnce", "allowOnce", "allowForSession"], True),
    (["denyOnce", "allowOnce"], False),  # the gateway does not offer a session grant: no "always allow"
])
def test_a_resource_decision_offers_only_the_gateways_options(options: list[str], always: bool) -> None:
    conf = _conf(inputType="resource-decision",
                 resourceDecision={"toolGroup": "filesystemRead", "resource": "a.txt", "description": "d",
                                   "options": options})
    card = build_card(ToolCallState(tool_call_id="c1"), conf)
    assert isinstance(card, ApprovalCard) and card._supports_always() is always


@pytest.mark.parametrize("fields", [
    {"severity": "destructive", "message": "Delete Slack account"},  # n8n's credentials delete
    {"severity": "destructive", "message": "Permanently delete the table and all its rows",
     "approvalDetails": {"action": "delete-table"}},  # n8n's data-tables delete
    {"severity": "warning", "message": "Run it?", "targetApproval": {"toolName": "t", "args": {}}},
])
def test_no_always_allow_where_n8ns_own_card_offers_none(fields: dict[str, Any]) -> None:
    """n8n 2.41's card (``InstanceAiConfirmationPanel``) offers "always allow" only when the request
    is not destructive and not another agent's tool; so do ours, in every mode (one card class)."""
    card = build_card(ToolCallState(tool_call_id="c1", tool_name="credentials"), _conf(**fields))
    assert card.check_action("always_allow", ()) is False
    if isinstance(card, ApprovalCard):
        assert not card._supports_always()
    else:
        assert isinstance(card, n8n_cards.N8nCard) and not card.offers_always


@pytest.mark.parametrize(("message", "title"), [
    # n8n 2.41.1's build-agent approval carries no words of its own (map-chunk's fallback): say who asks
    ("Confirmation required", "WARNING  The agent under test wants to run Clock"),
    ("", "WARNING  The agent under test wants to run Clock"),
    ("Run the clock of My agent?", "WARNING  Run the clock of My agent?"),  # words n8n chose: kept
])
def test_a_target_approval_says_which_tool_the_agent_under_test_wants(message: str, title: str) -> None:
    fields = {"severity": "warning", "message": message,
              "targetApproval": {"toolName": "clock", "displayName": "Clock", "args": {}}}
    card = build_card(ToolCallState(tool_call_id="c1", tool_name="build-agent"), _conf(**fields))
    assert isinstance(card, n8n_cards.TargetApprovalCard)
    assert card.title().plain.endswith(title), card.title().plain
