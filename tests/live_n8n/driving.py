"""Drive the real app against the real n8n, as the live TUI tests all do: a client logged in to
the peer, the app opened on a thread of its own, a message typed and sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets.confirmations import ConfirmCard
from tests.support.cards import go_to_card
from tests.support.waiting import until

SIZE = (120, 44)


def peer_client(peer: Any, config_dir: Path) -> N8nClient:
    """An ``N8nClient`` logged in to the live peer with its owner's password (no prompt)."""
    return N8nClient(peer.url, peer.email, peer.password, config_dir=config_dir, interactive=False)


def make_app(client: N8nClient, **kwargs: Any) -> InstanceAiApp:
    """The real app on ``client`` (no theme watching or saving)."""
    return InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, **kwargs)


async def app_on_new_thread(peer: Any, config_dir: Path, **kwargs: Any) -> tuple[N8nClient, str, InstanceAiApp]:
    """A client, a thread of its own made through it (the app would open the latest one), and the
    app that will open that thread."""
    client = peer_client(peer, config_dir)
    thread = await client.create_thread()
    return client, thread.id, make_app(client, thread_id=thread.id, **kwargs)


async def thread_open(app: InstanceAiApp, pilot: Any, thread_id: str, timeout: float = 30) -> None:
    """Until the app is ready with ``thread_id`` open."""
    await app.wait_until_ready()
    await until(lambda: app.thread_id == thread_id and app.conversation is not None, pilot, timeout,
                f"thread {thread_id} open")


async def send(app: InstanceAiApp, pilot: Any, text: str) -> None:
    """Type ``text`` in the prompt and send it with Enter."""
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


@asynccontextmanager
async def card_reached(peer: Any, config_dir: Path, message: str, *, timeout: float = 90,
                       **app_kwargs: Any) -> AsyncIterator[tuple[InstanceAiApp, Any, ConfirmCard]]:
    """The app on a thread of its own, ``message`` sent, and the card n8n's run asks with reached by
    Ctrl+G (taking keys): ``async with card_reached(...) as (app, pilot, card)``."""
    _client, thread, app = await app_on_new_thread(peer, config_dir, **app_kwargs)
    async with app.run_test(size=SIZE) as pilot:
        await thread_open(app, pilot, thread)
        await send(app, pilot, message)
        yield app, pilot, await go_to_card(app, pilot, timeout)


def texts(app: InstanceAiApp) -> list[str]:
    """The open conversation's messages' texts, in order."""
    conversation = app.conversation
    return [str(m.content) for m in conversation.messages] if conversation is not None else []
