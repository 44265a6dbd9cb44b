"""The workflow panel on the real product path (``EmbeddedClient`` + demo model + SQLite): the demo
builds a workflow and the canvas opens and draws it live; keys, details, zoom, one-node redraws."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.workflow_draw import note_fill, note_style, shown_names
from instance_ai_tui.protocol.workflow_graph import NodeRun, RunState, parse_workflow
from instance_ai_tui.protocol.workflow_layout import Detail, layout_workflow
from instance_ai_tui.tui.screens.workflow import WorkflowPanel, panel_of
from instance_ai_tui.tui.widgets import workflow_canvas_worker
from instance_ai_tui.tui.widgets.workflow_canvas import WorkflowCanvas
from tests.protocol.workflow_shapes import big, if_merge
from tests.support.drawings import workflow_text
from tests.support.waiting import until

from .scripts import ev, make_app, recorded

BUILD = "every morning send the weather forecast to Slack"


def settings_for(tmp_path: Path) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})


def canvas_text(canvas: WorkflowCanvas) -> str:
    assert canvas.graph_layout is not None
    return canvas.text()


async def send(app: Any, pilot: Any, text: str) -> None:
    """Type ``text`` in the prompt and send it with Enter (a message or a command)."""
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


async def panel_shows(app: Any, pilot: Any, workflow_id: str | None = None, timeout: float = 30) -> WorkflowPanel:
    """Until the workflow panel is open on a workflow (``workflow_id``, or any); the panel."""
    def shown() -> bool:
        panel = panel_of(app.main_screen)
        return panel is not None and (panel.workflow_id == workflow_id if workflow_id else panel.workflow_id is not None)

    await until(shown, pilot, timeout, f"the panel on {workflow_id or 'a workflow'}")
    panel = panel_of(app.main_screen)
    assert isinstance(panel, WorkflowPanel)
    return panel


def embedded_app(tmp_path: Path) -> Any:
    """The app on the offline demo's embedded client, its data under ``tmp_path``."""
    settings = settings_for(tmp_path)
    return make_app(EmbeddedClient(settings, demo_delay=0.002), settings)


async def mounted_panel(app: Any, *, wide: bool = False) -> WorkflowPanel:
    """A workflow panel mounted on the main screen once the app is ready (``wide``: the whole width)."""
    await app.wait_until_ready()
    panel = WorkflowPanel(None)
    await app.screen_stack[0].mount(panel)
    if wide:
        panel.add_class("-wide")
    return panel


async def corpus_canvas(app: Any, pilot: Any, name: str) -> WorkflowCanvas:
    """The wide panel's canvas with corpus workflow ``name`` drawn and painted."""
    from tests.protocol.workflow_corpus import corpus_json

    canvas = (await mounted_panel(app, wide=True)).canvas
    canvas.show(parse_workflow(corpus_json(name)))
    await painted(canvas, pilot)
    return canvas


async def painted(canvas: WorkflowCanvas, pilot: Any) -> None:
    """Until the canvas painted rows since its last ``reset_painted`` (``show`` lays out at once; rows
    are painted on the next refresh), then until the messages that refresh queued (the scroll to
    the cursor) are processed."""
    await until(lambda: bool(canvas.painted_rows), pilot, what="the canvas painted")
    await pilot.pause()


async def test_demo_build_opens_the_canvas_live_without_taking_the_keyboard(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        panel = await panel_shows(app, pilot)
        text = canvas_text(panel.canvas)  # (zoomed out to fit the panel: names cut at 16 cells)
        assert "Schedule Tri" in text and "Slack" in text and "▶" in text
        assert "+ new" in text  # the call created every node
        assert panel.canvas.marks and set(panel.canvas.marks.values()) == {"new"}
        assert not panel.canvas.has_focus  # the person did not ask for it: the keyboard stays where it was
        assert "wf-" in str(panel.title_line.render())


async def test_on_a_narrow_screen_the_build_says_how_to_see_it_and_workflow_opens_it_whole(tmp_path: Path) -> None:
    """At 80x24 the panel beside the conversation left both too narrow (the approval card's keys were
    cut): the agent's write does not open it there; a note names /workflow, which opens it whole."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        notes: dict[str, str] = {}  # every note naming /workflow, kept as seen (under load one may time out
        # and leave the list before the run waits: beside stress-ng the test then found none)

        def noted() -> bool:
            notes.update((n.identity, str(n.message)) for n in app._notifications if "/workflow" in str(n.message))
            return bool(notes)

        await until(noted, pilot, timeout=30)
        await until(lambda: noted() and bool(app.thread.pending), pilot, timeout=30)  # the run waits for "activate?"
        assert panel_of(app.main_screen) is None
        assert len(notes) == 1, notes  # once per workflow, not per call
        await send(app, pilot, "/workflow")
        panel = await panel_shows(app, pilot)
        assert panel.has_class("-wide") and panel.outer_size.width == 80
        assert "Schedule Tri" in canvas_text(panel.canvas)  # zoomed out to fit 80 columns


async def test_a_terminal_made_narrow_hides_the_agents_panel_and_keeps_the_conversation_whole(tmp_path: Path) -> None:
    """The agent's write opened the panel at 160 columns; made 80 wide (beside a busy machine the panel
    had opened before the resize, and the conversation kept 40 of 80 columns): the panel the keys are
    not in hides, the conversation takes the width, /workflow shows it whole with the keys; wide
    again, a panel the width hid comes back beside the conversation."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        panel = await panel_shows(app, pilot)
        await until(lambda: bool(app.thread.pending), pilot, timeout=30)  # the run waits for "activate?"
        assert panel.display and not panel.has_class("-wide") and app.prompt.has_focus
        await pilot.resize_terminal(80, 24)
        await until(lambda: not panel.display, pilot, what="the panel hidden at 80 columns")
        await until(lambda: app.view.size.width >= 76, pilot, what="the conversation given the width")
        assert app.prompt.has_focus and app.prompt.region.width >= 76
        await pilot.resize_terminal(160, 48)  # wide again: the panel the width hid is back, half width
        await until(lambda: panel.display and panel.outer_size.width < 100, pilot, what="the panel back beside")
        assert not panel.has_class("-wide") and app.prompt.has_focus
        await pilot.resize_terminal(80, 24)
        await until(lambda: not panel.display, pilot)
        await send(app, pilot, "/workflow")  # asked for: shown whole, with the keys, on the same workflow
        await until(lambda: panel.display and panel.outer_size.width == 80 and panel.canvas.has_focus, pilot,
                    what="the panel whole width with the keys")
        assert panel_of(app.main_screen) is panel and "Schedule Tri" in canvas_text(panel.canvas)  # (fitted)
        await pilot.resize_terminal(160, 48)  # the width made it whole: half again, the keys stay
        await until(lambda: panel.outer_size.width < 100, pilot, what="the panel half width again")
        assert panel.display and panel.canvas.has_focus
        await pilot.resize_terminal(80, 24)  # the keys are in it: it stays, whole width
        await until(lambda: panel.outer_size.width == 80, pilot, what="the panel with the keys whole width")
        assert panel.display and panel.canvas.has_focus
        await pilot.press("escape")
        await until(lambda: panel_of(app.main_screen) is None and app.prompt.has_focus, pilot)


