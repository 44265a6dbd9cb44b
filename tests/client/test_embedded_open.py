"""Opening the embedded client builds the in-process assistant (the model's HTTP client and its TLS
context, the store, the tools: 60-140 ms of CPU, profiled per loop turn in issue 44) in a thread: on the
event loop it was one turn, after the app's first frame, that keys typed at start waited for."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from instance_ai_tui.assistant import factory
from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings


async def test_the_assistant_is_built_off_the_event_loop_and_works(tmp_path: Path, monkeypatch) -> None:
    loop_thread = threading.get_ident()
    built_on: list[int] = []
    real = factory.build_service

    def build_service(*args, **kwargs):  # type: ignore[no-untyped-def]
        built_on.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(factory, "build_service", build_service)
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})
    async with EmbeddedClient(settings, demo_delay=0.001) as client:
        assert len(built_on) == 1 and built_on[0] != loop_thread
        thread = await client.create_thread(title="built in a thread")  # and the assistant works
        await client.send(thread.id, "hello")
        assert [t.id for t in await client.list_threads()] == [thread.id]


async def test_an_assistant_that_cannot_be_built_is_a_clear_error(tmp_path: Path) -> None:
    """Its failure still comes back from ``open`` as the client's error (from the thread)."""
    (tmp_path / "file").write_text("not a folder")
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "file" / "db.sqlite3"})
    with pytest.raises(ClientError):
        await EmbeddedClient(settings).open()
