"""The workflow canvas: a workflow drawn as boxes and lines, with a node cursor, pan, zoom and fit.

A line-API widget (``ScrollView``) over ``protocol.workflow_draw``: it draws only a window around what is
in view (``draw(..., window=)``: three screens wide and high), so the cost of painting follows the
screen, not the workflow; a change of one node's state (``set_runs`` with the layout unchanged) redraws
that box's cells and refreshes only its rectangle. A workflow of ``THREAD_NODES`` nodes or more is laid
out in a thread (``asyncio.to_thread``), of ``PROCESS_NODES`` or more in a worker process
(``workflow_canvas_worker``: a thread would hold the interpreter lock, and keys would wait): the keys
keep answering meanwhile, the previous drawing stays until the new one is ready, and only the newest
layout asked for is applied. The characters say everything (kind glyphs, branch
labels, ``✓ ran`` / ``✗ failed`` / ``○ not reached``, ``+ new`` / ``~ changed``); colour comes from the
theme through component classes, so every theme (and the ANSI one) shows the same words.

Keys (scope ``workflow``): arrows / hjkl move the node cursor to the nearest box in that direction,
Shift+arrows pan, ``z`` zooms out and in (fewer details: names only), ``f`` fits the workflow to the
view (zoomed out and centred; zoomed out further when that is larger than the view; an overview of blocks
when even that is larger; ``f`` again
goes back, at the node under the cursor), Enter shows the node's details. It opens on the trigger.
The mouse: a click selects a box (a double click shows its details), a drag pans, the wheel scrolls,
Ctrl+wheel zooms (where the terminal reports it).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...protocol.workflow_draw import Drawing, Style, cells_of, count_text, draw, draw_box, row_extents, shown_names
from ...protocol.workflow_graph import NodeKind, NodeRun, Workflow, changed_nodes
from ...protocol.workflow_layout import COMPACT_CELLS, ROOMY_CELLS, Box, Detail, Layout, Route, layout_workflow
from .. import keymap
from . import workflow_canvas_worker

#: style code -> component class
_COMPONENTS: dict[int, str] = {
    Style.BORDER: "workflow-canvas--border", Style.EDGE: "workflow-canvas--edge",
    Style.AI_EDGE: "workflow-canvas--ai-edge", Style.LABEL: "workflow-canvas--label",
    Style.TRIGGER: "workflow-canvas--trigger", Style.ACTION: "workflow-canvas--action",
    Style.AI: "workflow-canvas--ai", Style.FLOW: "workflow-canvas--flow", Style.MUTED: "workflow-canvas--muted",
    Style.RAN: "workflow-canvas--ran", Style.FAILED: "workflow-canvas--failed",
    Style.NOT_REACHED: "workflow-canvas--not-reached", Style.NEW: "workflow-canvas--new",
    Style.CHANGED: "workflow-canvas--changed", Style.ARROW: "workflow-canvas--edge",
    Style.DISABLED: "workflow-canvas--muted", Style.COUNT: "workflow-canvas--ran",
    # sticky notes' frames and headings in n8n's colours of the notes (their text keeps the canvas's colour)
    Style.NOTE_YELLOW: "workflow-canvas--note-yellow", Style.NOTE_GOLD: "workflow-canvas--note-gold",
    Style.NOTE_RED: "workflow-canvas--note-red", Style.NOTE_GREEN: "workflow-canvas--note-green",
    Style.NOTE_BLUE: "workflow-canvas--note-blue", Style.NOTE_PURPLE: "workflow-canvas--note-purple",
    Style.NOTE_GREY: "workflow-canvas--note-grey",
    # their insides and text on a tint of that colour, as n8n fills a note
    Style.NOTE_FILL_YELLOW: "workflow-canvas--note-fill-yellow", Style.NOTE_FILL_GOLD: "workflow-canvas--note-fill-gold",
    Style.NOTE_FILL_RED: "workflow-canvas--note-fill-red", Style.NOTE_FILL_GREEN: "workflow-canvas--note-fill-green",
    Style.NOTE_FILL_BLUE: "workflow-canvas--note-fill-blue",
    Style.NOTE_FILL_PURPLE: "workflow-canvas--note-fill-purple", Style.NOTE_FILL_GREY: "workflow-canvas--note-fill-grey",
}
_CURSOR = "workflow-canvas--cursor"
PAN_STEP = 8
#: workflows of this many nodes or more are laid out in a thread (smaller ones take a few ms)
THREAD_NODES = 150
#: and of this many or more in the worker process (``workflow_canvas_worker``): their layout would
#: hold the interpreter long enough for a key to wait
PROCESS_NODES = 400
#: the overview's block for a box, and for the box under the cursor
OVERVIEW_BOX, OVERVIEW_CURSOR = "▪", "◆"
#: ``f``: a zoomed-out drawing at most this share of the view (and ``CROP_MIN`` cells) wider or taller than
#: the view is shown cropped, the cursor's box in view and the rest a pan away, rather than as blocks
CROP_SHARE, CROP_MIN = 8, 4
#: a workflow new to the canvas at most this share of the view wider or taller in full detail opens fitted
#: when zoomed out it fits whole (the demo's build at 160x48: 83 columns in a 71-column canvas, its Slack box
#: sliced at the edge)
OPEN_SHARE = 4


#: the marks of a view's edge past which the drawing goes on (right, left, below, above)
CUT_RIGHT, CUT_LEFT, CUT_BELOW, CUT_ABOVE = "›", "‹", "˅", "˄"
#: characters of the drawing that go on downwards / upwards (lines and boxes' sides), and those that
#: cannot continue one from above / below (the bottom row of the view marks only what is really cut)
_GOES_DOWN = frozenset("│┃├┤┬┼╭╮▼┆┊")
_GOES_UP = frozenset("│┃├┤┴┼╰╯▲┆┊")
_OPEN_ABOVE = frozenset(" ─━▶◀")
_OPEN_BELOW = frozenset(" ─━▶◀")


def _lay_out_with_extents(workflow: Workflow, detail: Detail, runs: Mapping[str, NodeRun] | None,
                          box_cells: int = COMPACT_CELLS) -> Layout:
    """The layout (in the layout thread) with its rows' extents made there too: the first paint would make them
    on the event loop (5-25 ms at 400 nodes)."""
    layout = layout_workflow(workflow, detail, runs=runs, box_cells=box_cells)
    row_extents(layout)
    return layout


def crop_slack(cells: int) -> int:
    """How many cells past a view of ``cells`` a fitted drawing may reach and still be shown, cropped."""
    return max(CROP_MIN, cells // CROP_SHARE)


def _layout_key(workflow: Workflow) -> tuple[object, ...]:
    """What the layout depends on (a change of parameters or state only redraws boxes)."""
    return (tuple((n.name, n.type, n.position, n.disabled) for n in workflow.nodes), workflow.edges)


class WorkflowCanvas(ScrollView, can_focus=True):
    """Draws one workflow; ``show`` replaces it (marking what changed), ``set_runs`` its node states."""

    KEY_SCOPE = "workflow"
    BINDINGS: ClassVar[list[BindingType]] = [b for b in keymap.bindings("workflow")
                                             if getattr(b, "id", "").startswith(("workflow-node-", "workflow-pan-"))
                                             or getattr(b, "id", "") in ("workflow-zoom", "workflow-details",
                                                                         "workflow-fit")]
    COMPONENT_CLASSES: ClassVar[set[str]] = {*_COMPONENTS.values(), _CURSOR}

    DEFAULT_CSS = """
    WorkflowCanvas { background: $surface; }
    WorkflowCanvas > .workflow-canvas--border { color: $text-muted; }
    WorkflowCanvas > .workflow-canvas--edge { color: $text-muted; }
    WorkflowCanvas > .workflow-canvas--ai-edge { color: $text-secondary; }
    WorkflowCanvas > .workflow-canvas--label { color: $text-accent; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--trigger { color: $text-warning; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--action { color: $text; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--ai { color: $text-secondary; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--flow { color: $text-primary; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--muted { color: $text-muted; }
    WorkflowCanvas > .workflow-canvas--ran { color: $text-success; }
    WorkflowCanvas > .workflow-canvas--failed { color: $text-error; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--not-reached { color: $text-muted; }
    WorkflowCanvas > .workflow-canvas--new { color: $text-success; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--changed { color: $text-warning; text-style: bold; }
    WorkflowCanvas > .workflow-canvas--note-yellow { color: $text-warning; }
    WorkflowCanvas > .workflow-canvas--note-gold { color: $warning-darken-2; }
    WorkflowCanvas > .workflow-canvas--note-red { color: $text-error; }
    WorkflowCanvas > .workflow-canvas--note-green { color: $text-success; }
    WorkflowCanvas > .workflow-canvas--note-blue { color: $text-primary; }
    WorkflowCanvas > .workflow-canvas--note-purple { color: mediumpurple; }
    WorkflowCanvas > .workflow-canvas--note-grey { color: $text-muted; }
    WorkflowCanvas > .workflow-canvas--note-fill-yellow { background: $warning 12%; }
    WorkflowCanvas > .workflow-canvas--note-fill-gold { background: $warning-darken-2 16%; }
    WorkflowCanvas > .workflow-canvas--note-fill-red { background: $error 12%; }
    WorkflowCanvas > .workflow-canvas--note-fill-green { background: $success 12%; }
    WorkflowCanvas > .workflow-canvas--note-fill-blue { background: $primary 14%; }
    WorkflowCanvas > .workflow-canvas--note-fill-purple { background: mediumpurple 14%; }
    WorkflowCanvas > .workflow-canvas--note-fill-grey { background: $foreground 8%; }
    WorkflowCanvas > .workflow-canvas--cursor { color: $text-accent; text-style: bold; }
    WorkflowCanvas:focus > .workflow-canvas--cursor { color: $accent; text-style: bold reverse; }
    """

    @dataclass
    class NodeChosen(Message):
        """Enter (or a double click) on a node: show its details."""

        canvas: WorkflowCanvas
        name: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workflow: Workflow | None = None
        self.runs: dict[str, NodeRun] = {}
        self.marks: dict[str, str] = {}
        self.detail = Detail.FULL
        self.graph_layout: Layout | None = None
        self.drawing: Drawing | None = None
        self.cursor: str | None = None
        self._styles: dict[int, RichStyle] = {}
        self._layout_key: tuple[object, ...] | None = None
        self._drag: tuple[int, int, float, float] | None = None
        #: rows painted since the last ``reset_painted`` (for tests: what a change repainted)
        self.painted_rows: set[int] = set()
        #: layouts asked for so far (only the newest is applied) and whether one is being made
        self._generation = 0
        self.laying_out = False
        self._routes_by_source: tuple[Layout | None, dict[str, list[Route]]] = (None, {})
        #: "fit": the overview's scale (columns, rows per cell) when even zoomed out is larger than the view
        self.fitted = False
        self.overview: tuple[int, int] | None = None
        #: "fit" shows the zoomed-out drawing cropped: the columns and rows past the view
        self.cropped: tuple[int, int] | None = None
        #: ``f`` asked for the fit about to be made (``Fitted.refit`` is false once)
        self._fit_asked = False
        #: a workflow new to the canvas is being shown: it opens fitted when zoomed out it fits the view whole
        #: and in full detail it does not (``_open``); ``auto_fitted``: the view was fitted that way, not by ``f``
        self.opening = False
        self.auto_fitted = False
        self._fit_opened = False
        #: the layouts made of this workflow with these runs, per level of detail: the view's size changing
        #: (``m``, the terminal, the details pane) never lays the same workflow out again at a level it was
        #: laid out at (a fitted view goes from one level to another as it grows and shrinks)
        self._layouts: dict[tuple[Detail, int], Layout] = {}
        #: the view opened fitted with wider zoomed-out boxes (names whole; ``_open``): laid out so while it stays
        #: fitted that way
        self.roomy = False
        self._layouts_of: tuple[Workflow | None, dict[str, NodeRun] | None] = (None, None)

    async def on_unmount(self) -> None:
        await workflow_canvas_worker.stop()  # started again for the next big workflow

    # ----------------------------------------------------------------- content
    def show(self, workflow: Workflow, *, runs: Mapping[str, NodeRun] | None = None,
             changed_by_call: bool = False, changed_from: Workflow | None = None) -> None:
        """Draw ``workflow``. When a tool call made it (``changed_by_call``), the nodes it added or
        changed since ``changed_from`` are marked ``+ new`` / ``~ changed`` (all new: it was created)."""
        previous = self.workflow if self.workflow is not None and self.workflow.id == workflow.id else None
        marks: dict[str, str] = {}
        if changed_by_call:
            added, changed = changed_nodes(changed_from, workflow)
            marks = {**dict.fromkeys(changed, "changed"), **dict.fromkeys(added, "new")}
        same_drawing = (previous is not None and self.graph_layout is not None and marks == self.marks
                        and _layout_key(workflow) == self._layout_key and bool(runs) == bool(self.runs)
                        and previous.name == workflow.name)
        self.workflow = workflow
        # the first layout of a workflow new to the canvas decides whether it opens fitted (``_open``, once
        # the canvas has a size); a later one (the agent's next call) never does, however late the size came
        self.opening = previous is None and not self.fitted
        if same_drawing:  # the same boxes and lines: only the nodes whose state changed are redrawn
            self.set_runs(runs or {})
            return
        self.marks = marks
        self.runs = dict(runs or {})
        self._relayout()

    def set_runs(self, runs: Mapping[str, NodeRun]) -> None:
        """Each node's state after a run; boxes whose state changed are redrawn alone when the
        layout stays (it changes when the state row first appears or goes)."""
        old = self.runs
        self.runs = dict(runs)
        if self.graph_layout is None or bool(old) != bool(runs):
            self._relayout()
            return
        lines_changed: list[Route] = []
        for name in self.graph_layout.boxes:
            if old.get(name) != self.runs.get(name):
                self.redraw_node(name)
                lines_changed += [r for r in self._routes_from(name)
                                  if self._count(old, r) != self._count(self.runs, r)]
        if lines_changed:  # the items written on its lines changed: the window is drawn again,
            self.drawing = None  # and the rows of those lines repainted
            scroll_x, scroll_y = self.scroll_offset
            for route in lines_changed:
                for (ax, ay), (bx, by) in itertools.pairwise(route.points):
                    if ay == by:
                        self.refresh(Region(min(ax, bx) - scroll_x, ay - scroll_y, abs(bx - ax) + 1, 1))

    def _routes_from(self, name: str) -> list[Route]:
        """The main lines leaving ``name`` (indexed once per layout)."""
        layout = self.graph_layout
        if layout is None:
            return []
        if self._routes_by_source[0] is not layout:
            index: dict[str, list[Route]] = {}
            for route in layout.routes:
                if not route.edge.is_ai:
                    index.setdefault(route.edge.source, []).append(route)
            self._routes_by_source = (layout, index)
        return self._routes_by_source[1].get(name, [])

    def _count(self, runs: Mapping[str, NodeRun], route: Route) -> str:
        layout = self.graph_layout
        port = layout.ports.get(route.edge, route.edge.output) if layout is not None else route.edge.output
        return count_text(runs.get(route.edge.source), port, compact=self.detail is not Detail.FULL)

    def redraw_node(self, name: str) -> None:
        if self.graph_layout is None or name not in self.graph_layout.boxes:
            return
        box = self.graph_layout.boxes[name]
        if self.drawing is not None:
            draw_box(self.drawing, name, runs=self.runs or None, marks=self.marks)
        self.refresh(self._screen_region(box))

    def zoom(self, detail: Detail | None = None) -> None:
        self.detail = detail if detail is not None else (Detail.COMPACT if self.detail is Detail.FULL else Detail.FULL)
        self.fitted, self.overview, self.cropped, self.auto_fitted, self.roomy = False, None, None, False, False
        self._relayout()

    def _made(self, detail: Detail, box_cells: int = COMPACT_CELLS) -> Layout | None:
        """The layout already made of the workflow shown with its runs at ``detail`` (``None``: not made)."""
        workflow, runs = self._layouts_of
        if workflow is not self.workflow or runs is not self.runs:
            self._layouts, self._layouts_of = {}, (self.workflow, self.runs)
        return self._layouts.get((detail, box_cells))

    def _keep(self, layout: Layout, workflow: Workflow, runs: dict[str, NodeRun], box_cells: int) -> None:
        """``layout`` (made of ``workflow`` with ``runs``) is kept while they are the ones shown."""
        self._made(layout.detail)
        if self._layouts_of[0] is workflow and self._layouts_of[1] is runs:
            self._layouts[(layout.detail, box_cells)] = layout

    def _layout_at(self, detail: Detail, box_cells: int = COMPACT_CELLS) -> Layout:
        """The workflow shown, with its runs, laid out at ``detail`` (zoomed-out boxes of ``box_cells``): the
        layout made before, else one made now and kept."""
        made = self._made(detail, box_cells)
        if made is None:
            assert self.workflow is not None
            made = layout_workflow(self.workflow, detail, runs=self.runs or None, box_cells=box_cells)
            self._keep(made, self.workflow, self.runs, box_cells)
        return made

    def _box_cells(self, detail: Detail) -> int:
        roomy = (self.roomy and self.fitted and detail is Detail.COMPACT and self.workflow is not None
                 and len(self.workflow.nodes) < THREAD_NODES)
        return ROOMY_CELLS if roomy else COMPACT_CELLS

    def _roomier(self, layout: Layout, width: int, height: int) -> bool:
        """A fit (``f``, or a fitted view resized) that shows the zoomed-out drawing whole with names cut: the same
        with wider boxes (names whole, up to full detail's widest) when that fits whole too (under 150 nodes; as
        the panel opens). Whether that one is shown instead."""
        workflow = self.workflow
        if (self.roomy or layout.detail is not Detail.COMPACT or workflow is None or len(workflow.nodes) >= THREAD_NODES
                or not shown_names(layout)):
            return False
        roomy = self._layout_at(Detail.COMPACT, ROOMY_CELLS)
        if roomy.width > width or roomy.height > height:
            return False
        self.roomy = True
        self._generation += 1
        self._apply(roomy, self._generation)  # (fitted: ``_centre`` again, on this one)
        return True

    def _relayout(self) -> None:
        if self.workflow is None:
            return
        self._generation += 1
        generation, workflow, detail, runs = self._generation, self.workflow, self.detail, self.runs
        box_cells = self._box_cells(detail)
        if self._made(detail, box_cells) is not None or len(workflow.nodes) < THREAD_NODES or not self.is_mounted:
            self._apply(self._layout_at(detail, box_cells), generation)
            return
        self.laying_out = True
        self.run_worker(self._layout_off_loop(generation, workflow, detail, runs), group="workflow-layout",
                        exit_on_error=False)

    async def _layout_off_loop(self, generation: int, workflow: Workflow, detail: Detail,
                               runs: dict[str, NodeRun]) -> None:
        if len(workflow.nodes) >= PROCESS_NODES:
            layout = await workflow_canvas_worker.lay_out(workflow, detail, bool(runs))
        else:
            layout = await asyncio.to_thread(_lay_out_with_extents, workflow, detail, runs or None)
        self._keep(layout, workflow, runs, COMPACT_CELLS)
        self._apply(layout, generation)

    def _apply(self, layout: Layout, generation: int) -> None:
        """A layout is ready: shown if it is the newest asked for."""
        if generation != self._generation or self.workflow is None:
            return
        self.laying_out = False
        self.graph_layout = layout
        self.drawing = None  # the window around the view is drawn when painted
        self._layout_key = _layout_key(self.workflow)
        self.virtual_size = Size(layout.width, layout.height)
        if self.cursor not in layout.boxes:
            self.cursor = self.first_node()
        self.refresh()
        if self.fitted:
            self.call_after_refresh(self._centre)
        elif self.opening:
            self.call_after_refresh(self._open)
        else:
            self.call_after_refresh(self.scroll_to_cursor, animate=False)
        self.post_message(self.LaidOut(self))

    def _open(self) -> None:
        """A workflow new to the canvas, laid out in full detail: when that is a little larger than the view
        (``OPEN_SHARE``) and the same zoomed out fits it whole, it opens fitted (as n8n's editor opens a
        workflow fitted) rather than with its right-most box sliced at the edge; else at the cursor, in full
        detail (the edges that cut it say so). Not yet sized: the first resize tries again."""
        layout, workflow = self.graph_layout, self.workflow
        width, height = self.size.width, self.size.height
        if layout is None or workflow is None or width <= 0 or height <= 0:
            return
        self.opening = False
        over_x, over_y = layout.width - width, layout.height - height
        if (self.fitted or layout.detail is not Detail.FULL or len(workflow.nodes) >= THREAD_NODES
                or (over_x <= 0 and over_y <= 0) or over_x > width // OPEN_SHARE or over_y > height // OPEN_SHARE):
            self.scroll_to_cursor(animate=False)
            return
        zoomed = self._layout_at(Detail.COMPACT)
        if zoomed.width > width or zoomed.height > height:
            self.scroll_to_cursor(animate=False)
            return
        self.roomy = False
        if shown_names(zoomed):  # names cut zoomed out: with wider boxes (up to full detail's) where that fits too
            roomy = self._layout_at(Detail.COMPACT, ROOMY_CELLS)
            if roomy.width <= width and roomy.height <= height:
                zoomed, self.roomy = roomy, True  # (while it stays fitted so: ``z``/``f`` lay out the plain level)
        self.fitted, self.detail, self.auto_fitted, self._fit_opened = True, Detail.COMPACT, True, True
        self._generation += 1
        self._apply(zoomed, self._generation)

    @dataclass
    class CursorMoved(Message):
        """The node under the cursor changed (the panel names it in the overview)."""

        canvas: WorkflowCanvas
        name: str

    @dataclass
    class LaidOut(Message):
        """A layout was applied (the panel says what it is)."""

        canvas: WorkflowCanvas

    def text(self) -> str:
        """The whole drawing as plain text (what ``instance-ai workflow show`` prints; tests read it)."""
        if self.graph_layout is None:
            return ""
        return draw(self.graph_layout, runs=self.runs or None, marks=self.marks).text()

    def first_node(self) -> str | None:
        """Where the cursor starts: the first node a call added or changed, else the first trigger, else
        the node furthest left."""
        workflow, layout = self.workflow, self.graph_layout
        if workflow is None or layout is None or not layout.boxes:
            return None
        marked = next((n.name for n in workflow.nodes if self.marks.get(n.name)), None)
        if marked is not None:
            return marked
        triggers = [n.name for n in workflow.nodes if n.kind is NodeKind.TRIGGER and n.name in layout.boxes]
        pool = triggers or list(layout.boxes)
        return min(pool, key=lambda n: (layout.boxes[n].x, layout.boxes[n].y))

    # ----------------------------------------------------------------- fit / overview
    def action_fit(self) -> None:
        """Fit the workflow to the view: zoomed out and centred; an overview of blocks when even zoomed
        out it is larger than the view. Again: back to full detail at the node under the cursor."""
        self.auto_fitted = self.roomy = False
        if self.fitted:
            self.fitted, self.overview, self.cropped = False, None, None
            self.detail = Detail.FULL
            self._relayout()
            return
        self.fitted = True
        self._fit_asked = True
        if self.detail is not Detail.COMPACT:
            self.detail = Detail.COMPACT
            self._relayout()
        else:
            self._centre()

    def _centre(self) -> None:
        """The fitted view: the whole zoomed-out drawing when it fits; cropped when it is a few cells larger
        than the view (``crop_slack``: n8n's fit would shrink it a little; blocks would hide every name),
        the cursor's box in view; else the same zoomed out further (``Detail.TIGHT``: names cut shorter, boxes
        closer), whole or cropped; else the overview of blocks. ``Fitted`` says whether ``f`` asked for it or
        it is fitted again (the view's size or the layout changed)."""
        layout = self.graph_layout
        if layout is None:
            return
        width, height = max(1, self.size.width), max(1, self.size.height)
        over_x, over_y = layout.width - width, layout.height - height
        shown = (self.overview, self.cropped)
        self.cropped = None
        if self.roomy and (over_x > 0 or over_y > 0):
            self.roomy = False  # fitted with whole names (wider boxes): the zoomed-out drawing with names cut may fit
            self._relayout()
            return
        if over_x <= 0 and over_y <= 0 and self._roomier(layout, width, height):
            return
        if self.auto_fitted and (over_x > 0 or over_y > 0):
            # opened fitted because it fitted whole; grown past the view (the agent added nodes, the view
            # narrowed): full detail at the cursor again, as it would have opened
            self.fitted, self.auto_fitted, self.overview, self.detail = False, False, None, Detail.FULL
            self._relayout()
            return
        if over_x <= 0 and over_y <= 0:
            self.overview = None
            self.virtual_size = Size(layout.width, layout.height)
            self.scroll_to(0, 0, animate=False)
        elif over_x <= crop_slack(width) and over_y <= crop_slack(height):
            self.overview = None
            self.cropped = (max(0, over_x), max(0, over_y))
            self.virtual_size = Size(layout.width, layout.height)
            self.scroll_to(0, 0, animate=False)
            self.call_after_refresh(self.scroll_to_cursor, animate=False)
        elif layout.detail is Detail.COMPACT and over_x <= width and over_y <= height:
            # zoomed out further first (names, not blocks) where that can fit: at most twice the view on each
            # axis (it is 0.55-0.75 as wide); a bigger workflow goes to blocks without a second layout
            self.detail = Detail.TIGHT
            self._relayout()
            return
        else:
            self.overview = (-(-layout.width // width), -(-layout.height // height))
            self.virtual_size = Size(min(width, layout.width), min(height, layout.height))
            self.scroll_to(0, 0, animate=False)
        if (self.overview, self.cropped) != shown:  # (a new size or a new layout is painted whole anyway)
            self.refresh()
        self.post_message(self.Fitted(self, refit=not self._fit_asked and not self._fit_opened,
                                      opened=self._fit_opened))
        self._fit_asked = self._fit_opened = False

    @dataclass
    class Fitted(Message):
        """``f`` fitted the view (whole, ``cropped`` or as an ``overview``): the panel says which. ``refit``:
        fitted again, not asked for (the view's size changed: the find field folding, the terminal resized;
        a new layout: the workflow changed)."""

        canvas: WorkflowCanvas
        refit: bool = False
        #: the workflow opened fitted (``_open``): zoomed out because in full detail it was larger than the view
        opened: bool = False

    def _overview_line(self, y: int, width: int) -> Strip:
        """One row of the overview: a block per box (the cursor's box stands out) with its node's name where
        the block is wide enough, a dot where only lines run."""
        layout = self.graph_layout
        assert layout is not None and self.overview is not None
        sx, sy = self.overview
        cells = [" "] * width
        codes = [0] * width
        top, bottom = y * sy, (y + 1) * sy
        for route in layout.routes:
            for (ax, ay), (bx, by) in itertools.pairwise(route.points):
                if min(ay, by) < bottom and max(ay, by) >= top:
                    for x in range(min(ax, bx) // sx, min(width, max(ax, bx) // sx + 1)):
                        if cells[x] == " ":
                            cells[x], codes[x] = "·", Style.EDGE
        blocks: list[tuple[int, int, str]] = []  # (first cell, end, name) of the blocks named on this row
        taken = [False] * width  # cells of a block or of a name written
        for name, box in layout.boxes.items():
            if box.y < bottom and box.y + box.h > top:
                mark = OVERVIEW_CURSOR if name == self.cursor else OVERVIEW_BOX
                code = -1 if name == self.cursor else Style.BORDER
                first, last = box.x // sx, min(width, (box.x + box.w - 1) // sx + 1)
                for x in range(first, last):
                    cells[x], codes[x], taken[x] = mark, code, True
                if (box.y + (box.h - 1) // 2) // sy == y:  # its name on its middle row
                    blocks.append((first, last, name))
        for first, last, name in sorted(blocks):
            # the name from the block's second cell on, over its own block and on over free cells (lines'
            # dots) up to a cell before the next block or name: a small block says more than 2 letters
            end = last
            while end < width and not taken[end] and (end + 1 >= width or not taken[end + 1]):
                end += 1
            room = end - first - 1
            if room < 3:
                continue
            shown = cells_of(name, min(room, cell_len(name)))
            for k, char in enumerate(shown, start=first + 1):
                cells[k] = char
                if k >= last:
                    codes[k], taken[k] = Style.LABEL, True
        base = self.rich_style
        segments = [Segment(char, base + self._style(code) if code else base) for char, code in zip(cells, codes,
                                                                                                   strict=True)]
        return Strip(segments).adjust_cell_length(width, base)

    # ----------------------------------------------------------------- painting
    def notify_style_update(self) -> None:
        self._styles = {}
        super().notify_style_update()

    def _on_focus(self, event: events.Focus) -> None:
        super()._on_focus(event)
        self._styles = {}  # the cursor is drawn stronger while the canvas has the keys
        self.refresh()

    def _on_blur(self, event: events.Blur) -> None:
        super()._on_blur(event)
        self._styles = {}
        self.refresh()

    def _style(self, code: int) -> RichStyle:
        style = self._styles.get(code)
        if style is None:
            component = _CURSOR if code < 0 else _COMPONENTS.get(code)
            if component is not None and Style.NOTE_FILL_YELLOW <= code <= Style.NOTE_FILL_GREY:
                # a note's tint: its colour's share laid over the canvas's own background (a component's
                # rich style would give the colour whole, a block of bright paint behind the note)
                tint = self.styles.background + self.get_component_styles(component).background
                style = RichStyle(bgcolor=tint.rich_color)
            else:
                style = self.get_component_rich_style(component, partial=True) if component else RichStyle()
            self._styles[code] = style
        return style

    def _window(self, x: int, y: int, width: int, height: int) -> Drawing | None:
        """The drawing of a window holding the view (three screens wide and high around it)."""
        layout = self.graph_layout
        if layout is None:
            return None
        win = self.drawing
        if win is not None and win.x0 <= x and x + width <= win.x0 + win.width and win.y0 <= y \
                and y + height <= win.y0 + win.height:
            return win
        x0, y0 = max(0, x - width), max(0, y - height)
        self.drawing = draw(layout, runs=self.runs or None, marks=self.marks, window=(x0, y0, 3 * width, 3 * height))
        return self.drawing

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row_index = scroll_y + y
        width, height = self.size.width, self.size.height
        base = self.rich_style
        if self.overview is not None and self.graph_layout is not None:
            return self._overview_line(y, width)
        drawing = self._window(scroll_x, scroll_y, max(1, width), max(1, height))
        if drawing is None or self.graph_layout is None or not 0 <= row_index < self.graph_layout.height:
            return Strip.blank(width, base)
        self.painted_rows.add(row_index)
        ox = scroll_x - drawing.x0
        chars = drawing.chars[row_index - drawing.y0][ox: ox + width]
        codes = drawing.styles[row_index - drawing.y0][ox: ox + width]
        cursor = self.graph_layout.boxes.get(self.cursor or "")
        if cursor is not None and cursor.y <= row_index < cursor.y + cursor.h:
            codes = list(codes)
            for x in range(max(cursor.x, scroll_x), min(cursor.x + cursor.w, scroll_x + width)):
                if codes[x - scroll_x] == Style.BORDER:
                    codes[x - scroll_x] = -1
        chars, codes = self._mark_cut_edges(drawing, row_index, ox, width, y, height, chars, codes)
        segments: list[Segment] = []
        start = 0
        for i in range(1, len(chars) + 1):
            if i == len(chars) or codes[i] != codes[start]:
                text = "".join(chars[start:i])
                code = codes[start]
                segments.append(Segment(text, base + self._style(code) if code else base))
                start = i
        return Strip(segments).adjust_cell_length(width, base)

    def _mark_cut_edges(self, drawing: Drawing, row_index: int, ox: int, width: int, y: int, height: int,
                        chars: list[str], codes: list[int]) -> tuple[list[str], list[int]]:
        """Where the drawing goes on past an edge of the view, that edge says so (a box sliced at the edge
        read as whole): ``›`` in the last column of a row with more to its right, ``‹`` in the first column of
        a row with more to its left, ``˅`` / ``˄`` on the bottom / top row where a line or a box's side goes
        on below / above. The cells of the whole drawing are not touched (only this view's row)."""
        marks: dict[int, str] = {}
        if y == height - 1 and row_index + 1 < drawing.y0 + drawing.height:
            below = drawing.chars[row_index + 1 - drawing.y0]
            marks.update({i: CUT_BELOW for i, char in enumerate(chars)
                          if char in _GOES_DOWN and below[ox + i] not in _OPEN_ABOVE})
        if y == 0 and row_index > drawing.y0:
            above = drawing.chars[row_index - 1 - drawing.y0]
            marks.update({i: CUT_ABOVE for i, char in enumerate(chars)
                          if char in _GOES_UP and above[ox + i] not in _OPEN_BELOW})
        left, right = row_extents(drawing.layout)
        x = drawing.x0 + ox
        if len(chars) == width and right[row_index] > x + width:
            marks[width - 1] = CUT_RIGHT
        if left[row_index] < x:
            marks[0] = CUT_LEFT
        if not marks:
            return chars, codes
        chars, codes = list(chars), list(codes)
        for i, mark in marks.items():
            if i < len(chars):
                chars[i], codes[i] = mark, Style.LABEL
        return chars, codes

    def _screen_region(self, box: Box) -> Region:
        scroll_x, scroll_y = self.scroll_offset
        return Region(box.x - scroll_x, box.y - scroll_y, box.w, box.h)

    def reset_painted(self) -> None:
        self.painted_rows = set()

    # ----------------------------------------------------------------- cursor
    def select(self, name: str) -> None:
        if self.graph_layout is None or name not in self.graph_layout.boxes:
            return
        old = self.graph_layout.boxes.get(self.cursor or "")
        self.cursor = name
        self.post_message(self.CursorMoved(self, name))
        if self.overview is not None:  # the overview marks the cursor's block: drawn again whole
            self.refresh()
            return
        if old is not None:
            self.refresh(self._screen_region(old))
        self.refresh(self._screen_region(self.graph_layout.boxes[name]))
        self.scroll_to_cursor()

    def scroll_to_cursor(self, animate: bool = True) -> None:
        if self.graph_layout is None or self.cursor not in self.graph_layout.boxes:
            return
        box = self.graph_layout.boxes[self.cursor]
        # the box with its arrows in and its outputs' labels (an IF's true/false, a Switch's rules), as
        # much of them as the view holds beside the box
        labels = max((cell_len(text) for text in box.out_labels.values()), default=0)
        left = box.x - (1 if box.inputs else 0)
        width = min(box.x + box.w + (1 + labels if box.outputs else 0) - left, max(box.w, self.size.width))
        self.scroll_to_region(Region(left, box.y, width, box.h), animate=animate, spacing=None, force=True)

    def on_resize(self, event: events.Resize) -> None:
        """The canvas got another size (the terminal, the details pane): the node under the cursor stays in
        view (Enter acts on it), or the fitted view is fitted again."""
        if self.graph_layout is None:
            return
        if self.opening:
            self.call_after_refresh(self._open)
        elif self.fitted and self.detail is Detail.TIGHT and not self._zoomed_out_goes_tighter():
            self.detail = Detail.COMPACT  # zoomed out further for a smaller view: the one zoomed out may fit now
            self._relayout()
        elif self.fitted:
            self.call_after_refresh(self._centre)
        else:
            self.call_after_refresh(self.scroll_to_cursor, animate=False)

    def _zoomed_out_goes_tighter(self) -> bool:
        """The zoomed-out layout is already made and ``_centre`` would zoom it out further again in this view
        (so the fit stays at the further level, without laying out or applying the zoomed-out one between)."""
        zoomed = self._made(Detail.COMPACT)
        if zoomed is None:
            return False
        width, height = max(1, self.size.width), max(1, self.size.height)
        over_x, over_y = zoomed.width - width, zoomed.height - height
        return not (over_x <= crop_slack(width) and over_y <= crop_slack(height)) \
            and over_x <= width and over_y <= height

    def action_node(self, direction: str) -> None:
        """Move the cursor to the nearest box in ``direction`` (left/right/up/down)."""
        if self.graph_layout is None or not self.graph_layout.boxes:
            return
        current = self.graph_layout.boxes.get(self.cursor or "")
        if current is None:
            self.select(next(iter(self.graph_layout.boxes)))
            return
        cx, cy = current.x + current.w / 2, current.y + current.h / 2
        best: tuple[float, str] | None = None
        for name, box in self.graph_layout.boxes.items():
            if name == current.name:
                continue
            bx, by = box.x + box.w / 2, box.y + box.h / 2
            along, across = {"left": (cx - bx, by - cy), "right": (bx - cx, by - cy),
                             "up": (cy - by, bx - cx), "down": (by - cy, bx - cx)}[direction]
            if along <= 0.5:
                continue
            score = along + 3 * abs(across)
            if best is None or score < best[0]:
                best = (score, name)
        if best is not None:
            self.select(best[1])

    def action_pan(self, dx: int, dy: int) -> None:
        self.scroll_to(self.scroll_x + dx * PAN_STEP, self.scroll_y + dy * max(1, PAN_STEP // 2), animate=False)

    def action_zoom(self) -> None:
        self.zoom()

    def action_details(self) -> None:
        if self.cursor is not None:
            self.post_message(self.NodeChosen(self, self.cursor))

    # ----------------------------------------------------------------- mouse
    def box_at(self, x: int, y: int) -> str | None:
        """The node whose box is at widget cell ``(x, y)``."""
        if self.graph_layout is None:
            return None
        gx, gy = x + self.scroll_x, y + self.scroll_y
        for name, box in self.graph_layout.boxes.items():
            if box.contains(int(gx), int(gy)):
                return name
        return None

    def on_click(self, event: events.Click) -> None:
        name = self.box_at(event.x, event.y)
        if name is not None:
            self.select(name)
            if event.chain >= 2:
                self.post_message(self.NodeChosen(self, name))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if event.button == 1 and self.box_at(event.x, event.y) is None:
            self._drag = (event.screen_x, event.screen_y, self.scroll_x, self.scroll_y)
            self.capture_mouse()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._drag is None:
            return
        x0, y0, sx, sy = self._drag
        self.scroll_to(sx - (event.screen_x - x0), sy - (event.screen_y - y0), animate=False)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if event.ctrl:  # Ctrl+wheel zooms, as in n8n's editor
            event.prevent_default()
            event.stop()
            self.zoom(Detail.FULL)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if event.ctrl:
            event.prevent_default()
            event.stop()
            self.zoom(Detail.COMPACT)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._drag is not None:
            self._drag = None
            self.release_mouse()
