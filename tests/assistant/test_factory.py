"""The assistant's composition root and its error boundary, on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from instance_ai_tui.assistant.errors import ThreadNotFound
from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.assistant.service import InstanceAI
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.store.base import ThreadNotFound as StoreThreadNotFound


def settings(tmp_path: Path) -> Settings:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return Settings(db_path=tmp_path / "data" / "threads.sqlite3", workspace_root=workspace,
                    model=ModelSettings(name="demo"))


async def test_build_service_wires_the_assistant_to_a_sqlite_file(tmp_path: Path) -> None:
    service = build_service(settings(tmp_path), demo_delay=0.0, generate_titles=False)
    assert isinstance(service, InstanceAI) and service.options.generate_titles is False
    await service.start()
    try:
        created = await service.create_thread("t-1", title="First")
        assert (await service.get_thread("t-1")).title == created.title == "First"
    finally:
        await service.shutdown()
    assert (tmp_path / "data" / "threads.sqlite3").is_file()  # the folder was made for it


async def test_the_store_error_of_a_thread_deleted_meanwhile_becomes_the_assistants(tmp_path: Path) -> None:
    service = build_service(settings(tmp_path), demo_delay=0.0, generate_titles=False)
    await service.start()
    try:
        await service.create_thread("gone")
        await service.store.delete_thread("gone")  # e.g. another process on the same file
        with pytest.raises(ThreadNotFound, match="'gone' not found") as caught:
            await service.rename_thread("gone", "New title")  # the store raises its own KeyError here
        assert not isinstance(caught.value, StoreThreadNotFound)
        with pytest.raises(ThreadNotFound):
            await service.messages("gone")
    finally:
        await service.shutdown()
