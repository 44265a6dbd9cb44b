"""Run coordination across processes, in one test process: two or three ``InstanceAI`` services,
each with its own Redis connections (store, bus, coordinator), on one real redis-server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from instance_ai_tui.assistant.coordination import LocalCoordinator
from instance_ai_tui.assistant.errors import ConfirmationNotFound, InvalidRequest, RunActive
from instance_ai_tui.assistant.redis_coordinator import RedisCoordinator
from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.redis import RedisBus
from instance_ai_tui.bus.redis_control import ControlChannel, ThreadLocks
from instance_ai_tui.protocol.api import parse_confirm_body
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from instance_ai_tui.store.redis import RedisStore
from tests.support.waiting import until, until_async

pytestmark = pytest.mark.timeout(60)

LEASE_MS = 600
Make = Callable[..., Awaitable[InstanceAI]]


@pytest.fixture
async def make(redis_url: str, redis_client: Any) -> AsyncIterator[Make]:
    made: list[InstanceAI] = []

    async def factory(instance_id: str, model: Any, **kwargs: Any) -> InstanceAI:
        store = RedisStore.from_url(redis_url)
        coordinator = RedisCoordinator(store, instance_id, lease_ms=LEASE_MS, ack_timeout=0.5)
        ai = InstanceAI(store, RedisBus(store, poll_interval=0.2), model=model, coordinator=coordinator,
                        options=AssistantOptions(generate_titles=False, sweep_interval=0), **kwargs)
        await ai.start()
        made.append(ai)
        return ai

    yield factory
    for ai in made:
        try:
            await asyncio.wait_for(ai.shutdown(), 10)
        except TimeoutError:  # a hang is a bug: say where
            import io

            stacks = io.StringIO()
            for task in asyncio.all_tasks():
                print("--", task.get_name(), file=stacks)
                task.print_stack(limit=6, file=stacks)
            pytest.fail(f"shutdown of instance {ai.runs.coordinator.instance_id} hung:\n{stacks.getvalue()}")


def slow(words: int = 300) -> ScriptedModel:
    return ScriptedModel([ScriptedResponse(text="word " * words, delay=0.02)])


async def collect(ai: InstanceAI, thread_id: str, *, after: int = 0, until: str = "run-finish",
                  timeout: float = 15.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    async def read() -> None:
        async with contextlib.aclosing(ai.events(thread_id, after=after)) as events:
            async for event in events:
                out.append({**event.data(), "id": event.id})
                if event.type == until:
                    return

    await asyncio.wait_for(read(), timeout)
    return out


def crash(ai: InstanceAI) -> None:
    """Like kill -9 of ``ai``'s process: its runs and heartbeats stop, nothing is released."""
    coordinator = ai.runs.coordinator
    assert isinstance(coordinator, RedisCoordinator)
    for task in coordinator._tasks:
        task.cancel()
    coordinator._control._closed = True
    if coordinator._control._listener is not None:
        coordinator._control._listener.cancel()
    for run in ai.runs.live_runs():
        ai.runs.abandon(run.thread_id, run.run_id)


