"""Errors the runtime raises to its caller (run failures come back on results, not as errors)."""

from __future__ import annotations


class RuntimeApiError(Exception):
    """Base class of caller errors (bad resume requests and the like)."""


class CheckpointNotFound(RuntimeApiError):
    """No checkpoint for this run id (never suspended, already finished, or expired)."""


class RunNotSuspended(RuntimeApiError):
    """The run exists but is not waiting (e.g. another resume is already running it)."""


class ResumeConflict(RunNotSuspended):
    """Another resume claimed the checkpoint first."""


class UnknownToolCall(RuntimeApiError):
    """The run has no suspended tool call with this id."""


class InvalidResumeData(RuntimeApiError):
    """The resume data does not match the tool's resume schema."""
