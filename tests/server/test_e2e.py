"""End to end over HTTP: a real uvicorn on 127.0.0.1, the real InstanceAI with the demo model, SQLite."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.sse import SSEParser
from instance_ai_tui.server.app import create_app
from tests.support.coalesced import assert_same_run
from tests.support.fold import apply_wire
from tests.support.waiting import until_async

from .live import serve_app

API = "/instance-ai"


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = Settings(db_path=tmp_path / "e2e.sqlite3", workspace_root=workspace, model=ModelSettings(name="demo"))
    app = create_app(build_service(settings, demo_delay=0.005), ping_interval=0.5)
    async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API, timeout=20) as client:
        yield client


async def frames(
    http: httpx.AsyncClient, thread: str, *, stop: Any, headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None, timeout: float = 20.0,
) -> list[tuple[int | None, dict[str, Any]]]:
    """SSE frames (id, event) until ``stop(event, collected)`` is true."""
    out: list[tuple[int | None, dict[str, Any]]] = []

    async def read() -> None:
        async with http.stream("GET", f"/events/{thread}", headers=headers, params=params) as response:
            assert response.status_code == 200, await response.aread()
            parser = SSEParser()
            async for chunk in response.aiter_bytes():
                for frame in parser.feed(chunk):
                    event = json.loads(frame.data)
                    out.append((int(frame.id) if frame.id else None, event))
                    if stop(event, out):
                        return

    await asyncio.wait_for(read(), timeout)
    return out


def finish_of(run_id: str) -> Any:
    return lambda event, _: event["type"] == "run-finish" and event["runId"] == run_id


def of_type(kind: str) -> Any:
    return lambda event, _: event["type"] == kind


async def test_simple_sequence_full_replay_and_headers(http: httpx.AsyncClient) -> None:
    run_id = (await http.post("/chat/simple", json={"message": "list workflows"})).json()["runId"]
    got = await frames(http, "simple", stop=finish_of(run_id))
    ids = [i for i, _ in got]
    assert ids == list(range(1, len(got) + 1))
    kinds = [e["type"] for _, e in got]
    # the seed's simple query: run-start, (reasoning), tool-call, tool-result, text-delta, run-finish
    assert kinds[0] == "run-start" and kinds[-1] == "run-finish"
    order = [k for k in kinds if k in ("tool-call", "tool-result", "text-delta")]
    assert order.index("tool-call") < order.index("tool-result") < order.index("text-delta")
    assert all(e["runId"] == run_id and "ts" in e for _, e in got)
    finish = dict(got[-1][1]["payload"])
    usage = finish.pop("usage")  # the run's tokens (the demo model estimates them from the text)
    assert finish == {"status": "completed"} and usage["inputTokens"] > 0 and usage["requests"] >= 1
    # full history replay without a cursor: the finished run as n8n stores it (issue 14): every other
    # frame as it was, each answer segment one text-block/reasoning-block at the id of its last delta,
    # and the same tree
    # (the run is coalesced right after its run-finish is stored and the thread is free: a
    # replay that races it gets the deltas, so read again until it shows the coalesced run)
    replays: list[Any] = []

    async def coalesced() -> bool:
        replays.append(await frames(http, "simple", stop=finish_of(run_id)))
        return "text-block" in {e["type"] for _, e in replays[-1]}

    await until_async(coalesced, what="the replay shows the coalesced run")
    replay = replays[-1]
    assert_same_run(got, replay)
    assert len(replay) < len(got) and "text-block" in {e["type"] for _, e in replay}
    async with http.stream("GET", "/events/simple") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["connection"] == "keep-alive"
        assert response.headers["x-accel-buffering"] == "no"


async def test_autonomous_loop_with_approval_status_and_409(http: httpx.AsyncClient) -> None:
    run_id = (await http.post("/chat/loop", json={"message": "every morning send the weather to Slack"})).json()["runId"]
    first = await frames(http, "loop", stop=of_type("confirmation-request"))
    request = first[-1][1]["payload"]
    assert request["toolName"] == "activate-workflow" and request["severity"] in ("warning", "destructive")
    status = (await http.get("/threads/loop/status")).json()
    assert status["isSuspended"] is True and status["hasActiveRun"] is False and status["runId"] == run_id
    busy = await http.post("/chat/loop", json={"message": "again"})
    assert busy.status_code == 409 and busy.json()["code"] == 409
    # the seed's bare {approved} body
    assert (await http.post(f"/confirm/{request['requestId']}", json={"approved": True})).json()["ok"] is True
    rest = await frames(http, "loop", stop=finish_of(run_id), headers={"Last-Event-ID": str(first[-1][0])})
    assert rest[0][0] == first[-1][0] + 1
    events = [e for _, e in first + rest]
    kinds = [e["type"] for e in events]
    root = events[0]["agentId"]
    spawned = next(e for e in events if e["type"] == "agent-spawned")
    assert spawned["payload"]["parentId"] == root and spawned["agentId"] != root
    sub_calls = [e["payload"]["toolName"] for e in events if e["type"] == "tool-call" and e["agentId"] == spawned["agentId"]]
    assert sub_calls[:2] == ["list-nodes", "create-workflow"]
    orchestrator_calls = [e["payload"]["toolName"] for e in events if e["type"] == "tool-call" and e["agentId"] == root]
    assert orchestrator_calls[:2] == ["plan", "delegate"] and "activate-workflow" in orchestrator_calls
    assert kinds.index("agent-spawned") < kinds.index("agent-completed") and "tasks-update" in kinds
    assert any(e["type"] == "tool-result" and e["payload"]["toolCallId"] == request["toolCallId"] for e in events)
    assert kinds[-1] == "run-finish" and events[-1]["payload"]["status"] == "completed"
    # the stored history has the tree and the cursor
    history = (await http.get("/threads/loop/messages")).json()
    assert history["nextEventId"] == rest[-1][0] + 1
    tree = history["messages"][-1]["agentTree"]
    assert tree["agentId"] == root and [c["role"] for c in tree["children"]] == ["workflow builder"]


async def test_reconnect_mid_run_gives_exactly_the_missing_events(http: httpx.AsyncClient) -> None:
    run_id = (await http.post("/chat/re", json={"message": "every morning send the weather to Slack"})).json()["runId"]
    part1 = await frames(http, "re", stop=lambda e, out: len(out) == 5)
    assert (await http.get("/threads/re/status")).json()["hasActiveRun"] is True  # really mid-run
    part2 = await frames(http, "re", stop=lambda e, out: len(out) == 5, headers={"Last-Event-ID": "5"},
                         params={"lastEventId": "1"})  # the header wins over the query
    part3 = await frames(http, "re", stop=of_type("confirmation-request"), params={"lastEventId": "10"})
    request = part3[-1][1]["payload"]
    await http.post(f"/confirm/{request['requestId']}", json={"approved": True})
    part4 = await frames(http, "re", stop=finish_of(run_id), headers={"Last-Event-ID": str(part3[-1][0])})
    full = await frames(http, "re", stop=finish_of(run_id))
    live = part1 + part2 + part3 + part4
    assert [i for i, _ in live] == list(range(1, len(live) + 1))  # read while it ran: every id, once
    assert_same_run(live, full)  # read back after it finished: n8n's coalesced blocks, the same run


async def test_deny_questions_and_kind_bodies(http: httpx.AsyncClient) -> None:
    run_id = (await http.post("/chat/deny", json={"message": "every morning send the weather to Slack"})).json()["runId"]
    got = await frames(http, "deny", stop=of_type("confirmation-request"))
    request = got[-1][1]["payload"]
    body = {"kind": "approval", "approved": False, "userInput": "not now"}
    assert (await http.post(f"/confirm/{request['requestId']}", json=body)).status_code == 200
    again = await http.post(f"/confirm/{request['requestId']}", json={"approved": True})
    assert again.status_code in (400, 404) and again.json()["message"]
    rest = await frames(http, "deny", stop=finish_of(run_id), params={"lastEventId": str(got[-1][0])})
    denial = next(e for _, e in rest if e["type"] == "tool-result" and e["payload"]["result"].get("denied"))
    assert denial["payload"]["toolCallId"] == request["toolCallId"]  # n8n's shape of a denial (issue 26)

    run_id = (await http.post("/chat/ask", json={"message": "build me a workflow"})).json()["runId"]
    got = await frames(http, "ask", stop=of_type("confirmation-request"))
    ask = got[-1][1]["payload"]
    assert ask["inputType"] == "questions" and [q["id"] for q in ask["questions"]] == ["trigger", "destination"]
    bad = await http.post(f"/confirm/{ask['requestId']}", json={"kind": "questions", "answers": "Slack"})
    assert bad.status_code == 400
    answers = {"kind": "questions", "answers": [
        {"questionId": "trigger", "selectedOptions": ["Manually"]},
        {"questionId": "destination", "selectedOptions": [], "customText": "Telegram"},
    ]}
    assert (await http.post(f"/confirm/{ask['requestId']}", json=answers)).json()["ok"] is True
    rest = await frames(http, "ask", stop=finish_of(run_id), params={"lastEventId": str(got[-1][0])})
    conversation = Conversation("ask")
    for event_id, event in got + rest:
        apply_wire(conversation, event_id, event)
    assert "Telegram" in conversation.message_for_run(run_id).content


async def test_cancel_race_and_messages_cursor(http: httpx.AsyncClient) -> None:
    run_id = (await http.post("/chat/race", json={"message": "every morning send the weather to Slack"})).json()["runId"]
    await frames(http, "race", stop=of_type("reasoning-delta"))
    assert (await http.post("/chat/race/cancel")).json() == {"ok": True}
    got = await frames(http, "race", stop=finish_of(run_id))
    finishes = [e for _, e in got if e["type"] == "run-finish"]
    assert [{k: v for k, v in f["payload"].items() if k != "usage"} for f in finishes] == [
        {"status": "cancelled", "reason": "user_cancelled"}]
    history = (await http.get("/threads/race/messages")).json()
    assert history["nextEventId"] == got[-1][0] + 1
    assert (await http.post("/chat/race/cancel")).json() == {"ok": True}  # after the finish: no-op
    assert (await http.get("/threads/race/messages")).json()["nextEventId"] == history["nextEventId"]
    # a new run; SSE from nextEventId - 1 starts exactly at the new run-start
    run2 = (await http.post("/chat/race", json={"message": "hello"})).json()["runId"]
    after = await frames(http, "race", stop=finish_of(run2), params={"lastEventId": str(history["nextEventId"] - 1)})
    assert after[0][0] == history["nextEventId"] and after[0][1]["type"] == "run-start"
    assert all(e["runId"] == run2 for _, e in after)
    status = (await http.get("/threads/race/status")).json()
    assert status == {"hasActiveRun": False, "isSuspended": False, "backgroundTasks": []}


async def test_simple_sequence_with_the_openai_wire_format_server(tmp_path: Path) -> None:
    from tests.support.openai_server import MockOpenAIServer, MockResponse, Rule

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Hello\n", encoding="utf-8")
    script = [
        Rule(last_role="user", respond=MockResponse(reasoning="Let me look at the files...",
                                                    tool_calls=[{"name": "list-files", "arguments": {}}])),
        Rule(last_role="tool", respond=MockResponse(text="You have one file: README.md")),
    ]
    async with MockOpenAIServer(script) as model_server:
        settings = Settings(
            db_path=tmp_path / "openai.sqlite3",
            workspace_root=workspace,
            model=ModelSettings(name="gpt-mock", base_url=model_server.base_url, api_key="sk-test-not-real"),
        )
        app = create_app(build_service(settings, generate_titles=False))
        async with serve_app(app) as url, httpx.AsyncClient(base_url=url + API, timeout=20) as http:
            assert (await http.get("/health")).json()["model"] == "gpt-mock"
            run_id = (await http.post("/chat/oa", json={"message": "what files do I have?"})).json()["runId"]
            got = await frames(http, "oa", stop=finish_of(run_id))
    # the run may finish before the stream is read (the model is local and quick): its answer's deltas
    # are then replayed as the blocks they were coalesced into, one per segment (issue 14)
    block = {"reasoning-block": "reasoning-delta", "text-block": "text-delta"}
    kinds = [block.get(e["type"], e["type"]) for _, e in got]
    compact = [k for i, k in enumerate(kinds) if i == 0 or (k != kinds[i - 1] and k != "status")]
    assert compact == ["run-start", "thread-title-updated", "reasoning-delta", "tool-call", "tool-result", "text-delta",
                       "run-finish"]
    call = next(e for _, e in got if e["type"] == "tool-call")
    assert call["payload"]["toolName"] == "list-files"
    result = next(e for _, e in got if e["type"] == "tool-result")
    assert "README.md" in json.dumps(result["payload"]["result"])
    text = "".join(e["payload"]["text"] for _, e in got if e["type"] in ("text-delta", "text-block"))
    assert text == "You have one file: README.md" and got[-1][1]["payload"]["status"] == "completed"
