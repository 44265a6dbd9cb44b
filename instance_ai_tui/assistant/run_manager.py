"""The run manager: one run per thread, from ``run-start`` to ``run-finish``.

* ``start`` refuses a thread that has a run active or suspended (``RunActive``), records the run
  (``runs`` table, status ``active``), emits ``run-start`` (payload ``messageId``,
  ``messageGroupId``, ``userMessage``) and drives the orchestrator's stream in a task.
* The orchestrator's agentId is ``orchestrator-<runId>`` (released n8n's convention), so every
  run's tree has a distinct root id; sub-agents have their own ids with ``parentId``.
* A run whose orchestrator suspends becomes ``suspended``: one ``confirmation-request`` per
  suspended call (a sub-agent's call included), no ``run-finish``. The checkpoint lives in the
  store, so ``confirm`` works after a restart too; it resumes the same run (no new ``run-start``).
* ``cancel`` is idempotent: it aborts the orchestrator (which aborts its sub-agents), waits for
  them to stop, then ends the run with ``run-finish {cancelled, user_cancelled}``; a suspended
  run is ended the same way. Cancelling a finished run does nothing.
* A failed run ends with an ``error`` event and ``run-finish {error, reason}``.
* After ``run-finish`` the run's events are folded into its agent tree, stored as a snapshot.
* Usage (``assistant.usage``): the run's tokens and cost — orchestrator, every sub-agent, the
  title — are kept with the run record as it goes (so a suspended run keeps them over a restart),
  added to the thread's ``metadata.usage`` and published as ``run-finish`` ``payload.usage``.
* Several processes on one store: the ``coordinator`` (``assistant.coordination``; in-process
  ``LocalCoordinator`` by default, ``RedisCoordinator`` for ``serve --redis``) holds the thread
  while a run starts, runs or resumes, routes ``cancel``/``confirm`` of runs held elsewhere, and
  decides which unfinished runs found at start are orphans (swept or adopted).
* ``sweep`` (at start): runs a crash left ``active`` get ``tool-interrupted`` for their in-flight
  tool calls and ``run-finish {interrupted, crash_interrupted}``. ``shutdown`` ends active runs
  with ``run-finish {cancelled, service_shutdown}`` and keeps suspended ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..bus.base import EventBus
from ..protocol.api import ConfirmBody, ConfirmResponse
from ..protocol.events import (
    ConfirmationPayload,
    ConfirmationRequestEvent,
    Event,
    RunStartEvent,
    RunStartPayload,
    TextBlockEvent,
    TextPayload,
    ThreadTitlePayload,
    ThreadTitleUpdatedEvent,
    ToolCallEvent,
    ToolCallPayload,
)
from ..protocol.reducer import RunReducer, fold_json
from ..runtime.agent import Agent, AgentStream
from ..runtime.context import budget_of
from ..runtime.errors import (
    CheckpointNotFound,
    InvalidResumeData,
    ModelTimeout,
    ModelUnreachable,
    ResumeConflict,
    RuntimeApiError,
)
from ..runtime.memory import generate_title, is_substantial
from ..runtime.messages import Message
from ..runtime.model import ModelAdapter
from ..runtime.usage import Usage
from ..store.base import RunRecord, Store, StoredEvent
from ..store.errors import is_unavailable, waiting_words
from .approvals import load_allowances, remember_allowance
from .confirmations import (
    DEFAULT_TTL_SECONDS,
    PendingConfirmation,
    always_allow,
    approval_decision,
    build_request,
    card_fields,
    check_fits,
    resume_data,
)
from .context import AgentScope, RunContext, Services
from .coordination import LocalCoordinator, RunCoordinator
from .emitter import RunEmitter, agent_completed, error_event, status_update, tool_error
from .errors import (
    FAILED_REASON,
    ConfirmationExpired,
    ConfirmationNotFound,
    InvalidRequest,
    RunActive,
    describe_failure,
)
from .ids import new_message_group_id, new_message_id, new_request_id, new_run_id, orchestrator_id
from .mapping import ChunkMapper, Suspension, compacted_event
from .run_recovery import RunRecovery
from .run_table import TITLE_USAGE_KEY, ActiveRun, RunTable
from .usage import USAGE_KEY, add_run_to_thread, usage_to_wire

log = logging.getLogger(__name__)

BUSY_MESSAGE = "The agent is still working on the previous message in this thread (cancel it or answer its question first)."


#: thread metadata: the title this assistant gave the thread (a rename by the person differs from it),
#: and that its next message's words should title it again (a rewind to its first message)
AUTO_TITLE_KEY = "autoTitle"
RETITLE_KEY = "retitle"


def auto_titled(metadata: dict[str, Any], title: str) -> dict[str, Any]:
    """``metadata`` with ``title`` recorded as the assistant's own, and no retitle pending."""
    out = {k: v for k, v in metadata.items() if k != RETITLE_KEY}
    out[AUTO_TITLE_KEY] = title
    return out


