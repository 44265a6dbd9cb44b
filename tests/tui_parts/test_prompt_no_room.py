"""The prompt laid out with no room for its text for a frame (a whole-width panel beside it) draws
blank instead of crashing the app (CI: Rich's ``divide_line`` got a width of 0 for the placeholder)."""

from __future__ import annotations

from textual.app import App, ComposeResult

from instance_ai_tui.tui.widgets.prompt import PromptInput


class _NoRoom(App[None]):
    CSS = "PromptInput { width: 4; }"  # its border and padding take every cell

    def compose(self) -> ComposeResult:
        yield PromptInput(placeholder="Message Instance AI…")


async def test_a_prompt_with_no_room_for_its_placeholder_draws_blank() -> None:
    app = _NoRoom()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.content_size.width <= 0, prompt.content_size
        assert prompt.render_line(0).cell_length == prompt.size.width
