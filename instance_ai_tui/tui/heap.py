"""The cyclic garbage collector, tuned for an interactive app.

Python's full (generation 2) collection walks every tracked object. After start-up the app
holds some 160,000 of them (Textual, Rich, pydantic, httpx, openai, our modules), none of which
will ever be garbage, while a streaming answer turns out cyclic garbage all the time (each
drawn ``Strip`` holds caches that refer back to it). Measured with ``benchmarks/tui_realistic.py``
(a 60-row table at 150 tokens/s): a full collection every half second, 80-120 ms each, and
those were the longest stalls of the event loop, the keys typed meanwhile waiting behind them.

``HeapPolicy.settle`` moves what is alive into the permanent generation (``gc.freeze``), so
later full collections walk only what was made since: 20-30 ms in the same run. It runs when a
thread has opened (the app booted), when a flood of events has been folded, and when a run has
finished and the screen is idle; there it first collects the young generations (cheap) so
the run's short-lived cycles are not kept. It never runs a full collection itself: that walks
the whole heap (0.5 s with the 100,000 events of ``benchmarks/tui_ingest.py`` in memory), the
very pause this avoids. Cycles that were already old when frozen stay until ``release``:
objects frozen while a thread was open become garbage when another thread opens, so
``release`` hands everything back to the collector then (``gc.unfreeze``), and the next
``settle`` freezes what is still alive.

Even so, full collections while an answer streams were the longest stalls left: the open
thread's model, widgets and Textual's caches grow with every answer and are frozen only once the
app is idle, so each full collection walked them again. Measured with the whole matrix of
``benchmarks/tui_realistic.py`` (12 answers in one thread, 3 minutes): 125 full collections,
105 of them over 20 ms, up to 166 ms, 7.6 s in all; the screen's paint, the keys and the end of
an answer waited behind them. While an answer streams (``hold_full``) a full collection is due
only after ``HOLD_GENERATION_2`` young (generation 1) collections instead of Python's 10 (the
matrix below made 91 in its 3 minutes): the young generations still free the stream's short-lived
cycles.
When the run has finished and the app is idle, ``settle`` runs the deferred full collection
(it walks only what is not frozen) before it freezes, and gives the collector its thresholds
back.

A young collection runs every ``YOUNG_OBJECTS`` allocations instead of every 700: one paint of a
scrolled screen allocates some 13,000 objects (each ``Strip`` makes seven small caches), so at
700 the strips a widget kept since the last paint were promoted to the old generation two young
collections later and, dropped at the next paint, became old garbage that only a full
collection frees (100,000-250,000 objects each time, 100-500 ms to free). At 10,000 they die
young: in the same matrix no full collection was due at all (one 11 ms ``settle``), young
collections took at most 6 ms (generation 0) and 25 ms (generation 1), the collector's time fell
from 7.6 s to 2.0 s and the slowest key echo from 121 ms to 26 ms.

Only the real app tunes the collector (``InstanceAiApp(tune_gc=True)``, as the CLI starts it):
an app built by a test leaves the process's collector as it found it.
"""

from __future__ import annotations

import gc

#: while an answer streams, a full collection is due after this many generation-1 collections
#: (Python's default threshold is 10)
HOLD_GENERATION_2 = 100
#: allocations between two young collections (Python's default is 700)
YOUNG_OBJECTS = 10_000


class HeapPolicy:
    """When to collect and freeze (see the module docstring)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        #: how many times ``settle`` froze the heap
        self.settles = 0
        #: ``settle`` froze objects of the open thread that ``release`` has not handed back
        #: (kept here: ``gc.get_freeze_count()`` walks the whole permanent generation, 55 ms
        #: for the 700,000 objects of ``benchmarks/tui_ingest.py``)
        self.holding = False
        #: the collector's thresholds while ``hold_full`` defers full collections
        self.held_thresholds: tuple[int, int, int] | None = None
        #: full collections ``settle`` ran (deferred while an answer streamed)
        self.full_collections = 0
        #: the process's thresholds before the app tuned them (``restore``)
        self.original_thresholds = gc.get_threshold()
        if enabled:
            _first, second, third = self.original_thresholds
            gc.set_threshold(YOUNG_OBJECTS, second, third)

    def hold_full(self) -> None:
        """An answer streams: defer full collections (see the module docstring)."""
        if not self.enabled or self.held_thresholds is not None:
            return
        self.held_thresholds = gc.get_threshold()
        first, second, _third = self.held_thresholds
        gc.set_threshold(first, second, HOLD_GENERATION_2)

    def settle(self, *, collect_young: bool = False) -> None:
        """Freeze what is alive (``collect_young``: after collecting generations 0 and 1, or
        all of them when full collections were deferred), so full collections walk only what
        is made after this."""
        if not self.enabled or not gc.isenabled():
            return  # (a flood holds the collector: Projection.flooded)
        if collect_young and self.held_thresholds is not None:
            gc.collect()  # the full collection deferred while the answer streamed
            self.full_collections += 1
            gc.set_threshold(*self.held_thresholds)
            self.held_thresholds = None
        elif collect_young:
            gc.collect(1)
        gc.freeze()
        self.holding = True
        self.settles += 1

    def release(self) -> None:
        """What was frozen may become garbage now (the open thread's widgets and model are
        dropped): give it back to the collector. What the app froze at start (before any
        thread opened) stays frozen until then: no thread's objects are among it."""
        if self.enabled and self.holding:
            self.holding = False
            gc.unfreeze()

    def restore(self) -> None:
        """The app stops: the process's thresholds again."""
        self.held_thresholds = None
        if self.enabled:
            gc.set_threshold(*self.original_thresholds)
