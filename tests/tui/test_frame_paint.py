"""The frame rate counts what a frame makes Textual paint, and never holds back a stream's end."""

from __future__ import annotations

import time
from pathlib import Path

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.tui.projection import FramePacer
from tests.support.waiting import until

from .scripts import make_app
from .test_embedded import answer_text, settings_for, type_and_send

SIZE = (100, 30)


async def test_the_paint_after_a_frame_counts_as_the_frames_cost(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    # deltas a few frames apart: on a busy machine a faster stream can arrive whole in the frame that
    # ends it, and a frame that is not streaming waits for no paint (CI at load 15 saw one frame only)
    app = make_app(EmbeddedClient(settings, demo_delay=0.03), settings)
    records: list[tuple[float, float]] = []

    def painted_frames() -> list[list[float]]:
        by_frame: dict[float, list[float]] = {}
        for started, seconds in records:
            by_frame.setdefault(started, []).append(seconds)
        return [costs for costs in by_frame.values() if len(costs) == 2]

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
        # each busy frame is recorded when its work is done, then again once the screen has
        # been refreshed: with the refresh's CPU time in it
        await until(lambda: bool(painted_frames()), pilot)
    painted = painted_frames()
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


async def test_the_end_of_a_stream_is_drawn_without_waiting_for_the_next_frame_tick(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.08), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "hello")
        await until(lambda: app.conversation.is_streaming and app.view.assistant_turns() and answer_text(app).strip(), pilot, timeout=30)
        app._frame_timer.pause()  # no frame tick from now on: only the run's end draws
        frames = app.stats.frames
        # the run ends; one frame is projected (no tick came) and its Markdown has parsed
        await until(lambda: not app.conversation.is_streaming and app.stats.frames > frames
                    and not app.projection.in_frame and app.view.settled, pilot)
        at_end = answer_text(app)
        app._frame_timer.resume()
        await app.wait_until_rendered(timeout=10)
        assert answer_text(app) == at_end  # the frame at the run's end drew the whole answer


async def test_the_tuned_collector_defers_full_collections_while_an_answer_streams(tmp_path: Path) -> None:
    import gc

    thresholds = gc.get_threshold()
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.005), settings, tune_gc=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            assert app.heap.held_thresholds is None
            await type_and_send(pilot, app, "hello")
            # the answer streamed with full collections held (settle runs a full collection only
            # then); the run ended and the app is idle: the deferred full collection, the
            # thresholds back
            # (the run's end and the idle moment come later on a busy machine: 10 s ran out in a whole run)
            await until(lambda: app.heap.full_collections >= 1, pilot, timeout=60,
                        what=lambda: f"the deferred full collection (streaming: {app.conversation.is_streaming})")
            assert app.heap.full_collections == 1
            assert app.heap.held_thresholds is None
        assert gc.get_threshold() == thresholds  # the app gave the process its collector back
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