def finishes(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run-finish payloads, without their ``usage``."""
    return [{k: v for k, v in e["payload"].items() if k != "usage"} for e in events if e["type"] == "run-finish"]


async def test_thread_lock_fencing(redis_client: Any) -> None:
    locks = ThreadLocks(redis_client, "t:")
    first, holder = await locks.acquire("th", "a|run1", 300)
    assert first is not None and holder is None
    second, holder = await locks.acquire("th", "b|run2", 300)
    assert second is None and holder == first.value
    assert await locks.renew(first, 300)
    await asyncio.sleep(0.4)  # the scenario: the lock's 300 ms run out
    third, _ = await locks.acquire("th", "b|run2", 300)
    assert third is not None and third.token > first.token  # fencing: tokens only grow
    assert not await locks.renew(first, 300)  # the old holder can neither extend ...
    assert not await locks.release(first)  # ... nor delete the new holder's lock
    assert await locks.holder("th") == third.value
    assert await locks.release(third)
    assert await locks.holder("th") is None


async def test_control_channel_request_ack_reply(redis_client: Any) -> None:
    async def serve(message: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.05)  # the scenario: a handler that takes a while
        return {"echo": message["n"], "by": "two"}

    def handle(message: dict[str, Any]) -> Any:
        return serve(message) if message.get("op") == "echo" else None

    one = ControlChannel(redis_client, "c:", "one", lambda _m: None)
    two = ControlChannel(redis_client, "c:", "two", handle)
    await one.start()
    await two.start()
    try:
        assert await one.request({"op": "echo", "n": 7}, target="two", ack_timeout=1, reply_timeout=2) == {
            "echo": 7, "by": "two"}
        started = asyncio.get_running_loop().time()
        assert await one.request({"op": "echo", "n": 1}, target="nobody", ack_timeout=1, reply_timeout=2) is None
        assert asyncio.get_running_loop().time() - started < 0.5  # no receiver: no waiting for an ack
        assert await one.request({"op": "unknown"}, target="two", ack_timeout=0.2, reply_timeout=2) is None
    finally:
        await one.stop()
        await two.stop()


async def test_busy_thread_and_status_across_instances(make: Make) -> None:
    a = await make("a", slow(100))
    b = await make("b", ScriptedModel(["fine"]))
    run_id = await a.send("t1", "talk")
    with pytest.raises(RunActive):
        await b.send("t1", "me too")
    status = await b.status("t1")
    assert status.has_active_run and status.run_id == run_id
    assert await a.store.redis.get("iai:lock:t1") is not None
    events = await collect(b, "t1")  # B streams A's run
    assert events[0]["type"] == "run-start" and events[0]["runId"] == run_id
    assert finishes(events) == [{"status": "completed"}]
    await b.send("t1", "now me")  # free again, from the other instance
    assert finishes(await collect(a, "t1", after=events[-1]["id"])) == [{"status": "completed"}]

    # the run-finish is delivered first; the thread's lock and the live entry go right after it
    async def released() -> bool:
        return await a.store.redis.get("iai:lock:t1") is None and await a.store.redis.hlen("iai:live") == 0

    await until_async(released, what="the lock and the live entry of t1 released")


async def test_cancel_through_another_instance(make: Make) -> None:
    a = await make("a", slow())
    b = await make("b", ScriptedModel(["unused"]))
    run_id = await a.send("t2", "talk")
    await collect(b, "t2", until="text-delta")
    assert await b.cancel("t2") is True
    events = await collect(a, "t2")
    assert finishes(events) == [{"status": "cancelled", "reason": "user_cancelled"}]
    assert (await b.store.get_run(run_id)).status == "cancelled"
    assert await b.cancel("t2") is False  # idempotent
    assert a.runs.live("t2") is None


async def test_confirm_through_another_instance_resumes_on_the_owner(make: Make) -> None:
    workspace = tempfile.mkdtemp()
    a = await make("a", ScriptedModel([ScriptedResponse.call("write-file", {"path": "x.txt", "content": "x"}),
                                        "written on a"]), workspace_root=workspace)
    b = await make("b", ScriptedModel(["b must not run this"]), workspace_root=workspace)
    run_id = await a.send("t3", "write it")
    events = await collect(b, "t3", until="confirmation-request")
    request_id = events[-1]["payload"]["requestId"]
    assert (await b.status("t3")).is_suspended
    assert await a.store.redis.get("iai:lock:t3") is None  # a suspended run holds no lock
    with pytest.raises(RunActive):
        await b.send("t3", "other")
    with pytest.raises(InvalidRequest, match="does not fit"):  # a's answer comes back as the same error
        await b.confirm(request_id, parse_confirm_body({"kind": "questions", "answers": []}))
    response = await b.confirm(request_id, parse_confirm_body({"approved": True}))
    assert response.ok and response.run_id == run_id
    events = await collect(b, "t3", after=events[-1]["id"])
    text = "".join(e["payload"].get("text", "") for e in events if e["type"] == "text-delta")
    assert "written on a" in text and finishes(events) == [{"status": "completed"}]
    with pytest.raises(ConfirmationNotFound):  # answered: nobody has it any more
        await b.confirm(request_id, parse_confirm_body({"approved": True}))


async def test_unknown_confirmation_is_not_found(make: Make) -> None:
    await make("a", ScriptedModel(["x"]))
    b = await make("b", ScriptedModel(["x"]))
    with pytest.raises(ConfirmationNotFound):
        await b.confirm("cr_nobody", parse_confirm_body({"approved": True}))


async def test_crashed_owner_active_run_is_swept(make: Make) -> None:
    a = await make("a", ScriptedModel([ScriptedResponse.call("list-files", {"path": "."}),
                                        ScriptedResponse(text="word " * 400, delay=0.02)]),
                   workspace_root=tempfile.mkdtemp())
    b = await make("b", ScriptedModel(["after the crash"]))
    run_id = await a.send("t4", "talk")
    before = await collect(b, "t4", until="text-delta")
    crash(a)
    events = await collect(b, "t4", after=before[-1]["id"], timeout=10)
    assert finishes(events) == [{"status": "interrupted", "reason": "crash_interrupted"}]
    assert (await b.store.get_run(run_id)).status == "interrupted"
    await b.send("t4", "again")
    assert finishes(await collect(b, "t4", after=events[-1]["id"])) == [{"status": "completed"}]


async def test_tool_call_in_flight_is_interrupted(make: Make, redis_client: Any) -> None:
    gate = asyncio.Event()
    a = await make("a", ScriptedModel([ScriptedResponse.call("wait-forever", {}), "never"]))
    b = await make("b", ScriptedModel(["x"]))
    from instance_ai_tui.runtime.tools import Tool

    async def wait_forever(args: Any, ctx: Any) -> str:
        await gate.wait()
        return "never"

    a.orchestrator._tools["wait-forever"] = Tool("wait-forever", "blocks until the test ends", handler=wait_forever)
    await a.send("t5", "block")
    before = await collect(b, "t5", until="tool-call")
    crash(a)
    events = await collect(b, "t5", after=before[-1]["id"], timeout=10)
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["tool-interrupted", "run-finish"]
    assert events[-2]["payload"]["toolCallId"] == before[-1]["payload"]["toolCallId"]


async def test_suspended_run_of_a_gone_owner_is_adopted(make: Make) -> None:
    workspace = tempfile.mkdtemp()
    a = await make("a", ScriptedModel([ScriptedResponse.call("write-file", {"path": "y.txt", "content": "y"}),
                                        "a is gone"]), workspace_root=workspace)
    b = await make("b", ScriptedModel(["resumed on b"]), workspace_root=workspace)
    run_id = await a.send("t6", "write it")
    events = await collect(b, "t6", until="confirmation-request")
    crash(a)
    await asyncio.sleep(LEASE_MS / 1000 + 0.3)  # a's instance key expires
    await b.confirm(events[-1]["payload"]["requestId"], parse_confirm_body({"approved": True}))
    rest = await collect(b, "t6", after=events[-1]["id"])
    text = "".join(e["payload"].get("text", "") for e in rest if e["type"] == "text-delta")
    assert "resumed on b" in text and finishes(rest) == [{"status": "completed"}]
    assert (await b.store.get_run(run_id)).owner == "b"


async def test_suspended_runs_of_a_stopped_instance_are_adopted_by_the_sweeper(make: Make) -> None:
    workspace = tempfile.mkdtemp()
    a = await make("a", ScriptedModel([ScriptedResponse.call("write-file", {"path": "z.txt", "content": "z"})]),
                   workspace_root=workspace)
    b = await make("b", ScriptedModel(["finished on b"]), workspace_root=workspace)
    await a.send("t9", "write it")
    events = await collect(b, "t9", until="confirmation-request")
    await a.shutdown()  # a graceful stop keeps suspended runs (and says it is gone)
    await until(lambda: b.runs.live("t9") is not None, what="b's sweeper adopted the suspended run")
    assert b.runs.has_request(events[-1]["payload"]["requestId"])  # adopted without waiting for a confirm
    await b.confirm(events[-1]["payload"]["requestId"], parse_confirm_body({"approved": False}))
    rest = await collect(b, "t9", after=events[-1]["id"])
    assert finishes(rest) == [{"status": "completed"}]
    assert any(e["type"] == "tool-result" and e["payload"]["result"].get("denied") is True for e in rest)  # denied


async def test_fenced_out_owner_publishes_nothing_more(make: Make) -> None:
    a = await make("a", slow(600))
    b = await make("b", ScriptedModel(["x"]))
    run_id = await a.send("t7", "talk")
    await collect(b, "t7", until="text-delta")
    await a.store.redis.delete("iai:lock:t7")  # the lease "expired" (e.g. a long stall)
    coordinator = a.runs.coordinator
    assert isinstance(coordinator, RedisCoordinator)
    await coordinator.heartbeat()  # a notices and abandons the run
    assert a.runs.live("t7") is None
    events = await collect(b, "t7", timeout=10)  # b's sweeper ends it
    assert finishes(events) == [{"status": "interrupted", "reason": "crash_interrupted"}]
    last = events[-1]["id"]
    await asyncio.sleep(0.3)  # the scenario: a window in which a may write nothing more
    assert await b.store.last_event_id("t7") == last  # nothing from a after the run-finish
    assert (await b.store.get_run(run_id)).status == "interrupted"


async def test_a_starting_instance_leaves_live_runs_alone(make: Make) -> None:
    a = await make("a", slow(80))
    run_id = await a.send("t8", "talk")
    await collect(a, "t8", until="text-delta")
    c = await make("c", ScriptedModel(["x"]))  # recover() at start must not sweep a's run
    events = await collect(c, "t8")
    assert finishes(events) == [{"status": "completed"}]
    assert (await c.store.get_run(run_id)).status == "completed"


async def test_a_starting_instance_sweeps_what_a_crash_left(make: Make) -> None:
    a = await make("a", slow(600))
    run_id = await a.send("t10", "talk")
    await collect(a, "t10", until="text-delta")
    crash(a)
    await asyncio.sleep(LEASE_MS / 1000 + 0.2)  # a's lease is gone; nobody else is running yet
    c = await make("c", ScriptedModel(["x"]))
    assert (await c.store.get_run(run_id)).status == "interrupted"  # done by start(), before any sweep tick
    events = await collect(c, "t10")
    assert finishes(events) == [{"status": "interrupted", "reason": "crash_interrupted"}]


async def test_local_coordinator_is_the_default(tmp_path: Any) -> None:
    from instance_ai_tui.bus.memory import InProcessBus
    from instance_ai_tui.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "x.sqlite3")
    ai = InstanceAI(store, InProcessBus(store), model=ScriptedModel(["x"]),
                    options=AssistantOptions(generate_titles=False, sweep_interval=0))
    assert isinstance(ai.runs.coordinator, LocalCoordinator)
    assert ai.runs.options.owner == ai.runs.coordinator.instance_id
    coordinator = LocalCoordinator("me")
    assert await coordinator.acquire("t", "r1") and not await coordinator.acquire("t", "r2")
    await coordinator.release("t", "r1", finished=True)
    assert await coordinator.acquire("t", "r2")


async def test_a_failed_heartbeat_is_logged_and_the_next_one_comes(make: Make, monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The coordinator's background loops (heartbeat, sweep) outlive a failure: it is logged with
    the instance and what failed, and the next beat comes (a dead loop would let the lease lapse)."""
    original = RedisCoordinator.heartbeat
    beats = 0

    async def flaky(self: RedisCoordinator) -> None:
        nonlocal beats
        beats += 1
        if beats == 1:
            raise ConnectionError("redis went away")
        await original(self)

    monkeypatch.setattr(RedisCoordinator, "heartbeat", flaky)
    with caplog.at_level(logging.WARNING, logger="instance_ai_tui.assistant.redis_coordinator"):
        await make("a", slow())
        await until(lambda: beats >= 2, what="a second heartbeat after the failed one")
    assert "instance a: heartbeat failed: redis went away" in caplog.text
