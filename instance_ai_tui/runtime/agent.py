"""The agent: the loop that streams the model, runs tools, suspends, resumes and persists.

One ``Agent`` can serve many runs (also at the same time). Each run is an ``asyncio`` task that
writes ``StreamChunk`` values into a queue read through ``AgentStream``. See the package
docstring (``runtime/__init__.py``) for the public API.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from .checkpoints import CheckpointStore, InMemoryCheckpointStore
from .chunks import (
    ErrorChunk,
    FinishChunk,
    MessageChunk,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolCallSuspendedChunk,
    ToolResultChunk,
)
from .errors import CheckpointNotFound, InvalidResumeData, ResumeConflict, RunNotSuspended, UnknownToolCall
from .events import AgentEvent, AgentEventData, EventHandler, EventHub
from .memory import Memory, generate_title, is_substantial, working_memory_tool
from .messages import Message, MessageList, ToolCallPart, new_id
from .model import (
    ModelAdapter,
    ModelCancelled,
    ModelError,
    ModelFinish,
    ModelReasoningDelta,
    ModelRequest,
    ModelTextDelta,
    ModelToolCallDelta,
    ModelUsage,
)
from .state import AgentState, ApprovalDecision, PendingToolCall, RunResult, SettledToolCall
from .tools import (
    DEFAULT_MAX_OUTPUT_CHARS,
    Tool,
    ToolContext,
    ToolError,
    ToolSuspend,
    parse_arguments,
    truncate,
    validation_message,
)
from .usage import PriceTable, SubAgentUsage, Usage

log = logging.getLogger(__name__)

AgentInput = str | Message | dict[str, Any] | Sequence[str | Message | dict[str, Any]]

ABORTED_RESULT = "[Skipped: run was aborted]"
FAILED_RESULT = "[Skipped: run failed]"

_FINISH_REASONS = {"stop": "stop", "length": "length", "content_filter": "content-filter", "tool_calls": "stop"}

_END = object()


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


class _Resume:
    def __init__(self, tool_call_id: str, data: Any, approval: ApprovalDecision | None) -> None:
        self.tool_call_id = tool_call_id
        self.data = data
        self.approval = approval


class _Run:
    """The mutable state of one run (the task's own object)."""

    def __init__(self, agent: Agent, run_id: str, thread_id: str | None, max_iterations: int,
                 extra: dict[str, Any], model: ModelAdapter | None = None) -> None:
        self.agent = agent
        #: the model of this run: the agent's, or one chosen for the thread (``stream(model=...)``)
        self.model: ModelAdapter = model or agent.model
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
        #: input tokens of the latest model request (the context the model read)
        self.last_input_tokens = 0
        self.cancel = asyncio.Event()
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.result: RunResult | None = None
        self.checkpointed = False
        self.aborting = False
        self.started = False
        self.tools: dict[str, Tool] = {}

    def emit(self, chunk: StreamChunk) -> None:
        self.queue.put_nowait(chunk)

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
            agent=self.agent.name,
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

    def __init__(self, run: _Run) -> None:
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
        if item is _END:
            self._done = True
            raise StopAsyncIteration
        return item

    async def result(self) -> RunResult:
        """Drain what is left of the stream and return the run's result."""
        while not self._done:
            item = await self._run.queue.get()
            if item is _END:
                self._done = True
        if self._run.task is not None:
            await self._run.task
        if self._run.result is None:
            raise RuntimeError(f"run {self._run.run_id} ended without a result")
        return self._run.result

    def abort(self) -> None:
        self._run.agent._abort_run(self._run)

    async def aclose(self) -> None:
        if self._run.result is None:
            self.abort()
        await self.result()

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class _SubAgentInput(BaseModel):
    input: str = Field(description="The task for the agent, with all the context it needs.")


class Agent:
    """An LLM agent with tools, memory and checkpoints."""

    def __init__(
        self,
        name: str,
        instructions: str | Callable[[], str],
        model: ModelAdapter,
        tools: Sequence[Tool] = (),
        *,
        memory: Memory | None = None,
        checkpoints: CheckpointStore | None = None,
        max_iterations: int = 20,
        tool_call_concurrency: int = 1,
        require_approval: bool | Collection[str] = False,
        prices: PriceTable | None = None,
        max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        model_params: dict[str, Any] | None = None,
        checkpoint_ttl: float | None = None,
        title_model: ModelAdapter | None = None,
        description: str = "",
        stop_on_limit: bool = False,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if tool_call_concurrency < 1:
            raise ValueError("tool_call_concurrency must be at least 1")
        self.name = name
        self.description = description
        self.instructions = instructions
        self.model = model
        self.memory = memory
        self.checkpoints: CheckpointStore = checkpoints if checkpoints is not None else InMemoryCheckpointStore()
        self.max_iterations = max_iterations
        #: reaching ``max_iterations``, or the same tool call failing three times in a row, fails the
        #: run with ``RunStopped`` ("stopped after N steps: the last error was ...") instead of
        #: finishing it quietly with ``finish_reason="max-iterations"``
        self.stop_on_limit = stop_on_limit
        self.tool_call_concurrency = tool_call_concurrency
        self.require_approval = require_approval
        self.prices = prices
        self.max_tool_output_chars = max_tool_output_chars
        self.model_params = dict(model_params or {})
        self.checkpoint_ttl = checkpoint_ttl
        self.title_model = title_model
        #: usage of side calls (title generation)
        self.side_usage = Usage()
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ValueError(f"agent {name!r}: two tools are named {t.name!r}")
            self._tools[t.name] = t
        self._hub = EventHub()
        self._runs: dict[str, _Run] = {}
        self._last: _Run | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # -- public API ----------------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def on(self, event: AgentEvent | str, handler: EventHandler) -> Callable[[], None]:
        """Register a lifecycle handler; returns a function that unregisters it."""
        return self._hub.on(event, handler)

    def stream(
        self,
        input: AgentInput,
        *,
        thread_id: str | None = None,
        run_id: str | None = None,
        history: Sequence[Message] | None = None,
        cancel: asyncio.Event | None = None,
        extra: dict[str, Any] | None = None,
        max_iterations: int | None = None,
        model: ModelAdapter | None = None,
    ) -> AgentStream:
        """Start a run; returns at once with the stream of its chunks. ``model`` replaces the
        agent's model for this run (e.g. the model chosen for the thread)."""
        messages = normalize_input(input)
        run = _Run(self, run_id or new_id("run"), thread_id, max_iterations or self.max_iterations, dict(extra or {}),
                   model)
        return self._start(run, cancel, self._main(run, None, messages, list(history or [])))

    async def generate(self, input: AgentInput, **options: Any) -> RunResult:
        """Run to the end (or suspension) and return the result; failures come back on it."""
        stream = self.stream(input, **options)
        try:
            return await stream.result()
        except asyncio.CancelledError:
            stream.abort()
            raise

    async def resume(
        self,
        run_id: str,
        tool_call_id: str,
        data: Any = None,
        *,
        cancel: asyncio.Event | None = None,
        extra: dict[str, Any] | None = None,
        max_iterations: int | None = None,
        model: ModelAdapter | None = None,
    ) -> AgentStream:
        """Resume a suspended run from its checkpoint (this process or another one).

        Raises ``CheckpointNotFound``, ``RunNotSuspended``, ``UnknownToolCall``,
        ``InvalidResumeData`` or ``ResumeConflict`` (another resume claimed it first)."""
        record = await self.checkpoints.load(run_id)
        if record is None:
            raise CheckpointNotFound(f"no suspended run {run_id!r} (finished, expired or unknown)")
        if record.status != "suspended":
            raise RunNotSuspended(f"run {run_id!r} is {record.status}, not suspended")
        try:
            state = AgentState.model_validate(record.state)
        except ValidationError as exc:
            raise CheckpointNotFound(f"the checkpoint of run {run_id!r} is unreadable: {exc}") from None
        if state.agent != self.name:
            raise RunNotSuspended(f"run {run_id!r} belongs to agent {state.agent!r}, not {self.name!r}")
        pending = state.pending_tool_calls.get(tool_call_id)
        if pending is None or not pending.suspended:
            waiting = [k for k, p in state.pending_tool_calls.items() if p.suspended]
            raise UnknownToolCall(f"run {run_id!r} has no suspended tool call {tool_call_id!r} (waiting: {waiting})")
        approval: ApprovalDecision | None = None
        try:
            if pending.kind == "approval":
                approval = data if isinstance(data, ApprovalDecision) else ApprovalDecision.model_validate(data)
                validated: Any = approval
            else:
                tool = self._tool_table(state.thread_id).get(pending.tool_name)
                if tool is None:
                    raise UnknownToolCall(f"agent {self.name!r} has no tool {pending.tool_name!r} to resume")
                validated = tool.validate_resume(data)
        except ValidationError as exc:
            raise InvalidResumeData(f"resume data for {pending.tool_name!r}: {validation_message(exc)}") from None
        claimed = await self.checkpoints.claim(run_id, record.version)
        if claimed is None:
            raise ResumeConflict(f"run {run_id!r} was already resumed")
        run = _Run(self, run_id, state.thread_id, max(max_iterations or 0, state.max_iterations), dict(extra or {}),
                   model)
        run.load(state)
        run.checkpointed = True
        return self._start(run, cancel, self._main(run, _Resume(tool_call_id, validated, approval), None, []))

    async def approve(self, run_id: str, tool_call_id: str, **options: Any) -> AgentStream:
        return await self.resume(run_id, tool_call_id, ApprovalDecision(approved=True), **options)

    async def deny(self, run_id: str, tool_call_id: str, reason: str | None = None, **options: Any) -> AgentStream:
        return await self.resume(run_id, tool_call_id, ApprovalDecision(approved=False, reason=reason), **options)

    def abort(self) -> None:
        """Abort every active run of this agent (its stream ends with an ``error`` chunk)."""
        for run in list(self._runs.values()):
            self._abort_run(run)

    def get_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot of the latest run (``idle`` before the first one)."""
        if self._last is None:
            return AgentState(agent=self.name, max_iterations=self.max_iterations).model_dump(mode="json")
        return self._last.state().model_dump(mode="json")

    def as_tool(self, description: str, name: str | None = None, **tool_options: Any) -> Tool:
        """This agent as a tool ``{input} -> {result}``; its usage rolls up into the parent run."""
        tool_name = name or re.sub(r"[^A-Za-z0-9_-]+", "_", self.name).strip("_")[:64] or "agent"

        async def handler(args: _SubAgentInput, ctx: ToolContext) -> dict[str, Any]:
            result = await self.generate(args.input, cancel=ctx.cancel, extra=ctx.extra)
            ctx.report_usage(self.name, result.total_usage, run_id=result.run_id)
            if result.status == "suspended":
                raise ToolError(f"agent {self.name!r} stopped to wait for approval, which a sub-agent cannot do here")
            if result.status != "success":
                raise ToolError(f"agent {self.name!r} failed: {result.error or result.status}")
            return {"result": result.text}

        return Tool(tool_name, description, _SubAgentInput, handler, **tool_options)

    async def wait_background(self) -> None:
        """Wait for background work (title generation) to finish."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    # -- run plumbing ----------------------------------------------------------------------------

    def _start(self, run: _Run, cancel: asyncio.Event | None, body: Any) -> AgentStream:
        run.tools = self._tool_table(run.thread_id)
        self._runs[run.run_id] = run
        self._last = run
        run.task = asyncio.get_running_loop().create_task(self._guard(run, cancel, body), name=f"agent:{self.name}:{run.run_id}")
        return AgentStream(run)

    async def _guard(self, run: _Run, cancel: asyncio.Event | None, body: Any) -> None:
        run.started = True
        watcher: asyncio.Task[Any] | None = None
        if cancel is not None:
            async def watch() -> None:
                await cancel.wait()
                self._abort_run(run)

            watcher = asyncio.ensure_future(watch())
        try:
            await body
        finally:
            if watcher is not None:
                watcher.cancel()
            if self._runs.get(run.run_id) is run:
                del self._runs[run.run_id]
            run.queue.put_nowait(_END)

    def _abort_run(self, run: _Run) -> None:
        if run.aborting or run.status != "running":
            return
        run.aborting = True
        run.cancel.set()
        # a task cancelled before its first step would skip all cleanup: the loop sees the
        # event at its next check instead
        if run.started and run.task is not None and not run.task.done():
            run.task.cancel()

    def _tool_table(self, thread_id: str | None) -> dict[str, Tool]:
        table = dict(self._tools)
        if self.memory is not None and self.memory.working_memory and thread_id:
            wm = working_memory_tool(self.memory)
            table.setdefault(wm.name, wm)
        return table

    def _instructions(self) -> str:
        return self.instructions() if callable(self.instructions) else self.instructions

    async def _event(self, run: _Run, kind: AgentEvent, **data: Any) -> None:
        if self._hub.has(kind):
            await self._hub.emit(AgentEventData(type=kind, agent=self.name, run_id=run.run_id,
                                                thread_id=run.thread_id, data=data))

    def _check_cancel(self, run: _Run) -> None:
        if run.cancel.is_set():
            raise asyncio.CancelledError()

    # -- the loop ----------------------------------------------------------------------------------

    async def _main(self, run: _Run, resume: _Resume | None, input_messages: list[Message] | None,
                    history: list[Message]) -> None:
        try:
            await self._event(run, AgentEvent.AGENT_START)
            self._check_cancel(run)
            if resume is None:
                await self._prepare(run, input_messages or [], history)
            else:
                await self._resume_pending(run, resume)
                if self._suspended(run):
                    await self._suspend(run)
                    return
                await self._close_batch(run)
            while True:
                self._check_cancel(run)
                if run.iteration >= run.max_iterations:
                    run.finish_reason = "max-iterations"
                    if self.stop_on_limit:
                        raise RunStopped(run.iteration, run.last_error)
                    break
                run.iteration += 1
                assistant, reason = await self._call_model(run)
                if not run.batch:
                    run.finish_reason = _FINISH_REASONS.get(reason, "other")
                    await self._event(run, AgentEvent.TURN_END, message=assistant, tool_results=[])
                    break
                calls = {cid: _call_signature(run.pending.get(cid)) for cid in run.batch}
                await self._execute(run, run.batch)
                if self._suspended(run):
                    await self._suspend(run)
                    return
                _note_failures(run, calls)
                await self._close_batch(run)
                if self.stop_on_limit and run.repeats >= REPEATED_FAILURES:
                    raise RunStopped(run.iteration, run.last_error, repeated=True)
            await self._complete(run)
        except (asyncio.CancelledError, ModelCancelled):
            task = asyncio.current_task()
            if task is not None:
                while task.uncancel():
                    pass
            await self._cancelled(run)
        except Exception as exc:  # noqa: BLE001 - any failure of the loop ends the run as failed (runs report failures, never raise)
            await self._failed(run, exc)

    async def _prepare(self, run: _Run, input_messages: list[Message], history: list[Message]) -> None:
        loaded: list[Message] = []
        if self.memory is not None and run.thread_id:
            loaded = await self.memory.load_history(run.thread_id)
            query = "\n".join(m.text for m in input_messages if m.role == "user")
            recalled = await self.memory.recall(run.thread_id, query, exclude={m.id for m in loaded})
            loaded = recalled + loaded
        run.list.add_history([*history, *loaded])
        run.list.add_input(input_messages)
        if self.memory is not None and run.thread_id:
            await self.memory.save_messages(run.thread_id, run.list.input_delta(), run_id=run.run_id)

    def _suspended(self, run: _Run) -> bool:
        return any(p.suspended for p in run.pending.values())

    async def _call_model(self, run: _Run) -> tuple[Message | None, str]:
        run.response_id = rid = new_id("resp")
        await self._event(run, AgentEvent.TURN_START, iteration=run.iteration, response_id=rid)
        blocks: list[str] = []
        if self.memory is not None and self.memory.working_memory and run.thread_id:
            blocks.append(self.memory.working_memory_block(await self.memory.get_working_memory(run.thread_id)))
        strict = bool(getattr(run.model, "supports_strict_tools", False))
        request = ModelRequest(
            messages=run.list.for_llm(
                self._instructions(), blocks, replay_reasoning=bool(getattr(run.model, "replay_reasoning", False))
            ),
            tools=[t.definition(strict=strict) for t in run.tools.values()],
            params=dict(self.model_params),
        )
        text: list[str] = []
        reasoning: list[str] = []
        names: dict[int, tuple[str, str]] = {}
        finish: ModelFinish | None = None
        stream = run.model.stream(request, cancel=run.cancel)
        try:
            async for chunk in stream:
                if isinstance(chunk, ModelTextDelta):
                    text.append(chunk.text)
                    run.emit(TextDeltaChunk(run.run_id, rid, chunk.text))
                elif isinstance(chunk, ModelReasoningDelta):
                    reasoning.append(chunk.text)
                    run.emit(ReasoningDeltaChunk(run.run_id, rid, chunk.text))
                elif isinstance(chunk, ModelToolCallDelta):
                    start = chunk.index not in names
                    if start:
                        names[chunk.index] = (chunk.id or new_id("call"), chunk.name or "")
                    call_id, call_name = names[chunk.index]
                    if chunk.name and not start:
                        call_name += chunk.name
                        names[chunk.index] = (call_id, call_name)
                    run.emit(ToolCallDeltaChunk(run.run_id, rid, chunk.index, call_id, call_name, chunk.arguments, start))
                elif isinstance(chunk, ModelUsage):
                    usage = chunk.usage
                    if usage.cost is None and self.prices is not None:
                        usage = self.prices.priced(run.model.name, usage)
                    run.usage = run.usage + usage
                    if usage.input_tokens:
                        run.last_input_tokens = int(usage.input_tokens)
                elif isinstance(chunk, ModelFinish):
                    finish = chunk
                    if chunk.model:
                        run.model_name = chunk.model
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if finish is None:
            raise ModelError(f"model {run.model.name!r} ended its stream without finishing")
        parts: list[ToolCallPart] = []
        pending: list[PendingToolCall] = []
        for call in finish.tool_calls:
            args, error = parse_arguments(call.arguments)
            if error:
                error = f"{error}. You sent: {call.arguments[:200]!r}"
            parts.append(ToolCallPart(id=call.id, name=call.name, arguments=args,
                                      raw_arguments=call.arguments if error else None))
            pending.append(PendingToolCall(tool_call_id=call.id, tool_name=call.name, args=args,
                                           args_error=error, response_id=rid))
        content = "".join(text)
        thought = "".join(reasoning)
        assistant: Message | None = None
        if content or parts or thought:
            assistant = Message(role="assistant", content=content, reasoning=thought or None,
                                tool_calls=parts or None, response_id=rid, agent=self.name)
            run.list.add_response([assistant])
            run.emit(MessageChunk(run.run_id, rid, assistant.model_dump(mode="json", exclude_none=True)))
        run.batch = [p.tool_call_id for p in pending]
        for p in pending:
            run.pending[p.tool_call_id] = p
            run.emit(ToolCallChunk(run.run_id, rid, p.tool_call_id, p.tool_name, p.args, p.args_error))
        return assistant, finish.reason

    async def _execute(self, run: _Run, ids: Sequence[str]) -> None:
        """Run the not-yet-executed calls among ``ids`` in windows of ``tool_call_concurrency``;
        no new window starts once a call has suspended."""
        todo = [i for i in ids if i in run.pending and not run.pending[i].suspended]
        size = self.tool_call_concurrency
        for start in range(0, len(todo), size):
            if self._suspended(run):
                break
            self._check_cancel(run)
            window = [run.pending[i] for i in todo[start : start + size]]
            if len(window) == 1:
                await self._settle(run, window[0])
            else:
                await asyncio.gather(*(self._settle(run, p) for p in window))

    async def _resume_pending(self, run: _Run, resume: _Resume) -> None:
        target = run.pending[resume.tool_call_id]
        if resume.approval is not None:
            if resume.approval.approved:
                await self._settle(run, target, approved=True)
            else:
                reason = f": {resume.approval.reason}" if resume.approval.reason else ""
                self._record(run, target, SettledToolCall(
                    tool_call_id=target.tool_call_id, tool_name=target.tool_name, response_id=target.response_id,
                    error=f"Tool call denied by user{reason}", is_error=True,
                    model_output=f"Error: the tool call was denied by user{reason}. Do not retry it unless the user asks.",
                ))
        else:
            await self._settle(run, target, resume_data=resume.data)
        await self._execute(run, run.batch)

    async def _settle(self, run: _Run, pending: PendingToolCall, *, resume_data: Any = None,
                      approved: bool = False) -> None:
        """Run one call; record its outcome (settled or suspended). Never raises but for cancel."""
        tool = run.tools.get(pending.tool_name)

        def fail(message: str) -> None:
            self._record(run, pending, SettledToolCall(
                tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, response_id=pending.response_id,
                error=message, is_error=True, model_output=f"Error: {message}",
            ))

        if tool is None:
            fail(f"unknown tool {pending.tool_name!r}; available tools: {', '.join(sorted(run.tools)) or 'none'}")
            return
        if pending.args_error:
            fail(pending.args_error)
            return
        try:
            args = tool.validate_args(pending.args)
        except ValidationError as exc:
            fail(validation_message(exc))
            return
        ctx = ToolContext(
            run_id=run.run_id, tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, agent_name=self.name,
            thread_id=run.thread_id, resume_data=resume_data,
            suspend_payload=pending.suspend_payload if resume_data is not None else None,
            approved=approved, cancel=run.cancel, extra=run.extra, _usage_sink=run.add_sub_usage,
        )
        if not approved and resume_data is None and await self._needs_approval(tool, args, ctx):
            message = tool.approval_message
            text = message(args) if callable(message) else (message or f"Allow {tool.name} to run?")
            pending.suspended = True
            pending.kind = "approval"
            pending.suspend_payload = {"type": "approval", "toolName": tool.name, "args": pending.args, "message": text}
            preview = await _approval_preview(tool, args, ctx)
            if preview:
                pending.suspend_payload["preview"] = preview
            pending.resume_schema = ApprovalDecision.model_json_schema()
            pending.announced = False
            return
        await self._event(run, AgentEvent.TOOL_EXECUTION_START, tool_call_id=pending.tool_call_id,
                          tool_name=tool.name, args=pending.args)
        try:
            result = await tool.invoke(args, ctx)
        except ToolSuspend as suspend:
            try:
                payload = _jsonable(tool.check_suspend_payload(suspend.payload))
            except ValidationError as exc:
                fail(f"the tool suspended with an invalid payload: {validation_message(exc)}")
                return
            pending.suspended = True
            pending.kind = "suspend"
            pending.suspend_payload = payload
            pending.resume_schema = tool.resume_json_schema
            pending.announced = False
            return
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                              tool_name=tool.name, result=str(exc), is_error=True)
            fail(str(exc))
            return
        except Exception as exc:  # a failing tool is an error result, never a failed run
            log.debug("tool %s failed", tool.name, exc_info=True)
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                              tool_name=tool.name, result=message, is_error=True)
            fail(message)
            return
        await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                          tool_name=tool.name, result=result, is_error=False)
        try:
            output = tool.model_output(result, self.max_tool_output_chars)
        except Exception as exc:  # noqa: BLE001 - a tool's odd result becomes a tool error, not a failed run
            fail(f"the tool's result could not be converted for the model: {exc}")
            return
        self._record(run, pending, SettledToolCall(
            tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, response_id=pending.response_id,
            result=_jsonable(result), model_output=output,
        ))

    async def _needs_approval(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> bool:
        policy = self.require_approval
        if policy is True or (not isinstance(policy, bool) and tool.name in policy):
            return True
        return await tool.requires_approval(args, ctx)

    def _record(self, run: _Run, pending: PendingToolCall, settled: SettledToolCall) -> None:
        run.pending.pop(pending.tool_call_id, None)
        run.settled[settled.tool_call_id] = settled
        run.emit(ToolResultChunk(
            run.run_id, settled.response_id, settled.tool_call_id, settled.tool_name, settled.result,
            settled.error, settled.is_error, settled.skipped, settled.model_output,
        ))

    async def _close_batch(self, run: _Run, *, turn_end: bool = True) -> None:
        """Append the batch's tool messages in call order and end the turn."""
        messages: list[Message] = []
        for call_id in run.batch:
            s = run.settled.pop(call_id, None)
            if s is None:
                continue
            messages.append(Message.tool(
                call_id, s.tool_name, s.model_output, result=s.result, is_error=s.is_error, skipped=s.skipped,
                response_id=s.response_id, agent=self.name,
            ))
        run.list.add_response(messages)
        for m in messages:
            run.emit(MessageChunk(run.run_id, m.response_id or run.rid(), m.model_dump(mode="json", exclude_none=True)))
        run.batch = []
        if turn_end and self._hub.has(AgentEvent.TURN_END):
            assistant = next((m for m in reversed(run.list.messages) if m.role == "assistant"), None)
            await self._event(run, AgentEvent.TURN_END, message=assistant,
                              tool_results=[m.model_dump(mode="json") for m in messages])

    def _settle_unfinished(self, run: _Run, text: str) -> None:
        for call_id in run.batch:
            if call_id in run.settled:
                continue
            pending = run.pending.get(call_id)
            self._record(run, pending or PendingToolCall(tool_call_id=call_id, tool_name=""), SettledToolCall(
                tool_call_id=call_id, tool_name=pending.tool_name if pending else "",
                response_id=pending.response_id if pending else run.rid(),
                skipped=True, model_output=text, result=None,
            ))
        run.pending.clear()

    async def _persist(self, run: _Run) -> None:
        if self.memory is not None and run.thread_id:
            await self.memory.save_messages(run.thread_id, run.list.turn_delta(), run_id=run.run_id)

    def _result(self, run: _Run, status: str) -> RunResult:
        responses = run.list.response_delta()
        last = next((m for m in reversed(responses) if m.role == "assistant" and m.text), None)
        return RunResult(
            run_id=run.run_id, agent=self.name, thread_id=run.thread_id, status=status,  # type: ignore[arg-type]
            finish_reason=run.finish_reason, text=last.text if last else "", messages=responses,
            usage=run.usage, total_usage=run.total_usage(), sub_agent_usage=list(run.sub_usage),
            pending_suspend=[p for p in run.pending.values() if p.suspended], error=run.error,
            status_code=run.status_code, model=run.model_name, context_tokens=run.last_input_tokens,
        )

    def _finish_chunk(self, run: _Run, suspended: bool = False) -> FinishChunk:
        return FinishChunk(
            run.run_id, run.rid(), run.finish_reason or "other", run.usage,  # type: ignore[arg-type]
            run.total_usage(), run.model_name, list(run.sub_usage), suspended,
        )

    async def _suspend(self, run: _Run) -> None:
        run.status = "suspended"
        run.finish_reason = "tool-calls"
        announce = [p for p in run.pending.values() if p.suspended and not p.announced]
        for p in announce:
            p.announced = True
        await self.checkpoints.save(run.run_id, run.state().model_dump(mode="json"), thread_id=run.thread_id,
                                    status="suspended", ttl=self.checkpoint_ttl)
        run.checkpointed = True
        await self._persist(run)
        # announce only after the checkpoint exists, so a caller may resume at once
        for p in announce:
            run.emit(ToolCallSuspendedChunk(
                run.run_id, p.response_id, p.tool_call_id, p.tool_name, p.args, p.suspend_payload,
                p.resume_schema, p.kind or "suspend",
            ))
        run.result = self._result(run, "suspended")
        run.emit(self._finish_chunk(run, suspended=True))

    async def _complete(self, run: _Run) -> None:
        run.status = "success"
        await self._persist(run)
        if run.checkpointed:
            await self.checkpoints.complete(run.run_id)
        run.result = self._result(run, "success")
        run.emit(self._finish_chunk(run))
        await self._event(run, AgentEvent.AGENT_END, messages=[m.model_dump(mode="json") for m in run.result.messages])
        self._maybe_title(run)

    async def _cancelled(self, run: _Run) -> None:
        run.status = "cancelled"
        run.finish_reason = "error"
        run.error = "aborted"
        try:
            self._settle_unfinished(run, ABORTED_RESULT)
            await self._close_batch(run, turn_end=False)
            await self._persist(run)
            if run.checkpointed:
                await self.checkpoints.complete(run.run_id)
        except Exception:
            log.exception("cleaning up aborted run %s failed", run.run_id)
        run.result = self._result(run, "cancelled")
        run.emit(ErrorChunk(run.run_id, run.rid(), "aborted", cancelled=True))

    async def _failed(self, run: _Run, exc: Exception) -> None:
        run.status = "failed"
        run.finish_reason = "error"
        run.error = str(exc) or type(exc).__name__
        run.status_code = getattr(exc, "status_code", None)
        if not isinstance(exc, ModelError | RunStopped):
            log.exception("agent %s run %s failed", self.name, run.run_id, exc_info=exc)
        try:
            self._settle_unfinished(run, FAILED_RESULT)
            await self._close_batch(run, turn_end=False)
            await self._persist(run)
            if run.checkpointed:
                await self.checkpoints.complete(run.run_id)
        except Exception:
            log.exception("cleaning up failed run %s failed", run.run_id)
        run.result = self._result(run, "failed")
        await self._event(run, AgentEvent.ERROR, message=run.error, error=exc)
        run.emit(ErrorChunk(run.run_id, run.rid(), run.error, status_code=run.status_code, exception=exc))

    # -- titles --------------------------------------------------------------------------------------

    def _maybe_title(self, run: _Run) -> None:
        memory = self.memory
        if memory is None or not memory.title_generation or not run.thread_id:
            return
        user_text = next((m.text for m in run.list.input_delta() if m.role == "user" and m.text), "")
        if not is_substantial(user_text):
            return
        thread_id = run.thread_id
        answer = run.result.text if run.result else ""

        async def job() -> None:
            try:
                if await memory.get_title(thread_id):
                    return
                title, usage = await generate_title(self.title_model or self.model, user_text, answer)
                self.side_usage = self.side_usage + usage
                if title:
                    await memory.save_title(thread_id, title)
            except Exception:
                log.warning("title generation for thread %s failed", thread_id, exc_info=True)

        task = asyncio.get_running_loop().create_task(job())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


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


def _call_signature(pending: PendingToolCall | None) -> str | None:
    if pending is None:
        return None
    try:
        return pending.tool_name + json.dumps(pending.args, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return pending.tool_name + repr(pending.args)


def _note_failures(run: _Run, calls: dict[str, str | None]) -> None:
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


async def _approval_preview(tool: Tool, args: Any, ctx: ToolContext) -> dict[str, Any] | None:
    """What the call would change, for its approval card. Best effort: a preview that fails
    (or takes over 5 s) is left out, and the user still decides on the arguments."""
    if tool.approval_preview is None:
        return None
    try:
        preview = await asyncio.wait_for(tool.approval_preview(args, ctx), 5.0)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.debug("the approval preview of %s failed", tool.name, exc_info=True)
        return None
    return _jsonable(preview) if preview else None


def _jsonable(value: Any) -> Any:
    """The value as JSON-compatible data (pydantic models dumped; unknown objects as text)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


__all__ = ["Agent", "AgentInput", "AgentStream", "normalize_input", "truncate"]
