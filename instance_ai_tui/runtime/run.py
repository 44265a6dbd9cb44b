"""One run's state and the stream a caller reads it through.

``Run`` is the mutable state of one run (the task's own object); ``AgentStream`` is the async
iterator over its chunks. The loop that drives a run is ``agent.Agent``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .chunks import (
    StreamChunk,
)
from .compaction import Observations
from .context import Sizes
from .limits import DEFAULT_LIMITS, LimitCheck
from .messages import Message, MessageList, new_id
from .model import (
    ModelAdapter,
)
from .state import AgentState, ApprovalDecision, PendingToolCall, RunResult, SettledToolCall
from .tools import (
    Tool,
)
from .usage import SubAgentUsage, Usage

AgentInput = str | Message | dict[str, Any] | Sequence[str | Message | dict[str, Any]]

ABORTED_RESULT = "[Skipped: run was aborted]"
FAILED_RESULT = "[Skipped: run failed]"

END = object()


def normalize_input(value: AgentInput) -> list[Message]:
    """A string, a ``Message``, an OpenAI-style dict or a list of those -> messages."""
    if isinstance(value, str):
        return [Message.user(value)]
    if isinstance(value, Message):
        return [value]
    if isinstance(value, dict):
        return [Message.model_validate(value)]
    out: list[Message] = []
    for item in value:
        out.extend(normalize_input(item))
    return out



class Resume:
    def __init__(self, tool_call_id: str, data: Any, approval: ApprovalDecision | None) -> None:
        self.tool_call_id = tool_call_id
        self.data = data
        self.approval = approval


class Run:
    """The mutable state of one run (the task's own object). It knows its agent by name only: the
    loop (``agent.Agent``) drives it; a run can abort itself (``abort``) without the loop."""

    def __init__(self, agent_name: str, model: ModelAdapter, run_id: str, thread_id: str | None,
                 max_iterations: int, extra: dict[str, Any]) -> None:
        self.agent_name = agent_name
        #: the model of this run: the agent's, or one chosen for the thread (``stream(model=...)``)
        self.model: ModelAdapter = model
        self.run_id = run_id
        self.thread_id = thread_id
        self.max_iterations = max_iterations
        self.extra = extra
        self.status = "running"
        self.list = MessageList()
        self.batch: list[str] = []
        self.pending: dict[str, PendingToolCall] = {}
        self.settled: dict[str, SettledToolCall] = {}
        self.usage = Usage()
        self.sub_usage: list[SubAgentUsage] = []
        self.iteration = 0
        #: the last failed tool call's error, its call (name + arguments) and how often in a row it failed
        self.last_error: str | None = None
        self.last_failure: str | None = None
        self.repeats = 0
        self.finish_reason: str | None = None
        self.error: str | None = None
        self.status_code: int | None = None
        self.response_id: str | None = None
        self.model_name = self.model.name
        #: what the model may still send in this run (``runtime.limits``; the adapter's ``limits``)
        self.limits = LimitCheck(getattr(self.model, "limits", None) or DEFAULT_LIMITS,
                                 getattr(self.model, "where", None) or f"the model {self.model.name!r}")
        #: input tokens of the latest model request (the context the model read)
        self.last_input_tokens = 0
        #: sizes of the messages sent (``runtime/context.py``: fitting looks each up once)
        self.sizes = Sizes()
        #: the thread's observations (compacted older turns), shown in the system prompt
        self.observations: Observations | None = None
        #: the person was told their message was cut to fit the model's context (once a run)
        self.said_cut = False
        #: characters of the notes a compaction of this run found nothing to gain from: messages shorter than
        #: that are not given to the observer again this run (``runtime/compaction.py``, ``settle``)
        self.kept_compaction = 0
        self.cancel = asyncio.Event()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.result: RunResult | None = None
        self.checkpointed = False
        self.aborting = False
        self.started = False
        self.tools: dict[str, Tool] = {}
        self._definitions: tuple[dict[str, Tool], bool, list[dict[str, Any]]] | None = None

    def tool_definitions(self, strict: bool) -> list[dict[str, Any]]:
        """The tools' OpenAI entries for this run's requests, made once per tool table: the same list
        each request (the context budget then measures the schemas once, ``Sizes.tools_chars``)."""
        made = self._definitions
        if made is None or made[0] is not self.tools or made[1] != strict:
            made = self._definitions = (self.tools, strict, [t.definition(strict=strict) for t in self.tools.values()])
        return made[2]

    def emit(self, chunk: StreamChunk) -> None:
        self.queue.put_nowait(chunk)

    def abort(self) -> None:
        """Abort this run if it is still running (its stream then ends with an ``error`` chunk).
        A task cancelled before its first step would skip all cleanup: the loop sees the event at
        its next check instead."""
        if self.aborting or self.status != "running":
            return
        self.aborting = True
        self.cancel.set()
        if self.started and self.task is not None and not self.task.done():
            self.task.cancel()

    def rid(self) -> str:
        if self.response_id is None:
            self.response_id = new_id("resp")
        return self.response_id

    def add_sub_usage(self, entry: SubAgentUsage) -> None:
        """Record a sub-agent run's usage. A sub-run reported again (resumed after a suspension:
        its usage is cumulative, restored from its checkpoint) replaces its earlier report."""
        if entry.run_id is not None:
            for index, known in enumerate(self.sub_usage):
                if known.run_id == entry.run_id:
                    self.sub_usage[index] = entry
                    return
        self.sub_usage.append(entry)

    def total_usage(self) -> Usage:
        total = self.usage
        for sub in self.sub_usage:
            total = total + sub.usage
        return total

    def state(self) -> AgentState:
        return AgentState(
            agent=self.agent_name,
            run_id=self.run_id,
            thread_id=self.thread_id,
            status=self.status,  # type: ignore[arg-type]
            message_list=self.list.serialize(),
            batch=list(self.batch),
            pending_tool_calls={k: v.model_copy() for k, v in self.pending.items()},
            settled_tool_calls={k: v.model_copy() for k, v in self.settled.items()},
            usage=self.usage,
            sub_agent_usage=list(self.sub_usage),
            iteration=self.iteration,
            max_iterations=self.max_iterations,
            finish_reason=self.finish_reason,
            error=self.error,
            response_id=self.response_id,
        )

    def load(self, state: AgentState) -> None:
        self.list = MessageList.deserialize(state.message_list)
        self.batch = list(state.batch)
        self.pending = dict(state.pending_tool_calls)
        self.settled = dict(state.settled_tool_calls)
        self.usage = state.usage
        self.sub_usage = list(state.sub_agent_usage)
        self.iteration = state.iteration
        self.response_id = state.response_id


class AgentStream:
    """The chunks of one run: ``async for chunk in stream``; ``await stream.result()``.

    ``run_id`` is known at once. Leaving the iteration early does not stop the run; call
    ``abort()`` (or use ``async with`` which aborts an unfinished run on exit)."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._done = False

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def thread_id(self) -> str | None:
        return self._run.thread_id

    @property
    def final(self) -> RunResult | None:
        """The result once the run has ended (None before)."""
        return self._run.result

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> StreamChunk:
        if self._done:
            raise StopAsyncIteration
        item = await self._run.queue.get()
        if item is END:
            self._done = True
            raise StopAsyncIteration
        return item

    async def result(self) -> RunResult:
        """Drain what is left of the stream and return the run's result."""
        while not self._done:
            item = await self._run.queue.get()
            if item is END:
                self._done = True
        if self._run.task is not None:
            await self._run.task
        if self._run.result is None:
            raise RuntimeError(f"run {self._run.run_id} ended without a result")
        return self._run.result

    def abort(self) -> None:
        self._run.abort()

    async def aclose(self) -> None:
        if self._run.result is None:
            self.abort()
        await self.result()

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


