"""Tokens and cost of runs and threads, as the protocol carries them.

A run's usage covers every model call it made: the orchestrator's, every sub-agent's (rolled up
by the runtime through ``ToolContext.report_usage``; a sub-agent resumed after an approval
reports its cumulative total, which replaces its earlier report) and the thread title's. It
goes out on ``run-finish`` as ``payload.usage``::

    {"inputTokens": 1200, "outputTokens": 340, "totalTokens": 1540, "cachedInputTokens": 0,
     "reasoningTokens": 12, "requests": 3, "cost": 0.0021}

``cost`` (USD) is there only when the model's price is known (``runtime.usage.PriceTable``,
extended from the config file). The offline demo model reports estimated token counts, about
four characters of the actual text per token (``runtime.scripted.estimate_tokens``), and no cost.

The thread's total lives in the thread's metadata under ``usage`` (the same fields, plus
``runs`` — how many runs are counted — and ``lastRunId``), so it survives restarts and every
client sees it in the thread list and the messages endpoint. A client that reads the total and
then sees a ``run-finish`` of ``lastRunId`` must not add that run again.
"""

from __future__ import annotations

from typing import Any

from ..runtime.usage import Usage
from ..store.base import ThreadStore

USAGE_KEY = "usage"

_FIELDS = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("totalTokens", "total_tokens"),
    ("cachedInputTokens", "cached_input_tokens"),
    ("reasoningTokens", "reasoning_tokens"),
    ("requests", "requests"),
)


def usage_to_wire(usage: Usage) -> dict[str, Any]:
    """The camelCase form of ``usage`` (``cost`` only when known)."""
    data: dict[str, Any] = {wire: int(getattr(usage, attr)) for wire, attr in _FIELDS}
    if usage.cost is not None:
        data["cost"] = usage.cost
    return data


def usage_from_wire(data: Any) -> Usage:
    """``Usage`` from its wire form; anything malformed counts as zero."""
    if not isinstance(data, dict):
        return Usage()
    values: dict[str, Any] = {}
    for wire, attr in _FIELDS:
        value = data.get(wire)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            values[attr] = int(value)
    cost = data.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        values["cost"] = float(cost)
    return Usage(**values)


async def add_run_to_thread(store: ThreadStore, thread_id: str, run_id: str, usage: Usage,
                            context_tokens: int = 0, context_window: int = 0) -> dict[str, Any] | None:
    """Add a finished run's usage to the thread's ``metadata.usage``; returns the new total.

    Idempotent for the last run counted (``lastRunId``): finishing a run again after a crash
    between this update and ``run-finish`` does not count it twice. Runs of one thread never
    overlap (the run manager holds the thread), so read-modify-write is safe here."""
    if usage.is_empty and context_tokens <= 0:
        return None
    thread = await store.get_thread(thread_id)
    if thread is None:
        return None
    metadata = dict(thread.metadata or {})
    stored = metadata.get(USAGE_KEY)
    current: dict[str, Any] = stored if isinstance(stored, dict) else {}
    if current.get("lastRunId") == run_id:
        return current
    total = usage_from_wire(current) + usage
    runs = current.get("runs")
    wire = usage_to_wire(total)
    wire["runs"] = (runs if isinstance(runs, int) and runs > 0 else 0) + 1
    wire["lastRunId"] = run_id
    if context_tokens > 0:  # how full the model's context was at the last run's last request
        wire["contextTokens"] = int(context_tokens)
        if context_window > 0:
            wire["contextWindow"] = int(context_window)
    metadata[USAGE_KEY] = wire
    await store.update_thread(thread_id, metadata=metadata)
    return wire
