"""n8n chat sessions in a real Redis: the seed's layout and LangChain's."""

from __future__ import annotations

import json

import httpx
import pytest

from instance_ai_tui.client.chat_webhook import ChatWebhookError, send_chat_message
from instance_ai_tui.client.redis_chat_memory import DEFAULT_TITLE, RedisChatSessions, parse_entry, split_human_content

S1 = "2025-10-15T10:58:13.866-04:00"
S2 = "2025-10-16T09:00:00.000-04:00"
S3 = "2025-10-14T08:00:00.000+02:00"


def seed_ai(text: str, route: str | None = None, forwarded: str | None = None, project: str | None = None) -> str:
    content = {
        "direct_response_to_user": text,
        "agent_to_route_to": route,
        "forwarded_message": forwarded,
        "project_data": project,
    }
    return json.dumps(
        {
            "type": "ai",
            "data": {
                "content": json.dumps(content),
                "tool_calls": [],
                "invalid_tool_calls": [],
                "additional_kwargs": {},
                "response_metadata": {},
            },
        }
    )


def seed_human(text: str, session: str) -> str:
    content = (
        f"User's Most Recent Chat Input: {text}\n"
        "---\n"
        "List of Projects from Database:\n"
        '[{"id": 1, "name": "Migration"}]\n'
        f"sessionId: {session}\n"
        "resumeUrl: http://localhost:5678/webhook-waiting/123\n"
    )
    return json.dumps({"type": "human", "data": {"content": content, "additional_kwargs": {}, "response_metadata": {}}})


def lc(kind: str, content: str, **data: object) -> str:
    return json.dumps({"type": kind, "data": {"content": content, "additional_kwargs": {}, "response_metadata": {}, **data}})


async def seed_example(r) -> None:
    await r.rpush(
        S1,
        seed_ai("Welcome! What would you like to do?"),
        seed_human("Plan the database migration", S1),
        seed_ai("Routing you to the planner.", route="Planner", forwarded="Plan the migration", project='{"id": 1}'),
        seed_human("Thanks", S1),
        seed_ai("Here is the plan."),
    )
    await r.rpush(S2, seed_ai("Welcome back!"))
    await r.rpush(S3, seed_ai("Hello"), seed_human("hi", S3))
    await r.hset("chat_descriptions", S1, "Database Migration Planning")


async def test_lists_sessions_newest_first_with_titles(redis_client) -> None:
    await seed_example(redis_client)
    await redis_client.set("not-a-list", "x")  # other key types are not sessions
    sessions = RedisChatSessions(redis_client)
    infos = await sessions.list_sessions()
    assert [i.session_id for i in infos] == [S2, S1, S3]
    titles = {i.session_id: i.title for i in infos}
    assert titles[S1] == "Database Migration Planning"
    assert titles[S2] == DEFAULT_TITLE
    assert {i.session_id: i.length for i in infos}[S1] == 5


async def test_listing_uses_scan_not_keys(redis_client, monkeypatch) -> None:
    await seed_example(redis_client)

    async def forbidden(*args, **kwargs):
        raise AssertionError("KEYS must not be used")

    monkeypatch.setattr(redis_client, "keys", forbidden)
    assert len(await RedisChatSessions(redis_client).list_sessions()) == 3


async def test_seed_session_parses_twice_in_order(redis_client) -> None:
    await seed_example(redis_client)
    session = await RedisChatSessions(redis_client).load(S1)
    assert session.layout == "seed" and session.order == "oldest_first"
    roles = [m.role for m in session.messages]
    assert roles == ["ai", "human", "ai", "human", "ai"]
    assert session.messages[0].text == "Welcome! What would you like to do?"
    human = session.messages[1]
    assert human.text == "Plan the database migration"
    assert "List of Projects" in (human.context or "")
    assert human.metadata == {"sessionId": S1, "resumeUrl": "http://localhost:5678/webhook-waiting/123"}
    routed = session.messages[2]
    assert routed.agent_to_route_to == "Planner"
    assert routed.forwarded_message == "Plan the migration"
    assert routed.project_data == '{"id": 1}'
    assert session.resume_url == "http://localhost:5678/webhook-waiting/123"
    assert session.info.title == "Database Migration Planning"


async def test_langchain_lpush_order_is_detected(redis_client) -> None:
    # What n8n's Redis Chat Memory node does: LPUSH each message in chronological order.
    for message in [
        lc("human", "What's the weather in Paris?"),
        lc("ai", "", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}]),
        lc("tool", '{"temp_c": 21}', tool_call_id="call_1", name="get_weather"),
        lc("ai", "It is 21 C in Paris."),
    ]:
        await redis_client.lpush("chat_history", message)
    session = await RedisChatSessions(redis_client).load("chat_history")
    assert session.layout == "langchain" and session.order == "newest_first"
    assert [m.role for m in session.messages] == ["human", "ai", "tool", "ai"]
    assert session.messages[1].tool_calls[0]["name"] == "get_weather"
    assert session.messages[2].tool_call_id == "call_1"
    assert session.messages[3].text == "It is 21 C in Paris."


