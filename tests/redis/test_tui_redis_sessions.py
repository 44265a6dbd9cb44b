"""The TUI's "Redis sessions" source (``instance-ai --redis-chat URL [--chat-webhook URL]``) on a
real redis-server seeded with the seed's example data and a LangChain-format session, and a real
chat webhook (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from textual.widgets import Input

from instance_ai_tui.client.base import ReadOnlyError
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.widgets.turns import TextBlock, UserMessage
from tests.support import free_port, serve_asgi
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

SIZE = (120, 40)
S1 = "2025-10-15T10:58:13.866-04:00"
S2 = "2025-10-16T09:00:00.000-04:00"
LC = "lc-session-7"


def seed_ai(text: str, route: str | None = None, forwarded: str | None = None) -> str:
    content = {"direct_response_to_user": text, "agent_to_route_to": route, "forwarded_message": forwarded,
               "project_data": None}
    return json.dumps({"type": "ai", "data": {"content": json.dumps(content), "tool_calls": [], "invalid_tool_calls": [],
                                              "additional_kwargs": {}, "response_metadata": {}}})


def seed_human(text: str, session: str) -> str:
    content = (f"User's Most Recent Chat Input: {text}\n---\nList of Projects from Database:\n"
               f'[{{"id": 1, "name": "Migration"}}]\nsessionId: {session}\n'
               "resumeUrl: http://localhost:5678/webhook-waiting/123\n")
    return json.dumps({"type": "human", "data": {"content": content, "additional_kwargs": {}, "response_metadata": {}}})


def lc(kind: str, content: str, **data: Any) -> str:
    return json.dumps({"type": kind, "data": {"content": content, "additional_kwargs": {}, "response_metadata": {},
                                              **data}})


async def seed(r: Any) -> None:
    await r.rpush(S1, seed_ai("Welcome! What would you like to do?"), seed_human("Plan the database migration", S1),
                  seed_ai("Routing you to the planner.", route="Planner", forwarded="Plan the migration"),
                  "{not json", seed_human("Thanks", S1), seed_ai("Here is the plan."))
    await r.hset("chat_descriptions", S1, "Database Migration Planning")
    await r.rpush(S2, seed_ai("Welcome back!"))
    # LangChain (n8n's Redis Chat Memory node): LPUSH, so the newest message is at index 0
    for message in (lc("human", "How many workflows are active?"),
                    lc("ai", "", tool_calls=[{"id": "call_1", "name": "list_workflows", "args": {"active": True}}]),
                    lc("tool", '{"count": 3}', tool_call_id="call_1", name="list_workflows"),
                    lc("ai", "You have 3 active workflows.")):
        await r.lpush(LC, message)


@contextlib.asynccontextmanager
async def chat_webhook(redis_client: Any) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An n8n Chat Trigger stand-in: answers ``{output}``; for LangChain sessions it also writes
    the turn to Redis the way n8n's memory node does."""
    received: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        received.append(body)
        reply = f"echo: {body['chatInput']}"
        if body["sessionId"].startswith("lc-"):
            await redis_client.lpush(body["sessionId"], lc("human", body["chatInput"]))
            await redis_client.lpush(body["sessionId"], lc("ai", reply))
        return JSONResponse({"output": reply})

    async with serve_asgi(Starlette(routes=[Route("/webhook/chat", chat, methods=["POST"])])) as url:
        yield f"{url}/webhook/chat", received


def make_app(redis_url: str, webhook: str | None = None) -> InstanceAiApp:
    return InstanceAiApp(RecordedClient(model_name="scripted-test"), Settings(), redis_chat=redis_url,
                         chat_webhook=webhook, watch_themes=False, persist_theme=False)


def user_texts(app: InstanceAiApp) -> list[str]:
    return [w.text for w in app.view.turns.values() if isinstance(w, UserMessage)]


def assistant_texts(app: InstanceAiApp) -> list[str]:
    return ["".join(w.source for w in turn.root.entries.values() if isinstance(w, TextBlock))
            for turn in app.view.assistant_turns()]


async def open_by_search(pilot: Any, app: InstanceAiApp, words: str, session_id: str) -> None:
    app.actions.show_threads()  # the search takes the keys; it still holds the last search: start afresh
    app.thread_list.query_one("#thread-search", Input).value = ""
    await pilot.press(*words)
    await until(lambda: app.thread_list.highlighted_thread_id == session_id, pilot)
    await pilot.press("enter")
    await until(lambda: app.thread_id == session_id and app.thread.client.source == "redis", pilot)
    await app.wait_until_rendered()



async def send_in_migration(pilot: Any, app: Any) -> None:
    """Open the seeded "Migration" session from the thread list and send a message in it."""
    await app.wait_until_ready()
    await until(lambda: len(app.thread_list.visible_thread_ids()) == 3, pilot)
    await open_by_search(pilot, app, "Migration", S1)
    app.prompt.focus()
    app.prompt.load_text("Add a rollback step")
    await pilot.press("enter")

