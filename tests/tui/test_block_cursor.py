"""The block cursor (Alt+↑/↓) and copying one code block at a time (k)."""

from __future__ import annotations

from instance_ai_tui.tui.widgets.conversation_view import code_blocks
from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
from instance_ai_tui.tui.widgets.turns import TextBlock, UserMessage
from tests.support.waiting import until

from .scripts import SIZE, ev, make_app, recorded, simple_run, text_deltas
from .test_interactions import send, turns

CODE_ANSWER = "Two snippets:\n\n```python\nprint('one')\n```\n\nand\n\n```bash\necho two\n```\n"


def test_code_blocks_of_markdown() -> None:
    assert code_blocks(CODE_ANSWER) == [("python", "print('one')"), ("bash", "echo two")]
    assert code_blocks("````md\n```inner```\n````") == [("md", "```inner```")]
    assert code_blocks("no code") == []


async def test_alt_arrows_walk_the_blocks_and_k_copies_code_blocks() -> None:
    code_run = [ev("run-start", messageId="m2"), *text_deltas(CODE_ANSWER), ev("run-finish", status="completed")]
    app = make_app(recorded([simple_run(), code_run]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and len(turns(app)) == 1, pilot)
        await send(pilot, app, "show code")
        await until(lambda: not app.conversation.is_streaming and len(turns(app)) == 2, pilot)
        await app.wait_until_rendered()
        await pilot.press("alt+up")  # from the prompt: the last block
        last = app.focused
        assert isinstance(last, TextBlock) and "Two snippets" in last.copy_text()[0]
        await pilot.press("k")
        await until(lambda: app.clipboard == "print('one')", pilot)
        await pilot.press("k")
        await until(lambda: app.clipboard == "echo two", pilot)
        await pilot.press("k")  # wraps around
        await until(lambda: app.clipboard == "print('one')", pilot)
        seen = [type(app.focused)]
        for _ in range(12):
            await pilot.press("alt+up")
            seen.append(type(app.focused))
        assert UserMessage in seen and ToolCallCard in seen
        assert isinstance(app.focused, UserMessage)  # stops at the first block
        await pilot.press("alt+down")
        assert app.focused is not None and not isinstance(app.focused, UserMessage)
        region = app.focused.region
        assert region.overlaps(app.view.scrollable_content_region)


async def test_expanding_a_block_while_the_agent_streams_keeps_its_header_in_view() -> None:
    before = "".join(f"Line {n} before the call.\n\n" for n in range(30))
    after = "".join(f"Line {n} after the call.\n\n" for n in range(200))
    run = [ev("run-start", messageId="m1"), *text_deltas(before, size=400),
           ev("tool-call", toolCallId="tc1", toolName="list-workflows", args={"limit": 10}),
           ev("tool-result", toolCallId="tc1", result={"workflows": [{"id": str(n), "name": f"Workflow {n}"}
                                                                   for n in range(30)]}),
           *text_deltas(after, size=4)]
    app = make_app(recorded([run], delay=0.02))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list and talk")
        view = app.view

        def card_on_screen() -> bool:
            t = turns(app)
            card = t[-1].cards.get("tc1") if t else None
            return card is not None and view.following and view.max_scroll_y > 0 \
                and card.region.y >= view.scrollable_content_region.y + 2
        await until(card_on_screen, pilot, timeout=15)
        card = turns(app)[-1].cards["tc1"]
        card.focus()  # as Tab does
        await until(lambda: card.has_focus, pilot)
        await pilot.pause()  # laid out with the focus (pending messages processed)
        top = card.region.y
        await pilot.pause(0.3)  # the scenario: the text below grows meanwhile
        assert card.region.y == top  # focused: it stays where it is while the text below grows
        await pilot.press("enter")  # expand while the text below keeps streaming
        await until(lambda: card.expanded, pilot)
        await pilot.pause(0.5)  # the scenario: the text below goes on growing meanwhile
        assert app.conversation.is_streaming
        assert card.region.y == top  # the header did not move
        await pilot.press("end")  # and End follows the output again
        await until(lambda: view.following, pilot)
