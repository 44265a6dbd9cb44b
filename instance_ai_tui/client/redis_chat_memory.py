"""n8n chat sessions kept in Redis: read, browse and continue them.

Two layouts are understood, and told apart by what the data says, never by a key's name:

* **seed** (``../shared/seeds/redis-chat-storage.md``): one LIST per session, key = an ISO 8601
  timestamp, oldest message first; AI messages carry a JSON string in ``data.content``
  (``direct_response_to_user``, ``agent_to_route_to``, ``forwarded_message``, ``project_data``);
  human messages carry the user's input, a ``---`` separator, the projects JSON and session
  metadata (``sessionId``, ``resumeUrl``).
* **LangChain** (what n8n's Redis Chat Memory node writes): one LIST per session, ``LPUSH`` per
  message so the newest is at index 0; ``{type: human|ai|tool|system, data: {content, tool_calls,
  tool_call_id, ...}}``.

Titles come from the ``chat_descriptions`` hash (a plain string, or a JSON object with ``title``),
"New Conversation" when absent. Keys are listed with ``SCAN`` (never ``KEYS``). A malformed entry
is returned as a message with ``malformed=True`` and an ``error``; it never breaks a listing.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

DESCRIPTIONS_KEY = "chat_descriptions"
DEFAULT_TITLE = "New Conversation"
USER_INPUT_PREFIX = "User's Most Recent Chat Input:"

Layout = Literal["seed", "langchain"]
Order = Literal["oldest_first", "newest_first"]


class ChatMessage(BaseModel):
    """One parsed message of a session, in chronological position ``index``."""

    index: int
    role: Literal["human", "ai", "tool", "system", "unknown"] = "unknown"
    text: str = ""
    #: seed AI messages: the routing fields of the double-encoded content
    agent_to_route_to: str | None = None
    forwarded_message: str | None = None
    project_data: Any = None
    #: seed human messages: what followed the user's input
    context: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    #: LangChain: tool calls of an AI message / the call a tool message answers
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    malformed: bool = False
    error: str | None = None
    raw: str = ""


class ChatSessionInfo(BaseModel):
    session_id: str
    title: str = DEFAULT_TITLE
    length: int = 0
    started_at: datetime | None = None
    updated_at: datetime | None = None


class ChatSession(BaseModel):
    info: ChatSessionInfo
    layout: Layout
    order: Order
    messages: list[ChatMessage] = Field(default_factory=list)

    @property
    def resume_url(self) -> str | None:
        for message in reversed(self.messages):
            if "resumeUrl" in message.metadata:
                return message.metadata["resumeUrl"]
        return None


# --------------------------------------------------------------------------- parsing


def _parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _content_text(content: Any) -> str:
    """LangChain content is a string or a list of parts (``{type: text, text}``, images...)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return "" if content is None else json.dumps(content)


_META_RE = re.compile(r"^\s*\"?(sessionId|resumeUrl)\"?\s*[:=]\s*\"?([^\",\s]+)\"?,?\s*$")


def split_human_content(content: str) -> tuple[str, str | None, dict[str, str]]:
    """Split a seed human message into (user input, appended context, session metadata)."""
    metadata: dict[str, str] = {}
    for line in content.splitlines():
        match = _META_RE.match(line)
        if match:
            metadata[match.group(1)] = match.group(2)
    # The metadata may also be a JSON object somewhere in the context.
    for match in re.finditer(r"\{[^{}]*\"sessionId\"[^{}]*\}", content):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        for key in ("sessionId", "resumeUrl"):
            if isinstance(obj.get(key), str):
                metadata.setdefault(key, obj[key])

    head, sep, tail = content.partition("\n---")
    context = tail.lstrip("-").strip() if sep else None
    user = head
    for line in content.splitlines():
        if line.startswith(USER_INPUT_PREFIX):
            user = line[len(USER_INPUT_PREFIX) :]
            break
    else:
        if head.startswith(USER_INPUT_PREFIX):
            user = head[len(USER_INPUT_PREFIX) :]
    return user.strip(), context or None, metadata


def _seed_ai_fields(content: str) -> dict[str, Any] | None:
    """The double-encoded seed AI content, or None if ``content`` is not that."""
    try:
        obj = json.loads(content)
    except (ValueError, TypeError):
        return None
    if isinstance(obj, dict) and "direct_response_to_user" in obj:
        return obj
    return None


