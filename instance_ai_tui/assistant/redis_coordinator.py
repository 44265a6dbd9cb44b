"""``RedisCoordinator``: runs of several server processes that share one Redis (``RedisStore``).

* **One run per thread across processes.** A run holds its thread's lock (``SET NX PX`` with a
  fencing token, ``bus.redis_control.ThreadLocks``) from start to suspension or end; the
  heartbeat renews every held lock each ``lease_ms / 3``. A process that fails to renew (its
  lease expired, e.g. a long stall) has been fenced out: it drops the run without publishing
  anything more. A suspended run holds no lock; its stored record keeps the thread busy.
* **Cancel and confirm from any process.** The run manager asks the coordinator when it does not
  hold the run or request itself. Both go to the run's owner (``RunRecord.owner``; a request is
  found in the records of the unfinished runs) over ``ControlChannel``, with an ack and a reply.
  If the owner is gone (its instance key expired), a suspended run is adopted (under the thread
  lock; claiming its checkpoint is a compare-and-set anyway) and handled here.
* **Crash sweep.** The runs not finished yet are listed in the ``{p}live`` hash (run id ->
  thread id). Every ``sweep_interval`` (and at start) a run left ``active`` whose thread lock is
  gone is ended like the crash sweep does (``tool-interrupted``, ``run-finish {interrupted,
  crash_interrupted}``), and a suspended run whose owner is gone is adopted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..bus.redis_control import ControlChannel, ControlTimeout, InstanceRegistry, Lock, ThreadLocks
from ..protocol.api import ConfirmBody, ConfirmResponse, parse_confirm_body
from ..store.base import RunRecord
from ..store.redis import RedisStore
from .coordination import CoordinatedRuns, RunOwnerUnavailable, check_instance_id, default_instance_id
from .errors import (
    AssistantError,
    ConfirmationExpired,
    ConfirmationNotFound,
    InvalidRequest,
    RunActive,
    ThreadNotFound,
)

log = logging.getLogger(__name__)

UNFINISHED = ("active", "suspended")
_MAINTENANCE = "~maintenance"
_ERRORS: dict[str, type[AssistantError]] = {
    cls.__name__: cls
    for cls in (
        InvalidRequest, ThreadNotFound, ConfirmationNotFound, ConfirmationExpired, RunActive, RunOwnerUnavailable
    )
}


@dataclass(frozen=True, slots=True)
class _Held:
    run_id: str
    lock: Lock


class RedisCoordinator:
    def __init__(
        self,
        store: RedisStore,
        instance_id: str | None = None,
        *,
        lease_ms: int = 15_000,
        sweep_interval: float | None = None,
        acquire_wait: float = 3.0,
        ack_timeout: float = 1.5,
        reply_timeout: float = 120.0,
    ) -> None:
        if lease_ms < 100:
            raise ValueError("the lease must be at least 100 ms")
        self.instance_id = check_instance_id(instance_id or default_instance_id())
        self.store = store
        self.lease_ms = int(lease_ms)
        self.sweep_interval = sweep_interval if sweep_interval is not None else max(0.1, lease_ms / 2000)
        self.acquire_wait = acquire_wait
        self.ack_timeout = ack_timeout
        self.reply_timeout = reply_timeout
        redis = store.redis
        prefix = store.key("")
        self._redis = redis
        self._live = store.key("live")
        self._locks = ThreadLocks(redis, prefix)
        self._instances = InstanceRegistry(redis, prefix)
        self._control = ControlChannel(redis, prefix, self.instance_id, self._handle)
        self._held: dict[str, _Held] = {}
        self._runs: CoordinatedRuns | None = None
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def runs(self) -> CoordinatedRuns:
        assert self._runs is not None, "RedisCoordinator.start() first"
        return self._runs

    # ----------------------------------------------------------------- lifecycle

    async def start(self, runs: CoordinatedRuns) -> None:
        self._runs = runs
        if await self._instances.heartbeat(self.instance_id, self.lease_ms):
            log.warning("instance id %s is already live in Redis: another process uses it, or this one restarted "
                        "within the lease; give each process its own --instance-id", self.instance_id)
        await self._control.start()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(self.lease_ms / 3000, self.heartbeat, "heartbeat"), name="coordinator-heartbeat"),
            loop.create_task(self._every(self.sweep_interval, self.sweep, "sweep"), name="coordinator-sweeper"),
        ]
        log.info("instance %s: coordinating runs over Redis (lease %d ms)", self.instance_id, self.lease_ms)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks = []
        await self._control.stop()
        for thread_id, held in list(self._held.items()):
            await self.release(thread_id, held.run_id, finished=False)
        with contextlib.suppress(Exception):
            # our suspended runs can be adopted at once by the processes still running
            await self._instances.remove(self.instance_id)

    async def _every(self, seconds: float, step: Callable[[], Awaitable[object]], what: str) -> None:
        """``step`` every ``seconds``, until cancelled."""
        while True:
            await asyncio.sleep(seconds)
            try:
                await step()
            except Exception as exc:  # noqa: BLE001 - a background loop: one failure is logged, the next one retries
                log.warning("instance %s: %s failed: %s", self.instance_id, what, exc)

    async def heartbeat(self) -> None:
        """Refresh our instance key and every held lock; drop runs we were fenced out of."""
        if not await self._instances.heartbeat(self.instance_id, self.lease_ms):
            log.warning("instance %s: our lease had expired; checking for runs adopted elsewhere", self.instance_id)
            await self._drop_adopted()
        for thread_id, held in list(self._held.items()):
            if await self._locks.renew(held.lock, self.lease_ms):
                continue
            if self._held.get(thread_id) is held:
                del self._held[thread_id]
                log.error("instance %s: lost the lease of run %s (thread %s); abandoning it",
                          self.instance_id, held.run_id, thread_id)
                self.runs.abandon(thread_id, held.run_id)

    async def _drop_adopted(self) -> None:
        for run in list(self.runs.live_runs()):
            if run.status != "suspended":
                continue
            record = await self.store.get_run(run.run_id)
            if record is not None and record.owner not in (None, self.instance_id):
                log.warning("run %s was adopted by %s", run.run_id, record.owner)
                self.runs.abandon(run.thread_id, run.run_id)

    async def sweep(self) -> int:
        """End or adopt the unfinished runs nobody owns any more; returns how many."""
        handled = 0
        for run_id, thread_id in (await self._redis.hgetall(self._live)).items():
            record = await self.store.get_run(run_id)
            if record is None or record.status not in UNFINISHED:
                holder = await self._locks.holder(thread_id)
                if holder is None or f"|{run_id}|" not in holder:  # not a run that is starting right now
                    await self._redis.hdel(self._live, run_id)
                continue
            try:
                if await self._recover_one(record):
                    handled += 1
            except Exception:
                log.exception("instance %s: recovering run %s failed", self.instance_id, run_id)
        return handled

    # ----------------------------------------------------------------- thread locks

    async def acquire(self, thread_id: str, run_id: str) -> bool:
        held = self._held.get(thread_id)
        if held is not None:
            return held.run_id == run_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.acquire_wait
        while True:
            lock, current = await self._locks.acquire(thread_id, f"{self.instance_id}|{run_id}", self.lease_ms)
            if lock is not None:
                self._held[thread_id] = _Held(run_id, lock)
                await self._redis.hset(self._live, run_id, thread_id)
                return True
            if loop.time() >= deadline or not await self._holder_is_leaving(current):
                return False
            await asyncio.sleep(0.025)

    async def _holder_is_leaving(self, value: str | None) -> bool:
        """Will the lock's holder let go in a moment (worth waiting rather than answering 409)?"""
        if not value:
            return True
        parts = value.split("|")
        holder_run = parts[1] if len(parts) >= 3 else ""
        if holder_run.startswith("~"):
            return True  # a sweep or an adoption
        record = await self.store.get_run(holder_run)
        # no record yet: a start that is checking whether the thread is busy;
        # a finished record: the run is publishing its run-finish
        return record is None or record.status not in UNFINISHED

    async def release(self, thread_id: str, run_id: str, *, finished: bool) -> None:
        try:
            held = self._held.get(thread_id)
            if held is not None and held.run_id == run_id:
                del self._held[thread_id]
                await self._locks.release(held.lock)
            if finished:
                await self._redis.hdel(self._live, run_id)
        except Exception as exc:  # noqa: BLE001 - the lock expires by itself
            log.warning("instance %s: releasing thread %s failed: %s", self.instance_id, thread_id, exc)

    async def _under_lock(self, record: RunRecord, action: Callable[[RunRecord], Awaitable[None]]) -> bool:
        """Run ``action`` on the run's fresh record while holding its thread (sweeps, adoptions)."""
        lock, _ = await self._locks.acquire(record.thread_id, f"{self.instance_id}|{_MAINTENANCE}", self.lease_ms)
        if lock is None:
            return False
        try:
            fresh = await self.store.get_run(record.run_id)
            if fresh is None or fresh.status != record.status or not await self._orphaned(fresh):
                return False
            await action(fresh)
            return True
        finally:
            with contextlib.suppress(Exception):
                await self._locks.release(lock)

    async def _orphaned(self, record: RunRecord) -> bool:
        if record.status == "active":
            return True  # the caller holds the thread lock, so the run's owner does not
        if record.owner in (None, self.instance_id):
            return self.runs.live(record.thread_id) is None
        return not await self._instances.alive(record.owner)

    # ----------------------------------------------------------------- orphans

    async def recover(self, record: RunRecord) -> None:
        await self._redis.hset(self._live, record.run_id, record.thread_id)
        await self._recover_one(record)

    async def _recover_one(self, record: RunRecord) -> bool:
        local = self.runs.live(record.thread_id)
        if local is not None and local.run_id == record.run_id:
            return False
        if record.status == "active":
            if await self._locks.holder(record.thread_id) is not None:
                return False  # its owner still renews the lease
            if await self._under_lock(record, self.runs.sweep_orphan):
                log.warning("instance %s: swept run %s of thread %s (owner %s gone)", self.instance_id,
                            record.run_id, record.thread_id, record.owner)
                await self._redis.hdel(self._live, record.run_id)
                return True
            return False
        if record.status == "suspended" and await self._orphaned(record):
            if await self._under_lock(record, self.runs.adopt):
                log.info("instance %s: adopted suspended run %s (owner %s gone)", self.instance_id,
                         record.run_id, record.owner)
                return True
        return False

    # ----------------------------------------------------------------- routing

    async def cancel_elsewhere(self, thread_id: str, reason: str) -> bool:
        records = await self.store.list_runs(thread_id=thread_id, status=list(UNFINISHED))
        if not records:
            return False
        record = records[-1]
        owner = record.owner
        if owner and owner != self.instance_id and await self._instances.alive(owner):
            reply = await self._ask({"op": "cancel", "thread": thread_id, "reason": reason}, target=owner)
            if reply is not None:
                return bool(_unwrap(reply))
            if not await self._instances.alive(owner):
                record = await self.store.get_run(record.run_id) or record
            else:
                raise RunOwnerUnavailable(f"the server process running this thread ({owner}) did not answer; try again")
        if record.status == "suspended":
            if self.runs.live(thread_id) is None and not await self._under_lock(record, self.runs.adopt):
                raise RunOwnerUnavailable("another server process is taking over this run; try again")
            return await self.runs.cancel(thread_id, reason, route=False)
        if record.status == "active":
            if await self._locks.holder(thread_id) is None and await self._under_lock(record, self.runs.sweep_orphan):
                await self._redis.hdel(self._live, record.run_id)
                return True
            raise RunOwnerUnavailable(
                f"the server process running this thread ({owner}) is not answering; the run ends as interrupted "
                f"once its lease expires (within {self.lease_ms / 1000:g} s)"
            )
        return False

    async def confirm_elsewhere(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        record = await self._find_request(request_id)
        if record is None:
            raise ConfirmationNotFound(f"no pending confirmation {request_id!r} (answered, cancelled or unknown)")
        owner = record.owner
        if owner and owner != self.instance_id and await self._instances.alive(owner):
            reply = await self._ask({"op": "confirm", "request": request_id, "body": body.to_wire()}, target=owner)
            if reply is not None:
                return ConfirmResponse.model_validate(_unwrap(reply))
            if await self._instances.alive(owner):
                raise RunOwnerUnavailable(f"the server process holding this confirmation ({owner}) did not answer; "
                                          "try again")
            record = await self.store.get_run(record.run_id) or record
        if not self.runs.has_request(request_id):
            if record.status != "suspended" or not await self._under_lock(record, self.runs.adopt):
                raise RunOwnerUnavailable("another server process is taking over this run; try again")
        return await self.runs.confirm(request_id, body, route=False)

    async def _find_request(self, request_id: str) -> RunRecord | None:
        for run_id in await self._redis.hkeys(self._live):
            record = await self.store.get_run(run_id)
            if record is None or record.status != "suspended":
                continue
            if request_id in (record.data.get("confirmations") or {}):
                return record
        return None

    async def _ask(self, message: dict[str, Any], target: str) -> dict[str, Any] | None:
        try:
            return await self._control.request(message, target=target, ack_timeout=self.ack_timeout,
                                               reply_timeout=self.reply_timeout)
        except ControlTimeout as exc:
            raise RunOwnerUnavailable(f"the server process of this run did not finish the request: {exc}") from None

    # ----------------------------------------------------------------- serving requests of other processes

    def _handle(self, message: dict[str, Any]) -> Awaitable[dict[str, Any]] | None:
        op = message.get("op")
        if op == "cancel":
            reason = str(message.get("reason") or "user_cancelled")
            return self._serve(self.runs.cancel(str(message.get("thread")), reason, route=False))
        if op == "confirm":
            request_id = str(message.get("request"))
            try:
                body = parse_confirm_body(message.get("body"))
            except ValidationError as exc:
                return _done({"ok": False, "error": _error_dict(InvalidRequest(f"invalid confirm body: {exc}"))})
            return self._serve(self.runs.confirm(request_id, body, route=False))
        return None

    @staticmethod
    async def _serve(work: Awaitable[Any]) -> dict[str, Any]:
        try:
            value = await work
        except AssistantError as exc:
            return {"ok": False, "error": _error_dict(exc)}
        if isinstance(value, ConfirmResponse):
            return {"ok": True, "value": value.to_wire()}
        return {"ok": True, "value": value}


async def _done(result: dict[str, Any]) -> dict[str, Any]:
    return result


def _error_dict(exc: AssistantError) -> dict[str, Any]:
    return {"status": exc.status, "type": type(exc).__name__, "message": exc.message}


def _unwrap(reply: dict[str, Any]) -> Any:
    """The value of a reply, or its error raised as the same ``AssistantError`` class."""
    if reply.get("ok"):
        return reply.get("value")
    error = reply.get("error") or {}
    message = str(error.get("message") or "the request failed on another server process")
    cls = _ERRORS.get(str(error.get("type")))
    if cls is not None:
        raise cls(message)
    exc = AssistantError(message)
    exc.status = int(error.get("status") or 500)
    raise exc
