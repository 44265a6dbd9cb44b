"""The block cursor (Alt+↑/↓) and copying one code block at a time (k)."""

from __future__ import annotations

from instance_ai_tui.tui.conversation_view import code_blocks
from instance_ai_tui.tui.tool_card import ToolCallCard
from instance_ai_tui.tui.turns import TextBlock, UserMessage

from .scripts import SIZE, ev, make_app, recorded, simple_run, text_deltas
from .test_interactions import send, turns, until

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
