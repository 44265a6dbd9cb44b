"""Full-text thread search over HTTP: our server's ``GET threads?search=`` and ``RemoteClient.search_threads``."""

from __future__ import annotations

from pathlib import Path

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from tests.support.waiting import until_settled

from .live import serve_app


async def test_remote_search_finds_message_text(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    app = create_app(build_service(settings, demo_delay=0.0), ping_interval=0.5)
    async with serve_app(app) as url:
        client = RemoteClient(url)
        await client.open()
        try:
            await client.create_thread("t-fish", "Plain title")
            await client.create_thread("t-other", "Other thread")
            await client.send("t-fish", "what can you do? I keep zebrafish")
            await until_settled(client, "t-fish")
            found = await client.search_threads("zebrafish")
            assert [t.id for t in found] == ["t-fish"]
            assert [t.id for t in await client.search_threads("other")] == ["t-other"]  # titles too
            assert await client.search_threads("unicorns") == []
        finally:
            await client.close()
