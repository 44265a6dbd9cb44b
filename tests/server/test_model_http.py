"""``GET models`` and ``PUT threads/:threadId/model`` on our server, through ``RemoteClient``."""

from __future__ import annotations

from pathlib import Path

import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app

from .live import serve_app


async def test_models_and_switching_over_http(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo", choices=["qwen2.5:7b"]))
    async with serve_app(create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)) as url:
        client = RemoteClient(url)
        await client.open()
        try:
            listed = await client.list_models()
            assert listed.current == listed.default and listed.current.startswith("demo")
            await client.create_thread("t1")
            with pytest.raises(ClientError, match="cannot be used"):  # no API key for a real model
                await client.set_model("t1", "qwen2.5:7b")
            thread = await client.set_model("t1", "demo")
            assert "model" not in thread.metadata  # the default: nothing stored
            assert (await client.list_models("t1")).current.startswith("demo")
            with pytest.raises(ClientError):
                await client.list_models("bad id!")
        finally:
            await client.close()
