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

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.tui.widgets import n8n_cards
from tests.support.cards import go_to_card
from tests.support.openai_server import MockResponse
from tests.support.waiting import until, until_async

from .driving import SIZE, app_on_new_thread, send, thread_open

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


async def test_a_real_n8n_domain_access_request_answered_by_keys(
    n8n: Any, model: Any, responder: Callable[[Any], None], tmp_path: Path
) -> None:
    responder(respond)
    await answer_once(n8n, model.server, "d", "ENOTFOUND", tmp_path)  # allowed: n8n really fetched (offline)
    await answer_once(n8n, model.server, "n", "denied", tmp_path)


async def answer_once(peer: Any, llm: Any, key: str, expect: str, tmp_path: Path) -> None:
    client, thread, app = await app_on_new_thread(peer, tmp_path / f"cfg-{key}")
    async with app.run_test(size=SIZE) as pilot:
        await thread_open(app, pilot, thread)
        await send(app, pilot, f"{MARK}: read {URLS[key]}")
        try:
            await until(lambda: bool(app.thread.pending), pilot, 90)
        except AssertionError:
            conversation = app.conversation
            shown = [(m.role, m.content[:100]) for m in conversation.messages] if conversation else []
            raise AssertionError(
                f"no card for {key}: thread {app.thread_id}, messages {shown}, "
                f"notes {[n.message for n in app._notifications]}, model calls {len(llm.requests)}\n{peer.log_tail(15)}"
            ) from None
        card = await go_to_card(app, pilot)
        assert isinstance(card, n8n_cards.DomainAccessCard), (key, app.focused)
        assert URLS[key].split("/")[2] in str(card.details.visual)
        await pilot.press(key)
        if key in ("d", "a"):  # a grant that lasts: the letter says what it grants, Enter grants it (issue 32)
            await pilot.press("enter")
        await until(lambda: not app.thread.pending, pilot, 30)
        events: list[str] = []

        async def outcome_published() -> bool:  # n8n publishes the tool's outcome once it resumed
            events[:] = [json.dumps(e) for e in await _events(client, str(app.thread_id))]
            return any('"tool-error"' in e or '"tool-result"' in e for e in events)

        await until_async(outcome_published, 60, "the tool's outcome in the thread's events", interval=1.0)
        outcome = [e for e in events if '"tool-error"' in e or '"tool-result"' in e]
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
