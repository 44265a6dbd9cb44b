"""What a fold changed since the last look (``RunReducer.drain_changes``), so a screen projects only that."""

from __future__ import annotations

from dataclasses import dataclass, field

# --------------------------------------------------------------------------- change tracking


@dataclass(slots=True)
class SegmentChange:
    """New text in an existing timeline segment since the last ``drain_changes``.

    ``text`` is what was appended, or the whole new content when ``replaced`` (a
    ``text-block``/``reasoning-block`` replaced streamed text); ``length`` is the length of the
    whole content after it, so a screen can append ``text`` without comparing the whole text and
    still tell a widget that already has it (built from the reducer after the drain).
    """

    agent_id: str
    index: int
    kind: str
    text: str
    replaced: bool = False
    length: int = -1


@dataclass(slots=True)
class ReducerChanges:
    """What changed since the last ``drain_changes``.

    ``reset``: the whole tree is new (first ``run-start``, ``from_tree``); redraw from
    ``tree()`` and ignore the other fields. ``agents``: agents whose own fields,
    children or timeline changed. ``timeline_appends``: agent id -> index of its first
    new timeline entry (new entries are reported only here, with their full content).
    ``tool_calls``: calls whose state changed. ``segments``: appended/replaced text of
    entries that already existed at the previous drain.
    """

    reset: bool = False
    run_status: bool = False
    agents: list[str] = field(default_factory=list)
    timeline_appends: dict[str, int] = field(default_factory=dict)
    tool_calls: list[str] = field(default_factory=list)
    segments: list[SegmentChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.reset or self.run_status or self.agents or self.timeline_appends or self.tool_calls or self.segments
        )