async def test_langchain_oldest_first_is_detected_too(redis_client) -> None:
    # The same messages written oldest-first (e.g. by RPUSH): detected from the data, not the key.
    await redis_client.rpush("other-session", lc("human", "hello"), lc("ai", "hi there"), lc("human", "bye"), lc("ai", "ciao"))
    session = await RedisChatSessions(redis_client).load("other-session")
    assert session.order == "oldest_first"
    assert [m.text for m in session.messages] == ["hello", "hi there", "bye", "ciao"]
    await redis_client.lpush("pairs", lc("human", "one"), lc("ai", "uno"))
    assert [m.text for m in (await RedisChatSessions(redis_client).load("pairs")).messages] == ["one", "uno"]


async def test_malformed_entries_are_marked_and_skipped(redis_client) -> None:
    await redis_client.rpush(
        S1,
        seed_ai("Welcome"),
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"type": "alien", "data": {}}),
        json.dumps({"type": "ai", "data": {"content": 42}}),
        seed_human("go", S1),
    )
    sessions = RedisChatSessions(redis_client)
    infos = await sessions.list_sessions()
    assert infos[0].length == 6
    session = await sessions.load(S1)
    bad = [m for m in session.messages if m.malformed]
    assert len(bad) == 3 and all(m.error for m in bad)
    good = [m for m in session.messages if not m.malformed]
    assert good[0].text == "Welcome" and good[-1].text == "go"


async def test_continue_seed_session_and_title(redis_client) -> None:
    await seed_example(redis_client)
    sessions = RedisChatSessions(redis_client, ttl_seconds=3600)
    session = await sessions.append_turn(S2, "Start a new project", "Sure, which one?")
    assert [m.text for m in session.messages][-2:] == ["Start a new project", "Sure, which one?"]
    # written in the seed format: the AI content is double-encoded, the human carries the session id
    raw = await redis_client.lrange(S2, -1, -1)
    assert json.loads(json.loads(raw[0])["data"]["content"])["direct_response_to_user"] == "Sure, which one?"
    assert session.messages[-2].metadata["sessionId"] == S2
    assert 0 < await redis_client.ttl(S2) <= 3600


async def test_continue_langchain_session_keeps_lpush(redis_client) -> None:
    await redis_client.lpush("lc", lc("human", "hello"), lc("ai", "hi"))
    sessions = RedisChatSessions(redis_client)
    session = await sessions.append_turn("lc", "how are you?", "fine")
    assert [m.text for m in session.messages] == ["hello", "hi", "how are you?", "fine"]
    newest = json.loads(await redis_client.lindex("lc", 0))
    assert newest == {"type": "ai", "data": {"content": "fine", "tool_calls": [], "invalid_tool_calls": [],
                                             "additional_kwargs": {}, "response_metadata": {}}}
    assert await redis_client.ttl("lc") == -1  # no TTL configured


async def test_json_descriptions_are_understood(redis_client) -> None:
    await redis_client.rpush("s-json", seed_ai("hi"))
    await redis_client.hset("chat_descriptions", "s-json", json.dumps({"title": "From JSON", "updated_at": "2030-01-01T00:00:00+00:00"}))
    await seed_example(redis_client)
    sessions = RedisChatSessions(redis_client)
    infos = await sessions.list_sessions()
    assert infos[0].session_id == "s-json" and infos[0].title == "From JSON"


def test_parse_entry_never_raises_on_odd_input() -> None:
    for raw in [b"\xff\xfe", "null", "[]", '{"type": "human"}', '{"type": "ai", "data": "x"}',
                '{"type": "tool", "data": {"content": [{"type": "text", "text": "a"}]}}']:
        message, _ = parse_entry(raw)
        assert message.raw is not None


def test_split_human_content_without_prefix() -> None:
    user, context, meta = split_human_content('Just the question\n---\n[{"id": 2}]\n{"sessionId": "abc", "resumeUrl": "http://x/y"}')
    assert user == "Just the question"
    assert context and "[{" in context
    assert meta == {"sessionId": "abc", "resumeUrl": "http://x/y"}


async def test_chat_webhook_round_trip() -> None:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if body["chatInput"] == "fail":
            return httpx.Response(500, text="boom")
        return httpx.Response(200, json={"output": f"echo: {body['chatInput']}"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        reply = await send_chat_message("http://n8n.local/webhook/abc/chat", S1, "hello", http=http)
        assert reply == "echo: hello"
        assert seen[0] == {"action": "sendMessage", "sessionId": S1, "chatInput": "hello"}
        with pytest.raises(ChatWebhookError, match="HTTP 500"):
            await send_chat_message("http://n8n.local/webhook/abc/chat", S1, "fail", http=http)
