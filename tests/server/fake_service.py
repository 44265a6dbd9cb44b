"""A small in-memory ``AssistantService`` for routing tests (the e2e tests use the real one)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from instance_ai_tui.assistant.errors import (
    ConfirmationNotFound,
    InvalidRequest,
    PermissionNotFound,
    RunActive,
    ThreadNotFound,
)
from instance_ai_tui.protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    ConfirmResponse,
    ModelInfo,
    ModelList,
    RewindResponse,
    ThreadInfo,
    ThreadMessages,
    ThreadPermissions,
    ThreadStatus,
)
from instance_ai_tui.store.base import StoredEvent


class FakeService:
    """Each run: run-start, text, a tool call that needs approval, the result, run-finish."""

    model_label = "fake"

    def __init__(self) -> None:
        self.threads: dict[str, ThreadInfo] = {}
        self.allowed: dict[str, set[str]] = {}
        self.log: dict[str, list[StoredEvent]] = {}
        self.changed = asyncio.Condition()
        self.active: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self.pending: dict[str, tuple[asyncio.Future[bool], str]] = {}
        self.started = self.stopped = 0
        self.runs = 0

    async def start(self) -> None:
        self.started += 1

    async def shutdown(self) -> None:
        self.stopped += 1
        for thread_id in list(self.active):
            await self.cancel(thread_id, reason="service_shutdown")

    async def list_threads(self, search: str | None = None) -> list[ThreadInfo]:
        return [t for t in self.threads.values() if not search or search in t.title]

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        now = datetime.now(UTC)
        thread_id = thread_id or f"t{len(self.threads) + 1}"
        info = ThreadInfo(id=thread_id, title=title, created_at=now, updated_at=now)
        self.threads.setdefault(thread_id, info)
        self.log.setdefault(thread_id, [])
        return self.threads[thread_id]

    async def get_thread(self, thread_id: str) -> ThreadInfo:
        if thread_id not in self.threads:
            raise ThreadNotFound(f"thread {thread_id} not found")
        return self.threads[thread_id]

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        info = (await self.get_thread(thread_id)).model_copy(update={"title": title})
        self.threads[thread_id] = info
        return info

    async def delete_thread(self, thread_id: str) -> None:
        await self.get_thread(thread_id)
        del self.threads[thread_id]

    async def publish(self, thread_id: str, event: dict[str, Any]) -> None:
        log = self.log[thread_id]
        event = {**event, "ts": time.time()}
        log.append(StoredEvent(thread_id, len(log) + 1, event["type"], event["runId"], json.dumps(event)))
        async with self.changed:
            self.changed.notify_all()

    async def send(self, thread_id: str, text: str) -> str:
        if thread_id in self.active:
            raise RunActive("a run is already active in this thread")
        await self.create_thread(thread_id)
        self.runs += 1
        run_id = f"run{self.runs}"
        self.active[thread_id] = (run_id, asyncio.create_task(self._run(thread_id, run_id, text)))
        return run_id

    async def _run(self, thread_id: str, run_id: str, text: str) -> None:
        base = {"runId": run_id, "agentId": "a1"}
        await self.publish(thread_id, {**base, "type": "run-start", "payload": {"messageId": "m"}})
        for word in f"You said: {text}".split(" "):
            await self.publish(thread_id, {**base, "type": "text-delta", "payload": {"text": word + " "}})
            await asyncio.sleep(0.05)  # the scenario: a model that streams word by word
        if "approve" in text:
            future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self.pending[f"cr-{run_id}"] = (future, thread_id)
            await self.publish(thread_id, {**base, "type": "tool-call",
                                           "payload": {"toolCallId": "tc1", "toolName": "delete", "args": {}}})
            await self.publish(thread_id, {**base, "type": "confirmation-request", "payload": {
                "requestId": f"cr-{run_id}", "toolCallId": "tc1", "toolName": "delete", "message": "ok?"}})
            approved = await future
            kind = "tool-result" if approved else "tool-error"
            await self.publish(thread_id, {**base, "type": kind, "payload": {"toolCallId": "tc1", "result": 1, "error": "denied"}})
        await self.publish(thread_id, {**base, "type": "run-finish", "payload": {"status": "completed"}})
        self.active.pop(thread_id, None)

    async def cancel(self, thread_id: str, reason: str = "user_cancelled") -> bool:
        entry = self.active.pop(thread_id, None)
        if entry is None:
            return False
        run_id, task = entry
        task.cancel()
        await self.publish(thread_id, {"type": "run-finish", "runId": run_id, "agentId": "a1",
                                       "payload": {"status": "cancelled", "reason": reason}})
        return True

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        entry = self.pending.pop(request_id, None)
        if entry is None:
            raise ConfirmationNotFound("confirmation request not found")
        entry[0].set_result(isinstance(body, ApprovalConfirm) and body.approved)
        return ConfirmResponse(ok=True)

    async def events(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        cursor = after
        while True:
            log = self.log.get(thread_id, [])
            while cursor < len(log):
                cursor += 1
                yield log[cursor - 1]
            async with self.changed:
                await self.changed.wait_for(lambda seen=cursor: len(self.log.get(thread_id, [])) > seen)

    async def messages(self, thread_id: str) -> ThreadMessages:
        await self.get_thread(thread_id)
        return ThreadMessages(thread_id=thread_id, messages=[], next_event_id=len(self.log[thread_id]) + 1)

    async def status(self, thread_id: str) -> ThreadStatus:
        await self.get_thread(thread_id)
        entry = self.active.get(thread_id)
        return ThreadStatus(has_active_run=entry is not None, run_id=entry[0] if entry else None,
                            is_suspended=any(t == thread_id for _, t in self.pending.values()))

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        await self.get_thread(thread_id)
        raise InvalidRequest(f"no user message {message_id!r} in this thread")

    async def models(self, thread_id: str | None = None) -> ModelList:
        return ModelList(models=[ModelInfo(name="fake")], current="fake", default="fake")

    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        raise InvalidRequest(f"model {name!r} cannot be used: the fake service has one model")

    async def permissions(self, thread_id: str) -> ThreadPermissions:
        await self.get_thread(thread_id)
        return ThreadPermissions(always_allow=sorted(self.allowed.get(thread_id, set())))

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        await self.get_thread(thread_id)
        granted = self.allowed.get(thread_id, set())
        if tool_name not in granted:
            raise PermissionNotFound(f"{tool_name!r} is not always allowed in this thread")
        granted.discard(tool_name)
        return await self.permissions(thread_id)
