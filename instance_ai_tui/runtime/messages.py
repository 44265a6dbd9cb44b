"""Messages of a run and the message list that classifies them.

``Message`` is the runtime's own message (stable ``id``, ``created_at`` in ms since the epoch,
role ``user`` | ``assistant`` | ``tool`` | ``system`` | ``custom``). Custom messages are UI-facing
and never reach the model. ``MessageList`` keeps one append-only list plus three id sets:

* history (loaded from memory) - sent to the model, not part of the turn delta,
* input (this turn's user input) - in ``turn_delta()``,
* response (assistant and tool messages) - in ``turn_delta()`` and ``response_delta()``.

Live (input/response) messages get a strictly increasing ``created_at``:
``max(hint, last + 1)``; history keeps its stored timestamp but advances the clock.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .model import content_text

Role = Literal["system", "user", "assistant", "tool", "custom"]


def new_id(prefix: str = "msg") -> str:
    # 128 random bits as 32 hex digits, as uuid4().hex gave, without building a UUID (3 ids a tool round trip)
    return f"{prefix}_{os.urandom(16).hex()}"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class ToolCallPart(BaseModel):
    """A tool call on an assistant message. ``arguments`` is the parsed object; ``raw_arguments``
    keeps the model's text when it was not valid JSON."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(default_factory=new_id)
    role: Role
    content: Any = ""  # str, or a list of OpenAI content parts for user messages
    created_at: int = 0  # ms since the epoch; 0 = not assigned yet
    # assistant
    reasoning: str | None = None
    tool_calls: list[ToolCallPart] | None = None
    response_id: str | None = None
    agent: str | None = None
    # tool
    tool_call_id: str | None = None
    tool_name: str | None = None
    result: Any = None  # the raw result (content is what the model saw)
    is_error: bool = False
    skipped: bool = False
    # custom
    data: dict[str, Any] | None = None
    #: the run that stored it (set when read from memory; never serialised: the store keeps it apart)
    run_id: str | None = Field(default=None, exclude=True)

    @classmethod
    def user(cls, text: Any, **kw: Any) -> Message:
        return cls(role="user", content=text, **kw)

    @classmethod
    def assistant(cls, text: str = "", **kw: Any) -> Message:
        return cls(role="assistant", content=text, **kw)

    @classmethod
    def tool(cls, tool_call_id: str, tool_name: str, content: str, **kw: Any) -> Message:
        return cls(role="tool", tool_call_id=tool_call_id, tool_name=tool_name, content=content, **kw)

    @property
    def text(self) -> str:
        return content_text(self.content)

    @property
    def created_at_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.created_at / 1000, tz=UTC)

    def to_openai(self, *, replay_reasoning: bool = False) -> dict[str, Any] | None:
        """This message in the OpenAI chat format (None for custom messages)."""
        if self.role == "custom":
            return None
        if self.role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": self.text}
            if self.tool_calls:
                # never send content null on a tool-call turn: llama.cpp and others reject it
                out["tool_calls"] = [
                    {
                        "id": tc.id,
                        "type": "function",
                        "function": {
                            "name": tc.name,
                            # parsed arguments only: strict servers parse this text, so a
                            # call whose JSON was broken is replayed as "{}" (its error result
                            # quotes what the model sent)
                            "arguments": json.dumps(tc.arguments, ensure_ascii=False),
                        },
                    }
                    for tc in self.tool_calls
                ]
                if replay_reasoning and self.reasoning:
                    out["reasoning_content"] = self.reasoning
            return out
        if self.role == "tool":
            return {"role": "tool", "tool_call_id": self.tool_call_id or "", "content": self.text}
        if self.role == "system":
            return {"role": "system", "content": self.text}
        return {"role": "user", "content": self.content if isinstance(self.content, list) else self.text}


