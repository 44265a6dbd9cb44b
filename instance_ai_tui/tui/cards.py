"""Cards waiting for the user's answer, and the keyboard model: where keys go, who moves focus.

THE KEYBOARD MODEL (issue 32; ``docs/keyboard.md`` says it for people). This module is where
focus is decided.

1. The prompt owns printable keys whenever it is on screen, unless the person moved focus on
   purpose: Tab, Ctrl+G, Ctrl+B, Ctrl+F, Alt+Up/Down, a click, an arrow key in a list.
2. Nothing moves focus by itself. A new card NEVER takes the keyboard: it is announced (a
   notice, the status line's count, the thread list's marker, the terminal's title and bell)
   and waits until the person goes to it with Ctrl+G (``next-pending-card``), Tab from the
   prompt, or a click. Prose typed into the prompt can therefore never answer a card. Past the
   last card here, Ctrl+G opens the next thread with an answer waiting (``tui.pending_watch``).
3. When the focused widget goes away or can no longer take keys (a card answered, cancelled
   or expired; a block pruned or folded; a panel hidden), focus goes back to the prompt, not
   to whatever Textual finds next (``guard_focus``, run before every key and paste is
   dispatched, and ten times a second). After an answer focus returns to the prompt too.
4. The status line names where keys go now ("keys: prompt", "keys: card", "keys: thread
   list", ...; ``where_keys_go``); a card says on its last line whether it has the keys. Esc
   from any widget that is not a text field goes back to the prompt.
5. A card's keys are ignored for ``confirmations.GRACE_SECONDS`` after it is drawn, and a
   grant that lasts ("always allow") takes a second, different key (``ConfirmCard.ask_always``).

Answers go to the client of the open thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual import events

from ..client.base import ClientError
from . import keymap
from .deferred import Deferred
from .pending_watch import waiting_summary
from .textual_internals import drop_notifications

if TYPE_CHECKING:
    from textual.widget import Widget

    from ..protocol.api import ConfirmBody
    from ..protocol.conversation import PendingConfirmation
    from .open_thread import OpenThread
    from .pending_watch import PendingWatch, TerminalSignals
    from .ports import Ui
    from .widgets.confirmations import ConfirmCard
    from .widgets.conversation_view import ConversationView
    from .widgets.find_bar import FindBar
    from .widgets.prompt import PromptInput
    from .widgets.status_line import StatusLine
    from .widgets.thread_list import ThreadList
    from .widgets.turns import Frame

#: the notice that an answer is waiting here (taken away once the card has the keys or is answered)
ANSWER_NEEDED = "The agent needs your answer"

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
    """The cards waiting in the open thread (``thread.pending_cards``) and the keys' way to them (see
    the module docstring). ``open``: opens a thread (Ctrl+G past the last card here); ``keys``: the key
    map now; ``watch``: answers waiting in the threads not open, and ``terminal`` their signals."""

    def __init__(self, ui: Ui, thread: OpenThread, *, view: ConversationView, prompt: PromptInput,
                 find_bar: FindBar, thread_list: ThreadList, status_line: StatusLine, watch: PendingWatch,
                 terminal: TerminalSignals, keys: Callable[[], keymap.KeyMap],
                 open: Callable[[str], Awaitable[None]]) -> None:
        self.ui = ui
        self.thread = thread
        self.view = view
        self.prompt = prompt
        self.find_bar = find_bar
        self.thread_list = thread_list
        self.status_line = status_line
        self.info = status_line.info
        self.watch = watch
        self.terminal = terminal
        self.keys = keys
        self.open = open
        #: new cards that take focus when the focus rule allows
        self.pending_focus: list[str] = []
        #: cards the user was told about (once each) while the focus rule kept them waiting
        self.announced: set[str] = set()
        self._elsewhere_seen: dict[str, int] = {}
        #: cards of a thread just opened that were already signalled while it was not open
        self._expected_waiting = 0
        #: the thread Ctrl+G is opening to reach its card
        self._going_to: str | None = None
        #: the widget that had the keys when ``guard_focus`` last looked, and its card
        self._owner: Widget | None = None
        self._owner_card: Widget | None = None

    def leave_thread(self, next_thread: str | None) -> None:
        """Another thread opens: the cards of this one are remembered as waiting elsewhere."""
        watch = self.watch
        if self.thread.thread_id and self.thread.pending:
            watch.note(self.thread.thread_id, len(self.thread.pending))  # left with cards waiting
        self._expected_waiting = watch.elsewhere.get(next_thread or "", 0)
        if next_thread:
            watch.forget(next_thread)
        self.thread.set_pending({})

    # ----------------------------------------------------------------- what is waiting
    def refresh(self, frame: Frame) -> bool:
        """Which cards wait now; true when that changed (the tasks panel then redraws: a plan
        review answered, rejected plans leave)."""
        conversation = self.thread.conversation
        if conversation is None:
            return False
        new = {p.request_id: p for p in conversation.pending_confirmations()}
        old = self.thread.pending_cards
        changed = set(new) ^ set(old)
        self.thread.set_pending(new)
        self.pending_focus.extend(rid for rid in new if rid not in old)
        if changed or not new:
            self.changed([rid for rid in new if rid not in old])
        if old and not new:  # answered (or gone): "needs your answer" is no longer true
            drop_notifications(self.ui, ANSWER_NEEDED)
        if changed:
            frame.new_cards.extend(self.view.refresh_pending(changed))
            if bool(old) != bool(new):
                self.ui.refresh_bindings()  # the footer recomposes: only when "pending" flips
        return bool(changed)

    def _thread_label(self, thread_id: str) -> str:
        return self.thread_list.label(thread_id) or "Untitled thread"  # "(n)" when titles are twins

    def changed(self, new_ids: Iterable[str] = ()) -> None:
        """Answers waiting here or in threads not open changed: the thread list's markers,
        the status line (how many, where), the terminal's title, and the bell for new ones."""
        watch = self.watch
        here = len(self.thread.pending)
        counts = {tid: n for tid, n in watch.elsewhere.items() if tid != self.thread.thread_id}
        for tid in counts:  # a thread another client created after the app started
            if self.thread_list.thread(tid) is None and tid in watch.infos:
                self.thread_list.upsert_thread(watch.infos[tid])
        marks = dict(counts)
        if self.thread.thread_id and here:
            marks[self.thread.thread_id] = here
        self.thread_list.set_pending(marks)
        elsewhere = [(self._thread_label(tid), n) for tid, n in counts.items()]
        info = self.info
        info.waiting = waiting_summary(here, elsewhere)
        info.waiting_key = keymap.display_keys(self.keys().keys("next-pending-card"))
        self.status_line.refresh_info()
        total = here + sum(counts.values())
        self.terminal.waiting(total, f" in “{elsewhere[0][0]}”" if elsewhere and not here else "")
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
            self.terminal.arrived(f"Instance AI: an answer is waiting ({arrived[0]})")
        self.ui.refresh_bindings()

    # ----------------------------------------------------------------- the keyboard model
    def on_input(self, event: events.Event) -> bool:
        """Before a key or a paste is dispatched, focus that moved by itself is put back
        (``guard_focus``). Tab from the
        prompt goes to the card waiting (deliberately; keys typed right after it still wait for
        the grace period). Returns True when the event was used here."""
        if getattr(event, "is_forwarded", False) or not isinstance(event, _INPUT_EVENTS):
            return False
        if isinstance(event, (events.Key, events.Paste)):
            self.guard_focus()
        if (isinstance(event, events.Key) and event.key == "tab" and self.thread.pending and self.ui.focused is self.prompt
                and self.ui.screen is self.ui.screen_stack[0] and self.go_to(restart_grace=True)):
            self.pending_focus = []
            return True
        return False

    def focus_new(self) -> None:
        """Newly pending cards: say once, for each, that an answer is waiting and which key
        goes to it. A card never takes the keyboard by itself (the keyboard model, rule 2)."""
        if not self.pending_focus:
            return
        wanted = [rid for rid in self.pending_focus if rid in self.thread.pending]
        self.pending_focus = []
        unannounced = [rid for rid in wanted if rid not in self.announced]
        if not unannounced:
            return
        self.announced.update(unannounced)
        if self._going_to is not None:
            return  # the user is on the way to it (Ctrl+G opened its thread)
        key = keymap.display_keys(self.keys().keys("next-pending-card"))
        self.ui.notify(f"{ANSWER_NEEDED} — press {key} to go to it (your typing stays in the prompt).",
                   timeout=6)

    def _main_screen_on_top(self) -> bool:
        return len(self.ui.screen_stack) == 1 and self.ui.screen is self.ui.screen_stack[0]

    def guard_focus(self) -> None:
        """Nothing moves focus by itself (rule 3): when the widget that had the keys went away
        or cannot take them any more and Textual moved focus to a neighbour (a block of the
        transcript, say), or nothing has focus, the prompt gets it. Moves the person made (Tab,
        a click, Ctrl+G...) leave the widget they came from in place, so they are kept; so is a
        move inside one card (a wizard's field to its page). Synchronous, so a key dispatched
        right after goes where the status line says."""
        prompt = self.prompt
        if not self._main_screen_on_top() or not prompt.is_attached or not prompt.display:
            self._owner = None
            self._owner_card = None
            return
        focused = self.ui.focused
        owner = self._owner
        if focused is owner and focused is not None:
            return
        back = focused is None
        if not back and owner is not None and focused is not prompt and _gone(owner):
            card = self._owner_card
            back = not (card is not None and card.is_attached and inside(focused, card))
        if back:
            self.ui.screen.set_focus(prompt, scroll_visible=False)
            focused = prompt
        self._owner = focused
        self._owner_card = _card_of(focused)
        self.show_where()

    def show_where(self) -> None:
        """The status line's "keys: …" (rule 4)."""
        info = self.info
        where = self.where_keys_go()
        if where != info.keys_at:
            info.keys_at = where
            info.back_key = keymap.display_keys(self.keys().keys("conversation-back")[:1])
            self.status_line.refresh_info()

    def where_keys_go(self) -> str:
        """Where a key typed now goes, in a word or two (the status line's "keys: …")."""
        if len(self.ui.screen_stack) > 1 or self.ui.screen is not self.ui.screen_stack[0]:
            return "dialog"
        focused = self.ui.focused
        if focused is None:
            return "nowhere"
        if focused is self.prompt:
            return "prompt"
        if inside_card(focused):
            return "card"
        if inside(focused, self.thread_list):
            return "thread search" if type(focused).__name__ == "_SearchInput" else "thread list"
        if inside(focused, self.find_bar):
            return "find"
        if focused is self.view:
            return "conversation"
        if inside(focused, self.view):
            return "block"
        from textual.widgets import Input, TextArea

        if isinstance(focused, (Input, TextArea)):
            return "field"
        scopes = keymap.scopes_for(focused)
        return keymap.SCOPE_TITLES.get(scopes[0], "screen").lower() if scopes else "screen"

    # ----------------------------------------------------------------- going to a card
    def go_to(self, request_id: str | None = None, restart_grace: bool = False) -> bool:
        """Scroll to a pending card (the first one by default) and focus it: only ever for a
        deliberate act (Ctrl+G, Tab, opening its thread with Ctrl+G).

        ``restart_grace``: the card's key grace period starts now (Tab from the prompt: keys
        typed right after it still wait).
        """
        view = self.view
        ids = [request_id] if request_id else list(self.thread.pending_cards)
        for rid in ids:
            pending = self.thread.pending_cards.get(rid)
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
                if view.following:
                    # a card at the bottom of the output: stay anchored, it is in view (scrolling
                    # to a card still being laid out put the view at a negative offset: blank)
                    card.card.focus_default(scroll_visible=False)
                    view.follow()
                else:
                    view.release_anchor()
                    card.card.focus_default()
                    card.card.reveal()
                drop_notifications(self.ui, ANSWER_NEEDED)  # "press Ctrl+G to go to it": it is here
                return True
        return False

    def _find(self, pending: PendingConfirmation) -> Any:
        for turn in self.view.assistant_turns():
            card = turn.cards.get(pending.tool_call.tool_call_id)
            if card is not None:
                return card
        return None

    def next(self) -> None:
        """The next card waiting: in this thread, then in the other threads (switching)."""
        if not self.thread.pending:
            if not self._go_elsewhere():
                self.ui.notify("Nothing is waiting for your answer.", timeout=3)
            return
        ids = list(self.thread.pending_cards)
        current = None
        node: Any = self.ui.focused
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
        # asked for on purpose, but not drawn yet (a frame is still mounting it): go once it is
        self.ui.run_worker(Deferred(self._go_when_drawn, ids), group="go-card", exclusive=True, exit_on_error=False)

    async def _go_when_drawn(self, ids: list[str]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3
        while loop.time() < deadline:
            await asyncio.sleep(0.05)
            for rid in ids:
                if rid in self.thread.pending and self.go_to(rid):
                    return
        self.ui.notify("The pending card is not visible yet; try again in a moment.", timeout=3)

    def _go_elsewhere(self) -> bool:
        """Ctrl+G past the last card here: open the next thread with answers waiting."""
        waiting = self.watch.elsewhere
        order = [t.id for t in self.thread_list.local_threads()]
        others = sorted((tid for tid in waiting if tid != self.thread.thread_id),
                        key=lambda tid: order.index(tid) if tid in order else len(order))
        if not others:
            return False
        self.ui.run_worker(Deferred(self._open_and_go, others[0]), group="open", exclusive=True, exit_on_error=False)
        return True

    async def _open_and_go(self, thread_id: str) -> None:
        self._going_to = thread_id  # the user is on the way to its card: no "press Ctrl+G" notice
        try:
            await self.open(thread_id)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while loop.time() < deadline:
                await asyncio.sleep(0.05)
                if self.thread.thread_id != thread_id:
                    return
                if self.thread.pending and self.go_to():
                    self.pending_focus = []
                    return
        finally:
            self._going_to = None
        self.prompt.focus()
        self.ui.notify("The answer in that thread is no longer waiting.", timeout=4)

    # ----------------------------------------------------------------- answering
    async def send_answer(self, card: ConfirmCard, request_id: str, body: ConfirmBody, summary: str) -> None:
        from ..protocol.api import answer_verdict

        try:
            await self.thread.client.confirm(request_id, body)
        except ClientError as exc:
            self.ui.show_error(f"Could not send your answer: {exc}")
            card.reopen()
            return
        approved: bool | str | None = answer_verdict(body)  # (a web search or a file refused is denied too)
        # n8n's words for these answers (protocol.display_state): a skip is deferred, not denied
        approved = {"skipped": "deferred", "changes requested": "changes-requested",
                    "form declined": None}.get(summary, approved)  # (an MCP server's form: the call goes on)
        if self.thread.conversation is not None:
            self.thread.conversation.mark_confirmation_resolved(request_id, approved)
        card.settle(summary)
        if self.ui.focused is None or inside_card(self.ui.focused) or self.ui.focused is card:
            # back to the prompt: the next card (if any) waits to be reached on purpose
            self.prompt.focus()
            self.view.follow()  # back to following the agent's output
            remaining = [rid for rid in self.thread.pending if rid != request_id]
            if remaining:
                key = keymap.display_keys(self.keys().keys("next-pending-card"))
                self.ui.notify(f"Another answer is waiting — {key} goes to it.", timeout=5)


def _gone(widget: Widget) -> bool:
    """``widget`` cannot have the keys any more: removed, hidden, disabled."""
    if not widget.is_attached or not widget.focusable:
        return True
    node: Any = widget
    while node is not None:
        if not getattr(node, "display", True):
            return True
        node = node.parent
    return False


def _card_of(node: Any) -> Any:
    """The card (or another area that moves the keys within itself, ``KEYS_STAY_INSIDE``: the
    background tasks' correction field and list) that ``node`` is part of."""
    while node is not None:
        if is_card(node) or getattr(type(node), "KEYS_STAY_INSIDE", False):
            return node
        node = node.parent
    return None
