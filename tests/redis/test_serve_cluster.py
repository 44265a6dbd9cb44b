"""Two real ``instance-ai serve --redis`` processes on one real redis-server, driven over HTTP/SSE.

Instance A gets ``--redis``; instance B finds the URL in ``INSTANCE_AI_REDIS_URL``. Both run the
offline demo model with a small delay between streamed pieces, so a build request lasts a few
seconds and then waits for the approval of ``activate-workflow``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import aconnect_sse

from tests.support import free_port

pytestmark = pytest.mark.timeout(90)

REPO = Path(__file__).resolve().parents[2]
BUILD = "every morning send the weather to Slack"
LEASE_MS = 1500


class Serve:
    """One ``instance-ai serve`` subprocess."""

    def __init__(self, name: str, redis_url: str, home: Path, *, via_env: bool) -> None:
        self.name = name
        self.port = free_port()
        self.log = home / f"serve-{name}.log"
        args = [sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(self.port), "--model", "demo",
                "--instance-id", name, "--lease-ms", str(LEASE_MS), "--demo-delay", "0.03", "--log-level", "warning"]
        env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(home / "config"),
               "XDG_DATA_HOME": str(home / "data"), "INSTANCE_AI_CONFIG": str(home / "none.toml")}
        env.pop("INSTANCE_AI_REDIS_URL", None)
        if via_env:
            env["INSTANCE_AI_REDIS_URL"] = redis_url
        else:
            args += ["--redis", redis_url]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=out, env=env, cwd=str(REPO))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/instance-ai"

    def wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve {self.name} exited: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"serve {self.name} did not start: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def cluster(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serve, Serve]]:
    import redis

    url = redis_url.rsplit("/", 1)[0] + "/3"  # a database of its own
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    home = tmp_path_factory.mktemp("cluster")
    a = Serve("inst-a", url, home, via_env=False)
    b = Serve("inst-b", url, home, via_env=True)
    try:
        deadline = time.monotonic() + 30
        a.wait_ready(deadline)
        b.wait_ready(deadline)
        yield a, b
    finally:
        a.stop()
        b.stop()


async def send(http: httpx.AsyncClient, base: str, thread_id: str, text: str = BUILD) -> httpx.Response:
    return await http.post(f"{base}/chat/{thread_id}", json={"message": text})


async def read_events(http: httpx.AsyncClient, base: str, thread_id: str, *, until: Any, last_id: int | None = None,
                      timeout: float = 20.0) -> list[dict[str, Any]]:
    """SSE events (dicts with ``id``) up to and including the first for which ``until(event, n)`` holds."""
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    out: list[dict[str, Any]] = []

    async def read() -> None:
        async with aconnect_sse(http, "GET", f"{base}/events/{thread_id}", headers=headers) as source:
            async for sse in source.aiter_sse():
                if not sse.data:
                    continue
                event = {**json.loads(sse.data), "id": int(sse.id)}
                out.append(event)
                if until(event, len(out)):
                    return

    await asyncio.wait_for(read(), timeout)
    return out


def of_type(kind: str) -> Any:
    return lambda event, _n: event["type"] == kind


async def test_stream_on_b_reconnect_to_a_and_confirm_through_b(cluster: tuple[Serve, Serve]) -> None:
    a, b = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        sent = await send(http, a.url, "t-stream")
        assert sent.status_code == 200, sent.text
        run_id = sent.json()["runId"]
        # a client on B follows the run A is running, then drops after 12 events
        first = await read_events(http, b.url, "t-stream", until=lambda _e, n: n == 12)
        assert first[0]["type"] == "run-start" and first[0]["runId"] == run_id
        assert [e["id"] for e in first] == list(range(1, 13))
        for base in (a.url, b.url):  # one run per thread, whichever instance is asked
            busy = await send(http, base, "t-stream", "me too")
            assert busy.status_code == 409, busy.text
        status = (await http.get(f"{b.url}/threads/t-stream/status")).json()
        assert status["hasActiveRun"] and status["runId"] == run_id
        # it reconnects to A with Last-Event-ID and gets exactly what it missed
        rest = await read_events(http, a.url, "t-stream", last_id=first[-1]["id"], until=of_type("confirmation-request"))
        assert [e["id"] for e in rest] == list(range(13, 13 + len(rest)))
        full = await read_events(http, b.url, "t-stream", until=lambda e, _n: e["id"] == rest[-1]["id"])
        assert first + rest == full
        request = rest[-1]["payload"]
        assert request["toolName"] == "activate-workflow"
        assert (await http.get(f"{a.url}/threads/t-stream/status")).json()["isSuspended"]
        busy = await send(http, b.url, "t-stream", "still waiting?")
        assert busy.status_code == 409  # a suspended run keeps the thread busy too
        # the approval is answered through B; the run resumes where it waits (on A) and completes
        confirmed = await http.post(f"{b.url}/confirm/{request['requestId']}", json={"approved": True})
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json() == {"ok": True, "runId": run_id}
        end = await read_events(http, a.url, "t-stream", last_id=rest[-1]["id"], until=of_type("run-finish"))
        assert {k: v for k, v in end[-1]["payload"].items() if k != "usage"} == {"status": "completed"}
        results = [e for e in end if e["type"] == "tool-result" and e["payload"]["toolCallId"] == request["toolCallId"]]
        assert len(results) == 1
        again = await http.post(f"{a.url}/confirm/{request['requestId']}", json={"approved": True})
        assert again.status_code == 404
        messages = (await http.get(f"{b.url}/threads/t-stream/messages")).json()
        assert [m["role"] for m in messages["messages"]] == ["user", "assistant"]
        assert messages["nextEventId"] == end[-1]["id"] + 1


async def test_cancel_through_b_stops_the_run_on_a(cluster: tuple[Serve, Serve]) -> None:
    a, b = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        run_id = (await send(http, a.url, "t-cancel")).json()["runId"]
        on_a = asyncio.create_task(read_events(http, a.url, "t-cancel", until=of_type("run-finish")))
        on_b = asyncio.create_task(read_events(http, b.url, "t-cancel", until=of_type("run-finish")))
        await read_events(http, b.url, "t-cancel", until=of_type("tool-call"))
        cancelled = await http.post(f"{b.url}/chat/t-cancel/cancel")
        assert cancelled.status_code == 200 and cancelled.json() == {"ok": True}
        seen_a, seen_b = await asyncio.gather(on_a, on_b)
        for seen in (seen_a, seen_b):
            assert seen[-1]["runId"] == run_id
            assert {k: v for k, v in seen[-1]["payload"].items() if k != "usage"} == {"status": "cancelled", "reason": "user_cancelled"}
        assert seen_a == seen_b
        status = (await http.get(f"{b.url}/threads/t-cancel/status")).json()
        assert not status["hasActiveRun"] and not status["isSuspended"]
        again = await send(http, b.url, "t-cancel", "hello")  # the thread is free on every instance
        assert again.status_code == 200, again.text
        done = await read_events(http, a.url, "t-cancel", last_id=seen_a[-1]["id"], until=of_type("run-finish"))
        assert {k: v for k, v in done[-1]["payload"].items() if k != "usage"} == {"status": "completed"}


async def test_kill_9_of_a_mid_run_is_swept_by_b(cluster: tuple[Serve, Serve]) -> None:
    a, b = cluster
    async with httpx.AsyncClient(timeout=30) as http:
        run_id = (await send(http, a.url, "t-crash")).json()["runId"]
        before = await read_events(http, b.url, "t-crash", until=of_type("tool-call"))
        a.kill()
        # nothing of A's is left to end the run: only B's sweep of the lease A held can (the read's
        # 20 s is a bound against a hang, far from the 1.5 s lease), and it says so
        after = await read_events(http, b.url, "t-crash", last_id=before[-1]["id"], until=of_type("run-finish"))
        finish = after[-1]
        assert finish["runId"] == run_id
        assert {k: v for k, v in finish["payload"].items() if k != "usage"} == {"status": "interrupted", "reason": "crash_interrupted"}
        events = before + after
        calls = {e["payload"]["toolCallId"] for e in events if e["type"] == "tool-call"}
        closed = {e["payload"]["toolCallId"] for e in events
                  if e["type"] in ("tool-result", "tool-error", "tool-interrupted")}
        assert calls == closed  # every call in flight got its tool-interrupted
        assert [e["id"] for e in events] == list(range(1, len(events) + 1))
        resent = await send(http, b.url, "t-crash", "hello")
        assert resent.status_code == 200, resent.text
        done = await read_events(http, b.url, "t-crash", last_id=finish["id"], until=of_type("run-finish"))
        assert {k: v for k, v in done[-1]["payload"].items() if k != "usage"} == {"status": "completed"}


def test_redis_url_sources_and_checks(redis_url: str) -> None:
    from instance_ai_tui.config import Settings
    from instance_ai_tui.server.redis_service import check_redis, redacted, resolve_redis_url

    settings = Settings(redis_url="redis://from-config:6379/0")
    env = {"INSTANCE_AI_REDIS_URL": "redis://from-env:6379/0"}
    assert resolve_redis_url("redis://flag:6379/0", settings, env) == "redis://flag:6379/0"
    assert resolve_redis_url(None, settings, env) == "redis://from-env:6379/0"
    assert resolve_redis_url(None, settings, {}) == "redis://from-config:6379/0"
    assert resolve_redis_url(None, Settings(), {}) is None
    assert redacted("redis://user:s3cret@host:6380/2") == "redis://user:***@host:6380/2"
    assert check_redis(redis_url) is None
    assert "invalid Redis URL" in (check_redis("http://host:6379") or "")
    problem = check_redis(f"redis://:s3cret@127.0.0.1:{free_port()}/0", timeout=1)
    assert problem is not None and "cannot reach Redis" in problem and "s3cret" not in problem
