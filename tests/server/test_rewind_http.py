"""``POST threads/:threadId/rewind`` on our server, through ``RemoteClient.rewind``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from tests.support.waiting import until_settled

from .live import serve_app


async def _settled(client: Any, thread_id: str) -> None:
    await until_settled(client, thread_id)


async def test_rewind_over_http(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    async with serve_app(create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)) as url:
        client = RemoteClient(url)
        await client.open()
        try:
            await client.create_thread("t1")
            await client.send("t1", "what can you do?")
            await _settled(client, "t1")
            user = next(m for m in (await client.messages("t1")).messages if m.role == "user")
            result = await client.rewind("t1", user.id)
            assert result.text == "what can you do?" and len(result.superseded_run_ids) == 1
            assert all(m.superseded for m in (await client.messages("t1")).messages)
            with pytest.raises(ClientError):
                await client.rewind("t1", "")
        finally:
            await client.close()
