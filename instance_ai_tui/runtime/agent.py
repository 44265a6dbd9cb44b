"""The agent: the loop that streams the model, runs tools, suspends, resumes and persists.

One ``Agent`` can serve many runs (also at the same time). Each run is an ``asyncio`` task that
writes ``StreamChunk`` values into a queue read through ``AgentStream``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ..aio import aclose
from ..store.errors import retry_while_unavailable
from .checkpoints import CheckpointStore, InMemoryCheckpointStore
from .chunks import (
    CompactingChunk,
    ContextCompactedChunk,
    ErrorChunk,
    FinishChunk,
    MessageChunk,
    ReasoningDeltaChunk,
    RetryChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolCallSuspendedChunk,
)
from .compaction import CompactionResult, new_observations, observe, replaced_chars, settle
from .context import (
    ContextBudget,
    Fit,
    budget_of,
    fit_request,
    format_tokens,
    keep_window,
    learn_from_refusal,
    probe_window,
    recall_window,
)
from .errors import (
    CheckpointNotFound,
    InvalidResumeData,
    ModelContextExceeded,
    ResumeConflict,
    RunNotSuspended,
    UnknownToolCall,
)
from .events import AgentEvent, AgentEventData, EventHandler, EventHub
from .memory import Memory, generate_title, is_substantial, working_memory_tool
from .messages import Message, ToolCallPart, new_id
from .model import (
    ModelAdapter,
    ModelCancelled,
    ModelError,
    ModelFinish,
    ModelReasoningDelta,
    ModelRequest,
    ModelRetry,
    ModelTextDelta,
    ModelToolCallDelta,
    ModelUsage,
)
from .run import ABORTED_RESULT, END, FAILED_RESULT, AgentInput, AgentStream, Resume, Run, normalize_input
from .state import AgentState, ApprovalDecision, PendingToolCall, RunResult
from .stop import REPEATED_FAILURES, RunStopped, call_signature, note_failures
from .tool_execution import ToolExecution
from .tools import (
    DEFAULT_MAX_OUTPUT_CHARS,
    Tool,
    ToolContext,
    ToolError,
    parse_arguments,
    truncate,
    validation_message,
)
from .usage import PriceTable, Usage

log = logging.getLogger(__name__)

_FINISH_REASONS = {"stop": "stop", "length": "length", "content_filter": "content-filter", "tool_calls": "stop"}
#: the chunk of a text or reasoning delta, by its type (an adapter's delta object yielded twice is copied)
_DELTA_CHUNKS: dict[str, type[TextDeltaChunk | ReasoningDeltaChunk]] = {
    "text-delta": TextDeltaChunk, "reasoning-delta": ReasoningDeltaChunk}


class _SubAgentInput(BaseModel):
    input: str = Field(description="The task for the agent, with all the context it needs.")


class Agent(ToolExecution):
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
        context_threshold: float = 0.7,
        observer_max_tokens: int | None = None,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if tool_call_concurrency < 1:
            raise ValueError("tool_call_concurrency must be at least 1")
        if not 0.1 <= context_threshold <= 0.95:
            raise ValueError("context_threshold must be between 0.1 and 0.95 (a share of the window)")
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
        #: compaction starts when a request (older tool results stubbed) takes this share of what the
        #: model's window leaves for it (``runtime/compaction.py``)
        self.context_threshold = context_threshold
        #: the observer's answer (the notes) at most this many tokens; None: a quarter of the window,
        #: 256 to 1,024
        self.observer_max_tokens = observer_max_tokens
        #: usage of side calls (title generation)
        self.side_usage = Usage()
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ValueError(f"agent {name!r}: two tools are named {t.name!r}")
            self._tools[t.name] = t
        self._hub = EventHub()
        self._runs: dict[str, Run] = {}
        self._last: Run | None = None
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
        run = Run(self.name, model or self.model, run_id or new_id("run"), thread_id,
                  max_iterations or self.max_iterations, dict(extra or {}))
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
        run = Run(self.name, model or self.model, run_id, state.thread_id,
                  max(max_iterations or 0, state.max_iterations), dict(extra or {}))
        run.load(state)
        run.checkpointed = True
        return self._start(run, cancel, self._main(run, Resume(tool_call_id, validated, approval), None, []))

    async def approve(self, run_id: str, tool_call_id: str, **options: Any) -> AgentStream:
        return await self.resume(run_id, tool_call_id, ApprovalDecision(approved=True), **options)

    async def deny(self, run_id: str, tool_call_id: str, reason: str | None = None, **options: Any) -> AgentStream:
        return await self.resume(run_id, tool_call_id, ApprovalDecision(approved=False, reason=reason), **options)

    def abort(self) -> None:
        """Abort every active run of this agent (its stream ends with an ``error`` chunk)."""
        for run in list(self._runs.values()):
            run.abort()

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

    def _start(self, run: Run, cancel: asyncio.Event | None, body: Any) -> AgentStream:
        run.tools = self._tool_table(run.thread_id)
        self._runs[run.run_id] = run
        self._last = run
        run.task = asyncio.get_running_loop().create_task(self._guard(run, cancel, body), name=f"agent:{self.name}:{run.run_id}")
        return AgentStream(run)

    async def _guard(self, run: Run, cancel: asyncio.Event | None, body: Any) -> None:
        run.started = True
        watcher: asyncio.Task[Any] | None = None
        if cancel is not None:
            async def watch() -> None:
                await cancel.wait()
                run.abort()

            watcher = asyncio.ensure_future(watch())
        try:
            await body
        finally:
            if watcher is not None:
                watcher.cancel()
            if self._runs.get(run.run_id) is run:
                del self._runs[run.run_id]
            run.queue.put_nowait(END)

    def _tool_table(self, thread_id: str | None) -> dict[str, Tool]:
        table = dict(self._tools)
        if self.memory is not None and self.memory.working_memory and thread_id:
            wm = working_memory_tool(self.memory)
            table.setdefault(wm.name, wm)
        return table

    def _instructions(self) -> str:
        return self.instructions() if callable(self.instructions) else self.instructions

    async def _event(self, run: Run, kind: AgentEvent, **data: Any) -> None:
        if self._hub.has(kind):
            await self._hub.emit(AgentEventData(type=kind, agent=self.name, run_id=run.run_id,
                                                thread_id=run.thread_id, data=data))

    def _check_cancel(self, run: Run) -> None:
        if run.cancel.is_set():
            raise asyncio.CancelledError()

    # -- the loop ----------------------------------------------------------------------------------

    async def _main(self, run: Run, resume: Resume | None, input_messages: list[Message] | None,
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
                calls = {cid: call_signature(run.pending.get(cid)) for cid in run.batch}
                await self._execute(run, run.batch)
                if self._suspended(run):
                    await self._suspend(run)
                    return
                note_failures(run, calls)
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

    async def _prepare(self, run: Run, input_messages: list[Message], history: list[Message]) -> None:
        loaded: list[Message] = []
        if self.memory is not None and run.thread_id:
            loaded = await self.memory.load_history(run.thread_id)
            query = "\n".join(m.text for m in input_messages if m.role == "user")
            recalled = await self.memory.recall(run.thread_id, query, exclude={m.id for m in loaded})
            loaded = recalled + loaded
        if self.memory is not None and run.thread_id:
            run.observations = await self.memory.get_observations(run.thread_id)
        run.list.add_history([*history, *loaded])
        run.list.add_input(input_messages)
        await self._save(run, run.list.input_delta())

    def _suspended(self, run: Run) -> bool:
        return any(p.suspended for p in run.pending.values())

    async def _call_model(self, run: Run) -> tuple[Message | None, str]:
        run.response_id = rid = new_id("resp")
        await self._event(run, AgentEvent.TURN_START, iteration=run.iteration, response_id=rid)
        budget = budget_of(run.model)
        if not budget.probed:  # (once per adapter: no coroutine a call)
            await probe_window(run.model, budget)
        if not budget.recalled and self.memory is not None:
            await recall_window(self.memory, run.model, budget)
        request, fit = await self._fitted_request(run, budget, rid)
        self._say_cut(run, rid, fit)
        try:
            return await self._stream_model(run, rid, request, fit, budget)
        except ModelContextExceeded as exc:
            if getattr(exc, "incomplete", False) or not exc.sent:
                raise
            # a window smaller than we knew: learn it (and keep it for later processes), compact, try once more
            learn_from_refusal(budget, exc, fit)
            await keep_window(self.memory, run.model, budget)
            before = fit.pressure
            compacted = await self._compact(run, budget, reason="refused", everything=True)
            request, fit = await self._fitted_request(run, budget, rid, compact=False)
            if compacted is not None:
                self._emit_compacted(run, rid, compacted, before, fit, "refused")
            self._say_cut(run, rid, fit)
            try:
                return await self._stream_model(run, rid, request, fit, budget)
            except ModelContextExceeded as again:
                if getattr(again, "incomplete", False) or not again.sent:
                    raise
                learn_from_refusal(budget, again, fit)
                raise ModelContextExceeded(
                    f"this thread is over {run.model.name!r}'s {format_tokens(budget.window)} token context "
                    f"even compacted ({again}): /compact [what to keep], or start a new thread (Ctrl+N)",
                    window=budget.window, requested=again.requested, status_code=again.status_code) from None

    async def _fitted_request(self, run: Run, budget: ContextBudget, rid: str, *,
                              compact: bool = True) -> tuple[ModelRequest, Fit]:
        """The next request, fitted to the model's window (``runtime/context.py``); past the
        threshold the oldest turns are compacted first (``runtime/compaction.py``)."""
        tools = run.tool_definitions(bool(getattr(run.model, "supports_strict_tools", False)))
        params = dict(self.model_params)
        fit = fit_request(await self._messages(run), tools, budget, params, run.sizes, epoch=run.list.wire_epoch)
        # (a guessed window, the 8 k default, is no reason to summarise: the server's refusal, if any,
        # teaches the real one; fit_request sends such a request as it is)
        over = budget.source != "default" and fit.pressure > self.context_threshold * fit.available
        limit = getattr(self.memory, "last_messages", None) if getattr(self.memory, "observe_overflow", False) else None
        full = isinstance(limit, int) and len(run.list.history_ids) >= limit  # (more may wait unread)
        if compact and (over or full):
            before = fit.pressure
            compacted = await self._compact(run, budget, reason="auto", fit=fit, half=full and not over)
            if compacted is not None:
                fit = fit_request(await self._messages(run), tools, budget, params, run.sizes,
                                  epoch=run.list.wire_epoch)
                self._emit_compacted(run, rid, compacted, before, fit, "auto")
        return ModelRequest(messages=fit.messages, tools=tools, params=params), fit

    async def _messages(self, run: Run) -> list[dict[str, Any]]:
        blocks: list[str] = []
        if self.memory is not None and self.memory.working_memory and run.thread_id:
            blocks.append(self.memory.working_memory_block(await self.memory.get_working_memory(run.thread_id)))
        if run.observations is not None:
            blocks.append(run.observations.block())
        return run.list.for_llm(self._instructions(), blocks,
                                replay_reasoning=bool(getattr(run.model, "replay_reasoning", False)))

    async def _compact(self, run: Run, budget: ContextBudget, *, reason: str, keep: str = "",
                       everything: bool = False, fit: Fit | None = None, half: bool = False,
                       ) -> CompactionResult | None:
        """Observe the oldest history turns of the run's context (all of them with ``everything``);
        None when there is nothing to compact (no memory, or no older turn in the context)."""
        if self.memory is None or not run.thread_id:
            return None
        history = [m for m in run.list.messages if m.id in run.list.history_ids
                   and m.created_at > (run.observations.through_at if run.observations else 0)]
        if half:  # the history holds as many messages as memory reads: the older half becomes notes
            turns = _turns(history)
            observed = [m for turn in turns[: len(turns) // 2] for m in turn]
        else:
            observed = history if everything or fit is None else _oldest_turns(history, budget, fit,
                                                                                  self.context_threshold)
        if not observed or (reason == "auto" and not half and replaced_chars(run.observations, observed, True)
                            <= run.kept_compaction):  # (notes of this run were longer: nothing to gain)
            return None
        run.emit(CompactingChunk(run.run_id, len(observed), reason))  # type: ignore[arg-type]
        notes, usage, error = await observe(run.model, budget, run.observations, observed, keep=keep,
                                            max_tokens=self.observer_max_tokens)
        result = settle(run.observations, new_observations(run.observations, notes, observed), observed,
                        stubbed=reason != "manual", usage=usage, error=error, must=half)
        run.kept_compaction = result.notes_chars if result.kept else 0
        if not result.kept:  # (kept: the notes are no smaller than the messages: nothing saved, nothing forgotten)
            await self.memory.save_observations(run.thread_id, result.observations)
            run.observations = result.observations
            run.list.forget({m.id for m in observed})
        if usage.requests:
            run.usage = run.usage + (self.prices.priced(run.model.name, usage) if self.prices and usage.cost is None
                                     else usage)
        log.info("%s %d messages of thread %s (%s)", "kept" if result.kept else "compacted", len(observed),
                 run.thread_id, reason)
        return result

    def _emit_compacted(self, run: Run, rid: str, result: CompactionResult, before: int, fit: Fit,
                        reason: str) -> None:
        run.emit(ContextCompactedChunk(run.run_id, rid, result.messages, result.runs, before, fit.pressure,
                                       fit.window, reason, result.error, kept=result.kept))  # type: ignore[arg-type]

    def _say_cut(self, run: Run, rid: str, fit: Fit) -> None:
        """The person's own message was cut to fit the window: said once a run (a row where it happened)."""
        if fit.user_cut is None or run.said_cut:
            return
        run.said_cut = True
        sent, written = fit.user_cut
        run.emit(ContextCompactedChunk(run.run_id, rid, 0, [], fit.pressure, fit.tokens, fit.window, "cut",
                                       None, sent, written))

    async def compact(self, thread_id: str, keep: str = "", *, model: ModelAdapter | None = None) -> tuple[
            CompactionResult | None, int, int, int]:
        """Compact the thread now (``/compact [what to keep]``): every message in its context becomes
        observations. Returns ``(result or None when there was nothing to compact, tokens before,
        tokens after, window)``; the tokens are the estimate of a request of the thread (instructions,
        observations, history and tools) before and after. Raises ``ModelError`` only for what the
        budget cannot survive (the observer's own failures fall back to extractive notes)."""
        if self.memory is None:
            raise ValueError(f"agent {self.name!r} has no memory: there is no stored thread to compact")
        run = Run(self.name, model or self.model, new_id("compact"), thread_id, 1, {})
        run.tools = self._tool_table(thread_id)
        run.observations = await self.memory.get_observations(thread_id)
        run.list.add_history(await self.memory.load_history(thread_id))
        budget = budget_of(run.model)
        await probe_window(run.model, budget)
        strict = bool(getattr(run.model, "supports_strict_tools", False))
        tools = [t.definition(strict=strict) for t in run.tools.values()]

        before = _estimate(await self._messages(run), tools, budget, run)
        result = await self._compact(run, budget, reason="manual", keep=keep, everything=True)
        after = _estimate(await self._messages(run), tools, budget, run)
        if result is not None and result.usage.requests:
            self.side_usage = self.side_usage + result.usage
        return result, before, after, budget.window

    async def _stream_model(self, run: Run, rid: str, request: ModelRequest, fit: Fit,
                            budget: ContextBudget) -> tuple[Message | None, str]:
        text: list[str] = []
        reasoning: list[str] = []
        pieces = {"text-delta": text, "reasoning-delta": reasoning}
        names: dict[int, tuple[str, str]] = {}
        finish: ModelFinish | None = None
        stream = run.model.stream(request, cancel=run.cancel)
        limits = run.limits
        limits.answer()
        counted = False  # the server said the request's tokens (llama-cpp-python's stream never does)
        try:
            async for chunk in stream:
                # every chunk is measured against the limits before anything of it is emitted
                if isinstance(chunk, ModelTextDelta | ModelReasoningDelta):
                    # the adapter's delta is the run's chunk: stamped and emitted as it is (a copy
                    # only when an adapter yields one object twice: it was stamped already)
                    piece = chunk.delta
                    limits.text(piece)
                    kind = chunk.type
                    pieces[kind].append(piece)
                    if chunk.run_id:
                        run.emit(_DELTA_CHUNKS[kind](run.run_id, rid, piece))
                    else:
                        chunk.run_id, chunk.response_id = run.run_id, rid
                        run.emit(chunk)
                elif isinstance(chunk, ModelToolCallDelta):
                    start = chunk.index not in names
                    if start:
                        names[chunk.index] = (chunk.id or new_id("call"), chunk.name or "")
                    call_id, call_name = names[chunk.index]
                    if chunk.name and not start:
                        call_name += chunk.name
                        names[chunk.index] = (call_id, call_name)
                    limits.tool_args(chunk.index, chunk.arguments, call_name)
                    run.emit(ToolCallDeltaChunk(run.run_id, rid, chunk.index, call_id, call_name, chunk.arguments, start))
                elif isinstance(chunk, ModelUsage):
                    usage = chunk.usage
                    if usage.cost is None and self.prices is not None:
                        usage = self.prices.priced(run.model.name, usage)
                    run.usage = run.usage + usage
                    if usage.input_tokens:
                        counted = True
                        run.last_input_tokens = int(usage.input_tokens)
                        budget.calibrate(fit.raw, int(usage.input_tokens))
                elif isinstance(chunk, ModelRetry):  # said, not silent (issue 39.5)
                    run.emit(RetryChunk(run.run_id, chunk.attempt, chunk.attempts, chunk.delay, chunk.reason))
                elif isinstance(chunk, ModelFinish):
                    for call in chunk.tool_calls:
                        if call.index not in names:  # an adapter that sends whole calls only
                            limits.tool_args(call.index, call.arguments, call.name)
                    finish = chunk
                    if chunk.model:
                        run.model_name = chunk.model
                if not isinstance(chunk, ModelTextDelta | ModelReasoningDelta | ModelToolCallDelta):
                    limits.tick()
        except ModelError as exc:
            if (text or reasoning or names) and not isinstance(exc, ModelCancelled):
                exc.incomplete = True  # type: ignore[attr-defined]  # what arrived stays shown, marked incomplete
            raise
        finally:
            await aclose(stream)
        if not counted:  # how full the context is, by our own estimate of what was sent
            run.last_input_tokens = fit.tokens
        if finish is None:
            from .errors import ModelStreamCut

            cut = ModelStreamCut(f"{limits.where} ended its stream without finishing (model {run.model.name!r}): "
                                 "what arrived is incomplete; try again")
            cut.incomplete = bool(text or reasoning or names)  # type: ignore[attr-defined]
            raise cut
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

    async def _persist(self, run: Run) -> None:
        await self._save(run, run.list.turn_delta())

    async def _save(self, run: Run, messages: Sequence[Message]) -> None:
        """Store the run's ``messages`` in its thread; a database locked by another program for a
        while (issue 39.1) holds them, tried again as the run's events are, instead of losing the turn."""
        memory, thread_id = self.memory, run.thread_id
        if memory is not None and thread_id:
            await retry_while_unavailable(lambda: memory.save_messages(thread_id, messages, run_id=run.run_id),
                                          what=f"run {run.run_id}: saving its messages")

    def _result(self, run: Run, status: str) -> RunResult:
        responses = run.list.response_delta()
        last = next((m for m in reversed(responses) if m.role == "assistant" and m.text), None)
        return RunResult(
            run_id=run.run_id, agent=self.name, thread_id=run.thread_id, status=status,  # type: ignore[arg-type]
            finish_reason=run.finish_reason, text=last.text if last else "", messages=responses,
            usage=run.usage, total_usage=run.total_usage(), sub_agent_usage=list(run.sub_usage),
            pending_suspend=[p for p in run.pending.values() if p.suspended], error=run.error,
            status_code=run.status_code, model=run.model_name, context_tokens=run.last_input_tokens,
        )

    def _finish_chunk(self, run: Run, suspended: bool = False) -> FinishChunk:
        return FinishChunk(
            run.run_id, run.rid(), run.finish_reason or "other", run.usage,  # type: ignore[arg-type]
            run.total_usage(), run.model_name, list(run.sub_usage), suspended,
        )

    async def _suspend(self, run: Run) -> None:
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

    async def _complete(self, run: Run) -> None:
        run.status = "success"
        await self._persist(run)
        if run.checkpointed:
            await self.checkpoints.complete(run.run_id)
        run.result = self._result(run, "success")
        run.emit(self._finish_chunk(run))
        # (the run's messages dumped only for a listener: a dump per message of the turn, once a run)
        listened = self._hub.has(AgentEvent.AGENT_END)
        await self._event(run, AgentEvent.AGENT_END, **(
            {"messages": [m.model_dump(mode="json") for m in run.result.messages]} if listened else {}))
        self._maybe_title(run)

    async def _cancelled(self, run: Run) -> None:
        run.status = "cancelled"
        run.finish_reason = "error"
        run.error = "aborted"
        await self._wind_up(run, ABORTED_RESULT, "aborted")
        run.result = self._result(run, "cancelled")
        run.emit(ErrorChunk(run.run_id, run.rid(), "aborted", cancelled=True))

    async def _failed(self, run: Run, exc: Exception) -> None:
        run.status = "failed"
        run.finish_reason = "error"
        run.error = str(exc) or type(exc).__name__
        run.status_code = getattr(exc, "status_code", None)
        if not isinstance(exc, ModelError | RunStopped):
            log.exception("agent %s run %s failed", self.name, run.run_id, exc_info=exc)
        await self._wind_up(run, FAILED_RESULT, "failed")
        run.result = self._result(run, "failed")
        await self._event(run, AgentEvent.ERROR, message=run.error, error=exc)
        run.emit(ErrorChunk(run.run_id, run.rid(), run.error, status_code=run.status_code, exception=exc))

    async def _wind_up(self, run: Run, unfinished: str, what: str) -> None:
        """A stopped run's open calls settled, its batch closed, the run stored and its checkpoint
        ended; a failure here is logged (what the run says is how it ended)."""
        try:
            self._settle_unfinished(run, unfinished)
            await self._close_batch(run, turn_end=False)
            await self._persist(run)
            if run.checkpointed:
                await self.checkpoints.complete(run.run_id)
        except Exception:
            log.exception("cleaning up %s run %s failed", what, run.run_id)

    # -- titles --------------------------------------------------------------------------------------

    def _maybe_title(self, run: Run) -> None:
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




