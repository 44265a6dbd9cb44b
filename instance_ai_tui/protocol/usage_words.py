"""The usage line of a run or thread (``1,234 tokens in · 567 out · $0.0123``), from its wire form.

Standard library only: ``instance-ai run --url``'s lean path (``cli.run_lean``) says it without
importing the protocol's models; the transcript (``protocol.transcript``) says it too."""

from __future__ import annotations

from typing import Any


def usage_line(usage: dict[str, Any] | None) -> str:
    """``1,234 tokens in · 567 out · $0.0123 (3 runs)``, or "" when nothing was counted."""
    if not isinstance(usage, dict):
        return ""
    tokens_in, tokens_out = usage.get("inputTokens"), usage.get("outputTokens")
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int) or not (tokens_in or tokens_out):
        return ""
    line = f"{tokens_in:,} tokens in · {tokens_out:,} out"
    cost = usage.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        line += f" · ${cost:.4f}"
    runs = usage.get("runs")
    if isinstance(runs, int) and runs > 0:
        line += f" ({runs} run{'s' if runs != 1 else ''})"
    return line
