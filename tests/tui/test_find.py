"""Ctrl+F finds text in the open conversation: next/previous, the hit marked and scrolled to, older turns loaded."""

from __future__ import annotations

from typing import Any

from instance_ai_tui.tui.widgets.find_bar import FindBar

from .scripts import SIZE, ev, make_app, recorded, text_deltas
from .test_interactions import until


def _run(run_id: str, question: str, answer: str, tool_result: Any = None) -> list[dict[str, Any]]:
    events = [ev("run-start", messageId=f"m-{run_id}", userMessage=question)]
    if tool_result is not None:
        events += [ev("tool-call", toolCallId=f"tc-{run_id}", toolName="list-workflows", args={}),
                   ev("tool-result", toolCallId=f"tc-{run_id}", result=tool_result)]
    events += [*text_deltas(answer), ev("run-finish", status="completed")]
    return [{**e, "runId": run_id} for e in events]


def _client() -> Any:
    log: list[dict[str, Any]] = []
    for n in range(60):  # more turns than the view mounts at first
        answer = f"Answer number {n}." + (" The zebrafish workflow is fine." if n in (3, 41) else "")
        result = {"workflows": [{"name": "Penguin alerts"}]} if n == 57 else None
        log += _run(f"r{n}", f"question {n}", answer, result)
    return recorded(logs={"t1": log}, titles={"t1": "Long thread"})


async def test_find_goes_through_matches_and_loads_older_turns() -> None:
    app = make_app(_client())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.thread_id == "t1" and len(app.conversation.messages) == 120, pilot)
        await app.wait_until_rendered()
        view = app.view
        assert view.first_index > 10  # the oldest turns are not mounted
        await pilot.press("ctrl+f")
        bar = app.query_one(FindBar)
        assert bar.has_class("-open")  # shown (display: none without it)
        await pilot.press(*"zebrafish")
        await until(lambda: len(bar.matches) == 2, pilot)
        count = bar.query_one(".find-count")
        assert str(count.render()) == "2/2"  # starts at the newest match
        newest = app.view.turns[bar.matches[1].message_id]
        assert newest.has_class("-find-hit")
        await pilot.press("enter")  # next wraps around to the oldest, which is not mounted yet
        await until(lambda: bar.matches[0].message_id in app.view.turns, pilot)
        oldest = app.view.turns[bar.matches[0].message_id]
        await until(lambda: oldest.has_class("-find-hit") and not newest.has_class("-find-hit"), pilot)
        # the hit is scrolled onto the screen
        await until(lambda: oldest.region.overlaps(app.view.scrollable_content_region), pilot)
        await pilot.press("shift+enter")
        await until(lambda: newest.has_class("-find-hit"), pilot)
        # tool results are searched too
        await pilot.press(*["backspace"] * 9, *"penguin")
        await until(lambda: len(bar.matches) == 1, pilot)
        await pilot.press(*["backspace"] * 7, *"nothing like it")
        await until(lambda: str(count.render()) == "no matches", pilot)
        await pilot.press("escape")
        assert not bar.has_class("-open") and app.focused is app.prompt
        assert not app.query(".-find-hit")
