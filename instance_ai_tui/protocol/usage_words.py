"""The usage line of a run or thread (``1,234 tokens in · 567 out · $0.0123``), from its wire form, and
``format_tokens``: the one short form of a token count (``8.2k``) that the status line, the compaction row,
the model picker and the runtime's context errors all use, so one window reads the same everywhere.

Standard library only: ``instance-ai run --url``'s lean path (``cli.run_lean``) says it without
importing the protocol's models; the transcript (``protocol.transcript``) says it too."""

from __future__ import annotations

from typing import Any


def format_tokens(count: int) -> str:
    """A token count, short: ``999``, ``1.5k``, ``8.2k`` (8,192), ``8k`` (8,000), ``25k``, ``128k``,
    ``3.2M``, ``1M``: two digits from a thousand up, a trailing ``.0`` dropped."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}".removesuffix(".0") + "M"
    if count >= 10_000:
        return f"{count // 1000}k"
    if count >= 1000:
        return f"{count / 1000:.1f}".removesuffix(".0") + "k"
    return str(count)


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
