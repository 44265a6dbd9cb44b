"""Cards waiting for the user's answer: which exist, when one takes focus, how to reach them.

FOCUS RULE (issue 12). ``focus_new`` is the only place where the app moves focus to a card by
itself. A new card takes focus only when ALL of these hold:

1. the main screen is on top: no dialog (rename, delete), palette, help, picker or other
   screen — keys there belong to it;
2. focus is on nothing, the conversation, or an EMPTY message prompt — never on the thread
   list, the thread search, a text field of another card (a wizard), another card, or a prompt
   with text in it;
3. the user is not interacting: no key, click, scroll or paste for ``IDLE_BEFORE_FOCUS`` seconds
   (``last_input_at``).

Otherwise the card waits (it stays queued in ``app._pending_focus`` and this is asked again
every frame), and the user is told once that it waits and how to reach it. Even when it takes
focus, its keys are ignored for ``confirmations.GRACE_SECONDS`` (``restart_grace``). The
pending card is reached deliberately with Ctrl+G (``next-pending-card`` in the key map), a
click, or Tab; past the last card here, Ctrl+G opens the next thread with an answer waiting
(``tui.pending_watch`` finds those). Answers go to the client of the open thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual import events

from ..client.base import ClientError
from . import keymap
from .pending_watch import waiting_summary

if TYPE_CHECKING:
    from ..protocol.api import ConfirmBody
    from ..protocol.conversation import PendingConfirmation
    from .app import InstanceAiApp
    from .widgets.confirmations import ConfirmCard
    from .widgets.turns import Frame

#: a new card takes focus only after this many seconds without a key, click or scroll
IDLE_BEFORE_FOCUS = 1.0
_INPUT_EVENTS = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp, events.Paste)


def is_card(node: Any) -> bool:
    """A confirmation card (duck-typed: the module is imported only when cards exist)."""
    return getattr(type(node), "KEY_SCOPE", None) == "card"


def inside_card(node: Any) -> bool:
    while node is not None:
        if is_card(node):
            return True
        node = node.parent
    return False


def inside(node: Any, container: Any) -> bool:
    while node is not None:
        if node is container:
            return True
        node = node.parent
    return False


class Cards:
    """The pending cards of ``app`` (see the module docstring)."""

    def __init__(self, app: InstanceAiApp) -> None:
        self.app = app
        self.by_id: dict[str, PendingConfirmation] = {}
        #: cards the user was told about (once each) while the focus rule kept them waiting
        self.announced: set[str] = set()
        #: ``time.monotonic()`` of the last key, click, scroll or paste (the focus rule)
        self.last_input_at = 0.0
        self._elsewhere_seen: dict[str, int] = {}
        #: cards of a thread just opened that were already signalled while it was not open
        self._expected_waiting = 0
        #: the thread Ctrl+G is opening to reach its card
        self._going_to: str | None = None

    def leave_thread(self, next_thread: str | None) -> None:
        """Another thread opens: the cards of this one are remembered as waiting elsewhere."""
        app = self.app
        watch = app.pending_watch
        if app.thread_id and app.pending:
            watch.note(app.thread_id, len(app.pending))  # left with cards waiting
        self._expected_waiting = watch.elsewhere.get(next_thread or "", 0)
        if next_thread:
            watch.forget(next_thread)
        self.by_id = {}
        app.pending.clear()

    # ----------------------------------------------------------------- what is waiting
    def refresh(self, frame: Frame) -> None:
        app = self.app
        conversation = app.conversation
        if conversation is None:
            return
        new = {p.request_id: p for p in conversation.pending_confirmations()}
        old = self.by_id
        changed = set(new) ^ set(old)
        self.by_id = new
        app.pending.clear()
        app.pending.update(new)
        app._pending_focus.extend(rid for rid in new if rid not in old)
        if changed or not new:
            self.changed([rid for rid in new if rid not in old])
        if changed:
            app._update_tasks(conversation)  # a plan review answered: rejected plans leave
            frame.new_cards.extend(app.view.refresh_pending(changed))
            if bool(old) != bool(new):
                app.refresh_bindings()  # the footer recomposes: only when "pending" flips

    def _thread_label(self, thread_id: str) -> str:
        info = self.app.thread_list.thread(thread_id)
        return (info.title if info is not None and info.title else "") or "Untitled thread"

    def changed(self, new_ids: Iterable[str] = ()) -> None:
        """Answers waiting here or in threads not open changed: the thread list's markers,
        the status line (how many, where), the terminal's title, and the bell for new ones."""
        app = self.app
        watch = app.pending_watch
        here = len(app.pending)
        counts = {tid: n for tid, n in watch.elsewhere.items() if tid != app.thread_id}
        for tid in counts:  # a thread another client created after the app started
            if app.thread_list.thread(tid) is None and tid in watch.infos:
                app.thread_list.upsert_thread(watch.infos[tid])
        marks = dict(counts)
        if app.thread_id and here:
            marks[app.thread_id] = here
        app.thread_list.set_pending(marks)
        elsewhere = [(self._thread_label(tid), n) for tid, n in counts.items()]
        info = app.status_info
        info.waiting = waiting_summary(here, elsewhere)
        info.waiting_key = keymap.display_keys(app.keys.keys("next-pending-card"))
        app.status_line.refresh_info()
        total = here + sum(counts.values())
        app.terminal.waiting(total, f" in “{elsewhere[0][0]}”" if elsewhere and not here else "")
        arrived: list[str] = []
        for _rid in new_ids:
            if self._expected_waiting > 0:
                self._expected_waiting -= 1  # it was already signalled in another thread
            else:
                arrived.append("here")
        for tid, n in counts.items():
            if n > self._elsewhere_seen.get(tid, 0):
                arrived.append(self._thread_label(tid))
        self._elsewhere_seen = dict(counts)
        if arrived:
            app.terminal.arrived(f"Instance AI: an answer is waiting ({arrived[0]})")
        app.refresh_bindings()

    # ----------------------------------------------------------------- the focus rule
    def blocker(self) -> str | None:
        """Why a card may not take focus now (``None``: it may). See the focus rule."""
        app = self.app
        if len(app.screen_stack) > 1 or app.screen is not app.screen_stack[0]:
            return "a dialog is open"
        focused = app.focused
        if focused is not None and inside_card(focused):
            return "another card has focus"
        if focused is not None and focused is not app.prompt and not inside(focused, app.view):
            return "you are using another part of the screen"
        if focused is app.prompt and app.prompt.text.strip():
            return "you are typing"
        if time.monotonic() - self.last_input_at < IDLE_BEFORE_FOCUS:
            return "you are typing"
        return None

    def on_input(self, event: events.Event) -> bool:
        """Every key, click, scroll and paste counts as interacting. Tab from the prompt goes to
        the card waiting (deliberately; keys typed right after it still wait for the grace
        period). Returns True when the event was used here."""
        app = self.app
        if getattr(event, "is_forwarded", False) or not isinstance(event, _INPUT_EVENTS):
            return False
        self.last_input_at = time.monotonic()
        if (isinstance(event, events.Key) and event.key == "tab" and app.pending and app.focused is app.prompt
                and app.screen is app.screen_stack[0] and self.go_to(restart_grace=True)):
            app._pending_focus = []
            return True
        return False

    def focus_new(self) -> None:
        """Bring a newly pending card to the user: focus it if the focus rule allows, else leave
        it queued (asked again next frame) and say once how to reach it. A card whose widget is
        not mounted yet stays queued for the next frame."""
        app = self.app
        if not app._pending_focus:
            return
        wanted = [rid for rid in app._pending_focus if rid in app.pending]
        if not wanted:
            app._pending_focus = []
            return
        if self.blocker() is not None:
            unannounced = [rid for rid in wanted if rid not in self.announced and self._going_to is None]
            if unannounced:
                self.announced.update(unannounced)
                key = keymap.display_keys(app.keys.keys("next-pending-card"))
                app.notify(f"The agent needs your answer — press {key} to go to it.", timeout=6)
            app._pending_focus = wanted
            return
        if self.go_to(wanted[0], restart_grace=True):
            app._pending_focus = []

    # ----------------------------------------------------------------- going to a card
    def go_to(self, request_id: str | None = None, restart_grace: bool = False) -> bool:
        """Scroll to a pending card (the first one by default) and focus it.

        ``restart_grace``: the app moved focus by itself, so the card's key grace period
        starts now (the user may have been typing a moment ago).
        """
        view = self.app.view
        ids = [request_id] if request_id else list(self.by_id)
        for rid in ids:
            pending = self.by_id.get(rid)
            if pending is None:
                continue
            card = self._find(pending)
            if card is None and pending.message_id not in view.turns:
                # an older message is not mounted: mount everything up to it
                while pending.message_id not in view.turns and view.load_older():
                    pass
                card = self._find(pending)
            if card is not None and card.card is not None:
                if restart_grace:
                    card.card.restart_grace()
                if restart_grace and view.following:
                    # a new card at the bottom of the output: stay anchored, it is in view
                    card.card.focus_default(scroll_visible=False)
                    view.follow()
                else:
                    view.release_anchor()
                    card.card.focus_default()
                    card.card.reveal()
                return True
        return False

    def _find(self, pending: PendingConfirmation) -> Any:
        for turn in self.app.view.assistant_turns():
            card = turn.cards.get(pending.tool_call.tool_call_id)
            if card is not None:
                return card
        return None

    def next(self) -> None:
        """The next card waiting: in this thread, then in the other threads (switching)."""
        app = self.app
        if not app.pending:
            if not self._go_elsewhere():
                app.notify("Nothing is waiting for your answer.", timeout=3)
            return
        ids = list(self.by_id)
        current = None
        node: Any = app.focused
        while node is not None:
            if is_card(node):
                current = node.request_id
                break
            node = node.parent
        if current in ids:
            if ids.index(current) == len(ids) - 1 and self._go_elsewhere():
                return  # the last card here: on to the next thread with answers waiting
            ids = ids[ids.index(current) + 1 :] + ids[: ids.index(current) + 1]
        for rid in ids:
            if self.go_to(rid):
                return
        app.notify("The pending card is not visible yet; try again in a moment.", timeout=3)

    def _go_elsewhere(self) -> bool:
        """Ctrl+G past the last card here: open the next thread with answers waiting."""
        app = self.app
        waiting = app.pending_watch.elsewhere
        order = [t.id for t in app.thread_list.local_threads()]
        others = sorted((tid for tid in waiting if tid != app.thread_id),
                        key=lambda tid: order.index(tid) if tid in order else len(order))
        if not others:
            return False
        app.run_worker(self._open_and_go(others[0]), group="open", exclusive=True, exit_on_error=False)
        return True

    async def _open_and_go(self, thread_id: str) -> None:
        app = self.app
        self._going_to = thread_id  # the user is on the way to its card: no "press Ctrl+G" notice
        try:
            await app.open_thread(thread_id)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while loop.time() < deadline:
                await asyncio.sleep(0.05)
                if app.thread_id != thread_id:
                    return
                if app.pending and self.go_to():
                    app._pending_focus = []
                    return
        finally:
            self._going_to = None
        app.prompt.focus()
        app.notify("The answer in that thread is no longer waiting.", timeout=4)

    # ----------------------------------------------------------------- answering
    async def send_answer(self, card: ConfirmCard, request_id: str, body: ConfirmBody, summary: str) -> None:
        from ..protocol.api import ApprovalConfirm, PlanDenyConfirm

        app = self.app
        try:
            await app.thread_client.confirm(request_id, body)
        except ClientError as exc:
            app._show_error(f"Could not send your answer: {exc}")
            card.reopen()
            return
        approved: bool | None = None
        if isinstance(body, ApprovalConfirm):
            approved = body.approved
        elif isinstance(body, PlanDenyConfirm):
            approved = False
        if app.conversation is not None:
            app.conversation.mark_confirmation_resolved(request_id, approved)
        card.settle(summary)
        if app.focused is None or inside_card(app.focused) or app.focused is card:
            remaining = [rid for rid in app.pending if rid != request_id]
            if remaining:
                # the next card: its keys wait again, so a double press cannot answer it
                app.call_after_refresh(self.go_to, remaining[0], True)
            else:
                app.prompt.focus()
                app.view.follow()  # back to following the agent's output
