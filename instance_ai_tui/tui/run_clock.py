"""The clock on waiting (issue 39.5): the status line says how long the running step has taken.

A stream silent for a minute showed only ``⠦ running``: a person could not tell a slow model from a
frozen screen. ``RunClock`` gives the status line's run state its words while a run streams:

- ``running 12 s · ~340 tokens``: the time since the run's step began (the run's start, or the end
  of its last tool call) and the output of the run so far, estimated at four characters a token
  (``~``: the model's own count comes with the run's usage, at its end);
- ``running search-files 8 s``: a tool call is running (its time since it started);
- ``waiting for the model 20 s``: nothing arrived for ``WAIT_AFTER`` seconds and no tool runs;
- ``retrying in 4 s (2/3): HTTP 429 …``: the model call failed and is tried again (the root agent's
  status, ``runtime.chunks.RetryChunk``), until the answer's first words clear it;
- ``compacting 12 older messages into notes 40 s``: the thread is being compacted (issue 47: the
  observer's model call, ``runtime.chunks.CompactingChunk``), until the compacted row;
- ``waiting for the storage 12 s: the database is locked by another program (PID 4242)``: the
  run's progress is held because the storage refuses it for now (``Client.storage_wait``: another
  program holds the SQLite file's lock), not the model (issue 39.1).

It reads the open conversation (``protocol.conversation``) when the status line refreshes: no
hook on the event path. Activity is the conversation's cursor (the last event id folded) moving,
or the run's text growing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..protocol.usage_words import format_tokens

#: seconds without anything new before the words say the model is being waited for
WAIT_AFTER = 5.0
#: characters per token, for the estimate shown while the run streams
CHARS_PER_TOKEN = 4
#: seconds between two counts of the run's text (it is joined from its pieces)
COUNT_EVERY = 0.5
#: how the words begin while nothing arrives (the status line says the server instead while the connection is down)
MODEL_WAIT = "waiting for the model"
#: how the words begin while the run's progress waits for the storage (the status line adds them to "cancelling")
STORAGE_WAIT = "waiting for the storage"
#: how a retry's status begins (``runtime.chunks.RetryChunk.words``): shown in the run state's place
RETRYING = "retrying in "
#: how compaction's status begins (``runtime.chunks.CompactingChunk.words``): said with its clock
COMPACTING = "compacting "


class RunClock:
    """Words for the status line's run state (``__call__``: "" when no run streams)."""

    def __init__(self, conversation: Callable[[], Any], storage_wait: Callable[[], str] = lambda: "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._conversation = conversation
        self._clock = clock
        self._storage_wait = storage_wait
        self._run: object = None
        self._step_started = 0.0
        self._last_activity = 0.0
        self._cursor = -1
        self._chars = 0
        self._counted_at = 0.0
        self._tools: dict[str, float] = {}

    def __call__(self) -> str:
        conversation = self._conversation()
        message = _streaming_message(conversation)
        if message is None:
            self._run = None
            return ""
        now = self._clock()
        run = message.run_id or message.id
        if run != self._run:
            self._run, self._step_started, self._last_activity = run, now, now
            self._cursor, self._chars, self._counted_at, self._tools = conversation.cursor, 0, 0.0, {}
        if conversation.cursor != self._cursor:
            self._cursor, self._last_activity = conversation.cursor, now
        if now - self._counted_at >= COUNT_EVERY and message.reducer is not None:
            self._counted_at = now
            chars = len(message.reducer.text()) + len(message.reducer.reasoning())
            if chars != self._chars:
                self._chars, self._last_activity = chars, now
        if message.reducer is not None:
            fields = message.reducer.agent_fields(message.reducer.root_id) or {}
            said = fields.get("statusMessage")
            if isinstance(said, str) and said.startswith(RETRYING):  # the model call is tried again: say so
                return said
            if isinstance(said, str) and said.startswith(COMPACTING):  # the observer's model call, counted
                return f"{said} {now - self._last_activity:.0f} s"
        running = self._running_tools(message, now)
        if running:
            name, since = running
            return f"running {name} {now - since:.0f} s"
        if now - self._last_activity >= WAIT_AFTER:
            held = self._storage_wait()
            if held:  # the model may be done: its words wait for the storage
                return f"{STORAGE_WAIT} {now - self._last_activity:.0f} s: {held}"
            return f"{MODEL_WAIT} {now - self._last_activity:.0f} s"
        tokens = self._chars // CHARS_PER_TOKEN
        spent = f" · ~{format_tokens(tokens)} tokens" if tokens else ""
        return f"running {now - self._step_started:.0f} s{spent}"

    def _running_tools(self, message: Any, now: float) -> tuple[str, float] | None:
        """The longest-running tool call still loading (its name and since when), noting starts and ends."""
        reducer = message.reducer
        if reducer is None:
            return None
        loading: dict[str, str] = {}
        for call in reducer.calls():
            if getattr(call, "loading", False):
                loading[call.id] = call.name or "a tool"
        for call_id in [c for c in self._tools if c not in loading]:
            del self._tools[call_id]
            self._step_started = now  # a tool call ended: the model's next step begins
        for call_id in loading:
            self._tools.setdefault(call_id, now)
        if not loading:
            return None
        oldest = min(loading, key=lambda c: self._tools[c])
        return loading[oldest], self._tools[oldest]


def _streaming_message(conversation: Any) -> Any:
    if conversation is None or not getattr(conversation, "is_streaming", False):
        return None
    for message in reversed(conversation.messages):
        if message.role == "assistant" and message.is_streaming:
            return message
    return None
