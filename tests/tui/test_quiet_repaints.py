"""What changes nothing on screen repaints nothing, and an idle app does nothing (issue 44): a
new thread title (no Header draws the app's sub-title) used to repaint the whole screen in the
frame that drew the answer; an idle app ran its frame 25 times a second."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from tests.support.waiting import until

from .scripts import make_app, recorded, simple_run
from .test_interactions import send


async def test_a_new_title_does_not_repaint_the_whole_screen(monkeypatch: Any) -> None:
    app = make_app(recorded())
    whole: list[str] = []
    real = Screen.refresh

    def refresh(self: Screen[Any], *regions: Any, **kwargs: Any) -> Any:
        if not regions and not kwargs.get("layout"):
            whole.append(type(self).__name__)
        return real(self, *regions, **kwargs)

    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await pilot.pause()
        monkeypatch.setattr(Screen, "refresh", refresh)
        app.sub_title = "Weather to Slack"
        await pilot.pause()
        assert app.sub_title == "Weather to Slack"
        assert whole == []


#: what may still run by itself while the app is idle, and why
IDLE_TIMERS = {
    "frame-idle": "the frames rest; the model is looked at 4 times a second for a change no wake announced",
    "focus-guard": "focus that moved by itself goes back to the prompt (tui.cards)",
    "n8n-activity": "the n8n panel's clocks (helper n8n's widget)",
    "_toggle_cursor_blink_visible": "the prompt's blinking cursor (Textual's TextArea)",
    "sync": "the notice line looks for notifications 4 times a second (widgets.notice_line; left: polling only "
            "while they show changed a snapshot's timing)",
}


def _running_timers(app: Any) -> set[str]:
    """The app's timers that are running (not paused or stopped), by name or callback."""
    nodes = [app, *app.screen_stack, *app.screen.walk_children(with_self=False)]
    names = set()
    for node in nodes:
        for timer in list(node._timers):
            if timer._task is None or timer._task.done() or not timer._active.is_set():
                continue
            name = timer.name
            if name.startswith(("Timer#", "set_interval#")):
                name = getattr(timer._callback, "__name__", name)
            names.add(name)
    return names


async def test_an_idle_app_runs_only_the_timers_it_needs() -> None:
    """An idle app ran its frame 25 times a second (issue 44: ~2 % CPU doing nothing). After a run, once
    nothing changes, the frame timer rests and only the
    timers named in ``IDLE_TIMERS`` run; a message sent then wakes the frames and its answer is
    drawn."""
    app = make_app(recorded([simple_run(), simple_run()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "hi")
        await until(lambda: len(app.view.assistant_turns()) == 1 and not app.conversation.is_streaming, pilot)
        app.notify("Saved.", timeout=0.3)
        await until(lambda: app.main_screen.notices.display, pilot)
        await until(lambda: app.projection.resting and not app.main_screen.notices.display, pilot, timeout=15)
        running = _running_timers(app)
        assert "frame" not in running
        assert running <= set(IDLE_TIMERS), running - set(IDLE_TIMERS)
        await send(pilot, app, "again")
        await until(lambda: len(app.view.assistant_turns()) == 2 and not app.conversation.is_streaming, pilot)
        assert "frame" in _running_timers(app) or app.projection.resting is False