async def test_keys_that_leave_a_whole_width_panel_are_never_behind_it(tmp_path: Path) -> None:
    """A whole-width panel (80x24, or ``m``) covers the conversation and the prompt: Tab moved the
    keys to a block behind it, and typed letters acted there unseen. When the keys leave it, it
    stops covering: hidden at 80 columns (``/workflow`` shows it again), half width on a wide screen."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        await until(lambda: bool(app.thread.pending), pilot, timeout=30)  # the run waits for "activate?"
        await send(app, pilot, "/workflow")
        panel = await panel_shows(app, pilot)
        await until(lambda: panel.canvas.has_focus and panel.outer_size.width == 80, pilot)
        await pilot.press("tab")
        await until(lambda: not panel.display, pilot, what="the panel out of the way of the keys")
        focused = app.focused
        assert focused is not None and not panel.has_focus_within
        await send(app, pilot, "/workflow")  # shown again, whole, with the keys
        await until(lambda: panel.display and panel.canvas.has_focus and panel.outer_size.width == 80, pilot)
        await pilot.resize_terminal(160, 48)
        await until(lambda: panel.outer_size.width < 100, pilot)
        await pilot.press("m")  # the person widens it
        await until(lambda: panel.outer_size.width == 160, pilot)
        await pilot.press("tab")
        await until(lambda: panel.display and panel.outer_size.width < 100, pilot, what="half width again")
        assert not panel.has_focus_within and app.focused is not None
        assert not app.focused.region.overlaps(panel.region)


async def test_workflow_command_keys_details_zoom_and_close(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "/workflow wf-102")
        panel = await panel_shows(app, pilot, "wf-102")
        canvas = panel.canvas
        assert canvas.has_focus  # asked for: the keys go to the canvas
        assert canvas.cursor == "Webhook"
        await pilot.press("right")
        assert canvas.cursor == "Edit Fields (Set)"
        await pilot.press("l")
        assert canvas.cursor == "Slack"
        await pilot.press("enter")
        assert panel.has_class("-details")
        assert "n8n-nodes-base.slack" in str(panel.details.render())
        await pilot.press("escape")  # details first
        assert not panel.has_class("-details") and panel_of(app.main_screen) is not None
        await pilot.press("z")
        assert canvas.graph_layout is not None and canvas.graph_layout.detail.name == "COMPACT"
        await pilot.press("o")  # the demo has no editor: said, nothing opened
        await pilot.press("escape")
        await until(lambda: panel_of(app.main_screen) is None, pilot)
        assert app.prompt.has_focus


async def test_one_node_state_change_repaints_only_its_rows(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app, wide=True)
        wf = parse_workflow(big(60))
        runs = {n.name: NodeRun(RunState.RAN, 1) for n in wf.nodes}
        panel.canvas.show(wf, runs=runs)
        canvas = panel.canvas
        await painted(canvas, pilot)
        target = canvas.cursor
        assert target is not None and canvas.graph_layout is not None
        box = canvas.graph_layout.boxes[target]
        canvas.reset_painted()
        canvas.set_runs({**runs, target: NodeRun(RunState.FAILED, 0, "boom")})
        await painted(canvas, pilot)  # "the change was not painted" if it never is
        assert canvas.painted_rows <= set(range(box.y, box.y + box.h))
        assert "✗ failed" in canvas_text(canvas)


async def test_mouse_click_selects_and_drag_pans(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(app)
        panel.canvas.show(parse_workflow(if_merge()))
        canvas = panel.canvas
        await painted(canvas, pilot)
        assert canvas.graph_layout is not None
        assert canvas.cursor == "New order"
        box = canvas.graph_layout.boxes["Big order?"]
        await pilot.click(WorkflowCanvas, offset=(box.x - int(canvas.scroll_x) + 2, box.y - int(canvas.scroll_y) + 1))
        assert canvas.cursor == "Big order?"
        # a drag on the background pans
        assert canvas.max_scroll_x > 0
        before = canvas.scroll_x
        await pilot.mouse_down(WorkflowCanvas, offset=(30, canvas.size.height - 4))
        await pilot.hover(WorkflowCanvas, offset=(10, canvas.size.height - 4))
        await pilot.mouse_up(WorkflowCanvas, offset=(10, canvas.size.height - 4))
        assert canvas.scroll_x > before
        # Ctrl+wheel zooms out and in; the plain wheel scrolls
        from textual import events

        canvas.post_message(events.MouseScrollDown(canvas, 5, 5, 0, 1, 0, False, False, True))
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail.name == "COMPACT", pilot)
        canvas.post_message(events.MouseScrollUp(canvas, 5, 5, 0, -1, 0, False, False, True))
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail.name == "FULL", pilot)


async def test_every_theme_draws_words_not_only_colours(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(app)
        runs = {"New order": NodeRun(RunState.RAN, 1), "Big order?": NodeRun(RunState.FAILED, 0, "x")}
        panel.canvas.show(parse_workflow(if_merge()), runs=runs)
        for theme in list(app.available_themes)[:6]:
            app.theme = theme
            await pilot.pause()  # the theme's styles are applied (pending messages processed; no fixed time)
            lines = [panel.canvas.render_line(y).text for y in range(panel.canvas.size.height)]
            joined = "\n".join(lines)
            assert "✗ failed" in joined or "✗ fail" in joined
            # sticky notes' frames in n8n's seven colours: seven different colours in every theme
            notes = {panel.canvas._style(note_style(colour)).color for colour in range(1, 8)}
            assert len(notes) == 7 and None not in notes, theme
            # and their insides on seven different tints (n8n fills a note), none the canvas's own background
            # a tint: near the canvas's background, never the colour whole (a block of bright paint)
            fills = {panel.canvas._style(note_fill(colour)).bgcolor for colour in range(1, 8)}
            canvas_bg = panel.canvas.rich_style.bgcolor
            assert len(fills) == 7 and None not in fills and canvas_bg not in fills, theme
            assert canvas_bg is not None
            for fill in fills:
                assert fill is not None
                near = zip(fill.get_truecolor(), canvas_bg.get_truecolor(), strict=True)
                assert max(abs(a - b) for a, b in near) <= 60, (theme, fill, canvas_bg)


async def test_history_does_not_open_the_panel_and_workflow_opens_its_latest(tmp_path: Path) -> None:
    """The follower is driven by the frame: a thread opened with its history (the frame's reset) holds
    history, whatever time it is; there is no clock to wait for."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send(BUILD)
        await until(lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).workflow_id is not None, pilot, timeout=30)
        built = panel_of(app.main_screen).workflow_id  # type: ignore[union-attr]
        thread = app.thread_id
        await until(lambda: bool(app.thread.pending), pilot, timeout=30)  # the run waits for "activate?"
    again = embedded_app(tmp_path)
    async with again.run_test(size=(160, 48)) as pilot:
        await again.wait_until_ready()
        await again.threads.open(thread)
        await until(lambda: again.projection.frame_no > 3, pilot, what="frames after the history")
        assert panel_of(again.main_screen) is None  # a call in the history is not news
        await send(again, pilot, "/workflow")
        assert "Schedule Tri" in canvas_text((await panel_shows(again, pilot, built)).canvas)  # (opens fitted)


