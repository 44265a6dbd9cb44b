"""Live: a real n8n 2.41.1 asks for domain access offline, and the card answers it (issue 16).

n8n's ``research`` tool (``fetch-url``) suspends with a ``domainAccess`` confirmation for a host
not yet allowed. The model is the suite's scripted OpenAI wire-format server. The real app and
``N8nClient``: ``d`` on the card (allow the domain) makes n8n really fetch (offline:
``ENOTFOUND``), ``n`` (another host) makes n8n's tool answer "denied".
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets import n8n_cards
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ConfirmCard
from tests.support.openai_server import MockResponse

MARK = "h16-live-domain"
#: one host per answer: "allow the domain" is remembered by n8n, so the next fetch there would not ask
URLS = {"d": "https://docs.example.org/page", "n": "https://other.example.org/page"}


def respond(body: dict[str, Any]) -> MockResponse:
    messages = body.get("messages") or []
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    if MARK not in json.dumps(user.get("content")):
        return MockResponse(text="Live thread")  # titles and other side calls
    if messages and messages[-1].get("role") == "tool":
        return MockResponse(text="H16-LIVE-DONE")
    if "research" in tools:
        url = re.search(r"read (https://[^\s\"\\]+)", json.dumps(user.get("content")))
        return MockResponse.call("research", {"action": "fetch-url", "url": url.group(1) if url else URLS["d"]})
    return MockResponse(text="no research tool offered")


def focused_card(app: InstanceAiApp) -> ConfirmCard | None:
    node = app.focused
    while node is not None and not isinstance(node, ConfirmCard):
        node = node.parent
    return node


async def until(predicate: Any, pilot: Any, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached in {timeout} s (line {predicate.__code__.co_firstlineno})")
        await pilot.pause(0.1)


async def test_a_real_n8n_domain_access_request_answered_by_keys(
    n8n: Any, model: Any, responder: Callable[[Any], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "xdg-config" / "config.toml"))
    responder(respond)
    await answer_once(n8n, model.server, "d", "ENOTFOUND", tmp_path)  # allowed: n8n really fetched (offline)
    await answer_once(n8n, model.server, "n", "denied", tmp_path)


async def answer_once(peer: Any, llm: Any, key: str, expect: str, tmp_path: Path) -> None:
    client = N8nClient(peer.url, peer.email, peer.password, config_dir=tmp_path / f"cfg-{key}", interactive=False)
    thread = await client.create_thread()  # a thread of its own (the app would open the latest one)
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, thread_id=thread.id)
    async with app.run_test(size=(120, 44)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.thread_id == thread.id and app.conversation is not None, pilot, 30)
        await pilot.pause(0.5)
        app.prompt.focus()
        app.prompt.load_text(f"{MARK}: read {URLS[key]}")
        await pilot.press("enter")
        try:
            await until(lambda: bool(app.pending), pilot, 90)
        except AssertionError:
            conversation = app.conversation
            shown = [(m.role, m.content[:100]) for m in conversation.messages] if conversation else []
            raise AssertionError(
                f"no card for {key}: thread {app.thread_id}, messages {shown}, "
                f"notes {[n.message for n in app._notifications]}, model calls {len(llm.requests)}\n{peer.log_tail(15)}"
            ) from None
        for _ in range(20):  # Ctrl+G until the card keeps the focus
            card = focused_card(app)
            if card is not None and card.is_attached:
                break
            await pilot.press("ctrl+g")
            await pilot.pause(0.3)
        assert isinstance(card, n8n_cards.DomainAccessCard), (key, app.focused)
        await pilot.pause(GRACE_SECONDS + 0.05)
        assert URLS[key].split("/")[2] in str(card.details.visual)
        await pilot.press(key)
        if key in ("d", "a"):  # a grant that lasts: the letter says what it grants, Enter grants it (issue 32)
            await pilot.press("enter")
        await until(lambda: not app.pending, pilot, 30)
        outcome: list[str] = []
        events: list[str] = []
        for _ in range(60):  # n8n publishes the tool's outcome once it resumed
            events = [json.dumps(e) for e in await _events(client, str(app.thread_id))]
            outcome = [e for e in events if '"tool-error"' in e or '"tool-result"' in e]
            if outcome:
                break
            await pilot.pause(1.0)
        assert any("domainAccess" in e and "confirmation-request" in e for e in events)
        assert outcome and expect.lower() in outcome[0].lower(), outcome
        card_after = [c for c in app.query(n8n_cards.DomainAccessCard) if not c.answered]
        assert not card_after  # no second card: the answer was taken


async def _events(client: N8nClient, thread_id: str) -> list[dict[str, Any]]:
    """The thread's persisted events (a full replay, up to the last id the history names)."""
    history = await client.messages(thread_id)
    last = history.next_event_id - 1
    out: list[dict[str, Any]] = []

    async def read() -> None:
        async for item in client.events(thread_id, after=None):
            if item.event is not None:
                out.append({"type": item.event.type, "payload": item.event.payload.to_wire()})
            if item.id is not None and item.id >= last:
                return

    await asyncio.wait_for(read(), 30)
    return out
