"""A long thread opens with its newest page of history (what n8n's own frontend asks for);
Home at the first message of the page loads the whole thread, at the message that was first."""

from __future__ import annotations

from pathlib import Path

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.store.sqlite import SqliteStore
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.threads import HISTORY_PAGE
from tests.support.finished_runs import fill_runs
from tests.support.waiting import until

from .scripts import SIZE


async def test_a_long_thread_opens_with_its_newest_page_and_home_loads_the_rest(tmp_path: Path) -> None:
    runs = HISTORY_PAGE // 2 + 10  # 120 messages: 20 beyond the first page
    db = tmp_path / "long.sqlite3"
    async with SqliteStore(db) as store:
        await fill_runs(store, "long", runs)
    settings = Settings(db_path=db, workspace_root=tmp_path, model=ModelSettings(name="demo"))
    app = InstanceAiApp(EmbeddedClient(settings), settings, thread_id="long", watch_themes=False, persist_theme=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        conversation = app.conversation
        assert conversation is not None and len(conversation.messages) == HISTORY_PAGE
        first_of_page = conversation.messages[0].id
        view = app.view
        assert view.more_on_server
        # Home until the page's first message is mounted: the line above it offers the rest
        view.focus()
        for _ in range(30):
            if view.first_index == 0:
                break
            await pilot.press("home")
            await pilot.pause()
        assert view.first_index == 0 and "load the whole thread" in str(view.older.render())
        await pilot.press("home")
        await until(lambda: app.conversation is not None and len(app.conversation.messages) == 2 * runs, pilot)
        await until(lambda: first_of_page in app.view.turns, pilot)
        assert not app.view.more_on_server
        answers = [m for m in app.conversation.messages if m.role == "assistant"]
        assert "Answer 0:" in answers[0].reducer.tree().text_content
