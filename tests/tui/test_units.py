"""The pure pieces of the TUI: status line, checklist, tool-card formatting, agent info."""

from __future__ import annotations

from typing import Any

from instance_ai_tui.protocol.display_state import display_state
from instance_ai_tui.protocol.events import TaskList
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.protocol.tree import Confirmation, ToolCallState
from instance_ai_tui.tui.widgets.agent_info import agent_info, reducer_root_field
from instance_ai_tui.tui.widgets.status_line import StatusInfo, format_tokens, render_status
from instance_ai_tui.tui.widgets.tasks_panel import progress_label, render_tasks
from instance_ai_tui.tui.widgets.tool_card import duration, pretty, result_summary
from instance_ai_tui.tui.widgets.turns import AgentSection
from tests.support.fold import apply_wire
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import SIZE, ev, make_app
from .test_interactions import _log


def test_status_line_words_for_every_state() -> None:
    info = StatusInfo(connection="reconnecting", connection_detail="2", run_state="running", message="Searching nodes…",
                      model="gpt-4o-mini", input_tokens=12_345, output_tokens=678, cost=0.01234)
    plain = render_status(info).plain
    assert "reconnecting 2" in plain and "running" in plain and "Searching nodes…" in plain
    assert "gpt-4o-mini" in plain and "12k in · 678 out · $0.0123" in plain
    demo = render_status(StatusInfo(connection="embedded", demo=True, model="demo (offline)")).plain
    assert "DEMO" in demo and "embedded" in demo and "idle" in demo
    assert "offline: refused" in render_status(StatusInfo(connection="offline", connection_detail="refused")).plain
    assert [format_tokens(n) for n in (999, 1500, 25_000, 3_200_000)] == ["999", "1.5k", "25k", "3.2M"]


def test_status_line_says_compaction_once_with_its_clock() -> None:
    """tmux against llama.cpp: the run state said "compacting 1 older messages into notes 4 s" and the
    status message repeated it without the clock."""
    said = "compacting 1 older message into notes"
    info = StatusInfo(connection="embedded", run_state="running", message=said, clock=f"{said} 4 s", model="m")
    assert render_status(info).plain.count("compacting") == 1


def test_checklist_glyphs_and_progress() -> None:
    tasks = TaskList.model_validate([
        {"id": "1", "description": "Build", "status": "completed"},
        {"id": "2", "description": "Test", "status": "in_progress", "detail": "running the webhook"},
        {"id": "3", "description": "Ship", "status": "pending"},
        {"id": "4", "description": "Notify", "status": "failed"},
    ])
    text = render_tasks(tasks).plain
    assert text.splitlines()[0] == "✓ Build"
    assert "◐ Test (in progress)" in text and "running the webhook" in text
    assert "○ Ship" in text and "✗ Notify (failed)" in text
    assert progress_label(tasks) == "1/4 done" and progress_label(None) == "no tasks"


def test_tool_card_formatting() -> None:
    assert pretty({"a": [1, 2]}) == ('{\n  "a": [\n    1,\n    2\n  ]\n}', "json")
    assert pretty('{"x": 1}')[1] == "json" and pretty("plain words") == ("plain words", "text")
    assert result_summary({"workflows": [1, 2, 3]}) == "3 workflows"
    # a checklist's updates read apart, not as the same "2 tasks" line each time
    todo, done = {"id": "a", "status": "todo"}, {"id": "b", "status": "done"}
    assert result_summary({"tasks": [todo, dict(todo, id="b")]}) == "2 tasks"
    assert result_summary({"tasks": [todo, done]}) == "2 tasks · 1 done"
    assert result_summary({"tasks": [dict(done, id="a"), dict(done, status="completed")]}) == "2 tasks · all done"
    assert result_summary({"executions": [{"id": 1, "status": "success"}, {"id": 2}]}) == "2 executions"
    # a named object in words (issue 45: "✓ activate-workflow → {"id": "wf-104", …" in the demo)
    workflow = {"id": "wf-104", "name": "HTTP to Discord", "active": True, "tags": ["a", "b"], "nodeCount": 3}
    assert result_summary(workflow) == "HTTP to Discord (wf-104) · active"
    assert result_summary({"id": 7, "name": "Run\x1b[2J", "status": "error"}) == "Run␛[2J (7) · error"
    assert result_summary({"id": True, "name": "x"}).startswith("{")
    assert result_summary([1]) == "1 item" and result_summary("first line\nsecond") == "first line"
    assert duration("2026-01-01T00:00:00.000Z".replace("Z", "+00:00"), "2026-01-01T00:00:01.500+00:00") == "1.5 s"
    assert duration(None, "x") == ""
    call = ToolCallState(tool_call_id="t", tool_name="x")
    asking = call.model_copy(update={"confirmation": Confirmation(request_id="r", message="ok?")})
    assert display_state(call).kind == "running" and display_state(asking).kind == "waiting"
    assert display_state(call.model_copy(update={"is_loading": False, "result": 1})).kind == "done"
    assert display_state(call.model_copy(update={"is_loading": False, "error": "boom"})).kind == "failed"


