"""The task checklist panel: the latest ``tasks-update`` of the thread, live.

One ``Static`` renders the whole list (a single widget, whatever the number of tasks), with
a status glyph *and* word per task so no state is told by colour alone.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..protocol.events import TaskList, TaskStatus
from .themes import TASK_STATUS

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

    def set_tasks(self, tasks: TaskList | None) -> None:
        signature = None if tasks is None else tuple((t.id, t.status, t.description, t.detail) for t in tasks.tasks)
        if signature == self._signature:
            return
        self._signature = signature
        self._tasks = tasks
        self.title_line.update(f"Tasks  {progress_label(tasks)}")
        self.body.update(render_tasks(tasks))

