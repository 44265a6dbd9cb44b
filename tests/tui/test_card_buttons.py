"""An approval card too narrow for its answer buttons side by side stacks them, one a row (issue 45,
``test_polish.test_an_approval_cards_keys_are_never_cut``). Seen in tmux at 160x48 with the canvas
open (a 60-column conversation): each stacked button centred its own label in its own width, so the
choices read as a staircase ("   y Approve" / "     n Deny" / "  a Always allow…"). Stacked, their
labels start in one column, as a list of choices."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.containers import Vertical
from textual.errors import NoWidget
from textual.geometry import Region
from textual.widgets import Button

from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
from instance_ai_tui.tui.widgets.card_factory import build_card
from tests.support.waiting import until


def _label_column(button: Button) -> int:
    """The screen column where the button's label starts."""
    label = str(button.label)
    for strip in button.render_lines(Region(0, 0, button.size.width, button.size.height)):
        text = strip.text
        if label in text:
            return button.region.x + text.index(label)
    raise AssertionError(f"{label!r} is not drawn in its button")


async def test_stacked_answer_buttons_start_their_labels_in_one_column() -> None:
    conf = Confirmation.model_validate({"requestId": "r1", "severity": "warning", "message": "Activate workflow wf-1?",
                                        "inputType": "approval"})
    card = build_card(ToolCallState(tool_call_id="c1", tool_name="activate-workflow"), conf)

    class Harness(App[None]):
        CSS = "#box { width: 40; height: auto; }"

        def compose(self) -> Any:
            with Vertical(id="box"):
                yield card

    app = Harness()
    async with app.run_test(size=(120, 30)) as pilot:

        def stacked() -> bool:
            shown = list(card.query(".card-buttons Button").results(Button))
            try:
                return (len(shown) == 3 and len({b.region.y for b in shown}) == 3
                        and all(app.screen.find_widget(b).visible_region == b.region for b in shown))
            except NoWidget:
                return False

        await until(stacked, pilot, what="the buttons stacked, each drawn whole")
        buttons = list(card.query(".card-buttons Button").results(Button))
        columns = {str(button.label): _label_column(button) for button in buttons}
        assert len(set(columns.values())) == 1, columns