def _turns(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped into turns (each from a user message to the next)."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def _oldest_turns(history: list[Message], budget: ContextBudget, fit: Fit, threshold: float) -> list[Message]:
    """The history turns to observe: all but the newest, kept while they take at most half of what
    the threshold leaves beside the instructions, tools and the current turn (big tool results
    counted as their stubs, as they are sent)."""
    from .context import STUB_OVER, STUB_SIZE, raw_tokens

    turns = _turns(history)
    room = max(0.0, threshold * fit.available - (fit.pressure - fit.history)) / 2
    kept = 0
    used = 0.0
    for turn in reversed(turns):
        chars = sum(STUB_SIZE if m.role == "tool" and len(m.text) > STUB_OVER else len(m.text) + 60 for m in turn)
        size = budget.tokens(raw_tokens(chars, len(turn)))
        if used + size > room:
            break
        used += size
        kept += 1
    observed = turns[: len(turns) - kept]
    return [m for turn in observed for m in turn]


def _estimate(messages: list[dict[str, Any]], tools: list[dict[str, Any]], budget: ContextBudget, run: Run) -> int:
    from .context import raw_tokens

    sizes, cum, *_ = run.sizes.measure(messages)
    return budget.tokens(raw_tokens(run.sizes.tools_chars(tools) + (sizes[0] if sizes else 0) + cum[-1], len(messages)))


__all__ = [
    "ABORTED_RESULT", "FAILED_RESULT", "REPEATED_FAILURES", "Agent", "AgentInput", "AgentStream", "RunStopped",
    "normalize_input", "truncate",
]
