"""The "Redis sessions" source of the thread list: n8n chat sessions kept in Redis.

``instance-ai --redis-chat redis://… [--chat-webhook URL]`` adds a read-only section to the
thread list (``ThreadList.set_section("redis", …)``) with every session, newest first, titled
from ``chat_descriptions`` (``store.redis_chat``). Opening one shows its messages as
user/assistant turns (tool calls of LangChain-format sessions on the assistant's turn, a
malformed entry as a turn that says so). With a chat webhook, typing continues the session:
the text goes to the n8n Chat Trigger with the session's ``sessionId``
(``client.chat_webhook``); the workflow's memory node normally writes the turn to Redis, and
if it did not, the turn is appended here in the session's own format, so n8n reads it back.

``RedisSessions`` is the data side (no widgets); ``RedisSessionsView`` puts it on an
``InstanceAiApp`` (``app.load_redis_sessions(url)`` creates one).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..protocol.api import InstanceAiMessage, ThreadInfo, ThreadMessages
from ..protocol.tree import AgentNode, TextEntry, ToolCallEntry, ToolCallState

if TYPE_CHECKING:
    from ..store.redis_chat import ChatMessage, ChatSession, ChatSessionInfo, RedisChatSessions
    from .app import InstanceAiApp

SOURCE = "redis"
SECTION_TITLE = "Redis sessions"
#: the age shown for a session whose key and description carry no time
UNKNOWN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
RAW_PREVIEW = 400


class RedisSessionError(Exception):
    """Redis or the chat webhook could not be used; the message says why."""


# --------------------------------------------------------------------------- data


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


class RedisSessions:
    """n8n chat sessions in one Redis, as thread-list items and histories; continue through a webhook."""

    def __init__(self, url: str, webhook: str | None = None, *, sessions: RedisChatSessions | None = None) -> None:
        from ..store.redis_chat import RedisChatSessions

        self.url = url
        self.webhook = webhook
        self.sessions = sessions or RedisChatSessions.from_url(url)

    async def close(self) -> None:
        await self.sessions.close()

    async def list(self) -> list[ThreadInfo]:
        try:
            return [session_info(info) for info in await self.sessions.list_sessions()]
        except Exception as exc:  # noqa: BLE001 - a Redis or webhook failure is shown to the user, not raised
            raise RedisSessionError(f"cannot list the chat sessions in Redis: {_reason(exc)}") from None

    async def load(self, session_id: str) -> ChatSession:
        try:
            return await self.sessions.load(session_id)
        except Exception as exc:  # noqa: BLE001 - a Redis or webhook failure is shown to the user, not raised
            raise RedisSessionError(f"cannot load chat session {session_id!r}: {_reason(exc)}") from None

    async def continue_session(self, session_id: str, text: str) -> ChatSession:
        """Send ``text`` to the webhook as ``session_id``; the session with the new turn in it."""
        from ..client.chat_webhook import ChatWebhookError, send_chat_message

        if not self.webhook:
            raise RedisSessionError("this Redis session is read-only: start with --chat-webhook URL to continue it")
        before = await self.load(session_id)
        try:
            reply = await send_chat_message(self.webhook, session_id, text)
        except ChatWebhookError as exc:
            raise RedisSessionError(str(exc)) from None
        after = await self.load(session_id)
        if after.info.length > before.info.length:
            return after  # the workflow's memory wrote the turn
        try:
            return await self.sessions.append_turn(session_id, text, reply)
        except Exception as exc:  # noqa: BLE001 - a Redis or webhook failure is shown to the user, not raised
            raise RedisSessionError(f"the reply came, but writing the turn to Redis failed: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


# --------------------------------------------------------------------------- on the app


class RedisSessionsView:
    """The Redis sessions section of an ``InstanceAiApp`` and the session open in its view."""

    def __init__(self, app: InstanceAiApp, data: RedisSessions) -> None:
        self.app = app
        self.data = data
        #: the session shown in the conversation view (None: a thread of the app's client is)
        self.current: str | None = None
        self._sending = False

    @classmethod
    def attach(cls, app: InstanceAiApp, url: str, webhook: str | None = None) -> RedisSessionsView:
        view = cls(app, RedisSessions(url, webhook))
        app.run_worker(view.refresh(), group="redis-sessions", exclusive=True, exit_on_error=False)
        return view

    async def close(self) -> None:
        try:
            await self.data.close()
        except Exception as exc:  # noqa: BLE001 - closing must not break the app's exit
            self.app.log.error(f"closing the Redis chat connection failed: {exc}")

    async def refresh(self) -> None:
        try:
            threads = await self.data.list()
        except RedisSessionError as exc:
            self.app.notify(str(exc), severity="error", timeout=10)
            return
        self.app.thread_list.set_section(SOURCE, threads, title=SECTION_TITLE, read_only=True)

    def open_in_background(self, session_id: str) -> None:
        self.app.run_worker(self.open(session_id), group="open", exclusive=True, exit_on_error=False)

    async def open(self, session_id: str) -> None:
        """Show the session (read-only unless a webhook is configured)."""
        app = self.app
        await app.open_thread(None)  # leaves the current thread (stops its stream)
        try:
            session = await self.data.load(session_id)
        except RedisSessionError as exc:
            app.notify(str(exc), severity="error", timeout=10)
            return
        self.current = session_id
        self._show(session)
        app.prompt.focus()

    def _show(self, session: ChatSession) -> None:
        from ..protocol.conversation import Conversation

        app = self.app
        conversation = Conversation(session.info.session_id)
        conversation.load_history(session_history(session))
        conversation.title = session.info.title
        conversation.drain_changes()
        app.conversation = conversation
        app.view.load(conversation)
        app.thread_list.active_thread_id = session.info.session_id
        app.thread_list.upsert_thread(session_info(session.info), source=SOURCE)
        mode = "continue through the chat webhook" if self.data.webhook else "read-only"
        app.status_info.thread_title = session.info.title
        app.sub_title = f"{session.info.title} · Redis session ({mode})"
        app.status_line.refresh_info()

    async def send(self, text: str) -> None:
        """Continue the open session with ``text`` (the prompt keeps it if that fails)."""
        app = self.app
        session_id = self.current
        if session_id is None or not text.strip():
            return
        if not self.data.webhook:
            app.notify("This Redis session is read-only: start instance-ai with --chat-webhook URL to continue it.",
                       severity="warning", timeout=8)
            app.prompt.load_text(text)
            return
        if self._sending:
            app.notify("Still waiting for the reply to your previous message.", severity="warning")
            app.prompt.load_text(text)
            return
        conversation = app.conversation
        if conversation is not None:
            conversation.add_user_message(text)
        self._sending = True
        app.status_info.message = "waiting for n8n…"
        app.status_line.refresh_info()
        try:
            session = await self.data.continue_session(session_id, text)
        except RedisSessionError as exc:
            app.notify(f"Not sent: {exc}", severity="error", timeout=10)
            app.prompt.load_text(text)
            if self.current == session_id:
                try:
                    self._show(await self.data.load(session_id))
                except RedisSessionError:
                    pass
            return
        finally:
            self._sending = False
            app.status_info.message = ""
            app.status_line.refresh_info()
        if self.current == session_id:  # the user may have moved on meanwhile
            self._show(session)
