"""n8n chat sessions kept in Redis, as a read-only thread source (``--redis-chat URL``).

``RedisChatClient`` is a ``Client`` the app opens beside its main one: its threads are the
sessions of one Redis (``client.redis_chat_memory``), newest first, listed in their own section
of the thread list (``source`` / ``source_title``). Opening one gives its messages as
user/assistant turns (tool calls of LangChain-format sessions on the assistant's turn, a
malformed entry as a turn that says so).

Nothing here changes a session except continuing it: creating, renaming and deleting raise
``ReadOnlyError``, and so does ``send`` without a chat webhook. With ``--chat-webhook URL``,
``send`` posts the text to the n8n Chat Trigger with the session's ``sessionId``
(``client.chat_webhook``); the workflow's memory node normally writes the turn to Redis, and
if it did not, the turn is appended here in the session's own format, so n8n reads it back.
The reply reaches the open thread as a run on its event stream (``run-start``, the answer's
text and tool calls, ``run-finish``), like any other client's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..protocol.api import (
    ConfirmBody,
    ConfirmResponse,
    InstanceAiMessage,
    ThreadInfo,
    ThreadMessages,
    ThreadStatus,
)
from ..protocol.events import (
    RunFinishEvent,
    RunFinishPayload,
    RunStartEvent,
    RunStartPayload,
    TextDeltaEvent,
    TextPayload,
    ToolCallEvent,
    ToolCallPayload,
    ToolResultEvent,
    ToolResultPayload,
)
from ..protocol.tree import AgentNode, TextEntry, ToolCallEntry, ToolCallState
from .base import Client, ClientError, ConnectionState, ReadOnlyError, RunActiveError, StreamItem

if TYPE_CHECKING:
    from .redis_chat_memory import ChatMessage, ChatSession, ChatSessionInfo, RedisChatSessions

SOURCE = "redis"
SECTION_TITLE = "Redis sessions"
#: the age shown for a session whose key and description carry no time
UNKNOWN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
RAW_PREVIEW = 400
READ_ONLY = "this Redis chat session is read-only: start instance-ai with --chat-webhook URL to continue it"


# --------------------------------------------------------------------------- sessions as threads


def session_info(info: ChatSessionInfo) -> ThreadInfo:
    started = info.started_at or info.updated_at or UNKNOWN_TIME
    return ThreadInfo(id=info.session_id, title=info.title, created_at=started, updated_at=info.updated_at or started,
                      metadata={"source": SOURCE, "messages": info.length})


class _Turn:
    """An assistant turn being built from consecutive AI/tool messages."""

    def __init__(self, key: str, created_at: datetime) -> None:
        self.key = key
        self.created_at = created_at
        self.texts: list[str] = []
        self.timeline: list[Any] = []
        self.calls: dict[str, ToolCallState] = {}

    def add_text(self, text: str) -> None:
        if not text:
            return
        if self.texts:
            text = "\n\n" + text
        self.texts.append(text)
        self.timeline.append(TextEntry(content=text))

    def add_call(self, call_id: str, name: str, args: Any) -> None:
        self.calls[call_id] = ToolCallState(tool_call_id=call_id, tool_name=name,
                                            args=args if isinstance(args, dict) else {"input": args}, is_loading=False)
        self.timeline.append(ToolCallEntry(tool_call_id=call_id))

    def message(self) -> InstanceAiMessage:
        text = "".join(self.texts)
        tree = AgentNode(agent_id=f"agent-{self.key}", status="completed", text_content=text,
                         tool_calls=list(self.calls.values()), timeline=self.timeline)
        return InstanceAiMessage(id=f"{self.key}-assistant", run_id=self.key, role="assistant",
                                 created_at=self.created_at, content=text, agent_tree=tree)


def _ai_text(message: ChatMessage) -> str:
    text = message.text
    if message.agent_to_route_to:
        text += f"\n\n→ routed to **{message.agent_to_route_to}**"
        if message.forwarded_message:
            text += f": {message.forwarded_message}"
    return text


def _malformed_text(message: ChatMessage) -> str:
    raw = message.raw if len(message.raw) <= RAW_PREVIEW else message.raw[:RAW_PREVIEW] + "…"
    fence = "~~~~" if "```" in raw else "```"
    reason = message.error or "not a chat message"
    return f"⚠ **Malformed entry #{message.index + 1}**: {reason}\n\n{fence}\n{raw}\n{fence}"


def session_history(session: ChatSession) -> ThreadMessages:
    """The session as user/assistant turns, in chronological order."""
    created = session.info.started_at or session.info.updated_at or UNKNOWN_TIME
    out: list[InstanceAiMessage] = []
    turn: _Turn | None = None

    def flush() -> None:
        nonlocal turn
        if turn is not None and (turn.texts or turn.calls):
            out.append(turn.message())
        turn = None

    def current(index: int) -> _Turn:
        nonlocal turn
        if turn is None:
            turn = _Turn(f"m{index}", created)
        return turn

    for message in session.messages:
        if message.malformed or message.role == "unknown":
            flush()
            broken = _Turn(f"m{message.index}", created)
            broken.add_text(_malformed_text(message))
            out.append(broken.message())
        elif message.role == "human":
            flush()
            out.append(InstanceAiMessage(id=f"m{message.index}-user", role="user", created_at=created,
                                         content=message.text))
        elif message.role == "ai":
            target = current(message.index)
            target.add_text(_ai_text(message))
            for position, call in enumerate(message.tool_calls):
                call_id = str(call.get("id") or f"m{message.index}-call{position}")
                target.add_call(call_id, str(call.get("name") or "tool"), call.get("args", {}))
        elif message.role == "tool":
            target = current(message.index)
            call_id = message.tool_call_id or f"m{message.index}-result"
            if call_id not in target.calls:
                target.add_call(call_id, message.tool_name or "tool", {})
            target.calls[call_id].result = _maybe_json(message.text)
        else:  # system
            target = current(message.index)
            target.add_text(f"*System:* {message.text}")
    flush()
    return ThreadMessages(thread_id=session.info.session_id, messages=out, next_event_id=1)


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def run_events(run_id: str, answers: list[InstanceAiMessage]) -> list[StreamItem]:
    """A continuation's reply as the events of one run: what the session gained after the
    user's message (its text and tool calls, as stored), then ``run-finish``."""
    agent = f"agent-{run_id}"
    items = [StreamItem(None, RunStartEvent(run_id=run_id, agent_id=agent,
                                            payload=RunStartPayload(message_id=f"{run_id}-assistant")))]
    for message in answers:
        tree = message.agent_tree
        if tree is not None:
            for call in tree.tool_calls:
                items.append(StreamItem(None, ToolCallEvent(run_id=run_id, agent_id=agent, payload=ToolCallPayload(
                    tool_call_id=call.tool_call_id, tool_name=call.tool_name, args=call.args))))
                if call.result is not None:
                    items.append(StreamItem(None, ToolResultEvent(run_id=run_id, agent_id=agent, payload=ToolResultPayload(
                        tool_call_id=call.tool_call_id, result=call.result))))
        if message.content:
            items.append(StreamItem(None, TextDeltaEvent(run_id=run_id, agent_id=agent,
                                                         payload=TextPayload(text=message.content))))
    items.append(StreamItem(None, RunFinishEvent(run_id=run_id, agent_id=agent, payload=RunFinishPayload())))
    return items


