"""The prompt under a burst of keys: what was typed before Enter is what gets sent."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.app import App, ComposeResult

from instance_ai_tui.tui.widgets.prompt import PromptInput
from tests.support.waiting import until


class PromptApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def compose(self) -> ComposeResult:
        yield PromptInput(id="prompt")

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.sent.append(message.text)


def burst(app: App[None], text: str, *keys: str) -> None:
    """Queue keys all at once, as a terminal delivers a paste or a fast typist."""
    for ch in text:
        app.post_message(events.Key("space" if ch == " " else ch, ch))
    for key in keys:
        app.post_message(events.Key(key, None))


async def test_enter_after_a_burst_sends_every_character(tmp_path: Path) -> None:
    app = PromptApp()
    async with app.run_test() as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.pause()
        burst(app, "hello there", "enter")
        await until(lambda: app.sent, pilot, what="a message sent")
        assert app.sent == ["hello there"]
        assert prompt.text == ""


async def test_newline_after_a_burst_lands_after_the_characters(tmp_path: Path) -> None:
    app = PromptApp()
    async with app.run_test() as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.pause()
        burst(app, "ab", "ctrl+j")
        burst(app, "cd", "enter")
        await until(lambda: app.sent, pilot, what="a message sent")
        assert app.sent == ["ab\ncd"]
