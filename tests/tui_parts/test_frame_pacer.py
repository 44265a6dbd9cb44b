"""The frame rate adapts to load: an expensive frame makes the next ones wait, so a frame's
work stays under its share of the event loop and keys are handled meanwhile."""

from __future__ import annotations

from instance_ai_tui.tui.projection import FRAME_HZ, FRAME_SHARE, MIN_FRAME_HZ, STREAM_FRAME_HZ, FramePacer


def test_cheap_frames_run_at_the_timers_rate() -> None:
    pacer = FramePacer()
    now = 100.0
    for _ in range(10):
        assert pacer.due(now)
        pacer.record(now, 0.004)  # 4 ms of work: well under the share at 25 Hz
        now += 1 / FRAME_HZ
    assert pacer.skipped == 0


def test_an_expensive_frame_makes_the_next_ones_wait_for_its_share() -> None:
    pacer = FramePacer()
    pacer.record(100.0, 0.020)  # 20 ms: the next frame may start 0.02 / FRAME_SHARE s later
    wait = 0.020 / FRAME_SHARE
    assert 1 / FRAME_HZ < wait < 1 / MIN_FRAME_HZ
    assert not pacer.due(100.0 + 1 / FRAME_HZ)
    assert not pacer.due(100.0 + wait - 0.001)
    assert pacer.due(100.0 + wait)
    assert pacer.skipped == 2
    # then a cheap frame: back to every tick
    pacer.record(100.0 + wait, 0.002)
    assert pacer.due(100.0 + wait + 1 / FRAME_HZ)


def test_while_an_answer_streams_cheap_frames_come_at_the_streaming_rate() -> None:
    """A streamed answer scrolls the view: each frame repaints every visible row, so frames
    are not drawn more often than ``STREAM_FRAME_HZ`` however cheap they are."""
    pacer = FramePacer()
    pacer.floor = 1 / STREAM_FRAME_HZ
    now, frames = 100.0, 0
    for _ in range(int(FRAME_HZ * 4)):  # four seconds of timer ticks
        if pacer.due(now):
            frames += 1
            pacer.record(now + 0.001, 0.003)  # (a frame starts a little after its tick)
        now += 1 / FRAME_HZ
    assert frames == round(STREAM_FRAME_HZ * 4)
    # an expensive frame still waits for its share
    pacer.record(now, 0.020)
    assert not pacer.due(now + 0.020 / FRAME_SHARE - 0.001)
    assert pacer.due(now + 0.020 / FRAME_SHARE)
    # the stream ended: back to every tick
    pacer.floor = 0.0
    pacer.record(now, 0.003)
    assert pacer.due(now + 1 / FRAME_HZ)


def test_a_very_slow_frame_still_leaves_a_minimum_rate() -> None:
    pacer = FramePacer()
    pacer.record(5.0, 2.0)  # two seconds (a huge mount): wait no more than a quarter second
    assert pacer.due(5.0 + 1 / MIN_FRAME_HZ)


def test_the_status_spinner_turns_at_its_own_pace_whatever_the_frame_rate() -> None:
    from types import SimpleNamespace

    from instance_ai_tui.tui.projection import SPINNER_INTERVAL, Projection

    ticks: list[bool] = []

    def refresh_info(*, force: bool = False, tick: bool = False) -> None:
        ticks.append(tick)

    status_line = SimpleNamespace(refresh_info=refresh_info)  # (the projection takes what it draws on)
    projection = Projection(None, None, None, view=None, status_line=status_line, heap=None,  # type: ignore[arg-type]
                            observe=print)
    for frame in range(50):  # a second of frames at 50 Hz: the status line is refreshed each time
        projection._refresh_status(100.0 + frame * 0.02)
    assert len(ticks) == 50
    # ... but its spinner turns every SPINNER_INTERVAL only (a frame that only grows the
    # answer leaves the rows below the view alone)
    assert round(1.0 / (SPINNER_INTERVAL + 0.02)) <= sum(ticks) <= round(1.0 / SPINNER_INTERVAL)
