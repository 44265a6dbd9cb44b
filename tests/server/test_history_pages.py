"""History by page (n8n's ``?limit=&page=``): a page reads only its runs; pages put together
are the whole history; bad values are refused with a clear 400."""

from __future__ import annotations

from pathlib import Path

import httpx

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.server.app import create_app
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.finished_runs import fill_runs

from .live import serve_app

API = "/instance-ai"


async def test_pages_of_a_long_thread_make_up_its_whole_history(tmp_path: Path) -> None:
    db = tmp_path / "pages.sqlite3"
    async with SqliteStore(db) as store:
        await fill_runs(store, "long", 23)
    settings = Settings(db_path=db, workspace_root=tmp_path, model=ModelSettings(name="demo"))
    app = create_app(build_service(settings))
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API, timeout=20) as http:
        whole = (await http.get("/threads/long/messages")).json()
        assert len(whole["messages"]) == 46 and whole.get("hasMore") is None
        ids = [m["id"] for m in whole["messages"]]

        newest = (await http.get("/threads/long/messages", params={"limit": "10"})).json()
        assert newest["hasMore"] is True and newest["nextEventId"] == whole["nextEventId"]
        assert [m["id"] for m in newest["messages"]] == ids[-10:]
        assert newest["messages"][-1]["role"] == "assistant" and "Answer 22" in newest["messages"][-1]["content"]

        pages: list[list[str]] = []
        for page in range(10):
            body = (await http.get("/threads/long/messages", params={"limit": "10", "page": str(page)})).json()
            if not body["messages"]:
                assert body["hasMore"] is False
                break
            pages.append([m["id"] for m in body["messages"]])
        assert [i for page_ids in reversed(pages) for i in page_ids] == ids
        assert len(pages) == 5  # 23 runs, 5 per page

        # an odd limit: a page holds the runs of that many messages, rounded up
        odd = (await http.get("/threads/long/messages", params={"limit": "3"})).json()
        assert [m["id"] for m in odd["messages"]] == ids[-4:]

        for params in ({"limit": "0"}, {"limit": "201"}, {"limit": "ten"}, {"limit": "²"}, {"page": "-1"},
                       {"limit": "10", "page": "1001"}):
            response = await http.get("/threads/long/messages", params=params)
            assert response.status_code == 400, params
            assert "must be an integer from" in response.text


async def test_a_page_reads_its_runs_not_the_threads(tmp_path: Path) -> None:
    """Opening a long thread reads a page of its run records, whatever its length (issue 44.5: the
    cold restore's memory grew with the thread when every record was read to choose the page)."""
    from typing import Any

    from instance_ai_tui.assistant.history import thread_messages

    class Counting(SqliteStore):
        """The real store, counting the run records it hands over."""

        records_read = 0

        async def list_runs(self, *args: object, **kwargs: object) -> list:  # type: ignore[override]
            records = await super().list_runs(*args, **kwargs)  # type: ignore[arg-type]
            self.records_read += len(records)
            return records

    read: dict[int, int] = {}
    for runs in (30, 300):
        async with Counting(tmp_path / f"long-{runs}.sqlite3") as store:
            await fill_runs(store, "long", runs)
            manager: Any = None  # (finished runs: their snapshots are read, the run manager never asked)
            whole = await thread_messages(store, manager, "long")
            store.records_read = 0
            newest = await thread_messages(store, manager, "long", limit=10)
            read[runs] = store.records_read
            assert newest.has_more is True
            assert [m.id for m in newest.messages] == [m.id for m in whole.messages][-10:]
            older = await thread_messages(store, manager, "long", limit=10, page=3)
            assert [m.id for m in older.messages] == [m.id for m in whole.messages][-40:-30]
    assert read[300] == read[30] <= 2 * (5 + 8) + 1  # a page (5 runs), one more, and the slack again