def _workflow_run(run: str, call: str, tool: str, args: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    return [ev("run-start", run=run, messageId=f"m-{run}"),
            ev("tool-call", run=run, toolCallId=call, toolName=tool, args=args),
            ev("tool-result", run=run, toolCallId=call, result=result),
            ev("text-delta", run=run, text="Done."),
            ev("run-finish", run=run, status="completed")]


def _compact(names: list[str], links: dict[str, list[str]]) -> dict[str, Any]:
    """A workflow as our create/update tools answer (``compact_workflow``): positions, target names."""
    return {"id": "wf-7", "name": "Leads", "nodes": [
        {"name": n, "type": "n8n-nodes-base.webhook" if i == 0 else "n8n-nodes-base.set", "position": [220 * i, 0]}
        for i, n in enumerate(names)], "connections": links}


async def test_update_call_marks_new_and_changed_nodes_from_what_the_calls_carried() -> None:
    """A server that cannot read workflows (our own, by URL): the canvas draws the tool calls' answers;
    the update marks the node it added (+ new) and the one whose connections it changed (~ changed)."""
    create = _workflow_run("r1", "c1", "create-workflow", {"name": "Leads"},
                           _compact(["Hook", "Tag"], {"Hook": ["Tag"]}))
    update = _workflow_run("r2", "c2", "update-workflow", {"workflowId": "wf-7"},
                           _compact(["Hook", "Tag", "Notify"], {"Hook": ["Tag"], "Tag": ["Notify"]}))
    app = make_app(recorded([create, update]))
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("build it")
        await until(lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).canvas.workflow is not None, pilot)
        canvas = panel_of(app.main_screen).canvas  # type: ignore[union-attr]
        assert canvas.marks == {"Hook": "new", "Tag": "new"}
        await until(lambda: not app.conversation.is_streaming, pilot)  # type: ignore[union-attr]
        # the panel laid out (its first drawing fits it: full detail, not opened fitted); without this wait the
        # canvas could get its size only after the update, whose 3 boxes are a little wider: opened fitted
        await until(lambda: canvas.size.width > 0 and not canvas.opening, pilot, what="the panel's size")
        await app.thread.outbox.send("add a notification")
        await until(lambda: canvas.workflow is not None and len(canvas.workflow.nodes) == 3, pilot)
        assert canvas.marks == {"Notify": "new", "Tag": "changed"}
        text = canvas_text(canvas)
        assert "+ new" in text and "~ changed" in text
        assert "cannot read workflows" not in str(panel_of(app.main_screen).status_line.render())  # type: ignore[union-attr]


async def test_a_reload_with_new_run_states_repaints_only_the_changed_boxes(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app, wide=True)
        wf = parse_workflow({**if_merge(), "id": "w1"})
        first = {n.name: NodeRun(RunState.RAN, 1) for n in wf.nodes}
        panel.canvas.show(wf, runs=first)
        canvas = panel.canvas
        await painted(canvas, pilot)
        assert canvas.graph_layout is not None
        layout = canvas.graph_layout
        canvas.reset_painted()
        panel.canvas.show(parse_workflow({**if_merge(), "id": "w1"}),
                          runs={**first, "Tag small": NodeRun(RunState.FAILED, 0, "bad")})
        await painted(canvas, pilot)
        assert canvas.graph_layout is layout  # not laid out again
        box = layout.boxes["Tag small"]
        # its box, and the rows of its line to Merge (the "1 item" written on it is gone: it failed)
        line_rows = {y for r in layout.routes if r.edge.source == "Tag small" for _, y in r.points}
        assert canvas.painted_rows <= set(range(box.y, box.y + box.h)) | line_rows
        assert canvas.painted_rows & set(range(box.y, box.y + box.h))


async def test_w_on_a_workflow_tool_card_opens_its_workflow(tmp_path: Path) -> None:
    from instance_ai_tui.tui.widgets.tool_card import ToolCallCard

    app = embedded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("list my workflows")
        await until(lambda: any(c.tc.tool_name == "list-workflows" and not c.tc.is_loading
                                for c in app.query(ToolCallCard)), pilot, timeout=30)
        listing = next(c for c in app.query(ToolCallCard) if c.tc.tool_name == "list-workflows")
        listing.focus()
        await pilot.press("w")  # not a call about one workflow: nothing opens
        await pilot.pause(0.3)  # the scenario: a window in which no panel may open
        assert panel_of(app.main_screen) is None and listing.check_action("show_workflow", ()) is False
    # a card of create-workflow (recorded: our own server by URL cannot read workflows)
    create = _workflow_run("r1", "c1", "create-workflow", {"name": "Leads"}, _compact(["Hook", "Tag"], {"Hook": ["Tag"]}))
    app = make_app(recorded([create]))
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await app.thread.outbox.send("build it")
        await until(lambda: any(c.tc.tool_name == "create-workflow" for c in app.query(ToolCallCard)), pilot)
        await until(lambda: panel_of(app.main_screen) is not None, pilot)
        panel_of(app.main_screen).remove()  # type: ignore[union-attr]
        await until(lambda: panel_of(app.main_screen) is None, pilot)
        card = next(c for c in app.query(ToolCallCard) if c.tc.tool_name == "create-workflow")
        card.focus()
        await pilot.press("w")
        await until(lambda: panel_of(app.main_screen) is not None, pilot)
        assert "cannot read workflows" in str(panel_of(app.main_screen).status_line.render())  # type: ignore[union-attr]


async def test_o_opens_the_workflow_in_n8ns_editor_when_the_instance_is_known(tmp_path: Path) -> None:
    from instance_ai_tui.assistant.n8n_client import N8nPublicApi
    from instance_ai_tui.client.workflows import BackendSource

    app = embedded_app(tmp_path)
    opened: list[str] = []
    app.open_url = lambda url, new_tab=True: opened.append(url)  # type: ignore[method-assign]
    api = N8nPublicApi("http://n8n.example:5678/", "not-a-real-key")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await app.wait_until_ready()
            demo = WorkflowPanel(BackendSource(app.client.service.n8n))  # type: ignore[attr-defined]
            await app.screen_stack[0].mount(demo)
            await demo.load("wf-101")
            demo.canvas.focus()
            await pilot.press("o")
            assert opened == []  # the demo instance has no editor: said instead
            await pilot.press("escape")  # closes it; the keys go back to the prompt
            await until(lambda: panel_of(app.main_screen) is None, pilot)
            panel = WorkflowPanel(BackendSource(api))
            await app.screen_stack[0].mount(panel)
            panel.workflow_id = "Ab12"
            panel.canvas.show(parse_workflow(if_merge()))
            await painted(panel.canvas, pilot)  # laid out and drawn: a click lands on it
            await pilot.click(WorkflowCanvas, offset=(2, 10))  # the person moves the keys to it
            assert panel.canvas.has_focus
            await pilot.press("o")
            assert opened == ["http://n8n.example:5678/workflow/Ab12"]
    finally:
        await api.aclose()