@dataclass
class ManagerOptions:
    confirmation_ttl: float = DEFAULT_TTL_SECONDS
    generate_titles: bool = True
    title_timeout: float = 15.0
    owner: str | None = None


class RunManager:
    """Runs of every thread of one assistant service."""

    def __init__(self, store: Store, bus: EventBus, services: Services, orchestrator: Agent, *,
                 title_model: ModelAdapter | None = None, options: ManagerOptions | None = None,
                 coordinator: RunCoordinator | None = None) -> None:
        self.store = store
        self.bus = bus
        self.services = services
        self.orchestrator = orchestrator
        self.title_model = title_model
        self.options = options or ManagerOptions()
        #: who else runs this store's threads (``assistant.coordination``); sets ``options.owner``
        self.coordinator: RunCoordinator = coordinator or LocalCoordinator(self.options.owner)
        self.options.owner = self.coordinator.instance_id
        #: the unfinished runs, shared with recovery (``assistant.run_table``)
        self.table = RunTable()
        self.recovery = RunRecovery(self.table, self, store=store, bus=bus, services=services,
                                    coordinator=self.coordinator)

    # ----------------------------------------------------------------- queries
    def live(self, thread_id: str) -> ActiveRun | None:
        return self.table.get(thread_id)

    def storage_wait(self, thread_id: str) -> str:
        """What the thread's run waits for in the storage (its events held: "the database is locked
        by another program (PID 4242)"); "" when nothing, or no run of this process (issue 39.1)."""
        run = self.table.runs.get(thread_id)
        return run.ctx.emitter.held if run is not None else ""

    # ----------------------------------------------------------------- start
    async def start(self, thread_id: str, text: str, *, model_text: str | None = None,
                    attachments: list[dict[str, Any]] | None = None) -> str:
        """Start a run for the message ``text`` (as typed; the model reads ``model_text`` when given:
        the message with its ``@server:uri`` attachments, listed in ``run-start``'s ``attachments``)."""
        if not text or not text.strip():
            raise InvalidRequest("the message must not be empty")
        async with self.table.lock(thread_id):
            run = await self._open(thread_id, text, attachments)
            ctx = run.ctx
            try:
                await self._start_title(run)
                scope = self._scope(run)
                stream = self.orchestrator.stream(Message.user(model_text or text, id=run.message_id),
                                                  thread_id=thread_id, run_id=ctx.run_id, extra=scope.extra(),
                                                  model=ctx.model)
            except BaseException:
                log.exception("run %s: starting failed", ctx.run_id)
                ctx.emitter.emit(error_event(ctx.orchestrator_id, "The run could not be started."))
                await self._finish(run, "error", FAILED_REASON)
                raise
            self._drive(run, scope, stream)
            return ctx.run_id

    async def compact(self, thread_id: str, keep: str = "") -> str:
        """``/compact [what to keep]``: a run of its own (the thread's one at a time, so 409 while another
        is active or suspended) that turns every message of the thread's context into observations
        (``runtime/compaction.py``), shows a ``context-compacted`` row and ends with the context's new
        size in its usage (``contextTokens``: the status line's context share falls)."""
        keep = " ".join((keep or "").split())[:500]
        async with self.table.lock(thread_id):
            run = await self._open(thread_id, "/compact" + (f" {keep}" if keep else ""))
        run.task = asyncio.get_running_loop().create_task(self._compact(run, keep), name=f"compact-{run.run_id}")
        return run.run_id

    async def _compact(self, run: ActiveRun, keep: str) -> None:
        ctx = run.ctx
        compact = getattr(self.orchestrator, "compact", None)
        try:
            if compact is None:
                raise InvalidRequest("this agent keeps no thread memory to compact")
            # the observer's model call may take as long as an answer: said, with its clock (run_clock.py)
            ctx.emitter.emit(status_update(ctx.orchestrator_id, "compacting the thread's context into notes"))
            result, before, after, window = await compact(ctx.thread_id, keep, model=ctx.model)
            ctx.emitter.emit(status_update(ctx.orchestrator_id, ""))
        except asyncio.CancelledError:
            await self._finish(run, "cancelled", run.cancel_reason or "service_shutdown")
            raise
        except Exception as exc:  # noqa: BLE001 - the model's or the store's failure, in their words
            content, reason, code = describe_failure(exc, str(exc) or "compacting failed", getattr(exc, "status_code",
                                                                                                    None))
            ctx.emitter.emit(error_event(ctx.orchestrator_id, content, getattr(exc, "status_code", None), code))
            await self._finish(run, "error", reason)
            return
        if result is None:
            ctx.emitter.emit(TextBlockEvent(agent_id=ctx.orchestrator_id, payload=TextPayload(
                text="Nothing to compact: the context holds no earlier messages.")))
        else:
            ctx.emitter.emit(compacted_event(ctx.orchestrator_id, result.messages, result.runs, before, after, window,
                                             "manual", result.error, kept=result.kept))
            run.usage = result.usage
        run.context_tokens, run.context_window = after, window
        await self._finish(run, "completed")

    async def _open(self, thread_id: str, text: str, attachments: list[dict[str, Any]] | None = None) -> ActiveRun:
        """A new run of the thread (under its lock): refused while another is active or suspended; its
        record stored and ``run-start`` published before this returns."""
        await self._refuse_if_busy(thread_id)
        run_id, group_id, message_id = new_run_id(), new_message_group_id(), new_message_id()
        await self._hold_thread(thread_id, run_id)
        try:
            if await self.store.get_thread(thread_id) is None:
                await self.store.create_thread(thread_id)
            ctx = RunContext(
                thread_id=thread_id, run_id=run_id, message_group_id=group_id,
                orchestrator_id=orchestrator_id(run_id), emitter=RunEmitter(self.bus, thread_id, run_id),
                services=self.services, allowances=await load_allowances(self.store, thread_id),
                model=await self.recovery.thread_model(thread_id),
            )
            record = RunRecord(run_id=run_id, thread_id=thread_id, status="active", message_group_id=group_id,
                               owner=self.options.owner, started_at=datetime.now(UTC),
                               data={"messageId": message_id, "userMessage": text,
                                     **({"attachments": attachments} if attachments else {})})
            await self.store.upsert_run(record)
        except BaseException:
            await self.coordinator.release(thread_id, run_id, finished=True)
            raise
        run = ActiveRun(ctx, message_id, text, record)
        run.finished = asyncio.get_running_loop().create_future()
        self.table.runs[thread_id] = run
        try:
            extra: dict[str, Any] = {"attachments": attachments} if attachments else {}
            ctx.emitter.emit(RunStartEvent(agent_id=ctx.orchestrator_id, payload=RunStartPayload(
                message_id=message_id, message_group_id=group_id, userMessage=text, **extra)))
            await ctx.emitter.flush()  # run-start is stored before send() returns
            await self._save_record(run, "active")  # with firstEventId: history and sweeps read from there
        except BaseException:
            log.exception("run %s: starting failed", run_id)
            ctx.emitter.emit(error_event(ctx.orchestrator_id, "The run could not be started."))
            await self._finish(run, "error", FAILED_REASON)
            raise
        return run

    async def _refuse_if_busy(self, thread_id: str) -> None:
        run = self.table.runs.get(thread_id)
        if run is not None and run.finishing and run.finished is not None:
            await asyncio.shield(run.finished)  # ending right now: wait for run-finish
            run = self.table.runs.get(thread_id)
        if run is not None:
            if run.status == "suspended" and run.confirmations and all(c.expired() for c in run.confirmations.values()):
                await self.end_suspended(run, "cancelled", "timeout")
            else:
                raise RunActive(BUSY_MESSAGE)
        for record in await self.store.list_runs(thread_id=thread_id, status=["active", "suspended"]):
            # left by another process that is still running it (or by one we have not swept)
            raise RunActive(BUSY_MESSAGE + f" (run {record.run_id})")

    async def _hold_thread(self, thread_id: str, run_id: str) -> None:
        """Take the thread for a new run across processes (the coordinator's lock), then check
        again that no run started or suspended meanwhile; ``RunActive`` otherwise."""
        if not await self.coordinator.acquire(thread_id, run_id):
            raise RunActive(BUSY_MESSAGE)
        try:
            await self._refuse_if_busy(thread_id)
        except BaseException:
            await self.coordinator.release(thread_id, run_id, finished=True)
            raise

    def _scope(self, run: ActiveRun) -> AgentScope:
        mapper = ChunkMapper(run.ctx.emitter, run.ctx.orchestrator_id)
        return AgentScope(run.ctx, run.ctx.orchestrator_id, "orchestrator", mapper)

    def _drive(self, run: ActiveRun, scope: AgentScope, stream: AgentStream) -> None:
        run.status = "active"
        run.stream = stream
        run.task = asyncio.get_running_loop().create_task(self._follow(run, scope, stream), name=f"run-{run.run_id}")

    async def _follow(self, run: ActiveRun, scope: AgentScope, stream: AgentStream) -> None:
        mapper = scope.mapper
        try:
            async for chunk in stream:
                mapper.handle(chunk)
            result = await stream.result()
        except asyncio.CancelledError:
            stream.abort()
            if stream.final is not None:
                run.usage = stream.final.total_usage
            await self._finish(run, "cancelled", run.cancel_reason or "service_shutdown")
            raise
        except Exception as exc:  # a bug of ours: the run still ends properly
            log.exception("run %s: following the orchestrator failed", run.run_id)
            run.ctx.emitter.emit(error_event(run.ctx.orchestrator_id, f"Internal error: {exc}"))
            await self._finish(run, "error", FAILED_REASON)
            return
        # the orchestrator's usage is restored from its checkpoint on resume: this is the run's total
        run.usage = result.total_usage
        run.context_tokens = result.context_tokens or run.context_tokens
        budget = budget_of(run.ctx.model or self.services.model)
        run.context_window = budget.window if budget.source != "default" else 0  # (a guess is not shown)
        try:
            if result.status == "suspended" and (mapper.suspensions or run.confirmations):
                # new suspensions, or (after one of several answers) the others still waiting
                await self._suspend(run, mapper.suspensions)
            elif result.status == "success":
                await self._finish(run, "completed")
            elif result.status == "cancelled":
                await self._finish(run, "cancelled", run.cancel_reason or "user_cancelled")
            else:
                cause = mapper.error.exception if mapper.error is not None else None
                # the words and class come from where the failure was raised (assistant.errors)
                content, reason, code = describe_failure(cause, result.error or "the run failed", result.status_code)
                run.ctx.emitter.emit(error_event(run.ctx.orchestrator_id, content, result.status_code, code))
                await self._finish(run, "error", reason)
        except Exception:
            log.exception("run %s: ending the run failed", run.run_id)

    # ----------------------------------------------------------------- titles
    async def _start_title(self, run: ActiveRun) -> None:
        """A thread without a title gets one from the person's first words at once (greetings, failed
        runs and models that cannot title included); the title model refines it in the background
        unless someone renamed the thread meanwhile."""
        thread = await self.store.get_thread(run.thread_id)
        if thread is None or (thread.title and not thread.metadata.get(RETITLE_KEY)):
            return  # (a rewind to the first message asks for a new title: ``service.rewind``)
        provisional = first_words_title(run.user_text)
        if provisional:
            await self.store.update_thread(run.thread_id, title=provisional,
                                           metadata=auto_titled(thread.metadata, provisional))
            run.ctx.emitter.emit(ThreadTitleUpdatedEvent(agent_id=run.ctx.orchestrator_id,
                                                         payload=ThreadTitlePayload(title=provisional)))
        if not self.options.generate_titles or self.title_model is None or not is_substantial(run.user_text):
            return
        model = self.title_model

        async def job() -> None:
            try:
                title, usage = await generate_title(model, run.user_text)
                run.title_usage = usage
            except Exception as exc:  # noqa: BLE001 - a title is optional: any failure leaves the thread untitled
                # a model server that cannot be reached (or times out) fails the run too, which says so: the
                # title's failure is a detail then (one line on run's stderr, not two)
                level = logging.INFO if isinstance(exc, ModelUnreachable | ModelTimeout) else logging.WARNING
                log.log(level, "title generation for thread %s failed: %s", run.thread_id, exc)
                return
            if not title or title == provisional:
                return
            current = await self.store.get_thread(run.thread_id)
            if current is None or (current.title or "") != provisional:
                return  # renamed meanwhile (or gone): the person's title stays
            await self.store.update_thread(run.thread_id, title=title, metadata=auto_titled(current.metadata, title))
            run.ctx.emitter.emit(ThreadTitleUpdatedEvent(agent_id=run.ctx.orchestrator_id,
                                                         payload=ThreadTitlePayload(title=title)))

        run.title_task = asyncio.get_running_loop().create_task(job(), name=f"title-{run.run_id}")

    async def _await_title(self, run: ActiveRun) -> None:
        task, run.title_task = run.title_task, None
        if task is None:
            return
        if task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self.options.title_timeout)
        except TimeoutError:
            task.cancel()
        except Exception:  # noqa: BLE001 - the title task logs its own failure; the run ends either way
            pass

    # ----------------------------------------------------------------- suspension
    async def _suspend(self, run: ActiveRun, suspensions: list[Suspension]) -> None:
        """Record the confirmations with the run first, then publish them: a crash in between
        leaves a suspended run whose missing requests are published again on reload."""
        tools = {t.name: t for t in self.orchestrator.tools}
        now = time.time()
        fresh: list[PendingConfirmation] = []
        for suspension in suspensions:
            payload = suspension.payload if isinstance(suspension.payload, dict) else {}
            target = payload.get("target") or {}
            card = card_fields(suspension, tools)
            pending = PendingConfirmation(
                request_id=new_request_id(), thread_id=run.thread_id, run_id=run.run_id,
                agent_id=target.get("agentId") or suspension.agent_id,
                tool_call_id=target.get("toolCallId") or suspension.tool_call_id,
                tool_name=target.get("toolName") or suspension.tool_name,
                input_type=str(card.get("inputType") or "approval"),
                resume_tool_call_id=suspension.tool_call_id,
                resume_kind="approval" if suspension.kind == "approval" else "suspend",
                sub_run_id=(payload.get("delegate") or {}).get("subRunId"),
                created_at=now, expires_at=now + self.options.confirmation_ttl,
                response_id=suspension.response_id if not target else None,
            )
            pending.request = build_request(pending, suspension, card)
            run.confirmations[pending.request_id] = pending
            self.table.by_request[pending.request_id] = run.thread_id
            fresh.append(pending)
        run.status = "suspended"
        run.stream = None
        await run.ctx.emitter.flush()
        await self._save_record(run, "suspended")
        await self.coordinator.release(run.thread_id, run.run_id, finished=False)  # the record keeps it busy
        for pending in fresh:
            self.publish_request(run, pending)
        await run.ctx.emitter.flush()

    @staticmethod
    def publish_request(run: ActiveRun, pending: PendingConfirmation) -> None:
        run.ctx.emitter.emit(ConfirmationRequestEvent(
            agent_id=pending.agent_id, response_id=pending.response_id or None,
            payload=ConfirmationPayload.model_validate(pending.request),
        ))

    async def _save_record(self, run: ActiveRun, status: str, finished: bool = False) -> None:
        record = run.record
        record.status = status
        record.data = {
            **record.data,
            "confirmations": {rid: c.model_dump(mode="json") for rid, c in run.confirmations.items()},
            "tasks": run.ctx.tasks,
        }
        if not run.usage.is_empty:
            record.data[USAGE_KEY] = usage_to_wire(run.usage)
        if not run.title_usage.is_empty:
            record.data[TITLE_USAGE_KEY] = usage_to_wire(run.title_usage)
        elif finished:
            record.data.pop(TITLE_USAGE_KEY, None)  # in ``usage`` now
        if run.ctx.emitter.first_id is not None:
            record.data["firstEventId"] = run.ctx.emitter.first_id
        if finished:
            record.finished_at = datetime.now(UTC)
        await self.store.upsert_run(record)

    # ----------------------------------------------------------------- confirm
    async def confirm(self, request_id: str, body: ConfirmBody, *, route: bool = True) -> ConfirmResponse:
        """Resume the run waiting for ``request_id``; with ``route``, also one another server process holds."""
        thread_id = self.table.by_request.get(request_id)
        run = self.table.runs.get(thread_id) if thread_id else None
        if run is None or request_id not in run.confirmations:
            if route:
                return await self.coordinator.confirm_elsewhere(request_id, body)
            raise ConfirmationNotFound(f"no pending confirmation {request_id!r} (answered, cancelled or unknown)")
        async with self.table.lock(run.thread_id):
            if run.task is not None and not run.task.done():
                # another answer resumed the run; it suspends again (or ends) before this one applies
                await asyncio.shield(run.task)
            if self.table.runs.get(run.thread_id) is not run or request_id not in run.confirmations:
                raise ConfirmationNotFound(f"confirmation {request_id!r} is no longer pending (the run ended)")
            pending = run.confirmations[request_id]
            if pending.expired():
                run.confirmations.pop(request_id, None)
                self.table.by_request.pop(request_id, None)
                if not run.confirmations or all(c.expired() for c in run.confirmations.values()):
                    await self.end_suspended(run, "cancelled", "timeout")
                else:
                    await self._save_record(run, "suspended")
                raise ConfirmationExpired(f"confirmation {request_id!r} expired")
            check_fits(body, pending)
            data = resume_data(body)
            if always_allow(body):
                await remember_allowance(self.store, run.thread_id, pending.tool_name, run.ctx.allowances)
            scope = self._scope(run)
            scope.mapper.mark_announced(pending.resume_tool_call_id)
            if not await self.coordinator.acquire(run.thread_id, run.run_id):
                raise RunActive(BUSY_MESSAGE)
            try:
                try:
                    answer = approval_decision(data) if pending.resume_kind == "approval" else data
                    stream = await self.orchestrator.resume(run.run_id, pending.resume_tool_call_id, answer,
                                                            extra=scope.extra(), model=run.ctx.model)
                except InvalidResumeData as exc:
                    raise InvalidRequest(str(exc)) from None
                except ResumeConflict:
                    raise ConfirmationNotFound(f"confirmation {request_id!r} was already answered") from None
                except CheckpointNotFound as exc:
                    await self.end_suspended(run, "error", "The paused run could not be resumed (its state is gone).")
                    raise ConfirmationExpired(f"confirmation {request_id!r} can no longer be resumed: {exc}") from None
                except RuntimeApiError as exc:
                    raise ConfirmationNotFound(f"confirmation {request_id!r} cannot be resumed: {exc}") from None
            except BaseException:
                await self.coordinator.release(run.thread_id, run.run_id, finished=False)
                raise
            run.confirmations.pop(request_id, None)
            self.table.by_request.pop(request_id, None)
            await self._save_record(run, "active")
            # the call's card counts its running time from here, not from before the question
            run.ctx.emitter.emit(ToolCallEvent(agent_id=pending.agent_id, payload=ToolCallPayload.model_validate(
                {"toolCallId": pending.tool_call_id, "toolName": pending.tool_name, "answered": True})))
            self._drive(run, scope, stream)
            return ConfirmResponse(ok=True, run_id=run.run_id)

    # ----------------------------------------------------------------- cancel / finish
    async def cancel(self, thread_id: str, reason: str = "user_cancelled", *, route: bool = True) -> bool:
        """End the thread's run as cancelled; False when nothing was running (idempotent).
        With ``route``, a run of another process is cancelled there."""
        run = self.table.runs.get(thread_id)
        if run is None and self.table.locked(thread_id):
            # a POST chat is starting a run right now: wait for it and cancel what it started
            # (answering "ok" while the run went on was the race of issue 15)
            async with self.table.lock(thread_id):
                pass
            run = self.table.runs.get(thread_id)
        if run is None:
            return await self.coordinator.cancel_elsewhere(thread_id, reason) if route else False
        run.cancel_reason = run.cancel_reason or reason
        while self.table.runs.get(thread_id) is run:
            task = run.task
            if task is not None and not task.done():
                if run.stream is not None:
                    run.stream.abort()
                try:
                    await asyncio.shield(task)
                except asyncio.CancelledError:
                    if task.done():
                        continue
                    raise
                except Exception:  # noqa: BLE001 - stopping a sub-agent: its own failure is already reported
                    pass
                continue
            async with self.table.lock(thread_id):
                if self.table.runs.get(thread_id) is not run:
                    break
                if run.task is not None and not run.task.done():
                    continue  # a confirm resumed it meanwhile: abort that
                if run.status == "suspended":
                    await self.end_suspended(run, "cancelled", run.cancel_reason or reason)
                break
        assert run.finished is not None
        return run.finished.done() and run.finished.result() == "cancelled"

    async def end_suspended(self, run: ActiveRun, status: str, reason: str) -> None:
        """Finish a suspended run: close its pending calls and checkpoints, then ``run-finish``."""
        emitter = run.ctx.emitter
        for pending in run.confirmations.values():
            self.table.by_request.pop(pending.request_id, None)
            emitter.emit(tool_error(pending.agent_id, pending.tool_call_id, _cancelled_text(reason)))
            if pending.agent_id != run.ctx.orchestrator_id:
                emitter.emit(agent_completed(pending.agent_id, "", "cancelled", error=_cancelled_text(reason)))
                emitter.emit(tool_error(run.ctx.orchestrator_id, pending.resume_tool_call_id, _cancelled_text(reason)))
            if pending.sub_run_id:
                await self.complete_checkpoint(pending.sub_run_id)
        run.confirmations.clear()
        await self.complete_checkpoint(run.run_id)
        await self._finish(run, status, reason)

    async def complete_checkpoint(self, run_id: str) -> None:
        try:
            await self.services.checkpoints.complete(run_id)
        except Exception as exc:  # noqa: BLE001 - the checkpoint expires by itself; logged
            log.warning("completing checkpoint %s failed: %s", run_id, exc)

    async def _finish(self, run: ActiveRun, status: str, reason: str | None = None) -> None:
        """End the run: its snapshot is saved, then ``run-finish`` is stored, then the record says
        finished, then ``run-finish`` is delivered (so whoever sees it finds the run finished),
        then the thread is free (:meth:`publish_finish`).

        The record changes only once ``run-finish`` is in the log, so a crash at any point
        leaves either an ``active`` record whose log lacks ``run-finish`` (the sweep closes the
        run) or one whose log has it (the sweep trusts the log: it finishes the record from it
        and publishes nothing)."""
        if run.finishing:
            return
        run.finishing = True
        try:
            if status == "completed":
                await self._await_title(run)
            elif run.title_task is not None:
                run.title_task.cancel()
            emitter = run.ctx.emitter
            await emitter.flush()
            run.usage, run.title_usage = run.usage + run.title_usage, Usage()
            usage = await self.count_usage(run.thread_id, run.run_id, run.usage, run.context_tokens,
                                           run.context_window)
            finish_event = emitter.run_finish(run.ctx.orchestrator_id, status, reason, **usage)
            for request_id in list(run.confirmations):
                self.table.by_request.pop(request_id, None)
            run.confirmations.clear()
            for task in list(run.ctx.background.values()):
                if task.status == "running":
                    run.ctx.background[task.agent_id] = task.model_copy(update={"status": "cancelled"})
            try:
                await self.save_snapshot(run.thread_id, run.run_id, run.record.data.get("firstEventId"), finish_event)
            except Exception:
                log.exception("run %s: saving the finished run's snapshot failed", run.run_id)

            async def record() -> None:
                try:
                    await self._save_record(run, status, finished=True)
                except Exception:
                    log.exception("run %s: recording the finished run failed", run.run_id)

            await self.publish_finish(emitter, finish_event, record)
        finally:
            if self.table.runs.get(run.thread_id) is run:
                del self.table.runs[run.thread_id]
            await self.coordinator.release(run.thread_id, run.run_id, finished=True)
            await self._coalesce(run)  # the thread is free already: a new run does not wait for this
            if run.finished is not None and not run.finished.done():
                run.finished.set_result(status)

    async def _coalesce(self, run: ActiveRun) -> None:
        """Store the finished run as n8n does: one block per answer segment, not a delta per token
        (``store.coalesce``). Best effort: the deltas are a correct log too."""
        first = run.record.data.get("firstEventId")
        try:
            after = max(0, int(first) - 1) if first is not None else 0
            await self.store.coalesce_run(run.thread_id, run.run_id, after)
        except Exception:
            log.exception("run %s: coalescing its stored deltas failed", run.run_id)

    async def publish_finish(self, emitter: RunEmitter, finish_event: Event, record: Any) -> None:
        """Store ``run-finish``, then ``await record()``, then deliver it: one step as far as a
        crash is concerned (see ``_finish``). If it cannot be stored, the record is written anyway
        (the thread must not stay busy) and the failure logged."""
        await emitter.flush()
        emitter.close()  # run-finish is the run's last event
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + emitter.retry_for
        attempt = 0
        while True:
            try:
                await self.bus.publish_many(emitter.thread_id, [finish_event],
                                            on_stored=lambda _stored: record())
                emitter.held = ""
                return
            except Exception as exc:
                # the storage is down for now: hold the run's real end and retry, so the run does
                # not stay "active" and get swept later as if its process had crashed (issue 26)
                if is_unavailable(exc, from_storage=True) and loop.time() < give_up_at:
                    emitter.held = waiting_words(exc)
                    attempt += 1
                    await asyncio.sleep(min(1.0, 0.05 * 2**attempt))
                    continue
                emitter.held = ""
                log.exception("run %s: storing its run-finish failed", emitter.run_id)
                await record()
                return

    async def count_usage(self, thread_id: str, run_id: str, usage: Usage, context_tokens: int = 0,
                          context_window: int = 0) -> dict[str, Any]:
        """Add a finishing run's usage to its thread (before ``run-finish`` is published, so a
        client reading the thread after it sees the total); the ``run-finish`` payload fields
        (``usage.contextTokens``: how full the model's context was at the run's last request, of
        ``usage.contextWindow``: the window the runtime knows for the model now)."""
        if usage.is_empty and context_tokens <= 0:
            return {}
        try:
            await add_run_to_thread(self.store, thread_id, run_id, usage, context_tokens, context_window)
        except Exception:
            log.exception("run %s: adding its usage to thread %s failed", run_id, thread_id)
        wire = usage_to_wire(usage)
        if context_tokens > 0:
            wire["contextTokens"] = int(context_tokens)
            if context_window > 0:
                wire["contextWindow"] = int(context_window)
        return {"usage": wire}

    async def save_snapshot(self, thread_id: str, run_id: str, first_id: int | None = None,
                            last: Event | None = None) -> None:
        """Fold the run's stored events (and ``last``, its not yet published ``run-finish``).
        The fold runs in a worker thread: a long answer is thousands of events (50 ms for a
        150-item list), and in embedded mode this event loop is the app's."""
        events = [e.json for e in await self.run_events(thread_id, run_id, first_id)]

        def fold() -> dict[str, Any]:
            reducer = fold_json(RunReducer(), events)
            if last is not None:
                reducer.apply(last)
            return reducer.tree().to_wire()

        await self.store.save_snapshot(thread_id, run_id, await asyncio.to_thread(fold))

    async def run_events(self, thread_id: str, run_id: str, first_id: int | None = None,
                         upto: int | None = None) -> list[StoredEvent]:
        after = max(0, (first_id or 1) - 1)
        out: list[StoredEvent] = []
        async for event in self.store.iter_events(thread_id, after=after):
            if upto is not None and event.id > upto:
                break
            if event.run_id == run_id:
                out.append(event)
        return out

    # ----------------------------------------------------------------- restart (assistant.run_recovery)
    async def recover(self) -> None:
        """After a restart: sweep runs that cannot resume, reload suspended ones."""
        await self.coordinator.start(self)
        await self.recovery.recover()

    async def expire(self) -> int:
        """End suspended runs whose every confirmation expired; how many ended."""
        return await self.recovery.expire()

    # ----------------------------------------------------------------- other processes (assistant.coordination)
    def live_runs(self) -> list[ActiveRun]:
        return list(self.table.runs.values())

    def has_request(self, request_id: str) -> bool:
        return self.table.thread_of(request_id) is not None

    async def sweep_orphan(self, record: RunRecord) -> None:
        """End a run its (crashed) owner left ``active``: ``run-finish {interrupted, crash_interrupted}``."""
        await self.recovery.sweep(record)

    async def adopt(self, record: RunRecord) -> None:
        """Take over a suspended run whose owner is gone (or our own, after a restart)."""
        if record.thread_id in self.table.runs:
            return
        if record.owner != self.options.owner:
            record.owner = self.options.owner
            await self.store.upsert_run(record)
        await self.recovery.reload(record)

    def abandon(self, thread_id: str, run_id: str) -> None:
        """Another process took this run over (our lease expired): drop it here, publish nothing more."""
        run = self.table.runs.get(thread_id)
        if run is None or run.run_id != run_id:
            return
        run.finishing = True  # _finish does nothing now: the run's end is the other process's
        run.ctx.emitter.close()
        del self.table.runs[thread_id]
        for request_id in run.confirmations:
            self.table.by_request.pop(request_id, None)
        if run.stream is not None:
            run.stream.abort()
        if run.task is not None and not run.task.done():
            run.task.cancel()
        if run.title_task is not None:
            run.title_task.cancel()
        if run.finished is not None and not run.finished.done():
            run.finished.set_result("abandoned")

    async def shutdown(self) -> None:
        """End every active run with ``run-finish {cancelled, service_shutdown}``."""
        active = [r for r in self.table.runs.values() if r.status == "active"]
        await asyncio.gather(*(self.cancel(r.thread_id, "service_shutdown", route=False) for r in active),
                             return_exceptions=True)
        await self.coordinator.stop()


def _cancelled_text(reason: str) -> str:
    return {"user_cancelled": "Cancelled by the user", "service_shutdown": "Cancelled: the service stopped",
            "timeout": "Expired without an answer"}.get(reason, f"Cancelled ({reason})")


#: the longest title taken from the person's first words
FIRST_WORDS_TITLE = 48


def first_words_title(text: str) -> str:
    """A title from the start of the person's message: its first line, spaces collapsed, cut at a
    word before ``FIRST_WORDS_TITLE`` characters (with "…")."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    words = " ".join(line.split())
    if len(words) <= FIRST_WORDS_TITLE:
        return words
    cut = words[:FIRST_WORDS_TITLE].rsplit(" ", 1)[0] if " " in words[:FIRST_WORDS_TITLE] else words[:FIRST_WORDS_TITLE]
    return cut.rstrip(" ,.;:-") + "…"
