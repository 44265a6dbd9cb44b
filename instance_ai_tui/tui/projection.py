"""The ingest worker and the frame: from the client's event stream to the widgets.

Data flow (DESIGN.md, "Performance architecture")::

    client.events()  --ingest worker-->  Conversation (reducer model)   no widget work
                                              |  drain_changes()
    frame timer (25 Hz, fewer under load)  --one batch_update-->  widgets (only what changed)

``Projection`` owns both halves for the open thread: ``start``/``stop`` the ingest of a thread,
``frame()`` (the app's frame timer) projects what the reducer changed, floods skip projection
until the backlog is folded, and ``wait_until_rendered`` is the "rendering caught up" signal of
headless use. ``IngestStats`` counts events and frames for benchmarks and tests.

Text from outside enters the TUI here: every item is folded with its control characters made
visible (``protocol.safe_text``): streamed deltas by ``Conversation.apply`` itself, every other
event and run-sync frame once, before the conversation and the n8n panel both read it.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..aio import aclose
from ..client.base import ClientError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..protocol.conversation import Conversation
    from ..protocol.events import RunFinishEvent
    from ..protocol.ingest import StreamItem
    from .heap import HeapPolicy
    from .open_thread import OpenThread
    from .ports import FrameSink, Ui
    from .widgets.conversation_view import ConversationView
    from .widgets.status_line import StatusLine

FRAME_HZ = 25
#: under load a frame's work (its own, and the layout and paint it makes Textual do) takes at
#: most this share of the event loop's time: after a frame that cost t seconds the next waits
#: t / FRAME_SHARE (keys and the ingest get the rest). 0.1: since a streamed answer repaints
#: only its new rows (``textual_internals.py``) a frame costs about a third less, and 0.1
#: gives the frame rates 0.15 gave before (a 150-item list or 60-row table at 150 tokens/s:
#: 11-13 frames/s) for 20-25 % less CPU (at 0.15: 16-19 frames/s; benchmarks/tui_realistic.py);
#: the end of a stream is not held back by it (``Projection.stream_ended``)
FRAME_SHARE = 0.1
#: ... but never fewer frames than this per second
MIN_FRAME_HZ = 4
#: while an answer streams, at most this many frames per second however cheap they are: a
#: growing answer scrolls the view, and every frame then repaints every visible row
#: (Textual has no terminal scrolling), so the frames cost CPU in proportion to their rate,
#: not to the text. 12.5 (every other tick) draws 4 tokens a frame at 50 tokens/s and 12
#: at 150; keys are echoed by Textual at once whatever this is, and the end of a stream is
#: drawn at once (``Projection.stream_ended``)
STREAM_FRAME_HZ = 12.5
#: the status line's spinner turns at most this often (seconds), whatever the frame rate: a
#: frame that only grows the answer leaves the rows below the view (prompt, status line) alone
SPINNER_INTERVAL = 0.1
#: empty frames in a row with nothing streaming, arriving, opening, waiting (cards) or left to
#: mount before the frame timer rests (issue 44: an idle app ran the frame 25 times a second)
IDLE_AFTER_FRAMES = 25
#: while it rests, how often the model is looked at for a change no ``wake`` announced (a few
#: attribute reads; the stream, a thread opening and keys wake the frames at once)
IDLE_CHECK_SECONDS = 0.25
#: a frame's tick at which the source still holds at least this many events behind the last
#: batch read (``Batch.queued``) is in a flood (``Projection.flooded``): a page of the log, a
#: piece of a socket's backlog; a live stream has none waiting
FLOOD_QUEUED = 64
#: the ingest worker yields to the event loop at least this often (seconds)
INGEST_SLICE = 0.005


async def yield_after_timers() -> None:
    """Give the event loop back until every task whose timer is due has run (the ingest's yield).

    ``asyncio.sleep(0)`` resumes at the loop's next turn, but a task asleep on a timer (Textual's
    screen update and frame timers, a heartbeat) needs two turns once its timer is due (the timer's
    callback, then its step): so between two of its steps the ingest ran two or three slices
    (issue 44.1c: three ingest slices in one 30-40 ms stall). Resumed here by a timer due now,
    after the timers due before it and their tasks' steps."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    handle = loop.call_at(loop.time(), _resume, done)
    try:
        await done
    finally:
        handle.cancel()


