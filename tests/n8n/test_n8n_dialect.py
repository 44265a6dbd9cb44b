"""``N8nClient`` against a local server that speaks n8n 2.41's Instance AI dialect."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from instance_ai_tui.client.base import AuthError, ClientError, NotFoundError, RunActiveError, StreamItem
from instance_ai_tui.client.factory import detect_dialect
from instance_ai_tui.client.n8n import N8nClient, _error_for
from instance_ai_tui.client.n8n_auth import BROWSER_ID_FILE
from instance_ai_tui.client.sse import SseFrame
from instance_ai_tui.protocol.api import ApprovalConfirm
from instance_ai_tui.protocol.conversation import Conversation
from tests.support import serve_asgi
from tests.support.fake_n8n import Emit, FakeN8n, Pause, Say, ToolCall
from tests.support.fold import apply
from tests.support.waiting import until_async

from .conftest import make_client

pytestmark = pytest.mark.timeout(60)


class Stream:
    """Consume ``client.events`` in the background, folding into a ``Conversation``."""

    def __init__(self, client: N8nClient, thread_id: str, after: int | None = None,
                 conversation: Conversation | None = None) -> None:
        self.items: list[StreamItem] = []
        self.conversation = conversation or Conversation(thread_id)
        self._client, self._tid, self._after = client, thread_id, after
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Stream:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        async for item in self._client.events(self._tid, after=self._after):
            self.items.append(item)
            apply(self.conversation, item.id, item.event if item.event is not None else item.run_sync)
            self._changed.set()

    async def until(self, predicate: Callable[[StreamItem], bool], timeout: float = 10.0) -> StreamItem:
        seen = 0
        async with asyncio.timeout(timeout):
            while True:
                for item in self.items[seen:]:
                    if predicate(item):
                        return item
                seen = len(self.items)
                self._changed.clear()
                if self._task is not None and self._task.done():
                    self._task.result()
                    raise AssertionError("the event stream ended")
                await self._changed.wait()

    def types(self) -> list[str]:
        return [i.event.type if i.event is not None else "run-sync" for i in self.items]


def is_type(kind: str) -> Callable[[StreamItem], bool]:
    return lambda item: item.event is not None and item.event.type == kind


def assistant_texts(conversation: Conversation) -> list[str]:
    return [m.content for m in conversation.to_messages() if m.role == "assistant"]


# --------------------------------------------------------------------------- auth


async def test_login_sends_browser_id_everywhere_and_the_secure_cookie_explicitly(
    fake: FakeN8n, client: N8nClient, tmp_path: Path
) -> None:
    await client.open()
    await client.list_threads()
    login = fake.requests_to("/rest/login")
    assert len(login) == 1
    browser_id = (tmp_path / "config" / BROWSER_ID_FILE).read_text().strip()
    assert str(uuid.UUID(browser_id)) == browser_id
    after_login = [r for r in fake.requests if r.path != "/rest/login"]
    assert after_login, "no request after the login"
    for request in fake.requests:
        assert request.headers.get("browser-id") == browser_id, request.path
    for request in after_login:
        assert request.headers.get("cookie", "").startswith("n8n-auth="), request.path

    # the cookie really is Secure: a plain cookie jar would not send it back over http://
    async with httpx.AsyncClient() as http:
        response = await http.post(fake.base_url + "/rest/login",
                                   json={"emailOrLdapLoginId": fake.email, "password": fake.password},
                                   headers={"browser-id": browser_id})
        assert "secure" in response.headers["set-cookie"].lower()
        assert "httponly" in response.headers["set-cookie"].lower()
        jar_only = await http.get(fake.base_url + "/rest/projects/personal", headers={"browser-id": browser_id})
        assert jar_only.status_code == 401

    # a second client of the same installation reuses the saved browser id
    second = make_client(fake, tmp_path / "config")
    await second.open()
    await second.close()
    assert fake.requests[-1].headers["browser-id"] == browser_id


async def test_browser_id_is_checked_except_on_the_events_route(fake: FakeN8n, client: N8nClient) -> None:
    await client.open()
    cookie = client.session.headers()["Cookie"]
    async with httpx.AsyncClient() as http:
        other = await http.get(fake.base_url + "/rest/instance-ai/threads",
                               headers={"Cookie": cookie, "browser-id": str(uuid.uuid4())})
        missing = await http.get(fake.base_url + "/rest/instance-ai/threads", headers={"Cookie": cookie})
        assert other.status_code == missing.status_code == 401
        assert other.json() == {"status": "error", "message": "Unauthorized"}
        tid = str(uuid.uuid4())
        async with http.stream("GET", fake.base_url + f"/rest/instance-ai/events/{tid}",
                               headers={"Cookie": cookie}) as events:
            assert events.status_code == 200
            assert events.headers["content-type"].startswith("text/event-stream")


async def test_wrong_password_and_missing_credentials_are_clear(
    fake: FakeN8n, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = make_client(fake, tmp_path, password="nope")
    with pytest.raises(AuthError, match=r"refused the login for owner@example\.com"):
        await bad.open()
    await bad.close()
    monkeypatch.delenv("N8N_EMAIL", raising=False)
    monkeypatch.delenv("N8N_PASSWORD", raising=False)
    anonymous = make_client(fake, tmp_path, email=None, password=None)
    with pytest.raises(AuthError, match="N8N_EMAIL"):
        await anonymous.open()
    await anonymous.close()
    no_password = make_client(fake, tmp_path, password=None)
    with pytest.raises(AuthError, match=r"no n8n password for owner@example\.com: set N8N_PASSWORD"):
        await no_password.open()
    await no_password.close()
    assert "nope" not in repr(bad) and "Passw0rd" not in repr(anonymous.session)


async def test_credentials_from_the_environment(fake: FakeN8n, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("N8N_EMAIL", fake.email)
    monkeypatch.setenv("N8N_PASSWORD", fake.password)
    c = make_client(fake, tmp_path, email=None, password=None)
    await c.open()
    assert c.project_id == fake.project_id
    assert c.model_name == "n8n (model set by its environment)"
    await c.close()


async def test_an_expired_session_logs_in_again_once(fake: FakeN8n, client: N8nClient) -> None:
    await client.list_threads()
    fake.invalidate_sessions()
    assert await client.list_threads() == []
    assert fake.logins == 2


async def test_detect_dialect_tells_n8n_from_other_servers(fake: FakeN8n) -> None:
    """What ``open_client`` asks of a URL given without ``--dialect``: the fake n8n's
    ``/rest/settings`` (n8n's public settings) is n8n; a server answering that path with
    something else, or nothing listening, is a named error."""
    async def settings(request: Any) -> JSONResponse:
        return JSONResponse({"version": "ours"})

    other = Starlette(routes=[Route("/rest/settings", settings)])
    async with serve_asgi(other) as other_url:
        assert await detect_dialect(fake.base_url + "/") == "n8n"
        with pytest.raises(ClientError, match="neither an Instance AI server"):
            await detect_dialect(other_url)
        with pytest.raises(ClientError, match="cannot reach"):
            await detect_dialect("http://127.0.0.1:9")


# --------------------------------------------------------------------------- envelope, errors, threads


def _response(status: int, body: Any) -> httpx.Response:
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return httpx.Response(status, content=content, request=httpx.Request("POST", "http://x/rest/instance-ai/chat/t"))


def test_error_bodies_map_to_client_errors() -> None:
    busy = _error_for(_response(409, {"code": 409, "message": "A run is already active for this thread"}), "POST", "/p")
    assert isinstance(busy, RunActiveError) and str(busy) == "A run is already active for this thread"
    assert isinstance(_error_for(_response(401, {"status": "error", "message": "Unauthorized"}), "GET", "/p"), AuthError)
    disabled = _error_for(_response(403, {"code": 403, "message": "Instance AI is disabled"}), "GET", "/p")
    assert isinstance(disabled, AuthError) and "Instance AI is disabled" in str(disabled)
    assert isinstance(_error_for(_response(404, {"code": 404, "message": "Thread not found"}), "GET", "/p"),
                      NotFoundError)
    html = _error_for(_response(404, "<html>Cannot GET</html>"), "GET", "/rest/instance-ai/threads")
    assert "2.41" in str(html)  # the version the message names: the one tested
    limit = _error_for(_response(429, {"code": 429, "message": "Run limit reached",
                                       "meta": {"reason": "user_run_limit", "limit": 2}}), "POST", "/p")
    assert limit.status == 429 and "user_run_limit" in str(limit) and "limit 2" in str(limit)
    zod = _error_for(_response(400, {"code": "invalid_type", "path": ["projectId"], "message": "Required"}), "POST", "/p")
    assert zod.status == 400 and "projectId: Required" in str(zod)
    crash = _error_for(_response(500, {"code": 0, "message": "boom"}), "GET", "/p")
    assert crash.status == 500 and "server error" in str(crash) and "boom" in str(crash)


async def test_threads_are_created_in_the_personal_project(fake: FakeN8n, client: N8nClient) -> None:
    info = await client.create_thread(title="Quarterly cleanup")
    assert str(uuid.UUID(info.id)) == info.id
    assert info.title == "Quarterly cleanup"
    assert info.metadata["source"] == "assistant_page"
    thread = fake._threads[info.id]
    assert thread.project_id == fake.project_id
    renamed = await client.rename_thread(info.id, "Renamed")
    assert renamed.title == "Renamed" and renamed.metadata.get("titleRefined") is True
    assert [t.id for t in await client.list_threads()] == [info.id]
    await client.delete_thread(info.id)
    assert await client.list_threads() == []
    with pytest.raises(NotFoundError, match="Thread not found"):
        await client.rename_thread(info.id, "gone")
    with pytest.raises(ClientError, match="UUIDs"):
        await client.status("not-a-uuid")


async def test_send_creates_the_thread_first(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    assert (await client.messages(tid)).messages == []  # a new id has no history yet
    async with Stream(client, tid) as stream:
        run_id = await client.send(tid, "hello there")
        finish = await stream.until(is_type("run-finish"))
    assert finish.event is not None and finish.event.run_id == run_id
    assert finish.event.payload.status == "completed"  # type: ignore[union-attr]
    assert fake._threads[tid].created and fake._threads[tid].project_id == fake.project_id
    with pytest.raises(ClientError, match="empty"):
        await client.send(tid, "   ")


# --------------------------------------------------------------------------- runs and events


async def test_full_run_with_an_approval_round_trip(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        run_id = await client.send(tid, "archive the old workflow")
        request = await stream.until(is_type("confirmation-request"))
        payload = request.event.payload  # type: ignore[union-attr]
        assert payload.tool_name == "workflows" and payload.args == {"action": "delete", "workflowId": "wf2"}
        assert payload.approval_details == {"action": "archive-workflow", "name": "Old sync", "id": "wf2"}
        pending = stream.conversation.pending_confirmations()
        assert [p.request_id for p in pending] == [payload.request_id]

        # suspended: no run-finish, status says so, a new message is refused with 409
        await asyncio.sleep(0.2)  # a window in which nothing may arrive (the scenario, not a wait)
        assert "run-finish" not in stream.types()
        status = await client.status(tid)
        assert status.is_suspended and not status.has_active_run and status.run_id == run_id
        with pytest.raises(RunActiveError, match="already active"):
            await client.send(tid, "are you there?")

        async with httpx.AsyncClient() as http:  # n8n itself refuses the seed's bare body
            bare = await http.post(fake.base_url + f"/rest/instance-ai/confirm/{payload.request_id}",
                                   json={"approved": True}, headers=client.session.headers())
        assert bare.status_code == 400 and "discriminator" in bare.json()["message"]
        answer = await client.confirm(payload.request_id, {"approved": True})  # converted to kind: approval
        assert answer.ok and answer.run_id == run_id
        finish = await stream.until(is_type("run-finish"))
        await stream.until(is_type("thread-title-updated"))

    confirm_requests = fake.requests_to("/rest/instance-ai/confirm/")
    assert len(confirm_requests) == 2  # the bare one refused, ours accepted
    starts = [i for i in stream.items if i.event is not None and i.event.type == "run-start"]
    assert len(starts) == 1 and finish.event is not None and finish.event.run_id == run_id
    title = stream.items[-1].event
    assert title is not None and title.run_id == "" and title.agent_id == "orchestrator"
    tree = stream.conversation.to_messages()[-1].agent_tree
    assert tree is not None and tree.agent_id == f"orchestrator-{run_id}"
    calls = {c.tool_call_id: c for c in tree.tool_calls}
    assert calls["call_list_1"].result["workflows"][0]["name"] == "Daily report"
    assert calls["call_archive_1"].result == {"success": True, "archived": "wf2"}
    assert not calls["call_archive_1"].is_loading
    assert assistant_texts(stream.conversation) == ["Let me look at your workflows first.Done: Old sync is archived."]
    with pytest.raises(NotFoundError):
        await client.confirm(payload.request_id, ApprovalConfirm(approved=True))


async def test_a_denied_approval_gives_the_denied_result(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "archive it")
        request = await stream.until(is_type("confirmation-request"))
        await client.confirm(request.event.payload.request_id, ApprovalConfirm(approved=False))  # type: ignore[union-attr]
        await stream.until(is_type("run-finish"))
    tree = stream.conversation.to_messages()[-1].agent_tree
    assert tree is not None
    denied = next(c for c in tree.tool_calls if c.tool_call_id == "call_archive_1")
    assert denied.result == {"success": False, "denied": True, "reason": "User denied the action"}
    assert tree.text_content.endswith("OK, I left Old sync alone.")


async def test_deltas_have_no_ids_and_blocks_only_appear_on_replay(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as live:
        await client.send(tid, "give me an overview")
        await live.until(is_type("thread-title-updated"))
    deltas = [i for i in live.items if i.event is not None and i.event.type.endswith("-delta")]
    assert deltas and all(i.id is None for i in deltas)
    assert not any(t.endswith("-block") for t in live.types())
    ids = [i.id for i in live.items if i.id is not None]
    assert ids == sorted(set(ids))
    persisted = [seq for seq, e in fake.events_of(tid)]
    assert set(ids) < set(persisted)  # the live stream skips the blocks' ids
    expected = "Let me check.You have 2 workflows: Daily report and Old sync."

    async with Stream(client, tid) as replay:
        await replay.until(is_type("thread-title-updated"))
    blocks = [i.event for i in replay.items if i.event is not None and i.event.type.endswith("-block")]
    assert [b.type for b in blocks] == ["reasoning-block", "text-block", "text-block"]
    assert not any(t.endswith("-delta") for t in replay.types())
    assert assistant_texts(live.conversation) == assistant_texts(replay.conversation) == [expected]
    assert replay.conversation.to_messages()[-1].reasoning == "The user wants an overview."


async def test_replayed_blocks_do_not_duplicate_text_already_streamed(fake: FakeN8n, client: N8nClient) -> None:
    fake.script = lambda message: [
        Say("First part of the answer.", "resp-1"),
        Pause(0.6),
        ToolCall("call_1", "workflows", {"action": "list"}, result={"workflows": []}),
        Say("Second part.", "resp-2"),
    ]
    tid = str(uuid.uuid4())
    conversation = Conversation(tid)
    async with Stream(client, tid, conversation=conversation) as first:
        await client.send(tid, "go")
        await first.until(lambda i: i.event is not None and i.event.type == "text-delta"
                          and i.event.payload.text == "answer.")  # type: ignore[union-attr]
    cursor = max(i.id for i in first.items if i.id is not None)
    async def run_over() -> bool:  # the segment closes and is persisted meanwhile
        return not (await client.status(tid)).has_active_run

    await until_async(run_over, what="the run is no longer active")
    async with Stream(client, tid, after=cursor, conversation=conversation) as second:
        await second.until(is_type("run-finish"))
    assert second.items[0].event is not None and second.items[0].event.type == "text-block"
    assert assistant_texts(conversation) == ["First part of the answer.Second part."]


async def test_reconnecting_mid_segment_gets_run_sync_and_the_partial_text_once(
    fake: FakeN8n, client: N8nClient
) -> None:
    fake.script = lambda message: [
        ToolCall("call_1", "workflows", {"action": "list"}, result={"workflows": []}),
        Say("Half of a sentence", "resp-1"),
        Pause(0.8),
        Say(" and the rest.", "resp-1"),
    ]
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "go")
        await stream.until(lambda i: i.event is not None and i.event.type == "text-delta"
                           and i.event.payload.text == "sentence")  # type: ignore[union-attr]
        seen_before = max(i.id for i in stream.items if i.id is not None)
        fake.drop_streams(tid)
        sync = await stream.until(lambda i: i.run_sync is not None)
        await stream.until(is_type("run-finish"))
    events_requests = fake.requests_to(f"/rest/instance-ai/events/{tid}")
    assert len(events_requests) == 2
    assert events_requests[1].headers["last-event-id"] == str(seen_before)
    assert sync.run_sync is not None and sync.run_sync.status == "active"
    assert sync.run_sync.agent_tree is not None and sync.run_sync.agent_tree.tool_calls[0].tool_call_id == "call_1"
    after_sync = stream.items[stream.items.index(sync) + 1]
    assert after_sync.id is None and after_sync.event is not None
    assert after_sync.event.payload.text == "Half of a sentence"  # type: ignore[union-attr]
    assert assistant_texts(stream.conversation) == ["Half of a sentence and the rest."]
    ids = [i.id for i in stream.items if i.id is not None]
    assert len(ids) == len(set(ids))


async def test_connecting_to_a_suspended_run_gets_its_tree_by_run_sync(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        run_id = await client.send(tid, "archive the old one")
        await stream.until(is_type("confirmation-request"))
    history = await client.messages(tid)
    cursor = history.next_event_id - 1
    conversation = Conversation(tid)
    conversation.load_history(history)
    async with Stream(client, tid, after=cursor, conversation=conversation) as resumed:
        sync = await resumed.until(lambda i: i.run_sync is not None)
        assert sync.run_sync is not None and sync.run_sync.status == "suspended" and sync.run_sync.run_id == run_id
        tree = sync.run_sync.agent_tree
        assert tree is not None
        pending = next(c for c in tree.tool_calls if c.tool_call_id == "call_archive_1")
        assert pending.is_loading and pending.confirmation is not None
        assert [p.request_id for p in conversation.pending_confirmations()] == [pending.confirmation.request_id]
        await client.confirm(pending.confirmation.request_id, {"kind": "approval", "approved": True})
        await resumed.until(is_type("run-finish"))
    assert resumed.items[0].run_sync is not None  # nothing newer than the history to replay
    assert assistant_texts(conversation) == ["Let me look at your workflows first.Done: Old sync is archived."]
    assert len([m for m in conversation.to_messages() if m.role == "assistant"]) == 1


async def test_nested_tasks_and_follow_up_runs_merge_into_one_message(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        first_run = await client.send(tid, "make a plan")
        starts: list[StreamItem] = []
        while len(starts) < 2:
            starts.append(await stream.until(lambda i: is_type("run-start")(i) and i not in starts))
        await stream.until(lambda i: is_type("run-finish")(i) and i.event.run_id != first_run)  # type: ignore[union-attr]
    groups = {s.event.payload.message_group_id for s in starts}  # type: ignore[union-attr]
    assert len(groups) == 1
    messages = [m for m in stream.conversation.to_messages() if m.role == "assistant"]
    assert len(messages) == 1
    message = messages[0]
    assert message.content == "Here is the plan.Follow-up: the summary is written."
    assert message.run_ids is not None and len(message.run_ids) == 2
    assert message.agent_tree is not None and message.agent_tree.tasks is not None
    assert [(t.id, t.status.value) for t in message.agent_tree.tasks.tasks] == [("t1", "done"), ("t2", "in_progress")]
    history = await client.messages(tid)
    stored = [m for m in history.messages if m.role == "assistant"]
    assert len(stored) == 1 and stored[0].run_ids is not None and len(stored[0].run_ids) == 2
    assert stored[0].content == message.content


async def test_cancel_ends_the_run_with_run_finish_cancelled(fake: FakeN8n, client: N8nClient) -> None:
    fake.script = lambda message: [Say("Working on it", "resp-1"), Pause(30)]
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "a long job")
        await stream.until(is_type("text-delta"))
        with pytest.raises(RunActiveError):
            await client.send(tid, "another")
        await client.cancel(tid)
        finish = await stream.until(is_type("run-finish"))
    assert finish.event is not None
    assert finish.event.payload.status == "cancelled" and finish.event.payload.reason == "user_cancelled"  # type: ignore[union-attr]
    await client.cancel(tid)  # idempotent
    await client.cancel(str(uuid.uuid4()))  # unknown thread: nothing to cancel


async def test_history_then_resume_from_next_event_id_repeats_nothing(fake: FakeN8n, client: N8nClient) -> None:
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "hello")
        await stream.until(is_type("thread-title-updated"))
    history = await client.messages(tid)
    assert [m.role for m in history.messages] == ["user", "assistant"]
    assert history.next_event_id == fake.events_of(tid)[-1][0] + 1
    async with Stream(client, tid, after=history.next_event_id - 1) as resumed:
        await client.send(tid, "again")
        await resumed.until(is_type("run-finish"))
    first = resumed.items[0].event
    assert first is not None and first.type == "run-start"
    assert all(i.id is None or i.id >= history.next_event_id for i in resumed.items)


async def test_unknown_types_pass_through_and_bad_frames_are_skipped(fake: FakeN8n, client: N8nClient) -> None:
    fake.script = lambda message: [Emit("instance-context", {"injection": {"state": "absent"}}), Say("ok", "r1")]
    tid = str(uuid.uuid4())
    async with Stream(client, tid) as stream:
        await client.send(tid, "hi")
        await stream.until(is_type("run-finish"))
    assert "instance-context" in stream.types()
    assert client._item(SseFrame(data="{not json", id=7, raw_id="7")) is None
    assert client._item(SseFrame(data='{"runId": 1}', event="run-sync")) is None
    assert client._item(SseFrame(data="{}", event="something-else")) is None
    assert len(client.diagnostics) == 3 and "id 7" in client.diagnostics[0]



async def test_headless_run_with_email_uses_the_n8n_dialect(fake: FakeN8n, tmp_path: Path) -> None:
    env = {**os.environ, "N8N_PASSWORD": fake.password, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("N8N_EMAIL", None)
    tid = str(uuid.uuid4())
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", "run", "--url", fake.base_url, "--email", fake.email,
        "--json", "--approve", "all", "--thread", tid, "archive the old workflow",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, stdin=asyncio.subprocess.DEVNULL,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "run-start" and types[-1] == "run-finish" and "confirmation-request" in types
    archive = next(line for line in lines if line["type"] == "tool-result"
                   and line["payload"]["toolCallId"] == "call_archive_1")
    assert archive["payload"]["result"] == {"success": True, "archived": "wf2"}
    assert fake.password not in out.decode() + err.decode()
    browser_id = (tmp_path / "cfg" / "instance-ai" / BROWSER_ID_FILE).read_text().strip()
    assert {r.headers.get("browser-id") for r in fake.requests} == {browser_id}
