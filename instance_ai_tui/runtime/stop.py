"""When a run cannot finish: the step limit, or the same failing tool call again and again."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .state import PendingToolCall

if TYPE_CHECKING:
    from .run import Run


REPEATED_FAILURES = 3


class RunStopped(Exception):
    """A run that cannot finish: the step limit, or the same failing tool call three times."""

    def __init__(self, steps: int, last_error: str | None, *, repeated: bool = False) -> None:
        why = f"the last error was {_short(last_error)}" if last_error else "no answer within the step limit"
        if repeated:
            why = f"the same tool call failed {REPEATED_FAILURES} times; {why}"
        super().__init__(f"stopped after {steps} steps: {why}")
        self.steps = steps
        self.last_error = last_error


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_signature(pending: PendingToolCall | None) -> str | None:
    if pending is None:
        return None
    try:
        return pending.tool_name + json.dumps(pending.args, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return pending.tool_name + repr(pending.args)


def note_failures(run: Run, calls: dict[str, str | None]) -> None:
    """Remember the batch's failures: the last error and how often the same call failed in a row."""
    for call_id, signature in calls.items():
        settled = run.settled.get(call_id)
        if settled is None or settled.skipped:
            continue
        if not settled.is_error:
            run.last_failure, run.repeats = None, 0
            continue
        run.last_error = settled.error or settled.model_output or "the tool failed"
        if signature is not None and signature == run.last_failure:
            run.repeats += 1
        else:
            run.last_failure, run.repeats = signature, 1


