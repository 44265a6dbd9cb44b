"""Esc Esc to leave never stops the run, and PageUp/PageDown scroll from the prompt (issue 39.6).

The demo builds a workflow and asks to activate it (a card waits). The person goes to the
workflow panel (``/workflow``) and leaves it with Esc, pressing it twice as people do: before, the
second Esc reached the prompt and cancelled the run with its pending approval. Now the Esc after
one that went back only says that one more stops the agent; that one does. The same holds for
Esc from a card.
"""

from __future__ import annotations

from pathlib import Path

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.screens.workflow import panel_of
from tests.support.waiting import until

from .scripts import make_app
from .test_workflow_canvas import BUILD, panel_shows, send


def settings_for(tmp_path: Path) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})


async def test_esc_esc_out_of_the_workflow_panel_keeps_the_run_and_its_approval(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        await until(lambda: bool(app.thread.pending), pilot, 60, "the approval card")
        await send(app, pilot, "/workflow")
        panel = await panel_shows(app, pilot)
        await until(lambda: panel.canvas.has_focus, pilot, what="the keys in the panel")
        await pilot.press("escape", "escape")
        await until(lambda: panel_of(app.main_screen) is None, pilot, what="the panel closed")
        # the focus and the note land on the next turns of the loop (later on a busy machine: this failed
        # once beside stress-ng --cpu 2 when read after one pause)
        await until(lambda: app.prompt.has_focus, pilot, what="the keys back in the prompt")
        await until(lambda: any("Esc again stops the agent" in str(n.message) for n in app._notifications), pilot,
                    what="the note that Esc again stops the agent")
        assert app.thread.pending and app.conversation is not None and app.conversation.is_streaming
        await pilot.press("escape")  # the person means it now
        await until(lambda: app.conversation is not None and not app.conversation.is_streaming, pilot, 30,
                    "the run stopped")


async def test_esc_esc_from_a_card_keeps_the_run_and_typing_in_between_is_a_new_start(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.002), settings)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        await until(lambda: bool(app.thread.pending), pilot, 60, "the approval card")
        await pilot.press("ctrl+g")  # to the card
        await until(lambda: not app.prompt.has_focus, pilot, what="the keys on the card")
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert app.prompt.has_focus and app.thread.pending and app.conversation is not None
        assert app.conversation.is_streaming
        await pilot.press("ctrl+g")
        await until(lambda: not app.prompt.has_focus, pilot, what="the keys on the card again")
        await pilot.press("escape")
        await pilot.press("x", "backspace")  # typed in the prompt: the next Esc is the person's own
        await pilot.press("escape")
        await until(lambda: not app.conversation.is_streaming, pilot, 30, "the run stopped")


async def test_page_up_and_down_scroll_the_conversation_from_the_prompt(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    app = make_app(EmbeddedClient(settings, demo_delay=0.0), settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        for n in range(3):
            await send(app, pilot, f"list workflows {n}")
            want = 2 * (n + 1)
            await until(lambda want=want: app.conversation is not None and not app.conversation.is_streaming
                        and len(app.conversation.messages) >= want, pilot, 60, "the answer")
        view = app.view
        await until(lambda: view.max_scroll_y > 0 and view.scroll_y >= view.max_scroll_y, pilot,
                    what="a conversation taller than the screen, at its end")
        app.prompt.load_text("a draft\nof two lines")
        app.prompt.focus()
        bottom = view.scroll_y
        await pilot.press("pageup")
        await until(lambda: view.scroll_y < bottom, pilot, what="a page up")
        assert app.prompt.has_focus and app.prompt.text == "a draft\nof two lines"  # typing goes on
        assert not view.following
        await pilot.press("pagedown")
        await until(lambda: view.following and view.scroll_y >= view.max_scroll_y, pilot,
                    what="back at the end, following the newest output again")
        assert app.prompt.has_focus
