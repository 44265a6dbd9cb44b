"""Issue 33: the small defects a daily user meets, each checked in the real app (Pilot)."""

from __future__ import annotations

from pathlib import Path

from server.live import serve_app

from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from instance_ai_tui.server.service_factory import build_service

from .test_connection import SIZE, make_app, screen_text


async def test_a_demo_server_by_url_shows_the_demo_banner(tmp_path: Path) -> None:
    """Item 7: connected by --url to a server whose model is the offline demo, the banner says so
    (the remote client learns the model only when it opens, after the first frame)."""
    settings = Settings(db_path=tmp_path / "s.sqlite3", model=ModelSettings(name="demo"))
    async with serve_app(create_app(build_service(settings))) as url:
        app = make_app(RemoteClient(url))
        async with app.run_test(size=SIZE):
            await app.wait_until_ready()
            assert app.status_info.demo
            assert len(app.query("#demo-banner")) == 1
            assert "DEMO MODE" in screen_text(app)
