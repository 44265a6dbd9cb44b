"""The approval card of a file write shows the diff against the file on disk (and says what it overwrites)."""

from __future__ import annotations

from typing import Any

from instance_ai_tui.assistant.previews import file_change
from instance_ai_tui.tui.widgets.confirmations import ApprovalCard
from instance_ai_tui.tui.widgets.diff_view import ChangePreviewView
from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
from tests.support.waiting import until

from .scripts import SIZE, ev, make_app, recorded
from .test_interactions import send


def write_run(preview: dict[str, Any]) -> list[dict[str, Any]]:
    args = {"path": "README.md", "content": "# Demo\nTeams\n"}
    return [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="tc1", toolName="write-file", args=args),
        ev("confirmation-request", requestId="cr-1", toolCallId="tc1", toolName="write-file", args=args,
           severity="warning", message="Write 13 characters to `README.md`?", preview=preview),
        ev("tool-result", toolCallId="tc1", result={"path": "README.md", "bytes": 13}),
        ev("run-finish", status="completed"),
    ]


async def test_write_card_shows_summary_and_coloured_diff() -> None:
    preview = file_change("README.md", "# Demo\nSlack\n", "# Demo\nTeams\n")
    app = make_app(recorded([write_run(preview)]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "use teams")
        await until(lambda: bool(app.query(ChangePreviewView)), pilot)
        view = app.query_one(ChangePreviewView)
        assert view.parent is not None and isinstance(view.parent, ApprovalCard)
        screen = app.export_screenshot()
        assert "overwrites&#160;2&#160;lines:&#160;+1&#160;−1" in screen
        assert "-Slack" in screen and "+Teams" in screen
        # the card's diff says what the call writes: the args (the content again, "\n" and all) are left
        # out while it waits (issue 45, seen in tmux: a write-file card showed the new text twice)
        tool = app.query_one(ToolCallCard)
        await until(lambda: tool.tc.confirmation is not None and tool.state == "awaiting", pilot)
        assert tool.body is None and "Teams\\n" not in app.export_screenshot()


async def test_a_long_diff_scrolls_inside_the_card() -> None:
    preview = file_change("big.txt", None, "".join(f"line {n}\n" for n in range(600)))
    app = make_app(recorded([write_run(preview)]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "write it")
        await until(lambda: bool(app.query(".preview-diff")) and app.query_one(".preview-diff").max_scroll_y > 0,
                    pilot, what="the long diff is laid out, scrolling")
        box = app.query_one(".preview-diff")
        assert box.size.height <= 16 and box.max_scroll_y > 0
        assert "more lines not shown" in app.query_one(ChangePreviewView).query("Static").last().render().plain


async def test_an_approval_whose_question_names_every_argument_leaves_out_the_args() -> None:
    """At 80x24 the demo's "Activate workflow wf-104? It will start running on its trigger." card showed
    `args {"workflowId": "wf-104"}` above it (4 of 24 rows; seen in tmux, issue 45): the question names
    every argument. A card whose question does not name one (a value, a flag) still shows them."""
    def run(message: str, args: dict[str, Any]) -> list[dict[str, Any]]:
        return [ev("run-start", messageId="m1"),
                ev("tool-call", toolCallId="tc1", toolName="activate-workflow", args=args),
                ev("confirmation-request", requestId="cr-1", toolCallId="tc1", toolName="activate-workflow",
                   args=args, severity="warning", message=message)]

    cases = [("Activate workflow wf-104? It will start running on its trigger.", {"workflowId": "wf-104"}, False),
             ("Activate this workflow?", {"workflowId": "wf-104"}, True),
             ("Activate workflow wf-104?", {"workflowId": "wf-104", "force": True}, True)]
    for message, args, shown in cases:
        app = make_app(recorded([run(message, args)]))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.wait_until_ready()
            await send(pilot, app, "activate it")
            await until(lambda app=app: bool(app.query(ToolCallCard)), pilot)
            tool = app.query_one(ToolCallCard)
            await until(lambda app=app, tool=tool: tool.tc.confirmation is not None and tool.state == "awaiting"
                        and bool(app.query(ApprovalCard)), pilot)
            await app.wait_until_rendered()
            assert (tool.body is not None) is shown, (message, args)
