"""A flood is told by what is queued at the source, never by the rate events arrive at (issue 44.1).

A busy machine reads a long log slower: with a rule on the arrival rate the app stopped seeing the
flood there and projected frames mid-flood (widgets mounted only to be pruned, the 9-12x CPU
cliff). Here the source is slow on purpose (each page waits for the frame timer to tick twice, as
a loaded machine's reads do): while the log says events wait behind a page (``Batch.queued``), no
frame projects; a live stream with nothing waiting is projected as it comes. No time is measured:
the source waits for the app's own ticks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from instance_ai_tui.protocol.ingest import Batch, StreamItem
from tests.support.recorded import RecordedClient, text_flood
from tests.support.waiting import until
from tests.tui.scripts import make_app

SIZE = (100, 30)
RUN = "r1"
PAGES, PAGE = 8, 250


class PagedClient(RecordedClient):
    """Hands the log over a page at a time, each after the app's frame timer ticked twice (a slow
    source), saying (``tells_queued``) or not how many events still wait behind it."""

    def __init__(self, tells_queued: bool) -> None:
        super().__init__({"t": text_flood(PAGES * PAGE, RUN)}, titles={"t": "Paged"})
        self.tells_queued = tells_queued
        self.app: Any = None
        #: the frames that had projected something when each page was handed over
        self.busy_before_page: list[int] = []

    async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        log = self._threads[thread_id].log
        projection = self.app.projection
        for start in range(after or 0, len(log), PAGE):
            ticks = projection.frame_no
            await until(lambda ticks=ticks: projection.frame_no >= ticks + 2, what="two frame ticks")
            self.busy_before_page.append(projection.stats.busy_frames)
            items: list[Any] = [StreamItem(index + 1, log[index]) for index in range(start, min(len(log), start + PAGE))]
            waiting = max(0, len(log) - start - PAGE)
            yield Batch(items, waiting if self.tells_queued else 0)
        await asyncio.Event().wait()  # live: nothing more comes


async def test_a_slow_flood_projects_no_frame_until_the_queue_is_empty() -> None:
    client = PagedClient(tells_queued=True)
    app = make_app(client)
    client.app = app
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        await app.wait_until_rendered(events=PAGES * PAGE)
        pages = client.busy_before_page
        assert len(pages) == PAGES
        assert pages[1:] == [pages[1]] * (PAGES - 1)  # nothing projected while events waited
        assert app.stats.busy_frames > pages[-1]  # ... and the end state was, once
        message = app.conversation.messages[-1] if app.conversation else None
        assert message is not None and message.content.startswith("w0 w1") and not message.is_streaming


async def test_a_stream_with_nothing_waiting_is_projected_as_it_comes() -> None:
    """(The test above would hold trivially if no frame ever projected mid-stream.)"""
    client = PagedClient(tells_queued=False)
    app = make_app(client)
    client.app = app
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        await app.wait_until_rendered(events=PAGES * PAGE)
        pages = client.busy_before_page
        assert len(pages) == PAGES and pages[-1] > pages[1]
