"""``instance-ai serve`` as a subprocess: kill -9 and restart, crash sweep, graceful SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import httpx

from instance_ai_tui.protocol.sse import SSEParser

from .live import ServeProcess

API = "/instance-ai"


async def read_until(base: str, thread: str, stop: Any, after: int = 0, timeout: float = 20.0) -> list[tuple[int, dict]]:
    out: list[tuple[int, dict]] = []

    async def read() -> None:
        async with httpx.AsyncClient(base_url=base + API, timeout=timeout) as http:
            async with http.stream("GET", f"/events/{thread}", params={"lastEventId": str(after)}) as response:
                parser = SSEParser()
                async for chunk in response.aiter_bytes():
                    for frame in parser.feed(chunk):
                        out.append((int(frame.id), json.loads(frame.data)))
                        if stop(out[-1][1]):
                            return

    await asyncio.wait_for(read(), timeout)
    return out


async def test_kill_9_with_pending_approval_then_approve_after_restart(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = ServeProcess(tmp_path / "serve.sqlite3", extra=["--workspace", str(workspace)])
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url + API, timeout=10) as http:
            run_id = (await http.post("/chat/note", json={"message": "write a note: buy milk"})).json()["runId"]
        before = await read_until(server.url, "note", lambda e: e["type"] == "confirmation-request")
        request = before[-1][1]["payload"]
        assert request["toolName"] == "write-file"
        server.kill()
        await server.start()
        async with httpx.AsyncClient(base_url=server.url + API, timeout=10) as http:
            status = (await http.get("/threads/note/status")).json()
            assert status["isSuspended"] is True and status["runId"] == run_id
            confirmed = await http.post(f"/confirm/{request['requestId']}", json={"approved": True})
            assert confirmed.status_code == 200, confirmed.text
        after = await read_until(server.url, "note", lambda e: e["type"] == "run-finish", after=before[-1][0])
        assert after[0][0] == before[-1][0] + 1
        result = next(e for _, e in after if e["type"] == "tool-result")
        assert result["payload"]["toolCallId"] == request["toolCallId"]
        assert after[-1][1]["payload"]["status"] == "completed" and after[-1][1]["runId"] == run_id
        assert "buy milk" in (workspace / "notes" / "instance-ai-note.md").read_text(encoding="utf-8")
    finally:
        server.kill()


async def test_crash_sweep_and_graceful_sigterm(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "serve.sqlite3", extra=["--demo-delay", "0.05", "--ping-interval", "0.5"])
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url + API, timeout=10) as http:
            crashed = (await http.post("/chat/crash", json={"message": "every morning send the weather to Slack"})).json()["runId"]
        await read_until(server.url, "crash", lambda e: e["type"] == "tool-call")
        server.kill()  # mid-run, with a tool call in flight
        await server.start()
        swept = await read_until(server.url, "crash", lambda e: e["type"] == "run-finish")
        finish = swept[-1][1]
        assert finish["runId"] == crashed and finish["payload"]["status"] == "interrupted"

        async with httpx.AsyncClient(base_url=server.url + API, timeout=10) as http:
            active = (await http.post("/chat/live", json={"message": "every morning send the weather to Slack"})).json()["runId"]
        stream: list[tuple[int, dict]] = []
        reader = asyncio.create_task(read_until(server.url, "live", lambda e: False, timeout=30))
        await asyncio.sleep(1.0)  # the scenario: the run streams a while before the server is stopped
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        stream = await asyncio.wait_for(reader, 20)  # the stream ends by itself after the last event
        code = server.proc.wait(20)
        assert code in (0, -signal.SIGTERM)
        finish = stream[-1][1]
        assert finish["type"] == "run-finish" and finish["runId"] == active
        assert {k: v for k, v in finish["payload"].items() if k != "usage"} == {
            "status": "cancelled", "reason": "service_shutdown"}
    finally:
        server.kill()
