"""The messages on their way (``tui.open_thread.Outbox``), above the prompt: one row each, with why it
waits ("queued", "sending…", "not sent: the database is locked … — it will be sent when it is free").
Enter or E takes a row back into the prompt, Delete or X removes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Static

from .. import keymap


@dataclass
class QueuedMessage:
    """A message the person sent that has not reached the thread yet. ``reason``: why it waits, when
    it is not simply the run or the connection ("not sent: …"); ``thread_id``: ``None`` while the app
    starts (it goes to the thread that opens)."""

    id: int
    thread_id: str | None
    text: str
    reason: str = ""

    @property
    def label(self) -> str:
        return f"⏳ {self.reason}" if self.reason else "⏳ queued"


@dataclass
class QueuedRowMessage(Message):
    """What a queued row asks for ``item_id`` (``QueuedRow.Edit``, ``QueuedRow.Remove``)."""

    item_id: int


class QueuedRow(Horizontal, can_focus=True):
    """One queued message: Enter or E takes it back into the prompt, Delete or X removes it."""

    KEY_SCOPE = "queued"
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("queued")]

    @dataclass
    class Edit(QueuedRowMessage):
        """Take the queued message back into the prompt."""

    @dataclass
    class Remove(QueuedRowMessage):
        """Drop the queued message."""

    def __init__(self, item: QueuedMessage) -> None:
        super().__init__(classes="queued-row")
        self.item_id = item.id
        self.text = item.text
        self.label = item.label

    def compose(self) -> Any:
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        more = " …" if len(self.text.strip().splitlines()) > 1 or len(first) > 200 else ""
        yield Static(f"{self.label}: {first[:200]}{more}", classes="queued-text", markup=False)
        yield Static(" [e] edit  [x] remove", classes="queued-keys", markup=False)

    def action_edit(self) -> None:
        self.post_message(self.Edit(self.item_id))

    def action_remove(self) -> None:
        self.post_message(self.Remove(self.item_id))

    def on_click(self, event: events.Click) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and "queued-keys" in widget.classes:
            x = event.x - widget.region.x if hasattr(widget, "region") else event.x
            self.post_message(self.Remove(self.item_id) if x >= 9 else self.Edit(self.item_id))


class QueuedBar(Static):
    """The queued messages of the open thread, above the prompt (hidden when there are none)."""

    DEFAULT_CSS = """
    QueuedBar { height: auto; max-height: 6; display: none; padding: 0 1; }  /* in line with the prompt below */
    QueuedBar .queued-row { height: 1; }
    QueuedBar .queued-row:focus { background: $boost; }
    /* one row each, cut with "…" (wrapped, at 80 columns four of them took 6 rows, the keys mid-text) */
    QueuedBar .queued-text { width: 1fr; height: 1; color: $text-warning; text-wrap: nowrap; text-overflow: ellipsis; }
    QueuedBar .queued-keys { width: auto; color: $text-muted; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)

    async def show(self, items: list[QueuedMessage]) -> None:
        await self.remove_children()
        if items:
            await self.mount_all([QueuedRow(item) for item in items])
        self.display = bool(items)