def _resume(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


@dataclass
class IngestStats:
    """Counters for benchmarks and tests."""

    #: ``time.perf_counter()`` when the first frame was painted (cold start)
    first_frame_at: float | None = None
    events: int = 0
    frames: int = 0
    busy_frames: int = 0
    slowest_frame: float = 0.0
    first_event_at: float | None = None
    frame_times: list[float] = field(default_factory=list)

    def record_frame(self, seconds: float) -> None:
        self.busy_frames += 1
        self.slowest_frame = max(self.slowest_frame, seconds)
        if len(self.frame_times) < 100_000:
            self.frame_times.append(seconds)


class FramePacer:
    """The adaptive frame rate: ``FRAME_HZ`` while frames are cheap; after an expensive one
    the next waits until the frame's share of the loop is back under ``FRAME_SHARE``. A frame
    is recorded twice: when its own work is done, then with the paint it caused."""

    __slots__ = ("floor", "next_at", "skipped")

    def __init__(self) -> None:
        self.next_at = 0.0
        #: timer ticks skipped to keep the share (tests and benchmarks read it)
        self.skipped = 0
        #: the least time between two frames (``1 / STREAM_FRAME_HZ`` while an answer streams)
        self.floor = 0.0

    def due(self, now: float) -> bool:
        if now >= self.next_at:
            return True
        self.skipped += 1
        return False

    def record(self, started: float, seconds: float) -> None:
        """A frame that started at ``started`` did ``seconds`` of work."""
        wait = min(1 / MIN_FRAME_HZ, seconds / FRAME_SHARE)
        if wait > 1 / FRAME_HZ:
            self.next_at = started + max(wait, self.floor - 0.5 / FRAME_HZ)
        elif self.floor > 1 / FRAME_HZ:
            # (the timer ticks every 1 / FRAME_HZ: due half a tick early, the frame comes on
            # the tick ``floor`` after this one)
            self.next_at = started + self.floor - 0.5 / FRAME_HZ
        else:
            self.next_at = 0.0  # a cheap frame leaves the timer's own rate


class Projection:
    """The ingest worker and the frame projection of one app (``app.projection``).

    It reads the open thread (``opened``), draws the conversation (``view``) and the status line,
    and tells the rest of the screen what happened through ``sink`` (``ports.FrameSink``);
    ``observe`` sees every stream item (the n8n panel)."""

    def __init__(self, ui: Ui, opened: OpenThread, sink: FrameSink, *, view: ConversationView,
                 status_line: StatusLine, heap: HeapPolicy, observe: Callable[[StreamItem], None]) -> None:
        self.ui = ui
        self.opened = opened
        self.sink = sink
        self.view = view
        self.status_line = status_line
        self.heap = heap
        self.observe = observe
        self.stats = IngestStats()
        self.ingest_task: asyncio.Task[None] | None = None
        self.ingest_waiting = False
        self.frame_no = 0
        self.last_frame_empty = True
        self.events_at_frame = 0
        self.catching_up = False
        #: the events the source said were waiting behind the last batch (``Batch.queued``)
        self.queued = 0
        self.gc_held = False
        self.pacer = FramePacer()
        #: the open conversation was streaming at the last frame tick
        self.was_streaming = False
        #: a frame is being projected (the timer's, or one drawn at a stream's end)
        self.in_frame = False
        #: when the status line's spinner last turned (``time.perf_counter``)
        self.spun_at = 0.0
        self.end_frame_pending = False
        #: the frame timer (``run_frames``); resting: paused while the app is idle, and
        #: ``idle_check`` looks at the model now and then instead
        self.frame_timer: Any = None
        self.idle_check: Any = None
        self.resting = False
        self.idle_frames = 0

    # ------------------------------------------------------------------ the frame timer
    def run_frames(self, callback: Callable[[], Any]) -> Any:
        """Start the frame timer (``FRAME_HZ``) with ``callback`` (the app's frame); returns it."""
        self.frame_timer = self.ui.set_interval(1 / FRAME_HZ, callback, name="frame")
        return self.frame_timer

    def wake(self) -> None:
        """Something may change on screen soon (the stream, a thread opening, a key): the
        frames run again if they rested."""
        self.idle_frames = 0
        if not self.resting:
            return
        self.resting = False
        check, self.idle_check = self.idle_check, None
        if check is not None:
            check.stop()
        if self.frame_timer is not None:
            self.frame_timer.resume()

    def _rest(self) -> None:
        if self.resting or self.frame_timer is None:
            return
        self.resting = True
        self.frame_timer.pause()
        self.idle_check = self.ui.set_interval(IDLE_CHECK_SECONDS, self._look, name="frame-idle")

    def _look(self) -> None:
        """While the frames rest: wake them when the model changed or a run streams."""
        conversation = self.opened.conversation
        if (conversation is not None and (conversation.has_changes or conversation.is_streaming)) \
                or self.view.behind or not self.ingest_idle or self.opened.opening or self.opened.pending:
            self.wake()

    def _idle(self, streaming: bool) -> bool:
        """Nothing can change on screen without the model changing (see ``IDLE_AFTER_FRAMES``)."""
        return not (streaming or self.opened.pending or self.opened.opening or self.catching_up
                    or self.end_frame_pending or not self.ingest_idle or not self.view.settled)

    # ------------------------------------------------------------------ ingest
    def start(self, conversation: Conversation, thread_id: str, after: int) -> None:
        self.stop()
        self.wake()
        self.ingest_task = asyncio.create_task(self._ingest(conversation, thread_id, after), name="ingest")

    def stop(self) -> None:
        task, self.ingest_task = self.ingest_task, None
        if task is not None and not task.done():
            task.cancel()

    async def _ingest(self, conversation: Conversation, thread_id: str, after: int) -> None:
        """Fold every batch of the stream into the model (``Conversation.fold``, the one way in). No
        widget work happens here.

        ``ingest_waiting`` is true only while the stream itself has nothing to give: it is set at
        the end of every batch, but other tasks only see it when the stream really suspended (a
        batch that is ready at once is taken in the same step). ``queued`` is what the source
        said was still waiting behind the last batch (``Batch.queued``)."""
        stats = self.stats
        fold = conversation.fold
        observe = self.observe
        sink = self.sink
        clock = time.perf_counter
        slice_end = clock() + INGEST_SLICE
        stream = self.opened.client.batches(thread_id, after=after)
        try:
            self.ingest_waiting = True
            asked = clock()
            async for batch in stream:
                self.ingest_waiting = False
                if self.resting:
                    self.wake()
                self.queued = batch.queued
                if clock() - asked > INGEST_SLICE / 5:  # the stream made us wait: the loop had its turn
                    slice_end = clock() + INGEST_SLICE
                for item in fold(batch.items):  # (run-start, run-finish, tools...: made visible)
                    event = item.event
                    if event is not None:
                        kind = event.type
                        if kind == "run-finish":
                            sink.run_finished(cast("RunFinishEvent", event))
                            self.stream_ended()
                        elif kind == "run-start":
                            sink.run_started(conversation, event.run_id)
                    observe(item)  # (the n8n panel takes nothing from a delta)
                stats.events += batch.count
                now = clock()
                if stats.first_event_at is None:
                    stats.first_event_at = now
                if now >= slice_end:
                    await yield_after_timers()
                    slice_end = clock() + INGEST_SLICE
                    if self.opened.conversation is not conversation:
                        return
                self.ingest_waiting = True
                asked = clock()
        except ClientError as exc:
            if self.opened.conversation is conversation:
                self.sink.stream_failed(f"The event stream stopped: {exc}")
        finally:
            self.ingest_waiting = False
            self.queued = 0
            try:
                await aclose(stream)
            except (RuntimeError, ClientError):
                pass

    # ------------------------------------------------------------------ the frame
    def stream_ended(self) -> None:
        """A run of the open thread finished: draw its end now, not at the next tick (up to
        1 / FRAME_HZ later, or later still when the pacer holds the frames back)."""
        self.wake()
        if not self.end_frame_pending:
            self.end_frame_pending = True
            self.ui.call_later(self._end_frame)

    async def _end_frame(self) -> None:
        self.end_frame_pending = False
        # only when the stream has nothing more right now: during a flood (a replayed log)
        # the frames stay paced by the timer and the flood rule (a run that ends mid-flood
        # is drawn with the rest, when the flood ends)
        if self.ingest_waiting and not self.catching_up:
            await self.frame()

    async def frame(self) -> None:
        """Project what changed in the model onto the widgets, in one batched update."""
        if self.in_frame:
            return  # another frame is being projected (the timer's, or the end-of-stream one)
        self.in_frame = True
        try:
            await self._frame()
        finally:
            self.in_frame = False

    async def _frame(self) -> None:
        self.frame_no += 1
        self.stats.frames += 1
        conversation = self.opened.conversation
        view = self.view
        if conversation is None or not view.is_attached:
            return
        started = time.perf_counter()
        streaming = conversation.is_streaming
        ended, self.was_streaming = self.was_streaming and not streaming, streaming
        if streaming:
            self.heap.hold_full()  # (tui/heap.py; settled when the run ends and all is idle)
        self.pacer.floor = 1 / STREAM_FRAME_HZ if streaming else 0.0
        if not self.pacer.due(started) and not ended:
            return  # the last frame was expensive: the loop is the keys' for a while (but the
            # end of a stream is drawn at once)
        cpu_started = time.thread_time()
        if self.flooded():
            return
        changes = conversation.drain_changes()
        behind = view.behind
        if changes.empty and not behind:
            self.last_frame_empty = True
            if self._idle(streaming):
                self.idle_frames += 1
                if self.idle_frames >= IDLE_AFTER_FRAMES:
                    self._rest()
            else:
                self.idle_frames = 0
            self.sink.focus_new_cards()
            if self.frame_no % 3 == 0:
                view.ticks()
                self.sink.run_state()
                self._refresh_status(started)
            return
        self.last_frame_empty = False
        self.idle_frames = 0
        from .widgets.turns import Frame

        sink = self.sink
        frame = Frame(self.opened.pending)
        with self.ui.batch_update():
            if changes.confirmations or changes.reset:
                sink.cards_changed(conversation, frame)
            grew = view.apply(changes, frame)
            grew = view.catch_up(frame) or grew
            if changes.tasks or changes.reset:
                sink.tasks_changed(conversation)
            if changes.title and conversation.title:
                sink.title_changed(conversation)
            if changes.messages:
                sink.messages_changed(conversation, changes)
            if changes.streaming:
                sink.streaming_changed(conversation)
            sink.changed(conversation, changes)
            sink.run_state()
            self._refresh_status(started)
            if grew and not view.following:
                sink.new_output()
        await frame.run()
        sink.focus_new_cards()
        seconds = time.perf_counter() - started
        self.stats.record_frame(seconds)
        self.pacer.record(started, seconds)
        # While an answer streams, Textual's layout and paint of what the frame changed is the
        # frame's cost too (a growing answer scrolls the view: every visible line is drawn
        # again, 40 % of a streamed list's CPU). Counted in the event loop thread's CPU time
        # until the screen has refreshed, so waiting for the refresh is not, and the keys and
        # events handled meanwhile are. (Catching up after a flood or on opening a thread is
        # paced by the frames' own work: it ends sooner.)
        if streaming:
            self.ui.call_after_refresh(self._painted, started, cpu_started)

    def _refresh_status(self, now: float) -> None:
        """The status line shows the run's state; its spinner turns every ``SPINNER_INTERVAL``."""
        tick = now - self.spun_at >= SPINNER_INTERVAL
        if tick:
            self.spun_at = now
        self.status_line.refresh_info(tick=tick)

    def _painted(self, started: float, cpu_started: float) -> None:
        self.pacer.record(started, time.thread_time() - cpu_started)

    def flooded(self) -> bool:
        """During a flood of events (a replayed log, a burst after a reconnect) skip the
        projection: the model keeps every change and one later frame projects the end
        state, so no widget is mounted only to be pruned a moment later and the event loop
        stays with the ingest.

        A flood is told by what is queued at the tick, never by the rate events arrive at (a
        busy machine reads slower: a rate would stop seeing the flood there and make it pay a
        frame per few events, the cliff of issue 44): the source said at least ``FLOOD_QUEUED``
        events were still waiting behind the last batch (``Batch.queued``: rows of the log after a
        page, frames on the connection), or the ingest has batches in hand (it yielded to the loop
        between two, ``FLOOD_QUEUED`` events or more since the last frame). Live agent output is
        read as it comes: nothing waits behind it."""
        backlog = self.stats.events - self.events_at_frame
        self.events_at_frame = self.stats.events
        flooding = self.queued >= FLOOD_QUEUED or (not self.ingest_idle and backlog >= FLOOD_QUEUED)
        if flooding:
            if not self.catching_up and gc.isenabled():
                # a flood allocates fast: hold the cyclic collector (reference counting
                # still frees nearly everything) instead of letting it stall every few frames
                gc.disable()
                self.gc_held = True
            self.catching_up = True
            self.status_line.info.message = f"catching up… {self.stats.events:,} events"
            self.status_line.refresh_info(tick=True)
        elif self.catching_up:
            self.catching_up = False
            self.status_line.info.message = ""
            self.release_gc()
            # what the flood built is the thread's model: keep it out of full collections
            self.heap.settle()
        return flooding

    def release_gc(self) -> None:
        if self.gc_held:
            self.gc_held = False
            gc.enable()

    # ------------------------------------------------------------------ caught up?
    @property
    def ingest_idle(self) -> bool:
        """The ingest worker is waiting for the stream's next item (or none runs)."""
        task = self.ingest_task
        return task is None or task.done() or self.ingest_waiting

    @property
    def rendered(self) -> bool:
        """The last frame projected nothing new and every Markdown block has parsed its text."""
        return (
            self.last_frame_empty and not self.catching_up and not self.opened.opening and self.view.settled
        )

    async def wait_until_rendered(self, timeout: float = 30.0, *, events: int | None = None) -> float:
        """Wait until rendering caught up (and, with ``events``, that many were ingested).

        Returns the seconds waited. Raises ``TimeoutError``.
        """
        started = time.perf_counter()
        deadline = started + timeout
        while True:
            enough = events is None or self.stats.events >= events
            if enough and self.ingest_idle and self.rendered and not self.model_dirty():
                return time.perf_counter() - started
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"rendering did not catch up in {timeout} s (events={self.stats.events}, "
                    f"frame empty={self.last_frame_empty})"
                )
            await asyncio.sleep(1 / FRAME_HZ / 2)

    def model_dirty(self) -> bool:
        conversation = self.opened.conversation
        return conversation is not None and conversation.has_changes
