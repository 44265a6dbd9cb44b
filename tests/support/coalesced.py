"""Comparing a run read live with the same run read back after it finished.

A finished run is stored as n8n stores it (``store.coalesce``): each answer segment's deltas become
one ``text-block`` / ``reasoning-block`` at the id of the segment's last delta. So a replay has the
same frames except the text ones, ids that only grow (with gaps), and folds to the same tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from instance_ai_tui.protocol.reducer import build_agent_tree_wire

TEXT_KINDS = frozenset({"text-delta", "reasoning-delta", "text-block", "reasoning-block"})

Frames = Sequence[tuple[int | None, dict[str, Any]]]


def assert_same_run(live: Frames, replay: Frames) -> None:
    """``replay`` is ``live`` as stored after the run finished."""

    def durable(frames: Frames) -> list[tuple[int | None, dict[str, Any]]]:
        return [(i, e) for i, e in frames if e.get("type") not in TEXT_KINDS]

    assert durable(replay) == durable(live)
    assert_increasing([i for i, _ in replay])
    assert build_agent_tree_wire(e for _, e in replay) == build_agent_tree_wire(e for _, e in live)


def assert_increasing(ids: Sequence[int | None]) -> None:
    """Every id once, in order (a resumed stream may skip the ids of coalesced deltas)."""
    known = [i for i in ids if i is not None]
    assert known == sorted(set(known)), known
