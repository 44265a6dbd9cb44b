"""The collector policy: what ``release`` hands back, and what it leaves frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from instance_ai_tui.tui.heap import HeapPolicy


@pytest.fixture
def collector() -> Iterator[None]:
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()  # leave the process's collector as we found it


def test_objects_frozen_at_start_stay_frozen_when_the_first_thread_opens(collector: None) -> None:
    keep = [[i] for i in range(1000)]
    gc.freeze()  # as the app does once its first frame is composed
    assert gc.get_freeze_count() >= len(keep)
    heap = HeapPolicy(enabled=True)
    heap.release()  # the first thread opens: nothing of a thread was frozen
    # still frozen (objects freed meanwhile leave the count, so it is not compared exactly)
    assert gc.get_freeze_count() >= len(keep)


def test_a_settled_thread_is_handed_back_when_another_opens(collector: None) -> None:
    heap = HeapPolicy(enabled=True)
    heap.settle()
    assert heap.holding and gc.get_freeze_count() > 0 and heap.settles == 1
    heap.release()
    assert not heap.holding and gc.get_freeze_count() == 0
    heap.release()  # nothing held: nothing to do
    assert gc.get_freeze_count() == 0


def test_a_policy_that_is_off_never_touches_the_collector(collector: None) -> None:
    heap = HeapPolicy(enabled=False)
    heap.settle()
    assert gc.get_freeze_count() == 0 and not heap.holding
    gc.freeze()
    heap.release()
    assert gc.get_freeze_count() > 0
