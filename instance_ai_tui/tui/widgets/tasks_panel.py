"""The task checklist panel: the latest ``tasks-update`` of the thread, live.

One ``Static`` renders the whole list (a single widget, whatever the number of tasks), with
a status glyph *and* word per task so no state is told by colour alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from ..themes.glyphs import TASK_STATUS

if TYPE_CHECKING:  # the wire models load after the app's first frame (start-up time)
    from ...protocol.events import TaskList, TaskStatus

#: ``TaskStatus`` values (a ``StrEnum``: equal to these strings)
_UNFINISHED = ("todo", "in_progress")
_STOP_WORDS = {"cancelled": "run cancelled", "error": "run failed"}


def _rejected(call: Any) -> bool:
    from ...protocol.display_state import display_state

    result = call.result
    return display_state(call, run_active=False).kind == "denied" or (
        isinstance(result, dict) and result.get("rejected") is True)


def _sent_back(call: Any) -> bool:
    """The plan review was answered "request changes" (the agent revises it)."""
    from ...protocol.display_state import PLAN_CHANGES, display_state

    return display_state(call, run_active=False).label == PLAN_CHANGES


#: the title's note when the latest plan is not the checklist
PLAN_REJECTED_NOTE = "plan rejected"
PLAN_SENT_BACK_NOTE = "plan sent back for changes"
_NO_CHECKLIST = {PLAN_REJECTED_NOTE: "The plan was rejected: no checklist.",
                 PLAN_SENT_BACK_NOTE: "You asked for changes: the revised plan shows here when the agent makes it."}


#: n8n projects a "Verify workflow" row under each planned build task, id ``<task id>:verify``
#: (``workflow-verification-task-projector.js``): not a task of the plan the person reviewed
_VERIFY_SUFFIX = ":verify"


def _plan_rows(tasks: TaskList) -> list[str]:
    ids = {t.id for t in tasks.tasks}
    return [t.description for t in tasks.tasks
            if not (t.id.endswith(_VERIFY_SUFFIX) and t.id.removesuffix(_VERIFY_SUFFIX) in ids)]


def _same_plan(a: TaskList, b: Any) -> bool:
    from ...protocol.events import TaskList

    return isinstance(b, TaskList) and _plan_rows(a) == _plan_rows(b)


def checklist(tasks: TaskList | None, *, run_status: str | None = None,
              plan_reviews: Sequence[Any] = ()) -> tuple[TaskList | None, str]:
    """The checklist to show and a note for its title (pure).

    * A plan the user rejected (its plan review denied or answered ``rejected``) or sent back
      ("request changes") is not the checklist: nothing is shown while it is the latest task
      list (it read "0/2 done" for a plan that no longer stands).
    * When the run that owns the checklist was cancelled, interrupted or failed, unfinished
      tasks show as cancelled and the title says the run stopped.
    ``plan_reviews``: the thread's plan-review tool calls (``ToolCallState``), oldest first.
    """
    if tasks is None or not tasks.tasks:
        return tasks, ""
    if plan_reviews:
        last = plan_reviews[-1]
        conf = last.confirmation
        same = conf is None or conf.tasks is None or _same_plan(conf.tasks, tasks)
        if _rejected(last) and same:
            return None, PLAN_REJECTED_NOTE
        if _sent_back(last) and same:
            return None, PLAN_SENT_BACK_NOTE
    word = _STOP_WORDS.get(run_status or "")
    if word and any(t.status in _UNFINISHED for t in tasks.tasks):
        from ...protocol.events import TaskStatus

        stopped = [t.model_copy(update={"status": TaskStatus.CANCELLED}) if t.status in _UNFINISHED else t
                   for t in tasks.tasks]
        return tasks.model_copy(update={"tasks": stopped}), f"stopped: {word}"
    return tasks, ""

def _mark(status: TaskStatus) -> tuple[str, str, str]:
    mark = TASK_STATUS.get(status.value, TASK_STATUS["todo"])
    return mark.glyph, f"${mark.variable}", mark.label


def progress_label(tasks: TaskList | None) -> str:
    if tasks is None or not tasks.tasks:
        return "no tasks"
    return f"{tasks.done_count}/{len(tasks.tasks)} done"


def render_tasks(tasks: TaskList | None) -> Content:
    """The checklist as styled content (pure)."""
    if tasks is None or not tasks.tasks:
        return Content.styled("No task list yet.", "$text-muted italic")
    from ...protocol.events import TaskStatus

    parts: list[tuple[str, str] | str] = []
    for i, task in enumerate(tasks.tasks):
        glyph, style, word = _mark(task.status)
        text_style = "strike $text-muted" if task.status in (TaskStatus.DONE, TaskStatus.CANCELLED) else ""
        if i:
            parts.append("\n")
        parts.append((f"{glyph} ", style))
        parts.append((task.description or task.id, text_style))
        if task.status not in (TaskStatus.DONE, TaskStatus.TODO):
            parts.append((f" ({word})", style))
        if task.detail and task.status in (TaskStatus.IN_PROGRESS, TaskStatus.FAILED):
            parts.append(("\n  " + task.detail, "$text-muted"))
    return Content.assemble(*parts)


class TasksPanel(VerticalScroll):
    """Docked checklist; the app toggles it with a key (``tasks.toggle``)."""

    HELP = """
## Task checklist

The agent's plan for the current thread, updated live. Glyphs: ✓ done, ◐ in progress,
○ to do, ✗ failed, ⊘ cancelled. Toggle the panel with **Ctrl+T**.
"""

    DEFAULT_CSS = """
    TasksPanel {
        dock: right;
        width: 30;
        height: 1fr;
        border-left: vkey $border-blurred;
        padding: 0 1;
        background: $surface;
        & > #tasks-title { text-style: bold; color: $text-primary; margin-bottom: 1; }
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._tasks: TaskList | None = None
        self._signature: object = None
        self.title_line = Static("Tasks", id="tasks-title", markup=False)
        self.body = Static(render_tasks(None), id="tasks-body", markup=False)

    def compose(self) -> ComposeResult:
        yield self.title_line
        yield self.body

    @property
    def tasks(self) -> TaskList | None:
        return self._tasks

    def set_tasks(self, tasks: TaskList | None, note: str = "") -> None:
        """Show ``tasks``; ``note`` (e.g. "stopped: run cancelled") goes in the title."""
        signature = None if tasks is None else tuple((t.id, t.status, t.description, t.detail) for t in tasks.tasks)
        if (signature, note) == self._signature:
            return
        self._signature = (signature, note)
        self._tasks = tasks
        self.title_line.update(f"Tasks  {progress_label(tasks)}" + (f" · {note}" if note else ""))
        self.body.update(render_tasks(tasks) if tasks is not None or note not in _NO_CHECKLIST
                         else Content.styled(_NO_CHECKLIST[note], "$text-muted italic"))

