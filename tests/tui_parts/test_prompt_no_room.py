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


PLACEHOLDER = "Message Instance AI…  (Enter sends, Ctrl+J new line, /help for commands)"


class _Narrow(App[None]):
    """The prompt beside the workflow panel at 160x48: 56 cells for a placeholder of 73."""

    CSS = "PromptInput { width: 60; }"

    def compose(self) -> ComposeResult:
        yield PromptInput(placeholder=PLACEHOLDER)


def _row(prompt: PromptInput, y: int) -> str:
    return "".join(segment.text for segment in prompt.render_line(y))


async def test_a_placeholder_wider_than_the_prompt_is_shortened_not_cut() -> None:
    """Seen in tmux at 160x48 with the workflow panel open: "Message Instance AI…  (Enter sends, Ctrl+J new
    line," and nothing more (the placeholder wrapped to a second line the one-row prompt does not show). Now
    the parenthesis goes first, and a placeholder that does not fit even then ends with "…"."""
    app = _Narrow()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.content_size.width < len(PLACEHOLDER)
        assert _row(prompt, 0).strip() == "Message Instance AI…", _row(prompt, 0)
        assert str(prompt.placeholder) == PLACEHOLDER  # (what it is asked to say is kept)
        prompt.styles.width = 16
        await pilot.pause()
        shown = _row(prompt, 0).strip()
        assert shown.endswith("…") and shown.startswith("Message") and len(shown) <= prompt.content_size.width, shown
        prompt.styles.width = 80  # room again: the whole placeholder
        await pilot.pause()
        assert _row(prompt, 0).strip() == PLACEHOLDER
