"""Thread search is full text on the product path: EmbeddedClient + SQLite's index, in the real app."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from instance_ai_tui.client.embedded import EmbeddedClient

from .scripts import make_app
from .test_embedded import settings_for, type_and_send, until


async def test_search_finds_a_thread_by_the_words_of_its_messages(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    client = EmbeddedClient(settings, demo_delay=0.0)
    app = make_app(client, settings)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "what can you do? mention zebrafish in passing")
        await until(lambda: app.thread_id is not None and not app.conversation.is_streaming, pilot)
        first = app.thread_id
        await client.rename_thread(first, "Plain title")
        await client.create_thread("other", "Another plain title")
        app.thread_list.set_threads(await client.list_threads())
        app.thread_list.focus_search()
        await pilot.press(*"zebraf")
        threads = app.thread_list
        await until(lambda: threads.visible_thread_ids() == [first], pilot)
        options = threads.query_one("#thread-options")
        console = Console(width=60, record=True)
        console.print(options.get_option_at_index(1).prompt)
        assert "Plain title · in messages" in console.export_text()
        await pilot.press(*"x")  # "zebrafx": nothing
        await until(lambda: threads.visible_thread_ids() == [], pilot)
        await pilot.press("backspace", *"ish")
        await until(lambda: threads.visible_thread_ids() == [first], pilot)
        await pilot.press("enter")
        await until(lambda: app.thread_id == first, pilot)
