"""Widget keys from the registry: remapped from ``[ui.keys]``, listed by F1 for the focused widget."""

from __future__ import annotations

from instance_ai_tui.config import Settings
from instance_ai_tui.tui.help_screen import HelpScreen
from instance_ai_tui.tui.tool_card import ToolCallCard

from .scripts import SIZE, make_app, recorded, simple_run
from .test_interactions import send, turns, until


async def test_a_remapped_block_key_toggles_the_card_and_f1_lists_it() -> None:
    settings = Settings.model_validate({"ui": {"keys": {"toggle-block": "t", "unfold-result": "u"}}})
    app = make_app(recorded([simple_run()]), settings)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and turns(app), pilot)
        await app.wait_until_rendered()
        card: ToolCallCard = turns(app)[-1].cards["tc1"]
        card.focus()
        expanded = card.expanded
        await pilot.press("enter")  # the default key no longer toggles
        assert card.expanded == expanded
        await pilot.press("t")
        assert card.expanded != expanded
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        help_text = app.screen.markdown
        assert "| t | Expand | Block | `toggle-block` |" in help_text
        assert "| u | Unfold | Tool call | `unfold-result` |" in help_text
        assert "Send the message" not in help_text  # the input's keys are not the card's
        await pilot.press("escape")  # help.close
        await until(lambda: not isinstance(app.screen, HelpScreen), pilot)