async def test_after_a_run_each_node_shows_its_state_and_r_reads_it_again(tmp_path: Path) -> None:
    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "/workflow wf-101")
        panel = await panel_shows(app, pilot, "wf-101")
        assert panel.execution is None and "ran" not in canvas_text(panel.canvas)
        await app.client.service.n8n.run_workflow("wf-101")  # type: ignore[attr-defined]  # the demo's run
        await until(lambda: panel.canvas.has_focus, pilot)
        await pilot.press("r")
        await until(lambda: panel.execution is not None, pilot)
        text = canvas_text(panel.canvas)  # (opened fitted at 80 columns: zoomed out, each box's state)
        assert text.count("✓ ran") == 3 and text.count("─1─▶") == 2
        assert "last execution exec-" in str(panel.status_line.render())
        await pilot.press("f")  # full detail: the items in words
        await until(lambda: canvas_text(panel.canvas).count("✓ ran · 1 item") == 3, pilot, what="full detail")


async def test_a_create_preview_is_not_marked_against_the_workflow_shown(tmp_path: Path) -> None:
    import dataclasses

    from instance_ai_tui.protocol.workflow_graph import preview_from_args

    app = make_app(recorded())
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(app)
        shown = parse_workflow({**if_merge(), "id": "w1"})
        panel.show_preview(shown, "read", answered=True)
        await painted(panel.canvas, pilot)
        create = preview_from_args({"name": "Other", "nodes": [{"name": "Merge", "type": "n8n-nodes-base.merge"},
                                                               {"name": "Save row", "type": "n8n-nodes-base.set"}]})
        assert create is not None and create.id == ""
        panel.show_preview(create, "create-workflow running")
        assert panel.canvas.marks == {"Merge": "new", "Save row": "new"}  # a new workflow: all new
        update = dataclasses.replace(parse_workflow({**if_merge(), "nodes": if_merge()["nodes"][:5]}), id="w1")
        panel.show_preview(update, "update-workflow running")
        assert panel.canvas.marks == {"Merge": "changed"}  # its link to "Save row" goes
        assert "IF with two branches merging" in str(panel.title_line.render())
        # b: the workflow before the update, and back to what it asks for
        panel.canvas.reset_painted()
        await painted(panel.canvas, pilot)  # the update's preview drawn: a click lands on it
        await pilot.click(WorkflowCanvas, offset=(2, 12))
        await pilot.press("b")
        assert panel.canvas.workflow is shown and panel.canvas.marks == {}
        assert "before" in str(panel.status_line.render())
        await pilot.press("b")
        assert panel.canvas.workflow is not None and len(panel.canvas.workflow.nodes) == 5
        assert panel.canvas.marks == {"Merge": "changed"}


class _Executions:
    """A workflow source holding one real template and three executions in n8n's shape (``runData`` with a
    run per pass of the loop): what ``[`` / ``]`` read. A test double of the source, not of n8n."""

    label = "test source"

    def __init__(self, workflow: dict[str, Any]) -> None:
        self.workflow = workflow

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        return {**self.workflow, "id": workflow_id}

    async def executions(self, workflow_id: str, limit: int = 20) -> list[dict[str, Any]]:
        return [{"id": str(i), "status": "success" if i != 2 else "error", "startedAt": f"2026-01-0{i}"}
                for i in (3, 2, 1)]

    async def execution(self, execution_id: str) -> dict[str, Any]:
        passes = int(execution_id)
        item = [{"json": {"n": 1}}]
        run_data: dict[str, Any] = {
            "When clicking ‘Execute workflow’": [{"data": {"main": [item]}}],
            "Loop Over Items": [{"data": {"main": [[], item]}} for _ in range(passes)],
            "Wait": [{"data": {"main": [item]}} for _ in range(passes)],
        }
        if execution_id == "2":
            run_data["Code1"] = [{"error": {"message": "test!!!"}, "executionStatus": "error"}]
        return {"id": execution_id, "status": "success", "data": {"resultData": {"runData": run_data}}}

    async def last_execution(self, workflow_id: str) -> dict[str, Any] | None:
        return await self.execution("3")

    def editor_url(self, workflow_id: str) -> str | None:
        return None

    async def list_workflows(self) -> list[dict[str, Any]]:
        return []


async def _loop_panel(app: Any, wide: bool = False) -> tuple[WorkflowPanel, Any]:
    """n8n's loop fixture with its executions on a panel mounted on the main screen, loaded, the keys on
    its canvas (``wide``: the panel takes the whole width, as on a narrow screen)."""
    from tests.protocol.workflow_corpus import corpus_json

    panel = WorkflowPanel(_Executions(corpus_json("n8n__Workflow_loop")))  # type: ignore[arg-type]
    await app.screen_stack[0].mount(panel)
    if wide:
        panel.add_class("-wide")
    assert await panel.load("loop-1")
    panel.canvas.focus()
    return panel, panel.canvas


