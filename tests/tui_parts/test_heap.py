"""The collector policy: what ``release`` hands back, and what it leaves frozen."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from instance_ai_tui.tui.heap import HOLD_GENERATION_2, YOUNG_OBJECTS, HeapPolicy


@pytest.fixture
def collector() -> Iterator[None]:
    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()  # leave the process's collector as we found it
        gc.set_threshold(*thresholds)


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def _old_garbage() -> weakref.ref[_Node]:
    """A cycle that lives through a full collection (now in the oldest generation), then is dropped."""
    node = _Node()
    gc.collect()
    ref = weakref.ref(node)
    del node
    return ref


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


def test_the_tuned_collector_collects_young_objects_less_often_and_is_restored(collector: None) -> None:
    gc.set_threshold(700, 10, 10)
    heap = HeapPolicy(enabled=True)
    assert gc.get_threshold() == (YOUNG_OBJECTS, 10, 10)
    heap.restore()
    assert gc.get_threshold() == (700, 10, 10)


def test_full_collections_wait_while_an_answer_streams_and_run_when_it_settles(collector: None) -> None:
    gc.set_threshold(700, 10, 10)
    heap = HeapPolicy(enabled=True)
    heap.hold_full()
    assert gc.get_threshold() == (YOUNG_OBJECTS, 10, HOLD_GENERATION_2)
    heap.hold_full()  # (every streamed frame says so: the first one counts)
    assert heap.held_thresholds == (YOUNG_OBJECTS, 10, 10)
    garbage = _old_garbage()
    assert garbage() is not None
    heap.settle(collect_young=True)  # the run ended, the app is idle: the deferred full collection
    assert garbage() is None and heap.full_collections == 1
    assert gc.get_threshold() == (YOUNG_OBJECTS, 10, 10) and heap.held_thresholds is None
    heap.restore()
    assert gc.get_threshold() == (700, 10, 10)


def test_without_a_held_collection_settle_collects_only_the_young(collector: None) -> None:
    heap = HeapPolicy(enabled=True)
    garbage = _old_garbage()
    heap.settle(collect_young=True)
    assert garbage() is not None and heap.full_collections == 0  # (the next full collection's)
    heap.release()
    gc.collect()
    assert garbage() is None


def test_a_policy_that_is_off_never_holds_the_collector(collector: None) -> None:
    thresholds = gc.get_threshold()
    heap = HeapPolicy(enabled=False)
    heap.hold_full()
    heap.settle(collect_young=True)
    heap.restore()
    assert gc.get_threshold() == thresholds and heap.held_thresholds is None
