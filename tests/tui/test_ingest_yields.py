"""While a flood is folded, a task asleep on a timer runs between every two slices of the ingest
(issue 44.1c): Textual's screen update and frame are such tasks, and so is a heartbeat. With
``asyncio.sleep(0)`` as the ingest's yield, such a task needed two loop turns once its timer was
due, and the ingest ran two or three slices (5 ms each at least) before it: the stall a key or
a repaint waited. Counted, not timed: the slices the ingest began between two steps of the
heartbeat (a slice lasts INGEST_SLICE at least, longer than the heartbeat's 1 ms sleep, so the
heartbeat is due at the end of every slice)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from instance_ai_tui.protocol.ingest import Batch, StreamItem
from tests.support.recorded import RecordedClient, text_flood
from tests.tui.scripts import make_app

RUN = "r1"
PAGES, PAGE = 60, 500


class Flood(RecordedClient):
    """Hands the whole log at once, a page a batch (a replayed log: nothing to wait for), noting in
    ``marks`` each slice of the ingest ("S": a batch asked for after the ingest gave the loop back)
    beside the heartbeat's steps ("H")."""

    def __init__(self) -> None:
        super().__init__({"t": text_flood(PAGES * PAGE, RUN)}, titles={"t": "Flood"})
        self.marks: list[str] = []
        self.gave_back = True
        self.flooding = False

    async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
        log = self._threads[thread_id].log
        self.flooding = True
        for start in range(after or 0, len(log), PAGE):
            if self.gave_back:
                self.marks.append("S")
                self.gave_back = False
            items: list[Any] = [StreamItem(index + 1, log[index]) for index in range(start, min(len(log), start + PAGE))]
            yield Batch(items, max(0, len(log) - start - PAGE))
        self.flooding = False
        await asyncio.Event().wait()  # live: nothing more comes


async def test_a_timer_task_runs_between_every_two_slices_of_a_flood() -> None:
    client = Flood()
    app = make_app(client)

    async def ticker() -> None:  # a step at every loop turn: it tells that the ingest gave the loop back
        while True:
            await asyncio.sleep(0)
            client.gave_back = True

    async def heartbeat() -> None:  # asleep on a timer, as Textual's screen update and frame are
        while True:
            await asyncio.sleep(0.001)
            if client.flooding:
                client.marks.append("H")

    async with app.run_test(size=(100, 30)):
        tasks = [asyncio.create_task(ticker()), asyncio.create_task(heartbeat())]
        try:
            await app.wait_until_ready()
            await app.wait_until_rendered(events=PAGES * PAGE)
        finally:
            for task in tasks:
                task.cancel()
    marks = "".join(client.marks)
    slices = marks.count("S")
    assert slices >= 4, marks  # (the flood took several slices: the count below means something)
    between = [len(run) for run in marks.split("H")[1:-1]]  # slices begun between two heartbeat steps
    assert between and max(between) <= 1, marks