def parse_entry(raw: str | bytes, index: int = 0) -> tuple[ChatMessage, Layout | None]:
    """Parse one list element (first the wrapper, then the content). Never raises."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    try:
        wrapper = json.loads(text)
    except ValueError as exc:
        return ChatMessage(index=index, malformed=True, error=f"not JSON: {exc}", raw=text), None
    if not isinstance(wrapper, dict):
        return ChatMessage(index=index, malformed=True, error="not a JSON object", raw=text), None
    kind = wrapper.get("type")
    data = wrapper.get("data")
    if not isinstance(data, dict):
        # Postgres-style flattened messages put the fields beside ``type``.
        data = {k: v for k, v in wrapper.items() if k != "type"}
    if kind not in ("human", "ai", "tool", "system", "generic", "chat"):
        return ChatMessage(index=index, malformed=True, error=f"unknown message type {kind!r}", raw=text), None
    content = data.get("content")
    if kind == "ai":
        fields = _seed_ai_fields(content) if isinstance(content, str) else None
        if fields is not None:
            answer = fields.get("direct_response_to_user")
            return (
                ChatMessage(
                    index=index,
                    role="ai",
                    text=answer if isinstance(answer, str) else _content_text(answer),
                    agent_to_route_to=fields.get("agent_to_route_to") or None,
                    forwarded_message=fields.get("forwarded_message") or None,
                    project_data=fields.get("project_data"),
                    raw=text,
                ),
                "seed",
            )
        raw_calls = data.get("tool_calls")
        calls = raw_calls if isinstance(raw_calls, list) else []
        return (
            ChatMessage(
                index=index,
                role="ai",
                text=_content_text(content),
                tool_calls=[c for c in calls if isinstance(c, dict)],
                raw=text,
            ),
            "langchain" if content is not None else None,
        )
    if kind == "human":
        body = _content_text(content)
        if USER_INPUT_PREFIX in body or "\n---" in body:
            user, context, metadata = split_human_content(body)
            return ChatMessage(index=index, role="human", text=user, context=context, metadata=metadata, raw=text), "seed"
        return ChatMessage(index=index, role="human", text=body, raw=text), None
    if kind == "tool":
        return (
            ChatMessage(
                index=index,
                role="tool",
                text=_content_text(content),
                tool_call_id=data.get("tool_call_id") if isinstance(data.get("tool_call_id"), str) else None,
                tool_name=data.get("name") if isinstance(data.get("name"), str) else None,
                raw=text,
            ),
            "langchain",
        )
    return ChatMessage(index=index, role="system", text=_content_text(content), raw=text), None


def detect_order(messages: list[ChatMessage], layout: Layout) -> Order:
    """Tell from the messages themselves whether the list is oldest- or newest-first.

    Evidence, strongest first: a tool result must come after the AI message that called it;
    a seed session's human message carries its own session metadata and comes after the
    AI greeting or answer it replies to; LangChain turns are (human, ai) pairs, so a list
    read newest-first ends with a human message and starts with an AI one. With no evidence,
    the layout's writer decides (seed: RPUSH, LangChain: LPUSH).
    """
    position: dict[str, int] = {}
    for i, message in enumerate(messages):
        for call in message.tool_calls:
            if isinstance(call.get("id"), str):
                position[call["id"]] = i
    votes = 0
    for i, message in enumerate(messages):
        if message.tool_call_id and message.tool_call_id in position:
            votes += 1 if position[message.tool_call_id] < i else -1
    if votes:
        return "oldest_first" if votes > 0 else "newest_first"
    roles = [m.role for m in messages if m.role in ("human", "ai")]
    if layout == "langchain" and len(roles) >= 2:
        if roles[0] == "human" and roles[-1] == "ai":
            return "oldest_first"
        if roles[0] == "ai" and roles[-1] == "human":
            return "newest_first"
    return "oldest_first" if layout == "seed" else "newest_first"


def parse_session(session_id: str, raw_entries: list[Any], title: str = DEFAULT_TITLE) -> ChatSession:
    """Parse a whole list as stored (index 0 first) into a chronological session."""
    parsed: list[ChatMessage] = []
    seen: dict[Layout, int] = {"seed": 0, "langchain": 0}
    for i, raw in enumerate(raw_entries):
        message, entry_layout = parse_entry(raw, i)
        parsed.append(message)
        if entry_layout:
            seen[entry_layout] += 1
    layout: Layout = "seed" if seen["seed"] >= max(1, seen["langchain"]) else "langchain"
    order = detect_order([m for m in parsed if not m.malformed], layout)
    if order == "newest_first":
        parsed.reverse()
    for i, message in enumerate(parsed):
        message.index = i
    started = _parse_time(session_id)
    info = ChatSessionInfo(session_id=session_id, title=title, length=len(parsed), started_at=started)
    return ChatSession(info=info, layout=layout, order=order, messages=parsed)


def _title_from_value(value: Any) -> tuple[str, datetime | None]:
    if value is None:
        return DEFAULT_TITLE, None
    text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            title = obj.get("title") if isinstance(obj.get("title"), str) else DEFAULT_TITLE
            updated = obj.get("updated_at")
            return title or DEFAULT_TITLE, _parse_time(updated) if isinstance(updated, str) else None
    return (text.strip() or DEFAULT_TITLE), None


# --------------------------------------------------------------------------- Redis access


class RedisChatSessions:
    """Browse and continue n8n chat sessions in one Redis database."""

    def __init__(
        self,
        redis: Any,
        *,
        match: str = "*",
        descriptions_key: str = DESCRIPTIONS_KEY,
        ttl_seconds: int | None = None,
    ) -> None:
        self._redis = redis
        self._match = match
        self._descriptions_key = descriptions_key
        self._ttl = ttl_seconds if ttl_seconds and ttl_seconds > 0 else None

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisChatSessions:
        import redis.asyncio as aioredis

        return cls(aioredis.from_url(url, decode_responses=True), **kwargs)

    async def close(self) -> None:
        await self._redis.aclose()

    async def _session_keys(self) -> list[str]:
        keys: list[str] = []
        async for key in self._redis.scan_iter(match=self._match, count=500, _type="list"):
            name = key.decode() if isinstance(key, bytes) else key
            if name != self._descriptions_key:
                keys.append(name)
        return keys

    async def list_sessions(self) -> list[ChatSessionInfo]:
        """Every session, newest first (by the key's timestamp, else the description's date)."""
        keys = await self._session_keys()
        if not keys:
            return []
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.llen(key)
        lengths = await pipe.execute()
        descriptions = await self._redis.hmget(self._descriptions_key, keys)
        infos = []
        for key, length, value in zip(keys, lengths, descriptions, strict=False):
            title, updated = _title_from_value(value)
            started = _parse_time(key)
            infos.append(
                ChatSessionInfo(session_id=key, title=title, length=int(length or 0), started_at=started, updated_at=updated)
            )
        epoch = datetime.min.replace(tzinfo=UTC)
        infos.sort(key=lambda i: (i.updated_at or i.started_at or epoch, i.session_id), reverse=True)
        return infos

    async def load(self, session_id: str) -> ChatSession:
        entries = await self._redis.lrange(session_id, 0, -1)
        value = await self._redis.hget(self._descriptions_key, session_id)
        title, updated = _title_from_value(value)
        session = parse_session(session_id, list(entries), title)
        session.info.updated_at = updated
        return session

    async def append_turn(self, session_id: str, user_text: str, ai_text: str) -> ChatSession:
        """Continue a session in its own format, so n8n reads it back; honours the TTL."""
        existing = await self.load(session_id) if await self._redis.exists(session_id) else None
        layout = existing.layout if existing else "seed"
        order = existing.order if existing else ("oldest_first" if layout == "seed" else "newest_first")
        if layout == "seed":
            resume = existing.resume_url if existing else None
            meta = {"sessionId": session_id, **({"resumeUrl": resume} if resume else {})}
            human = {
                "type": "human",
                "data": {
                    "content": f"{USER_INPUT_PREFIX} {user_text}\n---\n{json.dumps(meta)}",
                    "additional_kwargs": {},
                    "response_metadata": {},
                },
            }
            ai_content = {
                "direct_response_to_user": ai_text,
                "agent_to_route_to": None,
                "forwarded_message": None,
                "project_data": None,
            }
            ai = {
                "type": "ai",
                "data": {
                    "content": json.dumps(ai_content),
                    "tool_calls": [],
                    "invalid_tool_calls": [],
                    "additional_kwargs": {},
                    "response_metadata": {},
                },
            }
        else:
            human = {"type": "human", "data": {"content": user_text, "additional_kwargs": {}, "response_metadata": {}}}
            ai = {
                "type": "ai",
                "data": {
                    "content": ai_text,
                    "tool_calls": [],
                    "invalid_tool_calls": [],
                    "additional_kwargs": {},
                    "response_metadata": {},
                },
            }
        push = "rpush" if order == "oldest_first" else "lpush"
        pipe = self._redis.pipeline(transaction=True)
        for message in (human, ai):
            getattr(pipe, push)(session_id, json.dumps(message))
        if self._ttl:
            pipe.expire(session_id, self._ttl)
        await pipe.execute()
        return await self.load(session_id)
