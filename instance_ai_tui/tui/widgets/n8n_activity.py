"""What n8n's Instance AI shows beside the conversation (issue 16), above the prompt.

* a banner for quota and credit errors (an ``error`` event with a ``code``, e.g.
  ``quota_exhausted``), until the next run starts;
* background tasks — sub-agents that keep working after their run (the status route's
  ``backgroundTasks``, ``run-sync`` frames with status ``background``, and live
  ``agent-spawned`` with a ``taskId`` / ``agent-completed``): role, state, elapsed time.
  **↑**/**↓** select one, **x** cancels it, **c** sends it a correction. A finished task stays
  ``FINISHED_SHOWN_FOR`` seconds (and not past the next run's start), then leaves the strip, which
  hides when nothing is left; on a short screen it shows at most two tasks;
* workflow setup state (``setup-items``: the credentials and parameters each workflow still
  needs);
* workflows archived by the last run (``run-finish.archivedWorkflowIds``).

The app calls ``reset`` when a thread opens and ``observe`` for every stream item; both only
record state (no widget work on the ingest path), a 1 Hz timer draws it. Everything goes
through the ``Client`` (``cancel_task`` / ``correct_task``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Static

from ...client.base import ClientError
from ...protocol.safe_text import visible, visible_data
from .. import keymap

if TYPE_CHECKING:
    from ...client.base import Client, StreamItem
    from ...protocol.api import ThreadMessages, ThreadStatus

#: ``error.code`` values shown as a banner (n8n renders them specially)
QUOTA_CODES = frozenset({"quota_exhausted", "credits_exhausted", "insufficient_credits"})
MAX_TASK_ROWS = 6
#: rows on a short screen (under ``SHORT_SCREEN`` rows): the conversation keeps its room
MAX_TASK_ROWS_SHORT = 2
SHORT_SCREEN = 30
#: seconds a finished task (completed, failed, cancelled) stays listed after it ended: long
#: enough to see how it ended, then the strip gives its rows back to the conversation
FINISHED_SHOWN_FOR = 10.0


@dataclass
class BackgroundTaskRow:
    task_id: str
    role: str
    agent_id: str
    status: str = "running"  # running | completed | failed | cancelled
    started_at: float = 0.0  # epoch seconds
    ended_at: float | None = None
    note: str = ""  # "cancelling…", "correction sent"

    def elapsed(self, now: float) -> str:
        if not self.started_at:
            return ""
        seconds = max(0.0, (self.ended_at or now) - self.started_at)
        if seconds < 60:
            return f"{seconds:.0f}s"
        minutes, secs = divmod(int(seconds), 60)
        if minutes < 60:
            return f"{minutes}m{secs:02d}s"
        return f"{minutes // 60}h{minutes % 60:02d}m"


def _seconds(value: Any) -> float:
    """n8n's ``startedAt``/``ts`` are epoch milliseconds."""
    if isinstance(value, (int, float)) and value > 0:
        return value / 1000 if value > 1e11 else float(value)
    return 0.0


class TaskList(Static, can_focus=True):
    """The background tasks, one per line, with a cursor."""

    KEY_SCOPE = "n8n_tasks"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("n8n_tasks")]

    DEFAULT_CSS = """
    TaskList { height: auto; }
    TaskList:focus { background-tint: $foreground 6%; }
    """

    HELP = """
## Background tasks

Sub-agents n8n runs after their message finished. **↑**/**↓** select a task · **x** cancel
it · **c** send it a correction (type it, Enter sends, Esc cancels).
"""

    def __init__(self, owner: N8nActivity, **kwargs: Any) -> None:
        super().__init__("", markup=False, **kwargs)
        self.owner = owner
        self.cursor = 0

    def action_move(self, step: int) -> None:
        rows = self.owner.rows()
        if rows:
            self.cursor = (self.cursor + step) % len(rows)
            self.owner.redraw()

    def action_cancel_task(self) -> None:
        row = self.owner.selected()
        if row is not None:
            self.owner.cancel(row)

    def action_correct_task(self) -> None:
        row = self.owner.selected()
        if row is not None:
            self.owner.ask_correction(row)