def test_agent_info_reads_own_fields_only() -> None:
    reducer = RunReducer("a1")
    for event in [
        ev("run-start", messageId="m"),
        ev("tasks-update", tasks=[{"id": "t", "description": "Do it", "status": "pending"}]),
        ev("agent-spawned", "a2", parentId="a1", role="builder", title="Workflow builder"),
        ev("status", "a2", message="Looking…"),
        ev("agent-completed", "a2", role="builder", result="Built wf-1"),
    ]:
        apply_wire(reducer, event)
    child = agent_info(reducer, "a2")
    assert child is not None and child.label == "Workflow builder" and child.status == "completed"
    assert child.result == "Built wf-1"
    assert agent_info(reducer, "nope") is None
    tasks = reducer_root_field(reducer, "tasks")
    assert TaskList.model_validate(tasks).tasks[0].description == "Do it"


async def test_a_long_timeline_stays_windowed_and_shows_earlier_on_demand() -> None:
    run: list[dict[str, Any]] = [ev("run-start", messageId="m")]
    for n in range(150):
        run += [
            ev("tool-call", toolCallId=f"t{n}", toolName="get-node", args={"n": n}),
            ev("tool-result", toolCallId=f"t{n}", result={"n": n}),
        ]
    run.append(ev("run-finish", status="completed"))
    app = make_app(RecordedClient({"t": _log(run, "r1")}))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        root = app.view.assistant_turns()[0].root
        assert root is not None
        assert len(root.entries) == AgentSection.WINDOW and root.first == 150 - AgentSection.WINDOW
        assert root.more.display and str(150 - AgentSection.WINDOW) in str(root.more.visual)
        assert len(list(app.screen.walk_children())) < 400  # bounded, whatever the timeline length
        root.more.focus()
        await pilot.press("enter")
        await until(lambda: root.first == 150 - 2 * AgentSection.WINDOW and not app.view.behind, pilot)
        assert len(root.entries) == 2 * AgentSection.WINDOW


async def test_tokens_and_cost_from_run_finish_usage() -> None:
    run = [
        ev("run-start", messageId="m"),
        ev("text-delta", text="Hi."),
        ev("run-finish", status="completed", usage={"inputTokens": 1200, "outputTokens": 80, "cost": 0.0021}),
    ]
    app = make_app(RecordedClient({"t": _log(run, "r1")}))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        await until(lambda: "1.2k in · 80 out · $0.0021" in app.status_line.plain, pilot)


async def test_the_screenshot_script_opens_completed_sub_agents() -> None:
    from instance_ai_tui.tui.widgets.turns import SubAgentSection
    from scripts import screenshots

    from .scripts import subagent_run

    app = make_app(RecordedClient({"t": _log(subagent_run(), "r1")}))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        sections = list(app.query(SubAgentSection))
        assert sections and not any(section.expanded for section in sections)  # collapsed when done
        screenshots._expand_subagents(app)
        await pilot.pause()
        assert all(section.expanded and section.body is not None for section in sections)


