"""What changes nothing on screen repaints nothing (issue 44): a new thread title (no Header
draws the app's sub-title) used to repaint the whole screen in the frame that drew the answer."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from .scripts import make_app, recorded


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
