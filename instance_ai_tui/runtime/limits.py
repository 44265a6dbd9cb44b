"""Limits on what a model may send (issue 31): per text delta, per tool call's arguments, per answer
(characters and seconds) and per run (characters and seconds).

``ModelLimits`` travels with the model adapter (``OpenAIModel.limits``, from ``config.ModelSettings.limits``);
the agent loop (``agent.Agent._call_model``) checks every chunk against them with a ``LimitCheck``
*before* the chunk is emitted, so nothing over a limit is ever stored. The OpenAI adapter also bounds
the bytes it reads: one stream line longer than ``line_bytes`` (a 50 MB chunk) is refused before it is
decoded, so memory stays bounded whatever the server sends. Past a limit the run ends with
``ModelLimitExceeded``, whose message names the server, what it sent and the setting to change.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ModelLimitExceeded

#: JSON escaping makes a character at most 6 bytes on the wire (``\\uXXXX``)
WIRE_BYTES_PER_CHAR = 6


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """The limits (``model.limits`` in the config file; 0 or less turns one off)."""

    max_delta_chars: int = 100_000
    max_tool_args_chars: int = 1_000_000
    max_answer_chars: int = 2_000_000
    max_answer_seconds: float = 600.0
    max_run_chars: int = 8_000_000
    max_run_seconds: float = 3600.0

    @property
    def line_bytes(self) -> int:
        """The longest stream line read: the largest single chunk a limit lets through, JSON-escaped
        (0: no limit, when either of the two is off)."""
        if self.max_delta_chars <= 0 or self.max_tool_args_chars <= 0:
            return 0
        return max(self.max_delta_chars, self.max_tool_args_chars) * WIRE_BYTES_PER_CHAR + 65_536

    @property
    def answer_bytes(self) -> int:
        """The most bytes one answer may take on the wire, junk and pings included (0: no limit)."""
        if self.max_answer_chars <= 0:
            return 0
        return self.max_answer_chars * WIRE_BYTES_PER_CHAR * 2 + 1_048_576

    @classmethod
    def from_settings(cls, settings: object) -> ModelLimits:
        """From ``config.LimitSettings`` (or anything with the same attributes)."""
        fields = {name: getattr(settings, name) for name in cls.__dataclass_fields__ if hasattr(settings, name)}
        return cls(**fields)


DEFAULT_LIMITS = ModelLimits()


def exceeded(where: str, what: str, size: str, setting: str, limit: float, unit: str = "characters") -> ModelLimitExceeded:
    """The error for one limit: names the sender, what it sent, the limit and the setting."""
    shown = f"{limit:,.0f}" if unit != "seconds" else f"{limit:g}"
    return ModelLimitExceeded(
        f"{where} sent {what} {size}, over the limit of {shown} {unit}: the run was stopped and nothing past "
        f"the limit was kept (raise model.limits.{setting} in the config file if this was expected)",
        limit=setting,
    )


class LimitCheck:
    """Counts one run's model output against ``ModelLimits`` (``answer()`` at each model call)."""

    def __init__(self, limits: ModelLimits, where: str, clock: Callable[[], float] | None = None) -> None:
        self.limits = limits
        self.where = where
        self._clock = clock or time.monotonic
        self.run_started = self._clock()
        self.run_chars = 0
        self.answer_started = self.run_started
        self.answer_chars = 0
        self._args: dict[int, int] = {}

    def answer(self) -> None:
        """A new model call starts."""
        self.answer_started = self._clock()
        self.answer_chars = 0
        self._args = {}

    def _time(self) -> None:
        limits, now = self.limits, self._clock()
        if limits.max_answer_seconds > 0 and now - self.answer_started > limits.max_answer_seconds:
            raise exceeded(self.where, "an answer", f"for more than {limits.max_answer_seconds:g} s",
                           "max_answer_seconds", limits.max_answer_seconds, "seconds")
        if limits.max_run_seconds > 0 and now - self.run_started > limits.max_run_seconds:
            raise exceeded(self.where, "answers", f"for more than {limits.max_run_seconds:g} s in one run",
                           "max_run_seconds", limits.max_run_seconds, "seconds")

    def _count(self, size: int) -> None:
        limits = self.limits
        self.answer_chars += size
        self.run_chars += size
        if limits.max_answer_chars > 0 and self.answer_chars > limits.max_answer_chars:
            raise exceeded(self.where, "an answer", f"of more than {limits.max_answer_chars:,} characters",
                           "max_answer_chars", limits.max_answer_chars)
        if limits.max_run_chars > 0 and self.run_chars > limits.max_run_chars:
            raise exceeded(self.where, "answers", f"of more than {limits.max_run_chars:,} characters in one run",
                           "max_run_chars", limits.max_run_chars)

    def text(self, text: str) -> None:
        """A text or reasoning delta (before it is emitted)."""
        limits = self.limits
        if limits.max_delta_chars > 0 and len(text) > limits.max_delta_chars:
            raise exceeded(self.where, "one text delta", f"of {len(text):,} characters", "max_delta_chars",
                           limits.max_delta_chars)
        self._count(len(text))
        self._time()

    def tool_args(self, index: int, piece: str, name: str = "") -> None:
        """A piece of tool call ``index``'s arguments (before it is used)."""
        limits = self.limits
        total = self._args.get(index, 0) + len(piece)
        self._args[index] = total
        if limits.max_tool_args_chars > 0 and total > limits.max_tool_args_chars:
            call = f" for {name}" if name else ""
            raise exceeded(self.where, f"tool call arguments{call}", f"of more than {limits.max_tool_args_chars:,} "
                           "characters", "max_tool_args_chars", limits.max_tool_args_chars)
        self._count(len(piece))
        self._time()

    def tick(self) -> None:
        """Any other chunk: only the clocks."""
        self._time()
