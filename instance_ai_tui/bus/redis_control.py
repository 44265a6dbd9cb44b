"""Redis primitives for coordinating several server processes (used by
``assistant.redis_coordinator.RedisCoordinator``):

* ``ThreadLocks``: one lock per thread with an expiry and a fencing token. The lock value is
  ``<holder>|<token>``; the token comes from ``INCR`` on a per-thread counter in the same Lua
  script, so every acquisition has a larger token than the one before. Renew and release
  compare the whole value, so a holder whose lock expired (and was taken by someone else)
  can neither extend nor delete the new holder's lock.
* ``InstanceRegistry``: a key per live process, refreshed by its heartbeat (``PX`` expiry).
* ``ControlChannel``: request/ack/reply over pub/sub. A request goes to one process's inbox
  (``ctl:<id>``); that process acks at once, runs it, and replies on the sender's inbox. No
  receiver or no ack within ``ack_timeout`` means the process is gone or stuck: the caller
  falls back to the store. Pub/sub is lossy, so a lost message only ever costs a timeout,
  never a wrong answer.

Key layout (``p`` = the store prefix): ``{p}lock:{thread}``, ``{p}fence:{thread}``,
``{p}inst:{id}``; channel ``{p}ctl:{id}`` per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current then return {0, current} end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
return {token, ''}
"""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


@dataclass(frozen=True, slots=True)
class Lock:
    """A held thread lock: ``value`` is what Redis stores (``<holder>|<token>``)."""

    thread_id: str
    holder: str
    token: int

    @property
    def value(self) -> str:
        return f"{self.holder}|{self.token}"


class ThreadLocks:
    def __init__(self, redis: Any, prefix: str) -> None:
        self._r = redis
        self._p = prefix
        self._acquire = redis.register_script(_ACQUIRE)
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)

    def key(self, thread_id: str) -> str:
        return f"{self._p}lock:{thread_id}"

    async def acquire(self, thread_id: str, holder: str, ttl_ms: int) -> tuple[Lock | None, str | None]:
        """``(lock, None)`` when acquired, else ``(None, value of the current holder)``."""
        token, current = await self._acquire(
            keys=[self.key(thread_id), f"{self._p}fence:{thread_id}"], args=[holder, int(ttl_ms)]
        )
        if int(token) > 0:
            return Lock(thread_id, holder, int(token)), None
        return None, str(current)

    async def renew(self, lock: Lock, ttl_ms: int) -> bool:
        """Extend the lock; False when it is no longer ours (it expired, maybe taken by another)."""
        return bool(await self._renew(keys=[self.key(lock.thread_id)], args=[lock.value, int(ttl_ms)]))

    async def release(self, lock: Lock) -> bool:
        return bool(await self._release(keys=[self.key(lock.thread_id)], args=[lock.value]))

    async def holder(self, thread_id: str) -> str | None:
        return await self._r.get(self.key(thread_id))


class InstanceRegistry:
    """``{p}inst:{id}`` exists while the process with that id is alive."""

    def __init__(self, redis: Any, prefix: str) -> None:
        self._r = redis
        self._p = prefix

    def key(self, instance_id: str) -> str:
        return f"{self._p}inst:{instance_id}"

    async def heartbeat(self, instance_id: str, ttl_ms: int) -> bool:
        """Refresh the key; False when it had expired (others may have taken our runs over)."""
        previous = await self._r.set(self.key(instance_id), "1", px=int(ttl_ms), get=True)
        return previous is not None

    async def alive(self, instance_id: str) -> bool:
        return bool(await self._r.exists(self.key(instance_id)))

    async def remove(self, instance_id: str) -> None:
        await self._r.delete(self.key(instance_id))


class ControlTimeout(Exception):
    """A process took the request (acked) but did not reply in time."""


#: ``handler(message)`` returns an awaitable result (a JSON-able dict), or None to ignore the
#: request (an operation this process does not know).
Handler = Callable[[dict[str, Any]], "Awaitable[dict[str, Any]] | None"]