async def test_fit_find_and_executions_on_a_real_loop(tmp_path: Path) -> None:
    """n8n's own loop fixture: the panel opens on the trigger; a loop's nodes say their passes and items;
    [ and ] go to older and newer executions (a failed node says its error); / finds a node, n / N go
    round the matches; f fits and goes back."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        panel, canvas = await _loop_panel(app)
        await pilot.pause()
        assert canvas.cursor == "When clicking ‘Execute workflow’"  # opens on the trigger
        assert "✓ 3 runs · 3 items" in canvas_text(canvas)  # the Wait node ran once per pass
        await pilot.press("left_square_bracket")  # older: execution 2, Code1 failed
        await until(lambda: panel.execution is not None and panel.execution.id == "2", pilot)
        assert "✗ failed: test!!!" in canvas_text(canvas) and "✓ 2 runs · 2 items" in canvas_text(canvas)
        assert "2 of 3" in str(panel.status_line.render())
        await pilot.press("right_square_bracket")  # newer again
        await until(lambda: panel.execution is not None and panel.execution.id == "3", pilot)
        await pilot.press("slash")
        assert panel.find_input.has_focus  # the person asked: the field has the keys
        await pilot.press(*"code", "enter")
        await until(lambda: canvas.has_focus, pilot, what="the keys back on the canvas")
        assert canvas.has_focus and canvas.cursor in ("Code", "Code1") and panel.matches == ["Code", "Code1"]
        first = canvas.cursor
        await pilot.press("n")
        assert canvas.cursor != first
        await pilot.press("N")
        assert canvas.cursor == first
        await pilot.press("f")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail.name != "FULL", pilot)
        assert canvas.fitted
        await pilot.press("f")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail.name == "FULL", pilot)
        assert canvas.cursor == first  # back at the node under the cursor


async def test_the_status_of_a_match_goes_when_the_cursor_leaves_it(tmp_path: Path) -> None:
    """Tried in tmux: ``/wait`` Enter said "match 1/1: Wait"; the cursor moved on to Loop Over Items and the
    line still said "match 1/1: Wait" (a reader takes the node under the cursor for Wait). When the cursor
    leaves the match the line says again what it said before the search (the execution shown)."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        panel, canvas = await _loop_panel(app)
        await pilot.pause()
        before = str(panel.status_line.render())
        assert "last execution 3" in before
        await pilot.press("slash", *"wait", "enter")
        await until(lambda: canvas.has_focus and canvas.cursor == "Wait", pilot, what="the cursor on Wait")
        await pilot.pause()
        assert "match 1/1: Wait" in str(panel.status_line.render())
        await pilot.press("left")
        await until(lambda: canvas.cursor != "Wait", pilot, what="the cursor moved on")
        await until(lambda: "match" not in str(panel.status_line.render()), pilot, what="the match's status gone")
        assert str(panel.status_line.render()) == before
        await pilot.press("n")  # the search is still there: n goes back to it, and says so
        await until(lambda: canvas.cursor == "Wait", pilot, what="n back on Wait")
        assert "match 1/1: Wait" in str(panel.status_line.render())


async def test_fit_shows_a_drawing_a_few_columns_too_wide_cropped_not_as_blocks(tmp_path: Path) -> None:
    """Tried in tmux at 80x24: ``f`` on the loop after a run gave the overview of blocks because the zoomed-out
    drawing is 84 columns and the view 79 (n8n's fit would shrink it a little). A drawing a few cells larger
    than the view is shown zoomed out and cropped: every box drawn with its name, the cursor's box in view,
    the status says how many columns are past the edge; a drawing much larger still gives the blocks."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.wait_until_ready()
        panel, canvas = await _loop_panel(app, wide=True)
        await pilot.press("f")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.COMPACT
                    and canvas.fitted, pilot, what="the fitted drawing")
        await pilot.pause(0.2)
        layout = canvas.graph_layout
        assert layout is not None
        width = canvas.size.width
        assert width < layout.width <= width + 8, (width, layout.width)  # the case seen: a few columns too wide
        assert canvas.overview is None and canvas.cropped == (layout.width - width, 0)
        rows = "\n".join("".join(seg.text for seg in canvas.render_line(y)) for y in range(canvas.size.height))
        assert "Loop Over" in rows and "◇ Wait" in rows and "Code" in rows, rows  # boxes, not blocks
        assert "▪▪" not in rows
        assert f"{layout.width - width} columns past the view" in str(panel.status_line.render())
        canvas.select("Code1")  # the furthest right: the view follows it
        await pilot.pause(0.2)
        box = layout.boxes["Code1"]
        assert canvas.scroll_offset.x + width >= box.x + box.w
        # tmux: / finds Wait in the cropped view; the field folding fits the view again, and that said
        # "fitted…" over "match 1/1: Wait"
        await pilot.press("slash", *"wait", "enter")
        await until(lambda: canvas.has_focus and canvas.cursor == "Wait", pilot, what="the cursor on Wait")
        await until(lambda: not panel.has_class("-finding"), pilot, what="the field folded")
        await pilot.pause(0.5)
        assert "match 1/1: Wait" in str(panel.status_line.render())
        # the agent changes the workflow while it is fitted: laid out and fitted again, the line keeps what
        # the change says
        source = panel.source
        assert isinstance(source, _Executions)
        source.workflow = {**source.workflow, "nodes": [
            {**node, "parameters": {**node.get("parameters", {}), "amount": 9}} if node["name"] == "Wait" else node
            for node in source.workflow["nodes"]]}
        assert await panel.load("loop-1", changed_by_call=True)
        await until(lambda: canvas.marks == {"Wait": "changed"} and canvas.graph_layout is not layout, pilot)
        await pilot.pause(0.5)
        assert canvas.cropped is not None and "~ 1 changed" in str(panel.status_line.render())
        await pilot.resize_terminal(60, 24)  # now far larger than the view: the blocks
        await until(lambda: canvas.overview is not None, pilot, what="the overview")
        assert canvas.cropped is None


async def test_fit_zooms_out_further_with_names_before_it_shows_blocks(tmp_path: Path) -> None:
    """``f`` had two steps: the zoomed-out drawing (whole, or cropped when a few cells too large) and, past
    that, blocks. A 12-node template at 160x48 is 232 columns zoomed out: blocks, where n8n's fit shrinks it
    and every name stays readable. Between the two, the drawing zoomed out further (``Detail.TIGHT``: names
    cut shorter, boxes closer) is shown where it fits: boxes with their names, no blocks."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__AI_Automated_HR_Workflow_for_CV_Analysis_and_Candidate_Evaluation")
        canvas.focus()
        await pilot.press("f")
        await until(lambda: canvas.fitted and (canvas.overview is not None or (
            canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.TIGHT)), pilot,
            what="the fitted view")
        await pilot.pause(0.2)
        layout = canvas.graph_layout
        assert layout is not None
        assert canvas.overview is None, f"blocks at {layout.detail.name} {layout.width}x{layout.height}"
        assert layout.detail is Detail.TIGHT and layout.width <= canvas.size.width, layout.width
        rows = "\n".join("".join(seg.text for seg in canvas.render_line(y)) for y in range(canvas.size.height))
        assert "▪▪" not in rows
        cut = shown_names(layout)
        for name in layout.boxes:  # every box with its name (cut, never two alike), none hidden in a block
            assert cut.get(name, name) in rows, (name, rows)
        await pilot.press("f")  # and back to full detail
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.FULL, pilot)


async def test_the_overview_names_its_blocks(tmp_path: Path) -> None:
    """Tried in tmux: ``f`` on the 5-node loop in the panel beside the conversation (even zoomed out wider
    than the view) gave blocks of ``▪`` and no name: a reader could not tell which block is which. Each
    block wide enough now carries its node's name (cut with …); the cursor's block still starts with ◆.
    (At 160x48 that panel now shows the loop zoomed out further, with its boxes; at 100x30 even that is
    larger than the view.)"""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.wait_until_ready()
        _, canvas = await _loop_panel(app)
        await pilot.press("f")
        await until(lambda: canvas.overview is not None, pilot, what="the overview")
        await pilot.pause()
        rows = ["".join(seg.text for seg in canvas.render_line(y)) for y in range(canvas.size.height)]
        shown = "\n".join(rows)
        for name in ("Code", "Wait", "Loop"):
            assert name in shown, shown
        assert "◆When" in shown or "◆Whe" in shown, shown  # the cursor: the trigger