def test_an_assistant_turn_not_composed_yet_is_not_settled() -> None:
    """``wait_until_rendered`` asks the turns whether they are settled: a turn mounted but not
    composed yet (no root section: under load its compose comes a loop cycle later) is not,
    or the wait returned with ``turn.root`` still None (a rare CI rerun)."""
    from instance_ai_tui.protocol.conversation import Conversation
    from instance_ai_tui.tui.widgets.turns import AssistantTurn

    conversation = Conversation("t")
    apply_wire(conversation, 1, ev("run-start", messageId="m"))
    apply_wire(conversation, 2, ev("text-delta", text="hi"))
    message = conversation.messages[-1]
    turn = AssistantTurn(message, set())
    assert turn.root is None
    assert not turn.settled


def test_a_tool_card_time_leaves_out_the_wait_for_the_person_live_and_restored() -> None:
    """Issue 45 (seen in tmux): "✓ activate-workflow 547.3 s" after the person took 9 minutes to
    approve. The card says the tool's own time and the wait apart, folded live and from a snapshot."""
    from instance_ai_tui.protocol.events import parse_event
    from instance_ai_tui.protocol.reducer import RunReducer
    from instance_ai_tui.tui.widgets.tool_card import call_duration

    t0 = 1_800_000_000_000

    def ev(kind: str, ts: int, **payload: Any) -> Any:
        return parse_event({"type": kind, "runId": "r1", "agentId": "a1", "ts": ts, "payload": payload})

    reducer = RunReducer("a1")
    for event in (
        ev("run-start", t0, messageId="m1"),
        ev("tool-call", t0 + 100, toolCallId="t1", toolName="activate-workflow", args={"id": "wf-1"}),
        ev("confirmation-request", t0 + 200, requestId="cr", toolCallId="t1", toolName="activate-workflow",
           severity="warning", message="Activate?", inputType="approval"),
        ev("tool-call", t0 + 200 + 540_000, toolCallId="t1", toolName="activate-workflow", answered=True),
        ev("tool-result", t0 + 200 + 540_000 + 400, toolCallId="t1", result={"ok": True}),
    ):
        reducer.apply(event)
    live = reducer.tree().tool_calls[0]
    assert live.args == {"id": "wf-1"}  # the answer's repeated tool-call is no new call
    assert call_duration(live) == "500 ms (waited 9 min for you)"
    restored = RunReducer.from_tree(reducer.tree().to_wire()).tree().tool_calls[0]
    assert call_duration(restored) == "500 ms (waited 9 min for you)"
    # n8n's stream says nothing when the person answers: the whole span, said to include the wait
    wire = live.to_wire()
    wire.pop("answeredAt")
    no_answer = ToolCallState.model_validate(wire)
    # (in minutes past a minute, as the wait itself: seen in tmux, "920.3 s incl. your answer" for 15 minutes)
    assert call_duration(no_answer) == "9 min incl. your answer"


async def test_a_running_delegation_names_its_sub_agent_and_task_not_its_json() -> None:
    """Seen in tmux (the demo): while the builder worked, the delegate row read
    'delegate {"role": "workflow builder", "instructions": "Build a workflow named …'."""
    from textual.app import ComposeResult

    from instance_ai_tui.tui.widgets.tool_card import ToolCallCard
    from tests.tui_parts.test_flat_markdown import Harness

    args = {"role": "workflow builder", "tools": ["list-nodes"],
            "instructions": 'Build a workflow named "Weather to Slack"\nwith these nodes: [Schedule, Slack].'}

    class OneCard(Harness):
        def compose(self) -> ComposeResult:
            yield ToolCallCard(ToolCallState(tool_call_id="d1", tool_name="delegate", args=args))
            yield ToolCallCard(ToolCallState(tool_call_id="d2", tool_name="delegate", args={"tools": []}))
            yield ToolCallCard(ToolCallState(tool_call_id="t1", tool_name="list-workflows", args={"limit": 10}))

    app = OneCard()
    async with app.run_test(size=(160, 10)) as pilot:
        await pilot.pause()
        headers = [card.header.visual.plain for card in app.query(ToolCallCard)]  # type: ignore[union-attr]
    assert 'delegate  ◆ workflow builder: Build a workflow named "Weather to Slack" with these nodes: ' in headers[0]
    assert "{" not in headers[0] and "tools" not in headers[0]
    assert headers[1].endswith('delegate  {"tools": []}')  # no role nor task: its arguments as they are
    assert headers[2].endswith('list-workflows  {"limit": 10}')  # other tools: their arguments