class ControlChannel:
    def __init__(self, redis: Any, prefix: str, instance_id: str, handler: Handler) -> None:
        self._r = redis
        self._p = prefix
        self.instance_id = instance_id
        self._handler = handler
        self._pubsub: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: dict[str, tuple[asyncio.Future[None], asyncio.Future[dict[str, Any]]]] = {}
        self._closed = False

    def inbox(self, instance_id: str) -> str:
        return f"{self._p}ctl:{instance_id}"

    async def start(self) -> None:
        self._pubsub = self._r.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(self.inbox(self.instance_id))
        self._listener = asyncio.create_task(self._listen(), name="redis-control-listener")

    async def stop(self) -> None:
        self._closed = True
        tasks = [t for t in (self._listener, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for ack, result in self._waiting.values():
            for future in (ack, result):
                if not future.done():
                    future.cancel()
        self._waiting.clear()
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()

    # ----------------------------------------------------------------- sending

    async def request(
        self, message: dict[str, Any], *, target: str, ack_timeout: float, reply_timeout: float
    ) -> dict[str, Any] | None:
        """Send ``message`` to process ``target``: its reply, or None when it did not take it (no
        receiver, no ack in time). ``ControlTimeout`` when it acked but did not reply in time."""
        request_id = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        ack: asyncio.Future[None] = loop.create_future()
        result: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._waiting[request_id] = (ack, result)
        try:
            envelope = {**message, "kind": "request", "id": request_id, "from": self.instance_id}
            receivers = await self._r.publish(self.inbox(target), json.dumps(envelope))
            if not receivers:
                return None
            try:
                await asyncio.wait_for(asyncio.shield(ack), ack_timeout)
            except TimeoutError:
                if not result.done():
                    return None
            try:
                return await asyncio.wait_for(asyncio.shield(result), reply_timeout)
            except TimeoutError:
                raise ControlTimeout(f"no reply to {message.get('op')!r} within {reply_timeout:g} s") from None
        finally:
            self._waiting.pop(request_id, None)

    async def _send(self, instance_id: str, data: dict[str, Any]) -> None:
        try:
            await self._r.publish(self.inbox(instance_id), json.dumps(data))
        except Exception as exc:  # noqa: BLE001 - a lost control reply times out at the caller, which falls back
            log.warning("control reply to %s failed: %s", instance_id, exc)

    # ----------------------------------------------------------------- receiving

    async def _listen(self) -> None:
        while not self._closed:
            try:
                message = await self._pubsub.get_message(timeout=1.0)
            except Exception as exc:  # noqa: BLE001 - connection trouble: requests time out and fall back
                log.warning("redis control listener: %s", exc)
                await asyncio.sleep(0.5)
                continue
            if not message or message.get("type") != "message":
                continue
            try:
                data = json.loads(message["data"])
            except (TypeError, ValueError):
                log.warning("ignoring a malformed control message")
                continue
            if not isinstance(data, dict):
                continue
            kind = data.get("kind")
            if kind == "request":
                self._take(data)
            elif kind in ("ack", "reply"):
                futures = self._waiting.get(str(data.get("id")))
                if futures is None:
                    continue
                ack, result = futures
                if not ack.done():
                    ack.set_result(None)
                if kind == "reply" and not result.done():
                    result.set_result(data.get("result") or {})

    def _take(self, data: dict[str, Any]) -> None:
        sender = str(data.get("from", ""))
        try:
            work = self._handler(data)
        except Exception:
            log.exception("control handler failed on %r", data.get("op"))
            return
        if work is None:
            return

        async def run() -> None:
            await self._send(sender, {"kind": "ack", "id": data.get("id"), "from": self.instance_id})
            try:
                result = await work
            except Exception as exc:
                log.exception("control request %r failed", data.get("op"))
                result = {"ok": False, "error": {"status": 500, "type": "", "message": f"internal error: {exc}"}}
            reply = {"kind": "reply", "id": data.get("id"), "from": self.instance_id, "result": result}
            await self._send(sender, reply)

        task = asyncio.get_running_loop().create_task(run(), name=f"control-{data.get('op')}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