async def test_the_overview_writes_a_small_blocks_name_on_past_it_where_it_fits(tmp_path: Path) -> None:
    """Tried in tmux at 160x48: the overview of Auto Categorise Outlook (26 nodes, 420 columns zoomed out)
    cut every name to its block: "Mi…" for eight different Microsoft Outlook nodes. A name now runs on past
    its block over free cells (lines' dots) up to a cell before the next block: whole where there is room,
    cut with … where not; no name ever covers another node's block."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__Auto_Categorise_Outlook_Emails_with_AI")
        canvas.focus()
        await pilot.press("f")
        await until(lambda: canvas.overview is not None, pilot, what="the overview")
        await pilot.pause()
        rows = ["".join(seg.text for seg in canvas.render_line(y)) for y in range(canvas.size.height)]
        shown = "\n".join(rows)
        for name in ("Microsoft Outlook22", "Microsoft Outlook21", "Ollama Chat Model1", "Catch Erro"):
            assert name in shown, shown  # cut to "Mi…", "Ol…", "Ca…" before
        # 420 columns zoomed out, more than twice the view: blocks at once, not laid out again further out
        assert canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.COMPACT
        layout, scale = canvas.graph_layout, canvas.overview
        assert layout is not None and scale is not None
        sx, sy = scale
        for box in layout.boxes.values():  # every block still starts where its box is
            for y in range(box.y // sy, min(len(rows), (box.y + box.h - 1) // sy + 1)):
                assert rows[y][box.x // sx] in "▪◆", (box.name, y, rows[y])


async def test_a_node_found_comes_into_view_with_its_branch_labels(tmp_path: Path) -> None:
    """Tried in tmux at 80x24: ``/switch`` brought Switch1 into view at the right edge, its rule outputs'
    labels just past it. The view now holds the box, its arrows in and its outputs' labels."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__Auto_Categorise_Outlook_Emails_with_AI")
        layout = canvas.graph_layout
        assert layout is not None
        for name in ("Switch1", "If1"):
            box = layout.boxes[name]
            assert box.out_labels, name
            canvas.select(name)
            await pilot.pause(0.3)
            await until(lambda box=box: canvas.scroll_offset.x <= box.x - 1, pilot)  # type: ignore[misc]
            labels = max(len(t) for t in box.out_labels.values())
            assert canvas.scroll_offset.x + canvas.size.width >= box.x + box.w + 1 + labels, (name, canvas.scroll_offset)


async def test_a_big_workflow_is_laid_out_off_the_event_loop(tmp_path: Path) -> None:
    """5,000 nodes: the layout runs in the worker process; keys are answered while it runs (the previous
    drawing stays), and the newest layout is the one shown."""
    from tests.support.workflow_shapes_gen import chain

    before = workflow_canvas_worker.laid_out_in_worker

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app)
        panel.canvas.show(parse_workflow(chain(5000)))
        assert panel.canvas.laying_out and panel.canvas.graph_layout is None
        panel.canvas.focus()
        await pilot.press("m")  # a key answered while the layout runs in its thread
        assert panel.has_class("-wide") and panel.canvas.laying_out
        await until(lambda: panel.canvas.graph_layout is not None, pilot, timeout=120, what="the layout")
        assert len(panel.canvas.graph_layout.boxes) == 5000  # type: ignore[union-attr]
        assert panel.canvas.cursor == "N0"
        assert workflow_canvas_worker.laid_out_in_worker == before + 1, workflow_canvas_worker.last_failure
        assert panel.canvas.text() == workflow_text(parse_workflow(chain(5000)))  # the same drawing


async def test_a_small_workflow_is_laid_out_in_the_app_and_a_stopped_worker_is_replaced(tmp_path: Path) -> None:
    """200 nodes never reach the worker process; when the worker dies while it lays a workflow out, that
    layout is made in a thread (the reason kept) and the next one in a new worker."""
    import os
    import signal

    from tests.support.workflow_shapes_gen import chain, random_dag

    app = embedded_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = await mounted_panel(app)
        before = workflow_canvas_worker.laid_out_in_worker
        panel.canvas.show(parse_workflow(chain(200)))
        await until(lambda: panel.canvas.graph_layout is not None, pilot, timeout=60, what="the layout")
        assert workflow_canvas_worker.laid_out_in_worker == before and not workflow_canvas_worker.busy
        big = parse_workflow(random_dag(3000, True))
        panel.canvas.show(big)
        await until(lambda: workflow_canvas_worker.busy, pilot, timeout=60, what="the worker at work")
        pid = workflow_canvas_worker.pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the worker dies (killed, out of memory)
        await until(lambda: panel.canvas.graph_layout is not None and len(panel.canvas.graph_layout.boxes) == 3000,
                    pilot, timeout=180, what="the layout made in a thread")
        assert "the layout process stopped" in workflow_canvas_worker.last_failure
        assert workflow_canvas_worker.laid_out_in_worker == before
        assert not panel.canvas.graph_layout.failed  # type: ignore[union-attr]
        panel.canvas.zoom()
        await until(lambda: panel.canvas.graph_layout is not None and panel.canvas.graph_layout.detail is Detail.COMPACT
                    and not panel.canvas.laying_out, pilot, timeout=180, what="the layout in a new worker")
        assert workflow_canvas_worker.laid_out_in_worker == before + 1, workflow_canvas_worker.last_failure
        assert workflow_canvas_worker.pid() != pid


async def test_the_node_under_the_cursor_stays_in_view_when_the_canvas_narrows(tmp_path: Path) -> None:
    """Tried in tmux: ``/wait`` at 160x48 put the cursor on Wait, 115 columns in; the terminal made 80 wide,
    the view stayed at the left and Wait was out of sight while Enter would still show its details (keys
    never act on a node the person cannot see). When the canvas gets narrower or shorter (the terminal, the
    details pane opening), the node under the cursor comes back into view."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        canvas = await corpus_canvas(app, pilot, "n8n__Workflow_loop")
        layout = canvas.graph_layout
        assert layout is not None
        name = max(layout.boxes, key=lambda n: layout.boxes[n].x + layout.boxes[n].w)
        box = layout.boxes[name]
        assert box.x + box.w > 80
        canvas.focus()  # the keys are in the canvas (as after ``/``): the narrow terminal keeps the panel
        canvas.select(name)
        await pilot.pause(0.3)
        assert canvas.scroll_offset.x + canvas.size.width >= box.x + box.w

        def in_view() -> bool:
            x, y = canvas.scroll_offset
            return x <= box.x and box.x + box.w <= x + canvas.size.width and y <= box.y \
                and box.y + box.h <= y + canvas.size.height

        await pilot.resize_terminal(80, 24)
        await until(lambda: 0 < canvas.size.width <= 80, pilot)
        await until(in_view, pilot, what="the cursor's node in view")


def view_rows(canvas: WorkflowCanvas) -> list[str]:
    """The canvas's cells as the terminal shows them: one string per row of the view."""
    return [canvas.render_line(y).text for y in range(canvas.size.height)]


