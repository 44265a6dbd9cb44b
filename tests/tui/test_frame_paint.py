"""The frame rate counts what a frame makes Textual paint, and never holds back a stream's end."""

from __future__ import annotations

import time
from pathlib import Path

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.tui.projection import FramePacer

from .scripts import make_app
from .test_embedded import answer_text, settings_for, type_and_send, until

SIZE = (100, 30)


async def test_the_paint_after_a_frame_counts_as_the_frames_cost(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    records: list[tuple[float, float]] = []

    class Spy(FramePacer):
        def record(self, started: float, seconds: float) -> None:
            records.append((started, seconds))
            super().record(started, seconds)

    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.projection.pacer = Spy()
        await type_and_send(pilot, app, "hello")
        await until(lambda: not app.conversation.is_streaming and answer_text(app), pilot)
        await app.wait_until_rendered()
    by_frame: dict[float, list[float]] = {}
    for started, seconds in records:
        by_frame.setdefault(started, []).append(seconds)
    # each busy frame is recorded when its work is done, then again once the screen has
    # been refreshed: with the refresh's CPU time in it
    painted = [costs for costs in by_frame.values() if len(costs) == 2]
    assert painted, by_frame
    assert all(after > 0 for _, after in painted)


async def test_a_held_back_frame_rate_still_draws_the_end_of_the_stream_at_once(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.01), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        pacer = app.projection.pacer
        pacer.next_at = time.perf_counter() + 3600  # as if the last frame had been very slow
        await type_and_send(pilot, app, "hello")
        await until(lambda: not app.conversation.is_streaming and app.conversation.messages[-1].reducer is not None,
                    pilot)
        # while it streamed, frames waited; once it has ended the next frame is due anyway
        await app.wait_until_rendered(timeout=10)
        assert pacer.skipped > 0
        assert answer_text(app).strip()
