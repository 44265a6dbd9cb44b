"""A ``Client`` that replays recorded event streams — for benchmarks, screenshots and tests.

``RecordedClient(logs={thread_id: [event, ...]}, runs=[[event, ...], ...])``

* ``logs``: each thread's already-recorded event log. ``events(thread, after)`` yields the
  log's events with id > ``after`` (ids are 1-based positions), then waits for live ones.
  ``messages()`` returns no history and ``nextEventId = 1``, so the app replays the whole
  log through its normal ingest path — which is what ``benchmarks/tui_ingest.py`` measures.
* ``runs``: scripted runs. Each ``send()`` plays the next one into the thread's log
  (``runId`` rewritten to a fresh one), ``delay`` seconds apart. A
  ``confirmation-request`` pauses the run until ``confirm()`` answers it; a denial turns
  that call's next ``tool-result`` into a ``tool-error``. ``cancel()`` ends the run with
  ``run-finish {status: cancelled}``.

Events may be given as protocol models or wire dicts. Only ``confirm`` bodies and thread
operations are recorded in ``calls`` for tests to inspect; nothing touches the network.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from instance_ai_tui.client.base import Client, ConnectionState, NotFoundError, RunActiveError, StreamItem
from instance_ai_tui.protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    ConfirmResponse,
    ThreadInfo,
    ThreadMessages,
    ThreadStatus,
)
from instance_ai_tui.protocol.events import (
    ConfirmationRequestEvent,
    Event,
    RunFinishEvent,
    RunFinishPayload,
    ThreadTitleUpdatedEvent,
    ToolErrorEvent,
    ToolErrorPayload,
    ToolResultEvent,
    parse_event,
)


def text_flood(count: int, run: str = "r1") -> list[dict[str, Any]]:
    """A run of ``count`` events as stored JSON: its start, ``count - 2`` one-word text deltas (a paragraph
    every 40), its finish (a flood for the ingest's tests)."""
    def ev(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "runId": run, "agentId": "a1", "payload": payload}

    events = [ev("run-start", {"messageId": "m", "messageGroupId": "g", "userMessage": "go"})]
    events += [ev("text-delta", {"text": f"w{i} " + ("\n\n" if i % 40 == 39 else "")}) for i in range(count - 2)]
    events.append(ev("run-finish", {"status": "completed"}))
    return events


def _event(value: Event | dict[str, Any]) -> Event:
    return value if not isinstance(value, dict) else parse_event(value)


class _Thread:
    def __init__(self, info: ThreadInfo) -> None:
        self.info = info
        self.log: list[Event] = []
        self.changed = asyncio.Event()
        self.run_task: asyncio.Task[None] | None = None
        self.run_id: str | None = None


class RecordedClient(Client):
    mode = "embedded"

    def __init__(
        self,
        logs: dict[str, Sequence[Event | dict[str, Any]]] | None = None,
        runs: Iterable[Sequence[Event | dict[str, Any]]] = (),
        *,
        model_name: str = "recorded",
        delay: float = 0.0,
        titles: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.model_name = model_name
        self.delay = delay
        self._threads: dict[str, _Thread] = {}
        self._runs = [list(run) for run in runs]
        self._run_seq = itertools.count(1)
        self._thread_seq = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[ConfirmBody]] = {}
        self.calls: list[tuple[str, Any]] = []
        items = list((logs or {}).items())
        for n, (thread_id, events) in enumerate(items):
            # later threads are newer
            thread = self._new_thread(thread_id, (titles or {}).get(thread_id, ""), len(items) - n)
            thread.log = [_event(e) for e in events]

    # ----------------------------------------------------------------- lifecycle
    async def open(self) -> None:
        self._set_state(ConnectionState.EMBEDDED)

    async def close(self) -> None:
        for thread in self._threads.values():
            if thread.run_task is not None:
                thread.run_task.cancel()
        self._set_state(ConnectionState.OFFLINE)

    # ----------------------------------------------------------------- threads
    def _new_thread(self, thread_id: str, title: str, age: float = 0) -> _Thread:
        """``age``: seconds before now of its creation (the thread list sorts by it)."""
        now = datetime.now(UTC)
        stamp = datetime.fromtimestamp(now.timestamp() - age, UTC)
        info = ThreadInfo(id=thread_id, title=title, created_at=stamp, updated_at=stamp)
        thread = _Thread(info)
        self._threads[thread_id] = thread
        return thread

    def _thread(self, thread_id: str) -> _Thread:
        thread = self._threads.get(thread_id)
        if thread is None:
            raise NotFoundError(f"thread {thread_id!r} not found", 404)
        return thread

    async def list_threads(self) -> list[ThreadInfo]:
        return sorted((t.info for t in self._threads.values()), key=lambda i: i.updated_at, reverse=True)

    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        thread_id = thread_id or f"thread-{next(self._thread_seq)}"
        while thread_id in self._threads:
            thread_id = f"thread-{next(self._thread_seq)}"
        self.calls.append(("create_thread", thread_id))
        return self._new_thread(thread_id, title).info

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        thread = self._thread(thread_id)
        thread.info = thread.info.model_copy(update={"title": title})
        self.calls.append(("rename_thread", (thread_id, title)))
        return thread.info

    async def delete_thread(self, thread_id: str) -> None:
        self._thread(thread_id)
        del self._threads[thread_id]
        self.calls.append(("delete_thread", thread_id))

    # ----------------------------------------------------------------- stream
    def _publish(self, thread: _Thread, event: Event) -> None:
        thread.log.append(event)
        thread.info = thread.info.model_copy(update={"updated_at": datetime.now(UTC)})
        if isinstance(event, ThreadTitleUpdatedEvent):
            thread.info = thread.info.model_copy(update={"title": event.payload.title})
        thread.changed.set()

    def publish(self, thread_id: str, event: Event | dict[str, Any]) -> None:
        """Append one event to a thread's log now, as a server would push it (tests make a
        card appear at a chosen moment with it)."""
        parsed = _event(event)
        if isinstance(parsed, ConfirmationRequestEvent):  # answerable, as a live one is
            self._waiting.setdefault(parsed.payload.request_id, asyncio.get_running_loop().create_future())
        self._publish(self._thread(thread_id), parsed)

    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        thread = self._thread(thread_id)
        position = max(0, after or 0)
        while True:
            log = thread.log
            end = len(log)
            if position < end:
                for index in range(position, end):
                    yield StreamItem(index + 1, log[index])
                position = end
                continue
            thread.changed.clear()
            if position < len(thread.log):
                continue
            await thread.changed.wait()

    # ----------------------------------------------------------------- runs
    async def send(self, thread_id: str, text: str) -> str:
        thread = self._threads.get(thread_id) or self._new_thread(thread_id, "")
        if thread.run_task is not None and not thread.run_task.done():
            raise RunActiveError("a run is already active in this thread", 409)
        if not self._runs:
            raise RunActiveError("the recorded client has no more scripted runs", 409)
        script = self._runs.pop(0)
        run_id = f"run-{next(self._run_seq)}"
        thread.run_id = run_id
        self.calls.append(("send", (thread_id, text)))
        thread.run_task = asyncio.create_task(self._play(thread, run_id, script))
        return run_id

    async def _play(self, thread: _Thread, run_id: str, script: list[Event | dict[str, Any]]) -> None:
        denied: set[str] = set()
        try:
            for n, raw in enumerate(script):
                event = _event(raw).model_copy(update={"run_id": run_id})
                if isinstance(event, ToolResultEvent) and event.payload.tool_call_id in denied:
                    event = ToolErrorEvent(
                        run_id=run_id,
                        agent_id=event.agent_id,
                        payload=ToolErrorPayload(tool_call_id=event.payload.tool_call_id, error="Denied by the user"),
                    )
                self._publish(thread, event)
                if isinstance(event, ConfirmationRequestEvent):
                    future: asyncio.Future[ConfirmBody] = asyncio.get_running_loop().create_future()
                    self._waiting[event.payload.request_id] = future
                    body = await future
                    if isinstance(body, ApprovalConfirm) and not body.approved and body.user_input is None:
                        denied.add(event.payload.tool_call_id)
                if self.delay:
                    await asyncio.sleep(self.delay)
                elif n % 64 == 63:
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            finish = RunFinishEvent(
                run_id=run_id, agent_id="agent-001", payload=RunFinishPayload(status="cancelled", reason="user_cancelled")
            )
            self._publish(thread, finish)
        finally:
            thread.run_id = None

    async def cancel(self, thread_id: str) -> None:
        thread = self._thread(thread_id)
        self.calls.append(("cancel", thread_id))
        task = thread.run_task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        self.calls.append(("confirm", (request_id, body)))
        future = self._waiting.pop(request_id, None)
        if future is None or future.done():
            raise NotFoundError(f"confirmation {request_id!r} is not pending", 404)
        future.set_result(body)
        return ConfirmResponse(ok=True)

    async def messages(self, thread_id: str) -> ThreadMessages:
        self._thread(thread_id)
        return ThreadMessages(thread_id=thread_id, messages=[], next_event_id=1)

    async def status(self, thread_id: str) -> ThreadStatus:
        thread = self._thread(thread_id)
        active = thread.run_task is not None and not thread.run_task.done()
        return ThreadStatus(has_active_run=active, is_suspended=bool(self._waiting) and active, run_id=thread.run_id)
