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

Only the real app tunes the collector (``InstanceAiApp(tune_gc=True)``, as the CLI starts it):
an app built by a test leaves the process's collector as it found it.
"""

from __future__ import annotations

import gc
import time


class HeapPolicy:
    """When to collect and freeze (see the module docstring)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        #: how many times ``settle`` froze the heap, and how long the last one took (seconds)
        self.settles = 0
        self.last_settle_s = 0.0
        #: ``settle`` froze objects of the open thread that ``release`` has not handed back
        #: (kept here: ``gc.get_freeze_count()`` walks the whole permanent generation, 55 ms
        #: for the 700,000 objects of ``benchmarks/tui_ingest.py``)
        self.holding = False

    def settle(self, *, collect_young: bool = False) -> None:
        """Freeze what is alive (``collect_young``: after collecting generations 0 and 1), so
        full collections walk only what is made after this."""
        if not self.enabled or not gc.isenabled():
            return  # (a flood holds the collector: Projection.flooded)
        started = time.perf_counter()
        if collect_young:
            gc.collect(1)
        gc.freeze()
        self.holding = True
        self.settles += 1
        self.last_settle_s = time.perf_counter() - started

    def release(self) -> None:
        """What was frozen may become garbage now (the open thread's widgets and model are
        dropped): give it back to the collector. What the app froze at start (before any
        thread opened) stays frozen until then: no thread's objects are among it."""
        if self.enabled and self.holding:
            self.holding = False
            gc.unfreeze()