# --------------------------------------------------------------------------- the client


class RedisChatClient(Client):
    """The chat sessions of one Redis as read-only threads; ``webhook`` lets ``send`` continue one."""

    mode = "redis-chat"
    source = SOURCE
    source_title = SECTION_TITLE
    read_only = True

    def __init__(self, url: str, webhook: str | None = None, *, sessions: RedisChatSessions | None = None) -> None:
        super().__init__()
        self.url = url
        self.webhook = webhook
        self._sessions = sessions
        self.thread_label = ("Redis session (continue through the chat webhook)" if webhook
                             else "Redis session (read-only)")
        self._streams: dict[str, list[asyncio.Queue[StreamItem]]] = {}
        self._sending: set[str] = set()
        self._runs = itertools.count(1)

    @property
    def sessions(self) -> RedisChatSessions:
        if self._sessions is None:
            from .redis_chat_memory import RedisChatSessions

            self._sessions = RedisChatSessions.from_url(self.url)
        return self._sessions

    def preload(self) -> None:
        import redis.asyncio  # noqa: F401

        from . import redis_chat_memory  # noqa: F401
        if self.webhook:
            from . import chat_webhook  # noqa: F401

    async def open(self) -> None:
        self._set_state(ConnectionState.CONNECTED)

    async def close(self) -> None:
        sessions, self._sessions = self._sessions, None
        if sessions is not None:
            await sessions.close()
        self._set_state(ConnectionState.OFFLINE, "closed")

    # ----------------------------------------------------------------- reading
    async def list_threads(self) -> list[ThreadInfo]:
        try:
            return [session_info(info) for info in await self.sessions.list_sessions()]
        except Exception as exc:  # noqa: BLE001 - any Redis failure becomes the user's error message
            raise ClientError(f"cannot list the chat sessions in Redis: {_reason(exc)}") from None

    async def _load(self, session_id: str) -> ChatSession:
        try:
            return await self.sessions.load(session_id)
        except Exception as exc:  # noqa: BLE001 - any Redis failure becomes the user's error message
            raise ClientError(f"cannot load chat session {session_id!r}: {_reason(exc)}") from None

    async def messages(self, thread_id: str) -> ThreadMessages:
        return session_history(await self._load(thread_id))

    async def status(self, thread_id: str) -> ThreadStatus:
        return ThreadStatus(has_active_run=thread_id in self._sending)

    async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
        """Nothing but the replies to this client's own ``send`` (a session has no live stream)."""
        queue: asyncio.Queue[StreamItem] = asyncio.Queue()
        listeners = self._streams.setdefault(thread_id, [])
        listeners.append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            listeners.remove(queue)

    def _publish(self, thread_id: str, items: list[StreamItem]) -> None:
        for queue in self._streams.get(thread_id, []):
            for item in items:
                queue.put_nowait(item)

    # ----------------------------------------------------------------- writing: refused or continued
    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        raise ReadOnlyError("new threads cannot be created among the Redis chat sessions (they are read-only)")

    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        raise ReadOnlyError("a Redis chat session cannot be renamed here (read-only)")

    async def delete_thread(self, thread_id: str) -> None:
        raise ReadOnlyError("a Redis chat session cannot be deleted here (read-only)")

    async def cancel(self, thread_id: str) -> None:
        return None  # a webhook call cannot be taken back; the reply is shown when it comes

    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        raise ReadOnlyError("a Redis chat session has nothing to approve")

    async def send(self, thread_id: str, text: str) -> str:
        """Continue the session through the chat webhook; the reply comes on ``events``.

        Returns once the reply is stored (the webhook answers when the workflow is done)."""
        if not self.webhook:
            raise ReadOnlyError(READ_ONLY)
        if thread_id in self._sending:
            raise RunActiveError("still waiting for the reply to your previous message", 409)
        self._sending.add(thread_id)
        run_id = f"chat-{next(self._runs)}"
        start = run_events(run_id, [])[0]
        self._publish(thread_id, [start])  # the app shows the run as working meanwhile
        try:
            before = await self._load(thread_id)
            after = await self._continue(thread_id, text, before.info.length)
        except ClientError as exc:
            self._publish(thread_id, [StreamItem(None, RunFinishEvent(
                run_id=run_id, agent_id=f"agent-{run_id}", payload=RunFinishPayload(status="error", reason=str(exc))))])
            raise
        finally:
            self._sending.discard(thread_id)
        gained = after.messages[len(session_history(before).messages):]
        self._publish(thread_id, run_events(run_id, [m for m in gained if m.role == "assistant"])[1:])
        return run_id

    async def _continue(self, session_id: str, text: str, length: int) -> ThreadMessages:
        from .chat_webhook import ChatWebhookError, send_chat_message

        assert self.webhook is not None
        try:
            reply = await send_chat_message(self.webhook, session_id, text)
        except ChatWebhookError as exc:
            raise ClientError(str(exc), 502) from None
        after = await self._load(session_id)
        if after.info.length <= length:  # the workflow's memory did not write the turn: we do
            try:
                after = await self.sessions.append_turn(session_id, text, reply)
            except Exception as exc:  # noqa: BLE001 - any Redis failure becomes the user's error message
                raise ClientError(f"the reply came, but writing the turn to Redis failed: {_reason(exc)}", 502) from None
        return session_history(after)