async def test_browse_and_open_read_only(redis_url: str, redis_client: Any) -> None:
    await seed(redis_client)
    app = make_app(redis_url)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: len(app.thread_list.visible_thread_ids()) == 3, pilot)
        assert app.thread_list.visible_thread_ids() == [S2, S1, LC]  # newest first; LC has no time
        assert app.thread_list.thread(S1).title == "Database Migration Planning"
        assert app.thread_list.thread(S2).title == "New Conversation"

        await open_by_search(pilot, app, "Migration", S1)
        assert user_texts(app) == ["Plan the database migration", "Thanks"]
        texts = assistant_texts(app)
        assert texts[0] == "Welcome! What would you like to do?"
        assert texts[1].startswith("Routing you to the planner.") and "routed to **Planner**" in texts[1]
        assert "Malformed entry #4" in texts[2] and "{not json" in texts[2]  # shown as such, in its place
        assert texts[3] == "Here is the plan."
        assert "read-only" in app.sub_title

        app.prompt.focus()
        app.prompt.load_text("can I continue?")
        await pilot.press("enter")
        await until(lambda: any("read-only" in n.message and "--chat-webhook" in n.message for n in app._notifications),
                    pilot, what="the read-only note")
        assert app.prompt.text == "can I continue?"  # kept: nothing was sent
        assert user_texts(app) == ["Plan the database migration", "Thanks"]  # not shown as sent either
        assert await redis_client.llen(S1) == 6
        # the source is a Client like any other: it refuses every change with a clear error
        source = app.thread.client
        with pytest.raises(ReadOnlyError, match="read-only"):
            await source.rename_thread(S1, "x")
        with pytest.raises(ReadOnlyError, match="read-only"):
            await source.delete_thread(S1)

        await open_by_search(pilot, app, "lc-session", LC)
        assert user_texts(app) == ["How many workflows are active?"]
        turn = app.view.assistant_turns()[-1]
        assert [card.tc.tool_name for card in turn.cards.values()] == ["list_workflows"]
        assert next(iter(turn.cards.values())).tc.result == {"count": 3}
        assert assistant_texts(app) == ["You have 3 active workflows."]


async def test_continue_through_the_chat_webhook(redis_url: str, redis_client: Any) -> None:
    await seed(redis_client)
    async with chat_webhook(redis_client) as (url, received):
        app = make_app(redis_url, url)
        async with app.run_test(size=SIZE) as pilot:
            await send_in_migration(pilot, app)
            await until(lambda: "echo: Add a rollback step" in assistant_texts(app), pilot)
            assert received == [{"action": "sendMessage", "sessionId": S1, "chatInput": "Add a rollback step"}]
            assert user_texts(app)[-1] == "Add a rollback step"
            # the webhook did not write to Redis: the turn was appended in the seed's format
            entries = await redis_client.lrange(S1, 0, -1)
            assert len(entries) == 8
            human, ai = json.loads(entries[-2]), json.loads(entries[-1])
            assert human["type"] == "human"
            assert human["data"]["content"].startswith("User's Most Recent Chat Input: Add a rollback step\n---")
            assert json.loads(ai["data"]["content"])["direct_response_to_user"] == "echo: Add a rollback step"

            # a LangChain session whose workflow memory writes the turn itself: nothing is added twice
            await open_by_search(pilot, app, "lc-session", LC)
            app.prompt.focus()
            app.prompt.load_text("And inactive ones?")
            await pilot.press("enter")
            await until(lambda: "echo: And inactive ones?" in assistant_texts(app), pilot)
            assert await redis_client.llen(LC) == 6
            assert json.loads((await redis_client.lrange(LC, 0, 0))[0])["data"]["content"] == "echo: And inactive ones?"
            assert user_texts(app) == ["How many workflows are active?", "And inactive ones?"]


async def test_a_webhook_that_cannot_be_reached_leaves_the_message_in_the_prompt(redis_url: str,
                                                                                redis_client: Any) -> None:
    await seed(redis_client)
    dead = f"http://127.0.0.1:{free_port()}/webhook/chat"  # a port nothing listens on
    app = make_app(redis_url, dead)
    async with app.run_test(size=SIZE) as pilot:
        await send_in_migration(pilot, app)
        await until(lambda: any("Not sent" in n.message and "chat webhook" in n.message for n in app._notifications),
                    pilot)
        await until(lambda: not app.conversation.is_streaming, pilot)
        assert app.prompt.text == "Add a rollback step"
        assert await redis_client.llen(S1) == 6  # nothing written
        assert app.status_info.run_state == "error"  # the run that tried says how it ended
