"""Runs after a restart: recovering what the store says was running, sweeping what cannot resume,
reloading suspended runs with their thread's model, and expiring unanswered confirmations.

``RunRecovery`` works on the run manager's ``RunTable`` (``assistant.run_table``) and ends runs through
its ``RunEnds``; it does not import the run manager (which builds it)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..runtime.model import ModelAdapter
from ..store.base import RunRecord
from .approvals import load_allowances
from .confirmations import PendingConfirmation
from .context import RunContext
from .emitter import RunEmitter, agent_completed, tool_interrupted
from .errors import STORAGE_UNAVAILABLE
from .ids import orchestrator_id
from .run_table import INTERRUPTED_TOOL, TITLE_USAGE_KEY, ActiveRun, RunEnds, RunTable
from .usage import USAGE_KEY, usage_from_wire

if TYPE_CHECKING:
    from ..bus.base import EventBus
    from ..store.base import Store
    from .context import Services
    from .coordination import RunCoordinator

log = logging.getLogger(__name__)


class RunRecovery:
    """What a restart finds: ``table`` the unfinished runs, ``ends`` how a run's end is written."""

    def __init__(self, table: RunTable, ends: RunEnds, *, store: Store, bus: EventBus, services: Services,
                 coordinator: RunCoordinator) -> None:
        self.table = table
        self.ends = ends
        self.store = store
        self.bus = bus
        self.services = services
        self.coordinator = coordinator

    async def recover(self) -> None:
        """At start (the coordinator started): sweep runs a crash left active; reload suspended runs.
        With other processes on the same store (``coordinator``), only the runs no live process owns."""
        for record in await self.store.list_runs(status=["active"]):
            try:
                await self.coordinator.recover(record)
            except Exception:
                log.exception("sweeping run %s failed", record.run_id)
        for record in await self.store.list_runs(status=["suspended"]):
            if self.table.get(record.thread_id) is not None:
                continue
            try:
                await self.coordinator.recover(record)
            except Exception:
                log.exception("reloading suspended run %s failed", record.run_id)

    async def sweep(self, record: RunRecord) -> None:
        emitter = RunEmitter(self.bus, record.thread_id, record.run_id)
        root = orchestrator_id(record.run_id)
        events = await self.ends.run_events(record.thread_id, record.run_id, record.data.get("firstEventId"))
        if not events:
            # the process died while POST chat was starting this run (before run-start): nobody
            # got its runId and the log has nothing of it; a run-finish alone would be an orphan
            record.status = "interrupted"
            record.finished_at = datetime.now(UTC)
            record.data["neverStarted"] = True
            await self.ends.complete_checkpoint(record.run_id)
            await self.store.upsert_run(record)
            return
        finished = next((e for e in reversed(events) if e.type == "run-finish"), None)
        if finished is not None:
            # the process died after storing run-finish, before the record said so: trust the log
            status = (finished.data().get("payload") or {}).get("status")
            record.status = status if status in ("completed", "cancelled", "error", "interrupted") else "interrupted"
            record.finished_at = datetime.now(UTC)
            await self.ends.complete_checkpoint(record.run_id)
            await self.ends.save_snapshot(record.thread_id, record.run_id, record.data.get("firstEventId"))
            await self.store.upsert_run(record)
            return
        open_calls: dict[str, str] = {}
        open_agents: dict[str, str] = {}
        storage_failed = False
        for event in events:
            data = event.data()
            payload = data.get("payload") or {}
            kind = data.get("type")
            if kind == "error" and str(payload.get("code") or "").startswith(("storage", "redis")):
                storage_failed = True
            if kind == "tool-call":
                open_calls[payload.get("toolCallId", "")] = data.get("agentId", root)
            elif kind in ("tool-result", "tool-error", "tool-interrupted"):
                open_calls.pop(payload.get("toolCallId", ""), None)
            elif kind == "agent-spawned":
                open_agents[data.get("agentId", "")] = payload.get("role", "")
            elif kind == "agent-completed":
                open_agents.pop(data.get("agentId", ""), None)
        for call_id, agent_id in open_calls.items():
            emitter.emit(tool_interrupted(agent_id, call_id, INTERRUPTED_TOOL))
        for agent_id, role in open_agents.items():
            emitter.emit(agent_completed(agent_id, role, "cancelled", error="interrupted by a process restart"))
        await emitter.flush()
        # tokens spent before the crash (as recorded when the run last suspended or resumed)
        spent = usage_from_wire(record.data.get(USAGE_KEY)) + usage_from_wire(record.data.get(TITLE_USAGE_KEY))
        usage = await self.ends.count_usage(record.thread_id, record.run_id, spent)
        if storage_failed:
            # nothing crashed: the run failed because the storage was down and could not record its end
            finish_event = emitter.run_finish(root, "error", STORAGE_UNAVAILABLE, **usage)
        else:
            finish_event = emitter.run_finish(root, "interrupted", "crash_interrupted", **usage)
        await self.ends.complete_checkpoint(record.run_id)
        for checkpoint in await self.services.checkpoints.list(thread_id=record.thread_id):
            if checkpoint.run_id.startswith(f"{record.run_id}-"):
                await self.ends.complete_checkpoint(checkpoint.run_id)
        await self.ends.save_snapshot(record.thread_id, record.run_id, record.data.get("firstEventId"), finish_event)

        async def mark_finished() -> None:  # after run-finish is in the log: a crash before is swept again
            record.status = "error" if storage_failed else "interrupted"
            record.finished_at = datetime.now(UTC)
            await self.store.upsert_run(record)

        await self.ends.publish_finish(emitter, finish_event, mark_finished)

    async def thread_model(self, thread_id: str) -> ModelAdapter | None:
        """The model chosen for the thread (``/model``, thread metadata ``model``); None: the
        service's. A choice that cannot be built (e.g. its key was removed) falls back, logged."""
        catalog = self.services.catalog
        thread = await self.store.get_thread(thread_id)
        name = thread.metadata.get("model") if thread is not None else None
        if catalog is None or not isinstance(name, str) or not name:
            return None
        try:
            return catalog.get(name)
        except ValueError as exc:
            log.warning("thread %s: model %r cannot be used (%s); using the default", thread_id, name, exc)
            return None

    async def reload(self, record: RunRecord) -> None:
        ctx = RunContext(
            thread_id=record.thread_id, run_id=record.run_id,
            message_group_id=record.message_group_id or record.run_id, orchestrator_id=orchestrator_id(record.run_id),
            emitter=RunEmitter(self.bus, record.thread_id, record.run_id), services=self.services,
            allowances=await load_allowances(self.store, record.thread_id),
            tasks=list(record.data.get("tasks") or []), model=await self.thread_model(record.thread_id),
        )
        if record.data.get("firstEventId") is not None:
            ctx.emitter.first_id = int(record.data["firstEventId"])
        run = ActiveRun(ctx, str(record.data.get("messageId", "")), str(record.data.get("userMessage", "")), record,
                        status="suspended", usage=usage_from_wire(record.data.get(USAGE_KEY)),
                        title_usage=usage_from_wire(record.data.get(TITLE_USAGE_KEY)))
        run.finished = asyncio.get_running_loop().create_future()
        for request_id, raw in (record.data.get("confirmations") or {}).items():
            pending = PendingConfirmation.model_validate(raw)
            run.confirmations[request_id] = pending
            self.table.by_request[request_id] = record.thread_id
        self.table.add(run)
        published = {
            (e.data().get("payload") or {}).get("requestId")
            for e in await self.ends.run_events(record.thread_id, record.run_id, record.data.get("firstEventId"))
            if e.type == "confirmation-request"
        }
        for pending in run.confirmations.values():
            if pending.request_id not in published and pending.request:
                self.ends.publish_request(run, pending)  # the process died between recording and publishing
        await ctx.emitter.flush()

    async def expire(self) -> int:
        """End suspended runs whose every confirmation expired (``run-finish {cancelled, timeout}``)
        and drop expired checkpoints. Returns how many runs were ended."""
        ended = 0
        for run in list(self.table.runs.values()):
            if run.status != "suspended" or not run.confirmations:
                continue
            if all(c.expired() for c in run.confirmations.values()):
                async with self.table.lock(run.thread_id):
                    if self.table.get(run.thread_id) is run and run.status == "suspended":
                        await self.ends.end_suspended(run, "cancelled", "timeout")
                        ended += 1
        try:
            await self.services.checkpoints.sweep()
        except Exception as exc:  # noqa: BLE001 - the next sweep retries; logged
            log.warning("sweeping expired checkpoints failed: %s", exc)
        return ended