def strip_orphaned_tool_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop tool calls that have no later result, and tool results without an earlier call
    (or a second result for the same call).

    An assistant message left with neither text nor calls is dropped. The input is not modified.
    """
    called: set[str] = set()
    answered: set[str] = set()
    clean = True
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            called.update(tc.id for tc in m.tool_calls)
        elif m.role == "tool":
            if m.tool_call_id in called and m.tool_call_id not in answered:
                answered.add(m.tool_call_id)
            else:
                clean = False
    if clean and len(answered) == len(called):
        return list(messages)
    out: list[Message] = []
    used: set[str] = set()
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            kept = [tc for tc in m.tool_calls if tc.id in answered]
            if len(kept) != len(m.tool_calls):
                if not kept and not m.text.strip():
                    continue
                m = m.model_copy(update={"tool_calls": kept or None})
            out.append(m)
        elif m.role == "tool":
            if m.tool_call_id in answered and m.tool_call_id not in used:
                used.add(m.tool_call_id)
                out.append(m)
        else:
            out.append(m)
    return out


#: epochs of ``MessageList.wire_epoch``, unique in the process
_EPOCHS = itertools.count()


class MessageList:
    """One turn's messages: history, input and response, with monotonic ``created_at``."""

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._index: dict[str, int] = {}
        self.history_ids: set[str] = set()
        self.input_ids: set[str] = set()
        self.response_ids: set[str] = set()
        self._last_created_at = 0
        # message id -> (message, replay_reasoning, wire dict); valid while the object is the same
        self._wire_cache: dict[str, tuple[Message, bool, dict[str, Any] | None]] = {}
        # incremental fast path of for_llm(): the wire dicts of every message, valid while the
        # list has no unanswered call, no stray result and no replaced message
        self._wire: list[dict[str, Any]] = []
        self._wire_replay = False
        self._open_calls: set[str] = set()
        self._answered: set[str] = set()
        self._dirty = False
        self._epoch = next(_EPOCHS)
        #: what the last ``for_llm`` answer was: ``(epoch, with a system message)`` when its messages
        #: after the system message are ``_wire`` as it was (an answer of the same epoch has the same
        #: dicts at the same places and maybe more at the end: ``Sizes.measure`` compares none of them),
        #: None when it was built anew; a new epoch each time ``_wire`` is replaced
        self.wire_epoch: tuple[int, bool] | None = None

    def _track(self, m: Message) -> None:
        if m.role == "assistant" and m.tool_calls:
            for tc in m.tool_calls:
                if tc.id in self._open_calls or tc.id in self._answered:
                    self._dirty = True
                self._open_calls.add(tc.id)
        elif m.role == "tool":
            if m.tool_call_id in self._open_calls:
                self._open_calls.discard(m.tool_call_id)
                self._answered.add(m.tool_call_id)
            else:
                self._dirty = True
        if not self._dirty:
            wire = self._to_wire(m, self._wire_replay)
            if wire is not None:
                self._wire.append(wire)

    def _to_wire(self, m: Message, replay: bool) -> dict[str, Any] | None:
        hit = self._wire_cache.get(m.id)
        if hit is not None and hit[0] is m and hit[1] == replay:
            return hit[2]
        wire = m.to_openai(replay_reasoning=replay)
        self._wire_cache[m.id] = (m, replay, wire)
        return wire

    # -- adding ----------------------------------------------------------------------------

    def _append(self, message: Message, live: bool) -> Message:
        if message.id in self._index:
            raise ValueError(f"message {message.id} is already in the list")
        if live:
            hint = message.created_at or now_ms()
            message.created_at = max(hint, self._last_created_at + 1)
        elif not message.created_at:
            message.created_at = self._last_created_at + 1
        self._last_created_at = max(self._last_created_at, message.created_at)
        self._index[message.id] = len(self._messages)
        self._messages.append(message)
        self._track(message)
        return message

    def add_history(self, messages: Iterable[Message]) -> None:
        for m in strip_orphaned_tool_messages(list(messages)):
            if m.id in self._index:
                continue
            self._append(m, live=False)
            self.history_ids.add(m.id)

    def add_input(self, messages: Iterable[Message]) -> list[Message]:
        out = []
        for m in messages:
            out.append(self._append(m, live=True))
            self.input_ids.add(m.id)
        return out

    def add_response(self, messages: Iterable[Message]) -> list[Message]:
        out = []
        for m in messages:
            out.append(self._append(m, live=True))
            self.response_ids.add(m.id)
        return out

    def replace(self, message: Message) -> None:
        """Replace a message in place (same id), keeping its position and ``created_at``."""
        i = self._index[message.id]
        message.created_at = self._messages[i].created_at
        self._messages[i] = message
        self._dirty = True

    def forget(self, ids: set[str]) -> None:
        """Take history messages out of the list (compaction: they stay stored, the model stops
        reading them). Messages of this turn are never forgotten."""
        ids = ids & self.history_ids
        if not ids:
            return
        keep = [m for m in self._messages if m.id not in ids]
        self.history_ids -= ids
        self._messages, self._index, self._wire, self._epoch = [], {}, [], next(_EPOCHS)
        self._open_calls, self._answered, self._dirty = set(), set(), False
        for m in keep:
            self._index[m.id] = len(self._messages)
            self._messages.append(m)
            self._track(m)

    def get(self, message_id: str) -> Message | None:
        i = self._index.get(message_id)
        return None if i is None else self._messages[i]

    # -- views -----------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def for_llm(
        self,
        instructions: str | None = None,
        system_blocks: Sequence[str] = (),
        *,
        replay_reasoning: bool = False,
    ) -> list[dict[str, Any]]:
        """The model's context: one system message (instructions + extra blocks such as working
        memory), then every non-custom message with orphaned tool calls stripped. The dicts are
        cached per message: treat them as read-only."""
        out: list[dict[str, Any]] = []
        system = "\n\n".join(part for part in [instructions or "", *system_blocks] if part)
        if system:
            out.append({"role": "system", "content": system})
        if not self._dirty and replay_reasoning != self._wire_replay:
            self._wire_replay = replay_reasoning
            self._wire = [w for w in (self._to_wire(m, replay_reasoning) for m in self._messages) if w is not None]
            self._epoch = next(_EPOCHS)
        if not self._dirty and not self._open_calls:
            out.extend(self._wire)
            self.wire_epoch = (self._epoch, bool(system))
            return out
        self.wire_epoch = None
        for m in strip_orphaned_tool_messages(self._messages):
            wire = self._to_wire(m, replay_reasoning)
            if wire is not None:
                out.append(wire)
        return out

    def turn_delta(self) -> list[Message]:
        return [m for m in self._messages if m.id in self.input_ids or m.id in self.response_ids]

    def response_delta(self) -> list[Message]:
        return [m for m in self._messages if m.id in self.response_ids]

    def input_delta(self) -> list[Message]:
        return [m for m in self._messages if m.id in self.input_ids]

    # -- serialisation ---------------------------------------------------------------------

    def serialize(self) -> dict[str, Any]:
        return {
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in self._messages],
            "historyIds": [m.id for m in self._messages if m.id in self.history_ids],
            "inputIds": [m.id for m in self._messages if m.id in self.input_ids],
            "responseIds": [m.id for m in self._messages if m.id in self.response_ids],
        }

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> MessageList:
        lst = cls()
        for raw in data.get("messages", []):
            m = Message.model_validate(raw)
            lst._index[m.id] = len(lst._messages)
            lst._messages.append(m)
            lst._track(m)
            lst._last_created_at = max(lst._last_created_at, m.created_at)
        lst.history_ids = set(data.get("historyIds", []))
        lst.input_ids = set(data.get("inputIds", []))
        lst.response_ids = set(data.get("responseIds", []))
        return lst
