"""The workflow panel: the canvas beside the conversation, live while the agent builds.

``/workflow [id]`` (and the palette) opens it on a workflow — the one given, else the last one the
thread's tool calls touched — and moves the keyboard to it (the person asked); when the panel is open
already, ``/workflow`` moves the keyboard to it, and closes it when it has the keys, as ``Esc`` and ``q``
do. It is docked on the right of the main screen, so the conversation and the
prompt stay usable; ``m`` widens it to the whole width (80×24) and back.

**Live**: ``WorkflowFollower`` is driven by the frame (``ports.FrameSink.changed``): when a frame changed
the open thread's tool calls, it looks at the newest ones (no timer, no widget work otherwise); a thread
opened with its history holds history, which does not open the panel. When a create/update-workflow call starts with nodes in its
arguments, the canvas draws what the call asks for at once; when the call has finished, the
workflow is read back from n8n (``client.workflows``: the embedded assistant's n8n or demo, or n8n's REST
with the session) and the nodes the call added or changed are marked ``+ new`` / ``~ changed``. A
write opens the panel if it is closed, without taking the keyboard from the person. After a run
(``run-workflow``, n8n's ``executions``), each node shows ✓ ran / ✗ failed / ○ not reached, how many
times it ran and its items (a loop's node: ``✓ 3 runs · 3 items``), a failed node its error; ``[`` / ``]``
go to an older / newer execution of the workflow.

``/`` finds a node by name (typed in a field at the panel's foot; Enter jumps to the first match, Esc
gives up), ``n`` / ``N`` go to the next / previous match. ``f`` fits the workflow in the view.

While an update waits (for its approval, or for n8n), ``b`` switches between the workflow as it is and
as the call asks. ``Enter`` on a node: its parameters, and after a run its first output items or its error. ``o`` opens
the workflow in n8n's editor (``App.open_url``: the browser, also in web mode) when the instance is known;
``r`` reads it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Input, Static

from ...client.base import ClientError
from ...client.workflows import WorkflowSource, workflow_source
from ...protocol.safe_text import visible, visible_data
from ...protocol.workflow_graph import (
    RUN_GLYPH,
    WORKFLOW_WRITE_TOOLS,
    ExecutionView,
    Workflow,
    is_workflow_tool,
    parse_execution,
    parse_workflow,
    preview_from_args,
    workflow_id_of,
)
from .. import keymap
from ..widgets.workflow_canvas import WorkflowCanvas

if TYPE_CHECKING:
    from textual.screen import Screen

    from ...protocol.conversation import Conversation, ConversationChanges
    from ..open_thread import OpenThread
    from ..ports import Ui
    from .main import MainScreen

PANEL_KEYS = ("workflow-open", "workflow-reload", "workflow-maximize", "workflow-before-after", "workflow-close",
              "workflow-find", "workflow-find-next", "workflow-find-previous", "workflow-run-older",
              "workflow-run-newer")
#: how many recent executions ``[`` / ``]`` move among
RECENT_EXECUTIONS = 20
DETAIL_LINES = 60
#: the agent's write opens the panel by itself only on a screen this wide: the conversation keeps
#: about 80 columns beside it (on a narrower one a note names the key, and /workflow opens it whole)
AUTO_OPEN_MIN_WIDTH = 150
#: narrower than this, a panel opened by the person takes the whole width (half of 80 columns is
#: too narrow for the conversation and for the canvas); a terminal made narrower than this hides a
#: panel the keys are not in (``WorkflowPanel.fit``)
HALF_WIDTH_MIN = 120


class WorkflowPanel(Vertical):
    """Title, canvas, node details and the keys, docked on the right of the main screen."""

    KEY_SCOPES = ("workflow",)
    BINDINGS: ClassVar[list[BindingType]] = [b for b in keymap.bindings("workflow")
                                             if getattr(b, "id", None) in PANEL_KEYS]

    DEFAULT_CSS = """
    WorkflowPanel {
        dock: right; width: 45%; min-width: 36; height: 100%; margin-bottom: 1;
        border-left: tall $accent; background: $surface;
    }
    WorkflowPanel.-wide { width: 100%; }
    WorkflowPanel > #wf-title { height: auto; padding: 0 1; text-style: bold; background: $boost; }
    WorkflowPanel > #wf-status { height: auto; padding: 0 1; color: $text-muted; }
    WorkflowPanel > WorkflowCanvas { height: 1fr; }
    WorkflowPanel > #wf-details { height: 45%; display: none; border-top: solid $accent; padding: 0 1; }
    WorkflowPanel.-details > #wf-details { display: block; }
    WorkflowPanel > #wf-hint { height: auto; color: $text-muted; padding: 0 1; }
    WorkflowPanel > #wf-find { height: 0; border: none; padding: 0; }
    WorkflowPanel.-finding > #wf-find { height: 3; border: tall $accent; padding: 0 1; }
    """

    def __init__(self, source: WorkflowSource | None) -> None:
        super().__init__(id="workflow-panel")
        self.source = source
        self.workflow_id: str | None = None
        #: the workflow as last read from n8n (what a call's changes are marked against)
        self.saved: Workflow | None = None
        #: what a running update asks for, while it is shown beside ``saved`` (``b`` switches)
        self.proposal: Workflow | None = None
        self.showing_before = False
        self.execution: ExecutionView | None = None
        self.canvas = WorkflowCanvas(id="wf-canvas")
        self.title_line = Static("Workflow", id="wf-title", markup=False)
        self.status_line = Static("", id="wf-status", markup=False)
        self.details = Static("", markup=False)
        self._loads = 0
        #: hidden because the terminal became too narrow for it beside the conversation (``fit``)
        self.auto_hidden = False
        #: whole width because the terminal is narrow (not the person's ``m``): half again when wide
        self.auto_wide = False
        self.find_input = Input(placeholder="find a node by name (Enter: jump, Esc: back)", id="wf-find")
        self.find_input.can_focus = False  # out of Tab's way until / asks for it
        #: the names the last search matched, and which one the cursor is on
        self.matches: list[str] = []
        self.match_index = 0
        #: what the status line said last that is not about one node or a search being typed (said again
        #: when the cursor leaves the node a status was about), and that node
        self._standing_status = ""
        self._status_about: str | None = None
        #: the line says what the last fit made ("fitted… 5 columns past"): a fit made again updates it
        self._fit_said = False
        #: what the status line shows
        self._status_shown = ""
        #: whole width over the column beside it, which keeps its width meanwhile (``_keep_width_behind``)
        self._covering = False
        #: the workflow's recent executions (newest first) and which one is shown
        self.executions: list[dict[str, Any]] = []
        self.execution_index = 0

    def compose(self) -> ComposeResult:
        yield self.title_line
        yield self.status_line
        yield self.canvas
        with VerticalScroll(id="wf-details"):
            yield self.details
        yield self.find_input
        yield Static(_hint(self.app), id="wf-hint", markup=False)

    # ----------------------------------------------------------------- content
    def set_status(self, text: str, *, about: str | None = None, transient: bool = False) -> None:
        """``about``: the node the text is about ("match 1/3: Wait"): when the cursor leaves it, the line says
        again what it said before; ``transient`` (a search being typed): never said again."""
        if about is None and not transient:
            self._standing_status = text
        self._status_about = about
        self._fit_said = False  # what the line says is not (or no longer) what a fit said
        shown = visible(text)
        if shown != self._status_shown:  # (the same words again: no new layout of the screen)
            self._status_shown = shown
            self.status_line.update(shown)

    def _title(self, workflow: Workflow) -> None:
        parts = [f"◇ {workflow.name or '(unnamed)'}", workflow.id or "preview", f"{len(workflow.nodes)} nodes"]
        if self.source is not None:
            parts.append(self.source.label)
        self.title_line.update(visible(" · ".join(parts)))

    def show_preview(self, workflow: Workflow, note: str, *, answered: bool = False) -> None:
        """What a running call asks for (drawn before n8n answers), or (``answered``) what a call
        answered where the connection cannot read workflows: then it is the new baseline."""
        before = self.saved if self.saved is not None and workflow.id and self.saved.id == workflow.id else None
        if before is not None and not workflow.name:
            workflow = dataclasses.replace(workflow, name=before.name)
        self.canvas.show(workflow, changed_by_call=True, changed_from=before)
        self._title(workflow)
        # an update waiting (for approval, or for n8n): b shows the workflow before it and back
        self.proposal = workflow if before is not None and not answered else None
        key = _key(self.app, "workflow-before-after", "b")
        self.set_status(f"{note} · {key} before/after" if self.proposal is not None else note)
        if answered:
            self.saved = workflow

    async def load(self, workflow_id: str, *, changed_by_call: bool = False, note: str = "") -> bool:
        """Read the workflow (and its last execution) and draw it; ``False`` when it cannot be read."""
        if self.source is None:
            self.set_status("This connection cannot read workflows (our own server serves conversations only); "
                            "the canvas shows what the agent's tool calls carried.")
            return False
        self._loads += 1
        ticket = self._loads
        try:
            data = await self.source.get_workflow(workflow_id)
            run = await self.source.last_execution(workflow_id)
        except ClientError as exc:
            self.set_status(f"Cannot read workflow {workflow_id}: {exc}")
            return False
        if ticket != self._loads:  # a newer load started meanwhile
            return False
        workflow = parse_workflow(data, workflow_id=workflow_id)
        self.workflow_id = workflow.id or workflow_id
        self.executions = []  # listed again on [ / ]
        self.execution = parse_execution(run) if run else None
        runs = self.execution.runs if self.execution is not None else None
        before = self.saved if self.saved is not None and self.saved.id == workflow.id else None
        self.canvas.show(workflow, runs=runs, changed_by_call=changed_by_call, changed_from=before)
        self.saved = workflow
        self.proposal, self.showing_before = None, False
        self._title(workflow)
        marks = self.canvas.marks
        bits = [note] if note else []
        new, changed = sum(1 for m in marks.values() if m == "new"), sum(1 for m in marks.values() if m == "changed")
        if new or changed:
            bits.append(" · ".join(part for part in (f"+ {new} new" if new else "",
                                                     f"~ {changed} changed" if changed else "") if part))
        if self.execution is not None:
            failed = [n for n, r in self.execution.runs.items() if r.state.value == "failed"]
            bits.append(f"last execution {self.execution.id}: {self.execution.status}"
                        + (f" · ✗ failed: {', '.join(failed)}" if failed else ""))
        self.set_status(" · ".join(bits) or "read from n8n just now")
        if self.has_class("-details") and self.canvas.cursor:
            self.show_details(self.canvas.cursor)
        return True

    # ----------------------------------------------------------------- details
    def on_workflow_canvas_node_chosen(self, message: WorkflowCanvas.NodeChosen) -> None:
        self.show_details(message.name)

    def show_details(self, name: str) -> None:
        workflow = self.canvas.workflow
        node = workflow.node(name) if workflow is not None else None
        if node is None:
            return
        lines = [f"{node.glyph} {node.name}  ({node.type}{f' v{node.type_version:g}' if node.type_version else ''})"]
        if node.disabled:
            lines.append("disabled (off)")
        if self.execution is not None:
            run = self.execution.run(name)
            lines.append(f"{RUN_GLYPH[run.state]} {run.label} (execution {self.execution.id})")
            if run.error:
                lines.append(f"error: {run.error}")
            if run.output:
                lines.append("output (first items):")
                lines += _json_lines(list(run.output))
        lines.append("parameters:")
        lines += _json_lines(dict(node.parameters)) if node.parameters else ["  (none)"]
        if len(lines) > DETAIL_LINES:
            lines = [*lines[:DETAIL_LINES], f"… {len(lines) - DETAIL_LINES} more lines"]
        self.details.update(visible("\n".join(lines)))
        self.add_class("-details")

    # ----------------------------------------------------------------- find a node
    def action_find(self) -> None:
        """``/``: the field at the panel's foot takes the keys (the person asked)."""
        self.add_class("-finding")
        self.find_input.value = ""
        self.find_input.can_focus = True
        self.find_input.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.find_input:
            self._search(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is not self.find_input:
            return
        event.stop()
        self._search(event.value)
        self._end_find()
        if self.matches:
            self.match_index = 0
            self._go_to_match()

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.find_input.has_focus:
            event.stop()
            event.prevent_default()
            self._end_find()

    def _end_find(self) -> None:
        """The keys go back to the canvas and the field folds to no height. It leaves Tab's way only
        once the focus guard saw the canvas take the keys (a field that could not take them any more
        while it still had them would hand them to the prompt: ``cards.guard_focus`` looks every 0.1 s
        and before every key)."""
        self.canvas.focus()
        self.remove_class("-finding")
        self.set_timer(0.3, self._fold_find)

    def _fold_find(self) -> None:
        if not self.find_input.has_focus:
            self.find_input.can_focus = False

    def _search(self, text: str) -> None:
        """The nodes whose name holds ``text`` (any case), left to right as drawn."""
        wanted = text.strip().casefold()
        layout = self.canvas.graph_layout
        if not wanted or layout is None:
            self.matches = []
            self.set_status("", transient=True)
            return
        names = [n for n in layout.boxes if wanted in n.casefold()]
        self.matches = sorted(names, key=lambda n: (layout.boxes[n].x, layout.boxes[n].y))
        self.match_index = 0
        self.set_status(f"{len(self.matches)} node{'s' if len(self.matches) != 1 else ''} match “{visible(text)}”"
                        if self.matches else f"no node matches “{visible(text)}”", transient=True)

    def action_find_next(self, step: int) -> None:
        """``n`` / ``N``: the next / previous match of the last search."""
        if not self.matches:
            self.set_status("No search yet: / finds a node by name")
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        self._go_to_match()

    def _go_to_match(self) -> None:
        name = self.matches[self.match_index]
        self.canvas.select(name)
        self.set_status(f"match {self.match_index + 1}/{len(self.matches)}: {visible(name)} (n next · N previous)",
                        about=name)

    def on_workflow_canvas_cursor_moved(self, message: WorkflowCanvas.CursorMoved) -> None:
        if self.canvas.overview is not None:  # the overview draws blocks: the node's name is said here
            self.set_status(f"overview · {visible(message.name)} (f: back to it, full detail)", about=message.name)
            self._fit_said = True  # a fit made again (another size) says what it made instead
        elif self._status_about is not None and message.name != self._status_about:
            # the cursor left the node the line spoke of ("match 1/1: Wait"): it says what it said before
            self.set_status(self._standing_status)

    def on_workflow_canvas_fitted(self, message: WorkflowCanvas.Fitted) -> None:
        canvas = self.canvas
        if message.opened:  # zoomed out to show it whole: said after what the line says, with the way back
            fit = _key(self.app, "workflow-fit", "f")
            said = self._standing_status
            self.set_status(f"{said} · fitted ({fit}: full detail)" if said else f"fitted, zoomed out ({fit}: full detail)")
            self._fit_said = True
            return
        if message.refit and not self._fit_said:
            return  # fitted again, not asked: the line keeps what it says ("match 1/1: Wait", "~ 2 changed")
        if canvas.cropped is not None:  # a few cells past the view: said, and how to see them
            cols, rows = canvas.cropped
            past = " and ".join(part for part in (f"{cols} column{'s' if cols != 1 else ''}" if cols else "",
                                                  f"{rows} row{'s' if rows != 1 else ''}" if rows else "") if part)
            fit = _key(self.app, "workflow-fit", "f")
            self.set_status(f"fitted, zoomed out: {past} past the view's edge (⇧+arrows pan · {fit}: full detail)",
                            transient=True)
            self._fit_said = True
        elif canvas.overview is not None and canvas.cursor:
            fit = _key(self.app, "workflow-fit", "f")
            self.set_status(f"overview · {visible(canvas.cursor)} ({fit}: back to it, full detail)", about=canvas.cursor)
            self._fit_said = True
        elif message.refit:  # fitted again, whole now: the line says what it said before the fit
            self.set_status(self._standing_status)

    # ----------------------------------------------------------------- executions
    async def action_execution(self, step: int) -> None:
        """``[`` / ``]``: an older / newer execution of the workflow, its node states drawn."""
        if self.source is None or not self.workflow_id:
            self.set_status("No executions to show: the workflow is not read from an instance")
            return
        if not self.executions:
            try:
                self.executions = await self.source.executions(self.workflow_id, RECENT_EXECUTIONS)
            except ClientError as exc:
                self.set_status(f"Cannot list executions: {exc}")
                return
            current = self.execution.id if self.execution is not None else None
            self.execution_index = next((k for k, row in enumerate(self.executions)
                                         if str(row.get("id")) == current), 0)
        if not self.executions:
            self.set_status("This workflow has not run yet")
            return
        index = self.execution_index + step
        if not 0 <= index < len(self.executions):
            self.set_status("the newest execution" if index < 0 else
                            f"the oldest of the {len(self.executions)} recent executions")
            return
        await self.show_execution(index)

    async def show_execution(self, index: int) -> None:
        assert self.source is not None
        row = self.executions[index]
        try:
            data = await self.source.execution(str(row.get("id")))
        except ClientError as exc:
            self.set_status(f"Cannot read execution {visible(str(row.get('id')))}: {exc}")
            return
        self.execution_index = index
        self.execution = parse_execution(data)
        runs = self.execution.runs if self.execution is not None else {}
        self.canvas.set_runs(runs)
        if self.execution is not None:
            failed = [n for n, r in runs.items() if r.state.value == "failed"]
            self.set_status(f"execution {self.execution.id} ({index + 1} of {len(self.executions)}, newest first): "
                            f"{self.execution.status}" + (f" · ✗ failed: {', '.join(failed)}" if failed else "")
                            + " · [ older · ] newer")

    # ----------------------------------------------------------------- actions
    def action_open_editor(self) -> None:
        url = self.source.editor_url(self.workflow_id) if self.source is not None and self.workflow_id else None
        if url is None:
            self.app.notify("No n8n editor to open: the demo instance is simulated, or the workflow is not saved yet.",
                            severity="warning")
            return
        self.app.open_url(url)
        self.app.notify(f"Opening {visible(url)}", timeout=4)

    async def action_reload(self) -> None:
        if self.workflow_id:
            await self.load(self.workflow_id, note="read again")

    def action_maximize(self) -> None:
        self.toggle_class("-wide")
        self.auto_wide = False

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._sync_cover()

    def _sync_cover(self) -> None:
        wide = self.has_class("-wide") and self.display
        if wide != self._covering:
            self._covering = wide
            self._keep_width_behind(wide)

    def _keep_width_behind(self, wide: bool) -> None:
        """Whole width, the panel covers the column beside it (the conversation, the prompt, the status line):
        that column keeps its width behind the panel (a least width, taken off when the panel is half again),
        so ``m`` lays none of it out again (squeezed to one column, the conversation was wrapped anew at that
        width and back, and the status line refitted, each a second layout of the whole screen)."""
        parent = self.parent
        if not isinstance(parent, Widget):
            return
        for sibling in parent.children:
            if sibling is self or sibling.styles.is_docked or not sibling.display:
                continue
            if wide and sibling.outer_size.width > 0:
                sibling.styles.min_width = sibling.outer_size.width
            elif not wide:
                sibling.styles.min_width = None

    # ----------------------------------------------------------------- the terminal's width
    def fit(self, width: int) -> None:
        """The terminal is now ``width`` columns. Narrower than ``HALF_WIDTH_MIN``, a panel beside the
        conversation leaves both too narrow: the panel the keys are in takes the whole width, one they
        are not in hides (the conversation and the prompt keep the room; ``/workflow`` shows it
        again). Wide enough again: what the width did is undone (the person's ``m`` is kept)."""
        if width < HALF_WIDTH_MIN:
            if not self.display:
                return
            if not self.has_focus_within:
                self.display = False
                self.auto_hidden = True
            elif not self.has_class("-wide"):
                self.add_class("-wide")
                self.auto_wide = True
            self._sync_cover()
            return
        if self.auto_wide:
            self.remove_class("-wide")
            self.auto_wide = False
        if self.auto_hidden:
            self.display = True
            self.auto_hidden = False
        self._sync_cover()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.call_after_refresh(self._uncover)

    def _uncover(self) -> None:
        """The keys left a panel that covers the whole width (Tab, Esc from its details, a click):
        what has them now lies behind it, so the panel stops covering it: hidden on a narrow
        terminal (``/workflow`` shows it again), half width on a wide one. Keys gone to a dialog or
        the palette (another screen) leave it as it is."""
        if not self.is_attached or not self.display or not self.has_class("-wide") or self.has_focus_within:
            return
        focused = self.app.focused
        if focused is None or focused.screen is not self.screen:
            return
        if self.app.size.width < HALF_WIDTH_MIN:
            self.display = False
            self.auto_hidden = True
        self.remove_class("-wide")  # (shown again by the person: whole width as the terminal asks)
        self.auto_wide = False
        self._sync_cover()

    def show_for_person(self, width: int) -> None:
        """The person asked for the panel (``/workflow``, ``w``): shown, whole width on a narrow terminal."""
        self.display = True
        self.auto_hidden = False
        if width < HALF_WIDTH_MIN and not self.has_class("-wide"):
            self.add_class("-wide")
            self.auto_wide = True
        self._sync_cover()

    def action_before_after(self) -> None:
        """While an update waits: the workflow as it is (before) and as the call asks (after)."""
        if self.proposal is None or self.saved is None:
            self.app.notify("Nothing to compare: no update of this workflow is waiting.", severity="information",
                            timeout=3)
            return
        self.showing_before = not self.showing_before
        if self.showing_before:
            self.canvas.show(self.saved, runs=self.execution.runs if self.execution else None)
            self.set_status("before: the workflow as it is now (b: after)")
        else:
            self.canvas.show(self.proposal, changed_by_call=True, changed_from=self.saved)
            self.set_status("after: what the update asks for, + new · ~ changed (b: before)")

    def action_close(self) -> None:
        if self.has_class("-details"):
            self.remove_class("-details")
            return
        self.remove()
        actions = getattr(self.app, "actions", None)
        if actions is not None:
            actions.back_to_prompt()  # (the keys to the prompt; an Esc Esc to leave never stops the run)


def _json_lines(value: Any) -> list[str]:
    try:
        text = json.dumps(visible_data(value), indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return ["  " + line for line in text.splitlines()]


def _key(host: object, binding_id: str, fallback: str) -> str:
    km = getattr(host, "keys", None)
    return keymap.display_keys(km.keys(binding_id)) if isinstance(km, keymap.KeyMap) else fallback


def _hint(host: object) -> str:
    def key(binding_id: str, fallback: str) -> str:
        return _key(host, binding_id, fallback)

    return (f"←↑↓→ node · ⇧ pan · {key('workflow-zoom', 'z')} zoom · {key('workflow-fit', 'f')} fit · "
            f"{key('workflow-find', '/')} find · {key('workflow-details', 'Enter')} details · "
            f"{key('workflow-run-older', '[')}{key('workflow-run-newer', ']')} runs · "
            f"{key('workflow-open', 'o')} n8n · {key('workflow-maximize', 'm')} wider · "
            f"{key('workflow-close', 'Esc')} close")


# --------------------------------------------------------------------------- the open thread's tool calls


@dataclass(frozen=True, slots=True)
class SeenCall:
    """What the follower needs of a tool call (read from the reducer's records, no models built)."""

    id: str
    name: str
    args: Mapping[str, Any]
    loading: bool
    result: Any
    error: str | None


def workflow_calls(conversation: Conversation | None, last_messages: int = 3) -> list[SeenCall]:
    """The workflow tool calls of the thread's newest messages, oldest first."""
    if conversation is None:
        return []
    out = []
    for message in conversation.messages[-last_messages:]:
        reducer = getattr(message, "reducer", None)
        if reducer is None:
            continue
        for call in reducer.calls():
            args = call.args if isinstance(call.args, Mapping) else {}
            if is_workflow_tool(call.name, args):
                out.append(SeenCall(call.id, call.name, args, call.loading, call.result, call.error))
    return out


def panel_of(screen: Screen[Any]) -> WorkflowPanel | None:
    """The panel on ``screen`` (the main screen), or ``None``."""
    try:
        return screen.query_one(WorkflowPanel)
    except Exception:  # noqa: BLE001 - no panel (or the screen not mounted yet): there is none
        return None


#: the narrow screen's note, while the agent's call runs and once it is done (it said "is changing"
#: after the run had ended, and right after a cancel)
CHANGING_NOTE = "The agent is changing a workflow: /workflow (or w on its tool card) shows it drawn."
CHANGED_NOTE = "The agent changed a workflow: /workflow (or w on its tool card) shows it drawn."


class Workflows:
    """The workflow panel's room (``/workflow``, ``w`` on a tool card, the agent's workflow calls), built
    from its collaborators: the Textual services (``ports.Ui``), the open thread (its client and
    conversation) and the main screen, whose frame drives the follower (``MainScreen.followers``)."""

    def __init__(self, ui: Ui, thread: OpenThread, screen: MainScreen) -> None:
        self.ui = ui
        self.thread = thread
        self.screen = screen
        self.follower = WorkflowFollower(self)
        screen.followers.append(self.follower.frame_changed)

    def panel(self) -> WorkflowPanel | None:
        return panel_of(self.screen)

    def ensure_panel(self) -> WorkflowPanel:
        """The panel the person asked for: the open one (shown again if the width hid it), or a new one."""
        panel = self.panel()
        if panel is None:
            panel = WorkflowPanel(workflow_source(self.thread.client))
            panel.show_for_person(self.ui.size.width)
            self.screen.mount(panel)
        elif not panel.display:
            panel.show_for_person(self.ui.size.width)
        return panel

    def fit(self, width: int) -> None:
        """The terminal was resized to ``width`` columns: the panel, if there is one, fits it (``WorkflowPanel.fit``)."""
        panel = self.panel()
        if panel is not None:
            panel.fit(width)

    def auto_panel(self, told: set[str], workflow_key: str, *, done: bool = False,
                   tell: bool = True) -> WorkflowPanel | None:
        """The panel for what the agent does: the open one, or a new one on a wide screen. On a narrow
        screen the person is told once per workflow how to see it (``done``: the call is over, said in
        the past; a running call's note only while the run still goes; ``tell=False``: nothing to tell),
        and the conversation keeps the room (a panel the narrow width hid is kept up to date, still hidden)."""
        panel = self.panel()
        if panel is not None and panel.display:
            return panel
        if panel is None and self.ui.size.width >= AUTO_OPEN_MIN_WIDTH:
            return self.ensure_panel()
        conversation = self.thread.conversation
        going = conversation is not None and bool(conversation.is_streaming)
        if workflow_key not in told and tell and (done or going):
            told.add(workflow_key)
            self.ui.notify(CHANGED_NOTE if done else CHANGING_NOTE, timeout=6)
        return panel

    def last_workflow_id(self) -> str | None:
        for call in reversed(workflow_calls(self.thread.conversation, last_messages=1_000_000)):
            found = workflow_id_of(call.result, call.args)
            if found:
                return found
        return None

    def open(self, argument: str = "") -> None:
        """``/workflow [id]``: open (or close) the panel on that workflow, or the thread's latest one."""
        panel = self.panel()
        wanted = argument.strip() or None
        if panel is not None and wanted is None:
            if panel.canvas.has_focus:  # open and in use: the command closes it
                panel.action_close()
                return
            if panel.display:  # open (the agent's call opened it): the keys go to it
                panel.canvas.focus()
                return
            if panel.workflow_id is not None:  # the narrow width hid it: shown (whole width), with the keys
                self.ensure_panel()
                self.ui.call_after_refresh(panel.canvas.focus)
                return
        workflow_id = wanted or self.last_workflow_id()
        panel = self.ensure_panel()
        self.ui.call_after_refresh(panel.canvas.focus)  # the person asked for it: the keys go to the canvas
        if workflow_id is None:
            panel.set_status("No workflow in this thread yet: ask the agent to build one, or give an id: /workflow ID")
            return
        panel.set_status(f"reading workflow {workflow_id}…")
        self.ui.run_worker(panel.load(workflow_id), group="workflow-panel", exclusive=True, exit_on_error=False)


class WorkflowFollower:
    """Keeps the panel on what the agent does to workflows (see the module docstring). Driven by the
    frame (``frame_changed``, registered with ``MainScreen.followers`` by ``Workflows``): no timer of its own."""

    def __init__(self, room: Workflows) -> None:
        self.room = room
        self._previewed: set[str] = set()
        self._finished: set[str] = set()
        self._lock = asyncio.Lock()
        #: workflows whose "how to see it" note was shown (a narrow screen does not open the panel)
        self._told: set[str] = set()

    def frame_changed(self, conversation: Conversation, changes: ConversationChanges) -> None:
        """A frame changed the open thread. A thread opened (its history read: ``changes.reset``) holds
        history: the calls it finished do not open the panel, calls still running are followed. Else
        new or changed tool calls are looked at."""
        if changes.reset:
            for call in workflow_calls(conversation, last_messages=1_000_000):
                self._previewed.add(call.id)
                if not call.loading:
                    self._finished.add(call.id)
            return
        if not (changes.added or any(c.reset or c.tool_calls or c.timeline_appends for c in changes.messages.values())):
            return
        for call in workflow_calls(conversation):
            key = call.id
            if call.loading and key not in self._previewed:
                self._previewed.add(key)
                preview = preview_from_args(call.args) if call.name in WORKFLOW_WRITE_TOOLS else None
                if preview is not None and preview.nodes:
                    target = call.args.get("workflowId")  # an update: that workflow; a create: a new one
                    preview = dataclasses.replace(preview, id=str(target) if target else "")
                    self._in_order(self._preview(preview, f"{call.name} running: drawing what it asks for…"))
            elif not call.loading and key not in self._finished:
                self._finished.add(key)
                self._previewed.add(key)
                self._finished_call(call)

    def _in_order(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` after what was scheduled before it (a preview never lands before the read of
        the workflow its call started from, nor after the read of what it made)."""
        async def locked() -> None:
            async with self._lock:
                await work

        self.room.ui.run_worker(locked(), group="workflow-follower", exit_on_error=False)

    async def _preview(self, preview: Workflow, note: str) -> None:
        panel = self.room.auto_panel(self._told, preview.id or "new")
        if panel is not None:
            panel.show_preview(preview, note)

    def _finished_call(self, call: SeenCall) -> None:
        writes = call.name in WORKFLOW_WRITE_TOOLS or call.args.get("action") in ("update", "restore-version")
        panel = self.room.panel()
        if call.error:
            if panel is not None:
                panel.set_status(f"{call.name} failed: {call.error}")
            return
        workflow_id = workflow_id_of(call.result, call.args)
        if workflow_id is None or (panel is None and not writes):
            return
        panel = self.room.auto_panel(self._told, str(call.args.get("workflowId") or "new"), done=True,
                                     tell=call.result is not None)  # a call cancelled before its answer changed nothing
        if panel is None:
            return
        if panel.workflow_id not in (None, workflow_id) and not writes:
            return
        when = time.strftime("%H:%M:%S")
        note = f"{call.name} at {when}"
        self._in_order(self._load(panel, workflow_id, writes, note, call))

    async def _load(self, panel: WorkflowPanel, workflow_id: str, writes: bool, note: str,
                    call: SeenCall) -> None:
        if await panel.load(workflow_id, changed_by_call=writes, note=note):
            return
        # the connection cannot read workflows: draw what the call's answer carries, if it is one
        result = call.result
        if isinstance(result, str):
            try:
                result = json.loads(result)
            except ValueError:
                return
        if isinstance(result, dict) and isinstance(result.get("nodes"), list):
            panel.show_preview(parse_workflow(result, workflow_id=workflow_id), note, answered=True)