async def test_a_workflow_a_little_wider_than_the_panel_opens_fitted_not_sliced(tmp_path: Path) -> None:
    """Seen by the coordinator in tmux at 160x48: the demo's build opened the panel in full detail, a little
    wider than the panel, and its right-most box (Slack) was sliced at the panel's edge with nothing saying
    more lay to the right. A workflow that zoomed out fits the view whole opens fitted (as n8n's editor opens
    a workflow), every box whole in the cells shown, and the line says how to see full detail."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, BUILD)
        panel = await panel_shows(app, pilot)
        canvas = panel.canvas
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.COMPACT
                    and "fitted (f: full detail)" in str(panel.status_line.render()), pilot, timeout=30,
                    what="the panel opened fitted")
        layout = canvas.graph_layout
        assert layout is not None and canvas.fitted and canvas.auto_fitted
        rows = view_rows(canvas)
        for name, box in layout.boxes.items():  # each box's four corners are in the cells shown
            assert rows[box.y][box.x] == "╭" and rows[box.y][box.x + box.w - 1] == "╮", name
            assert rows[box.y + box.h - 1][box.x] == "╰" and rows[box.y + box.h - 1][box.x + box.w - 1] == "╯", name
        assert "Slack│" in "".join(rows)
        assert not any(row.rstrip().endswith("›") for row in rows)
        await send(app, pilot, "/workflow")  # (closes it) and again: the person's panel opens the same way
        await send(app, pilot, "/workflow")
        panel = await panel_shows(app, pilot)
        canvas = panel.canvas
        canvas.focus()
        await until(lambda: canvas.auto_fitted, pilot, what="fitted again")
        await pilot.press("f")  # f: full detail (the boxes' types), wider than the view
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.FULL
                    and not canvas.fitted, pilot, what="full detail")
        assert canvas.graph_layout.width > canvas.size.width


async def test_a_drawing_cut_at_an_edge_of_the_view_says_so_on_that_edge(tmp_path: Path) -> None:
    """A box sliced at the view's edge read as a whole (narrower) box. Where the drawing goes on past an edge,
    the view's cells on that edge say so: ``›`` in the last column of each row with more to its right, ``‹``
    in the first column of each row with more to its left, ``˅`` where a line or a box's side goes on below
    the bottom row; the drawing itself (``workflow show``, the reader) is unchanged."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__Auto_Categorise_Outlook_Emails_with_AI")
        layout = canvas.graph_layout
        assert layout is not None and layout.detail is Detail.FULL and not canvas.fitted
        width, height = canvas.size.width, canvas.size.height
        whole = canvas.text().splitlines()
        assert "›" not in "".join(whole) and "‹" not in "".join(whole) and "˅" not in "".join(whole)

        def edges_say_what_lies_past_them() -> list[str]:
            x, y = canvas.scroll_offset
            rows = view_rows(canvas)
            for i, row in enumerate(rows):
                line = whole[y + i] if y + i < len(whole) else ""
                assert (row[-1] == "›") == bool(line[x + width:].strip()), (i, row)
                assert (row[0] == "‹") == bool(line[:x].strip()), (i, row)
            below = whole[y + height] if y + height < len(whole) else ""
            assert ("˅" in rows[-1]) == any(c in "│├┤┼╭╮┬" and below[x + i:x + i + 1] not in ("", " ", "─")
                                            for i, c in enumerate(whole[y + height - 1][x:x + width]))
            return rows

        canvas.scroll_to(0, 0, animate=False)
        await until(lambda: canvas.scroll_offset == (0, 0), pilot)
        rows = edges_say_what_lies_past_them()
        assert any(row[-1] == "›" for row in rows) and not any(row[0] == "‹" for row in rows)
        middle = (layout.width - width) // 2, (layout.height - height) // 2
        canvas.scroll_to(*middle, animate=False)
        await until(lambda: canvas.scroll_offset == middle, pilot)
        rows = edges_say_what_lies_past_them()
        assert any(row[-1] == "›" for row in rows) and any(row[0] == "‹" for row in rows) and "˅" in rows[-1]


async def test_a_view_fitted_further_goes_back_to_zoomed_out_when_it_grows_enough(tmp_path: Path) -> None:
    """Fitted zoomed out further (``Detail.TIGHT``: names cut shorter) because the view was too small, then the
    view grew (the terminal, the details pane closing) so that the plain zoomed-out drawing fits: the fit
    stayed at the further level until ``f`` twice. It is fitted again from the zoomed-out level."""

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__AI_Automated_HR_Workflow_for_CV_Analysis_and_Candidate_Evaluation")
        canvas.focus()
        await pilot.press("f")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.TIGHT, pilot,
                    what="zoomed out further (232 columns zoomed out in a 159-column canvas)")
        await pilot.resize_terminal(250, 48)
        await until(lambda: canvas.size.width >= 240, pilot, what="the wider canvas")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.COMPACT
                    and canvas.fitted and canvas.overview is None and canvas.cropped is None, pilot,
                    what="fitted zoomed out, whole")
        assert canvas.graph_layout.width <= canvas.size.width


def _weather() -> dict[str, Any]:
    """The demo's build as n8n stores it: three nodes in a row, a little wider than a half-width panel at
    160x48 in full detail (it opens fitted)."""
    nodes = [("Schedule Trigger", "n8n-nodes-base.scheduleTrigger"), ("OpenWeatherMap", "n8n-nodes-base.openWeatherMap"),
             ("Slack", "n8n-nodes-base.slack")]
    return {"id": "wf-weather", "name": "Morning weather", "nodes": [
        {"name": n, "type": t, "position": [220 * i, 0], "parameters": {}} for i, (n, t) in enumerate(nodes)],
        "connections": {a: {"main": [[{"node": b, "type": "main", "index": 0}]]}
                        for (a, _), (b, _) in itertools.pairwise(nodes)}}


