"""Reach a confirmation card as a person does (Ctrl+G), for Pilot tests against n8n, fake or real.

A card takes keys only once the person went to it, and ignores them for its grace period after
it was brought to the eyes (issue 32): ``go_to_card`` returns the focused card once it takes keys,
waiting on those conditions rather than for fixed times.
"""

from __future__ import annotations

import asyncio
from typing import Any

from instance_ai_tui.tui.widgets.confirmations import ConfirmCard

from .waiting import DEFAULT_TIMEOUT, until


def focused_card(app: Any) -> ConfirmCard | None:
    """The card holding the focus (the focused widget or one of its ancestors), if any."""
    node = app.focused
    while node is not None and not isinstance(node, ConfirmCard):
        node = node.parent
    return node


async def go_to_card(app: Any, pilot: Any, timeout: float = DEFAULT_TIMEOUT) -> ConfirmCard:
    """Wait for a pending card, then Ctrl+G until a card has the focus, is past its grace period and
    still has the focus then (a card drawn from the history is rebuilt when the stream's
    ``run-sync`` frame arrives, so the first one reached may go away)."""
    await until(lambda: bool(app.thread.pending) and bool(app.query(ConfirmCard)), pilot, timeout, "a pending card")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        await pilot.press("ctrl+g")
        await pilot.pause()  # the focus moved and the screen was refreshed (no fixed time)
        card = focused_card(app)
        if card is None or not card.is_attached:
            continue
        await until(lambda: not card.in_grace or not card.is_attached, pilot, timeout,  # noqa: B023
                    "the card past its key grace period")
        if card.is_attached and focused_card(app) is card:
            return card
    raise AssertionError(f"Ctrl+G reached no card that kept the focus in {timeout} s")


def card_text(card: ConfirmCard) -> str:
    """The text of the card's shown parts (its outcome line left out)."""
    from textual.widgets import Static

    return "\n".join(str(w.visual) for w in card.query(Static) if w.display and "card-outcome" not in w.classes)