class N8nActivity(Vertical):
    #: closing the correction field gives the keys back to the task list, a move inside this area
    #: that the focus guard (``tui.cards``) keeps
    KEYS_STAY_INSIDE = True

    DEFAULT_CSS = """
    N8nActivity { height: auto; max-height: 14; display: none; padding: 0 1; border-top: solid $primary 40%; }
    N8nActivity .n8n-quota { color: $text-error; background: $error 12%; text-style: bold; padding: 0 1; }
    N8nActivity.-short { border-top: none; }
    N8nActivity.-short TaskList { text-wrap: nowrap; text-overflow: ellipsis; }
    N8nActivity .n8n-line { height: auto; }
    N8nActivity Input { margin: 0; }
    """

    def __init__(self, client: Client, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = client
        self.thread_id: str | None = None
        self.tasks: dict[str, BackgroundTaskRow] = {}
        self.setup: dict[str, list[dict[str, Any]]] = {}
        self.archived: list[str] = []
        self.quota: str | None = None
        self._dirty = True
        self._correcting: str | None = None
        self.quota_view = Static("", classes="n8n-quota", markup=False)
        self.task_list = TaskList(self, classes="n8n-line")
        self.correction = Input(placeholder="Correction for the task — Enter sends, Esc cancels", id="n8n-correction")
        self.setup_view = Static("", classes="n8n-line", markup=False)
        self.archived_view = Static("", classes="n8n-line", markup=False)

    def compose(self) -> Any:
        yield self.quota_view
        yield self.task_list
        yield self.correction
        yield self.setup_view
        yield self.archived_view

    def on_mount(self) -> None:
        self.correction.display = False
        self.set_interval(1.0, self._tick, name="n8n-activity")
        self.redraw()

    # ------------------------------------------------------------------ state (cheap, no widgets)
    def reset(self, thread_id: str | None, status: ThreadStatus | None = None,
              history: ThreadMessages | None = None) -> None:
        """A thread was opened: start from its status and history."""
        self.thread_id = thread_id
        self.tasks.clear()
        self.setup.clear()
        self.archived = []
        self.quota = None
        if status is not None:
            for task in status.background_tasks:
                self._merge_task(task.to_wire())
        if history is not None:
            for message in history.messages:
                tree = message.agent_tree
                if tree is not None and tree.setup_items_by_workflow_id:
                    # (a history page is not folded through the projection: made visible here)
                    self.setup.update({visible(k): visible_data(list(v))
                                       for k, v in tree.setup_items_by_workflow_id.items()})
        self.setup = {k: v for k, v in self.setup.items() if v}
        self._dirty = True

    def observe(self, item: StreamItem) -> None:
        """One stream item: record what this panel shows."""
        if item.run_sync is not None:
            for task in item.run_sync.background_tasks or []:
                if isinstance(task, dict):
                    self._merge_task(task)
            self._dirty = True
            return
        event = item.event
        if event is None:
            return
        kind = event.type
        payload: Any = getattr(event, "payload", None)
        if kind == "agent-spawned":
            task_id = getattr(payload, "task_id", None)
            if task_id:
                self._merge_task({"taskId": task_id, "role": getattr(payload, "role", ""), "agentId": event.agent_id,
                                  "status": "running", "startedAt": event.ts or time.time() * 1000})
        elif kind == "agent-completed":
            for row in self.tasks.values():
                if row.agent_id == event.agent_id:
                    status = getattr(payload, "status", None) or ("failed" if getattr(payload, "error", None) else "completed")
                    row.status = "failed" if status == "error" else status
                    row.ended_at = _seconds(event.ts) or time.time()
                    row.note = ""
        elif kind == "setup-items":
            workflow = getattr(payload, "workflow_id", "")
            items = list(getattr(payload, "items", []) or [])
            if items:
                self.setup[workflow] = items
            else:
                self.setup.pop(workflow, None)
        elif kind == "run-finish":
            archived = getattr(payload, "archived_workflow_ids", None)
            if archived:
                self.archived = [str(a) for a in archived]
            # the strip goes with the run (issue 45): what finished leaves now, what runs on stays
            self.tasks = {key: row for key, row in self.tasks.items() if row.status == "running"}
        elif kind == "run-start":
            self.quota = None
            # the tasks a former run left finished are history now; running ones stay
            self.tasks = {key: row for key, row in self.tasks.items() if row.status == "running"}
        elif kind == "error":
            from ...protocol.events import is_app_error_code

            code = getattr(payload, "code", None)
            if code and not is_app_error_code(code):  # our own failure classes name their part in the turn
                content = getattr(payload, "content", "") or "n8n refused the request"
                label = "out of AI credits" if code in QUOTA_CODES else f"error {code}"
                self.quota = f"⚠ n8n: {label} — {content} ({code})"
        else:
            return
        self._dirty = True

    def _merge_task(self, data: dict[str, Any]) -> None:
        data = visible_data(data)  # (the status route's tasks are a server's words)
        task_id = str(data.get("taskId") or "")
        if not task_id:
            return
        row = self.tasks.get(task_id)
        status = str(data.get("status") or "running")
        if row is None:
            row = self.tasks[task_id] = BackgroundTaskRow(task_id, str(data.get("role") or ""), str(data.get("agentId") or ""))
        if data.get("role"):
            row.role = str(data["role"])
        if data.get("agentId"):
            row.agent_id = str(data["agentId"])
        if row.ended_at is None or status != "running":
            row.status = status
        row.started_at = _seconds(data.get("startedAt")) or row.started_at
        if status != "running" and row.ended_at is None:
            row.ended_at = time.time()

    def rows(self, now: float | None = None) -> list[BackgroundTaskRow]:
        """The tasks shown: running ones first, finished ones for ``FINISHED_SHOWN_FOR`` seconds."""
        now = time.time() if now is None else now
        shown = [r for r in self.tasks.values()
                 if r.status == "running" or r.ended_at is None or now - r.ended_at < FINISHED_SHOWN_FOR]
        rows = sorted(shown, key=lambda r: (r.status != "running", -r.started_at))
        short = self.is_attached and self.app.size.height < SHORT_SCREEN
        return rows[:MAX_TASK_ROWS_SHORT if short else MAX_TASK_ROWS]

    def selected(self) -> BackgroundTaskRow | None:
        rows = self.rows()
        if not rows:
            return None
        self.task_list.cursor = min(self.task_list.cursor, len(rows) - 1)
        return rows[self.task_list.cursor]

    # ------------------------------------------------------------------ drawing
    def _tick(self) -> None:
        # running tasks count their time; a finished one leaves when its time is up
        if self._dirty or self.task_list.display != bool(self.rows()) or any(
                r.status == "running" for r in self.tasks.values()):
            self.redraw()

    def redraw(self) -> None:
        self._dirty = False
        now = time.time()
        self.quota_view.update(self.quota or "")
        self.quota_view.display = bool(self.quota)
        rows = self.rows(now)
        if rows:
            cursor = min(self.task_list.cursor, len(rows) - 1)
            focused = self.task_list.has_focus
            short = self.app.size.height < SHORT_SCREEN
            hint = "↑/↓ select · x cancel · c correct" if focused else "Shift+Tab from the prompt"
            parts: list[tuple[str, str] | str] = (
                [("Tasks ", "bold"), (f"({hint}) ", "$text-muted")] if short
                else [("Background tasks", "bold"), (f"  {hint}" if focused else f"  ({hint})", "$text-muted"), "\n"])
            for i, row in enumerate(rows):
                style = {"running": "$text-accent", "completed": "$text-success", "failed": "$text-error",
                         "cancelled": "$text-muted"}.get(row.status, "")
                parts.append(("▸ " if focused and i == cursor else "  ", "$text-accent"))
                parts.append((f"{row.role or 'task'}", "bold"))
                parts.append((f"  {row.status}", style))
                parts.append((f"  {row.elapsed(now)}", "$text-muted"))
                if row.note:
                    parts.append((f"  {row.note}", "italic $text-muted"))
                parts.append(("· " if short else "\n") if i < len(rows) - 1 else "")
            self.task_list.update(Content.assemble(*parts))
        self.task_list.display = bool(rows)
        self.setup_view.update(self._setup_text())
        self.setup_view.display = bool(self.setup)
        self.archived_view.update(
            Content.assemble(("Archived by the last run: ", "$text-muted"), ", ".join(self.archived)) if self.archived else ""
        )
        self.archived_view.display = bool(self.archived)
        self.display = bool(self.quota or rows or self.setup or self.archived or self.correction.display)
        # a short screen: one line for the tasks, no rule above them (3 of 9 conversation rows before)
        self.set_class(self.app.size.height < SHORT_SCREEN, "-short")

    def _setup_text(self) -> Content:
        parts: list[tuple[str, str] | str] = []
        for workflow, items in self.setup.items():
            bits = []
            for item in items:
                if not isinstance(item, dict):
                    continue
                if item.get("kind") == "credential":
                    app = item.get("appDisplayName") or item.get("credentialType")
                    nodes = ", ".join(str(b.get("nodeName")) for b in item.get("nodeBindings") or [] if isinstance(b, dict))
                    bits.append(f"{app} credential" + (f" ({nodes})" if nodes else ""))
                elif item.get("kind") == "parameters":
                    bits.append(f"{item.get('nodeName')}: {', '.join(str(p) for p in item.get('parameterNames') or [])}")
            if parts:
                parts.append("\n")
            parts += [("Setup needed ", "bold $text-warning"), (f"workflow {workflow}: ", "$text-muted"), "; ".join(bits)]
        return Content.assemble(*parts)

    # ------------------------------------------------------------------ actions
    def _thread(self) -> str:
        """The app's current thread (a new thread gets its id when the first message is sent)."""
        return str(getattr(self.app, "thread_id", None) or self.thread_id or "")

    def cancel(self, row: BackgroundTaskRow) -> None:
        if row.status != "running":
            self.notify(f"{row.role or 'The task'} is not running ({row.status}).", severity="warning")
            return
        row.note = "cancelling…"
        self.redraw()
        self._cancel(row)

    @work(group="n8n-task", exit_on_error=False)
    async def _cancel(self, row: BackgroundTaskRow) -> None:
        try:
            await self.client.cancel_task(self._thread(), row.task_id)
        except ClientError as exc:
            row.note = ""
            self.notify(f"Could not cancel {row.role or 'the task'}: {exc}", severity="error")
        self.redraw()

    def ask_correction(self, row: BackgroundTaskRow) -> None:
        if row.status != "running":
            self.notify(f"{row.role or 'The task'} is not running ({row.status}).", severity="warning")
            return
        self._correcting = row.task_id
        self.correction.placeholder = f"Correction for {row.role or row.task_id} — Enter sends, Esc cancels"
        self.correction.value = ""
        self.correction.display = True
        self.display = True
        self.correction.focus()

    @on(Input.Submitted, "#n8n-correction")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        task_id = self._correcting
        if not text or task_id is None:
            self.notify("Type the correction, or press Esc.", severity="warning")
            return
        self.correction.value = ""
        self._close_correction()
        self._send_correction(task_id, text)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and self.correction.has_focus:
            event.stop()
            self._close_correction()

    def _close_correction(self) -> None:
        self._correcting = None
        self.correction.display = False
        self.task_list.focus()
        self.redraw()

    @work(group="n8n-task", exit_on_error=False)
    async def _send_correction(self, task_id: str, text: str) -> None:
        row = self.tasks.get(task_id)
        try:
            await self.client.correct_task(self._thread(), task_id, text)
        except ClientError as exc:
            self.notify(f"Could not send the correction: {exc}", severity="error")
            return
        if row is not None:
            row.note = "correction sent"
        self.redraw()