async def test_m_on_a_fitted_panel_paints_the_canvas_once_and_leaves_the_line_alone(tmp_path: Path) -> None:
    """``m`` (panel wider / narrower) costs a layout and repaint of the whole screen (both panes change width).
    A fitted panel (it opened fitted) then painted every row of its canvas twice (the new size, then the fit
    made again repainted it whole though it showed the same) and wrote the same words on its status line
    again (a second layout of the whole screen: the line's height is its text's). Counts the canvas's rows
    painted and the line's updates for each ``m``."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app)
        canvas = panel.canvas
        canvas.show(parse_workflow(_weather()))
        await until(lambda: canvas.auto_fitted and "fitted" in str(panel.status_line.render()), pilot,
                    what="the panel opened fitted")
        canvas.focus()
        await pilot.pause()
        painted_rows: list[int] = []
        render_line = canvas.render_line

        def counted(y: int) -> Any:
            painted_rows.append(y)
            return render_line(y)

        canvas.render_line = counted  # type: ignore[method-assign]
        updates: list[object] = []
        update = panel.status_line.update
        panel.status_line.update = lambda *a, **k: (updates.append(a), update(*a, **k))[1]  # type: ignore[method-assign]
        for _ in range(2):
            width = canvas.size.width
            painted_rows.clear()
            await pilot.press("m")
            await until(lambda w=width: canvas.size.width != w and bool(painted_rows), pilot, what="the new width")
            await pilot.pause(0.2)
            assert canvas.fitted and canvas.overview is None and canvas.cropped is None
            assert len(painted_rows) <= canvas.size.height, (len(painted_rows), canvas.size.height)
        assert updates == []


async def test_m_lays_out_nothing_of_the_column_the_wide_panel_covers(tmp_path: Path) -> None:
    """``m`` (the panel whole width, then half again) squeezed the column beside the panel (conversation,
    prompt, status line) to one cell and back: the conversation was wrapped anew at that width and back,
    and the status line under the prompt refitted its words (two rows, then one, then two), each a second
    layout of the whole screen per press. The covered column now keeps its width behind the wide panel.
    Counts, for each of four ``m``, the status line's rewrites and the sizes the conversation was given."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app)
        canvas = panel.canvas
        canvas.show(parse_workflow(_weather()))
        await painted(canvas, pilot)
        canvas.focus()
        await pilot.pause(0.2)
        screen = app.screen_stack[0]
        status = screen.query_one("#status")
        view = screen.query_one("#conversation")
        half = view.size
        rewrites: list[object] = []
        update = status.update
        status.update = lambda *a, **k: (rewrites.append(a), update(*a, **k))[1]  # type: ignore[method-assign]
        sizes: list[object] = []
        for _ in range(4):
            wide = panel.has_class("-wide")
            await pilot.press("m")
            await until(lambda w=wide: panel.has_class("-wide") != w and canvas.size.width > 80 - 40 * w, pilot,
                        what="the new width")
            await pilot.pause(0.3)
            sizes.append(view.size)
        assert rewrites == []
        assert sizes == [half] * 4
        assert "keys: workflow canvas" in status.render().plain


async def test_m_never_lays_out_again_a_level_the_workflow_was_laid_out_at(tmp_path: Path) -> None:
    """The layout does not depend on the view: ``m`` on a view fitted zoomed out further (``Detail.TIGHT``)
    laid the workflow out again at the zoomed-out level when it narrowed and zoomed out further again when it
    widened, though both had been made for the first fit. Counts the layouts made for two ``m``."""
    from instance_ai_tui.tui.widgets import workflow_canvas
    from tests.protocol.workflow_corpus import corpus_json

    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        canvas = await corpus_canvas(app, pilot, "enescingoz__AI_Automated_HR_Workflow_for_CV_Analysis_and_Candidate_Evaluation")
        panel = panel_of(app.screen_stack[0])
        assert panel is not None
        canvas.focus()
        await pilot.press("f")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.TIGHT
                    and canvas.overview is None, pilot, what="zoomed out further")
        made: list[Detail] = []
        lay_out = workflow_canvas.layout_workflow

        def counted(workflow: Any, detail: Detail, **kwargs: Any) -> Any:
            made.append(detail)
            return lay_out(workflow, detail, **kwargs)

        workflow_canvas.layout_workflow = counted  # type: ignore[assignment]
        try:
            await pilot.press("m")  # narrower: the zoomed-out drawing is over twice the view: blocks
            await until(lambda: canvas.overview is not None and not panel.has_class("-wide"), pilot,
                        what="the overview in the narrow panel")
            await pilot.press("m")
            await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.TIGHT
                        and canvas.overview is None and panel.has_class("-wide"), pilot,
                        what="zoomed out further again")
        finally:
            workflow_canvas.layout_workflow = lay_out  # type: ignore[assignment]
        assert made == []
        assert canvas.text() == workflow_text(parse_workflow(corpus_json(
            "enescingoz__AI_Automated_HR_Workflow_for_CV_Analysis_and_Candidate_Evaluation")), Detail.TIGHT)


async def test_a_panel_opened_fitted_keeps_whole_names_where_zoomed_out_boxes_have_room(tmp_path: Path) -> None:
    """Seen in tmux at 160x48: the demo's build opened fitted read "⚡ Schedule Tri…" though the panel had room for
    the whole name (zoomed-out boxes are at most 18 cells). Opened fitted, the zoomed-out boxes grow to their
    names (up to full detail's widest) where that drawing still fits the view whole; where it does not, the names
    are cut as before (the view narrowed: the drawing with names cut, not full detail, while that fits)."""
    app = embedded_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        panel = await mounted_panel(app)
        canvas = panel.canvas
        canvas.show(parse_workflow(_weather()), changed_by_call=True)  # created by the agent: "+ new" on each
        await until(lambda: canvas.auto_fitted and canvas.graph_layout is not None, pilot, what="opened fitted")
        for again in (False, True):  # opened; and read again from n8n (``w`` on the card: the marks go, a new layout)
            if again:
                canvas.reset_painted()
                canvas.show(parse_workflow(_weather()))
            await painted(canvas, pilot)
            layout = canvas.graph_layout
            assert layout is not None and layout.detail is Detail.COMPACT and layout.width <= canvas.size.width
            rows = view_rows(canvas)
            text = "\n".join(rows)
            assert "⚡ Schedule Trigger├" in text and "OpenWeatherMap├" in text and "…" not in text, text
            for name, box in layout.boxes.items():  # every box whole in the cells shown
                assert rows[box.y][box.x] == "╭" and rows[box.y + box.h - 1][box.x + box.w - 1] == "╯", name
        roomy, plain = layout.width, layout_workflow(parse_workflow(_weather()), Detail.COMPACT).width
        assert plain < roomy
        # a terminal whose half-width panel (45 %, less its border) is narrower than that drawing, not the plain one
        width = next(w for w in range(100, 400) if plain <= w * 45 // 100 - 1 < roomy)
        await pilot.resize_terminal(width, 48)
        await until(lambda: plain <= canvas.size.width < roomy, pilot, what="the narrower panel")
        await until(lambda: canvas.graph_layout is not None and canvas.graph_layout.width <= canvas.size.width,
                    pilot, what="fitted again")
        assert canvas.graph_layout is not None and canvas.graph_layout.detail is Detail.COMPACT, canvas.size.width
        assert canvas.fitted and "Schedule Tri…" in canvas.text()
        await pilot.resize_terminal(160, 48)  # room again; f twice (full detail, fit): a fit asked for does the same
        await until(lambda: canvas.size.width >= roomy, pilot, what="the wider panel")
        canvas.focus()
        await pilot.press("f")
        await until(lambda: not canvas.fitted and canvas.graph_layout is not None
                    and canvas.graph_layout.detail is Detail.FULL, pilot, what="full detail")
        await pilot.press("f")
        await until(lambda: canvas.fitted and "Schedule Trigger├" in canvas.text(), pilot, what="fitted, names whole")
        assert canvas.graph_layout is not None and canvas.graph_layout.width <= canvas.size.width
