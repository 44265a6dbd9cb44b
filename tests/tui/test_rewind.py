"""Retry, edit and rewind on the product path (EmbeddedClient + demo model + SQLite), and over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.tui.screens.rewind import RewindPicker
from instance_ai_tui.tui.widgets.turns import UserMessage
from tests.support.waiting import until_async

from .scripts import make_app, recorded
from .test_embedded import settings_for, type_and_send, until


async def _settled(client: Any, thread_id: str) -> None:
    async def finished() -> bool:
        status = await client.status(thread_id)
        return not status.has_active_run and not status.is_suspended

    await until_async(finished, what=f"the run of {thread_id} finished")


async def _user_texts_in_context(client: EmbeddedClient, thread_id: str) -> list[str]:
    memory = StoreMemory(client.service.store)  # type: ignore[attr-defined]
    return [m.text for m in await memory.load_history(thread_id) if m.role == "user"]


async def test_rewind_keeps_history_and_drops_the_turns_from_the_context(tmp_path: Path) -> None:
    client = EmbeddedClient(settings_for(tmp_path), demo_delay=0.0)
    async with client:
        thread = (await client.create_thread()).id
        for text in ("what can you do?", "list my workflows"):
            await client.send(thread, text)
            await _settled(client, thread)
        history = await client.messages(thread)
        second = [m for m in history.messages if m.role == "user"][1]
        assert await _user_texts_in_context(client, thread) == ["what can you do?", "list my workflows"]
        result = await client.rewind(thread, second.id)
        assert result.text == "list my workflows" and len(result.superseded_run_ids) == 1
        assert await _user_texts_in_context(client, thread) == ["what can you do?"]
        history = await client.messages(thread)
        assert [(m.role, m.superseded) for m in history.messages] == [
            ("user", False), ("assistant", False), ("user", True), ("assistant", True)]
        await client.send(thread, "list my workflows, please")
        await _settled(client, thread)
        assert await _user_texts_in_context(client, thread) == ["what can you do?", "list my workflows, please"]
        with pytest.raises(ClientError, match="no user message"):
            await client.rewind(thread, "no-such-message")


async def test_retry_and_edit_in_the_app(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    client = EmbeddedClient(settings, demo_delay=0.0)
    app = make_app(client, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "what can you do?")
        await until(lambda: app.thread_id is not None and len(app.view.assistant_turns()) == 1
                    and not app.conversation.is_streaming, pilot)
        await type_and_send(pilot, app, "list my workflows")
        await until(lambda: len(app.view.assistant_turns()) == 2 and not app.conversation.is_streaming, pilot)
        thread = app.thread_id
        # /retry: the last message again; the old answer leaves the screen and the context
        shown = [m.id for m in app.conversation.messages]
        await type_and_send(pilot, app, "/retry")
        await until(lambda: [m.id for m in app.conversation.messages] != shown and len(app.view.assistant_turns()) == 2
                    and not app.conversation.is_streaming, pilot)
        history = await client.messages(thread)
        assert [m.superseded for m in history.messages if m.role == "user"] == [False, True, False]
        assert [m.content for m in history.messages if m.role == "user" and not m.superseded] == [
            "what can you do?", "list my workflows"]
        # e on the first message: back to it, its text in the prompt to edit
        first = next(w for w in app.query(UserMessage) if w.text == "what can you do?")
        first.focus()
        await pilot.press("e")
        await until(lambda: app.prompt.text == "what can you do?", pilot)
        assert [m.role for m in app.conversation.messages] == []  # everything after it (and it) rewound
        history = await client.messages(thread)
        assert [m.superseded for m in history.messages if m.role == "user"] == [True, True, True]
        assert await _user_texts_in_context(client, thread) == []
        # /rewind with nothing left to rewind: says so
        await type_and_send(pilot, app, "/rewind")
        await until(lambda: any("Nothing to go back to" in n.message for n in app._notifications), pilot)
        assert not isinstance(app.screen, RewindPicker)


async def test_rewind_picker_goes_back_to_the_chosen_message(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    client = EmbeddedClient(settings, demo_delay=0.0)
    app = make_app(client, settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        for n, text in enumerate(("what can you do?", "list my workflows", "show my executions"), start=1):
            await type_and_send(pilot, app, text)
            # this message's answer is in (the send is a worker: until it ran, the previous answer
            # looked the same, and on a busy machine the next message went while this one ran)
            await until(lambda n=n: [m.role for m in app.conversation.messages].count("user") == n
                        and not app.conversation.is_streaming and app.conversation.messages[-1].role == "assistant",
                        pilot)
        await type_and_send(pilot, app, "/rewind")
        await until(lambda: isinstance(app.screen, RewindPicker), pilot)
        await pilot.press("down", "enter")  # newest first: the second message
        await until(lambda: app.prompt.text == "list my workflows", pilot)
        assert [m.content for m in app.conversation.messages if m.role == "user"] == ["what can you do?"]


async def test_servers_that_cannot_rewind_say_so() -> None:
    app = make_app(recorded())
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "/retry")
        await until(lambda: any("cannot rewind" in str(n.message) for n in app._notifications), pilot)
