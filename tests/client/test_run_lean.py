"""``instance-ai run --url`` on the standard library (``cli.run_lean``, issue 44.3): a plain run to our
server imports neither httpx nor pydantic and prints exactly what the typed path prints; a run that
is not plain (tool calls) is handed over mid-stream and still prints the same; the lean check takes
exactly the form ``Event.to_wire()`` writes; a hostile server's text stays visible text."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from instance_ai_tui.cli.run_lean import is_wire_form
from instance_ai_tui.protocol.events import parse_event

from .raw_servers import HEALTH, RawRequest, RawServer, json_response, sse_head

ROOT = Path(__file__).resolve().parents[2]

WIRE = [
    {"type": "run-start", "runId": "r", "agentId": "a", "ts": 1, "payload": {"messageId": "m"}},
    {"type": "run-start", "runId": "r", "agentId": "a", "ts": 1.5,
     "payload": {"messageId": "m", "traceId": "t", "messageGroupId": "g", "userMessage": "hi"}},
    {"type": "text-delta", "runId": "r", "agentId": "a", "responseId": "x", "payload": {"text": "é \x1b"}},
    {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": ""}},
    {"type": "thread-title-updated", "runId": "r", "agentId": "a", "ts": 2, "payload": {"title": "T"}},
    {"type": "run-finish", "runId": "r", "agentId": "a", "ts": 3,
     "payload": {"status": "error", "reason": "boom", "usage": {"inputTokens": 1, "outputTokens": 2, "cost": 0.5}}},
]

NOT_WIRE = [
    {"type": "text-delta", "runId": "r", "agentId": "a", "ts": None, "payload": {"text": "x"}},  # null: left out
    {"type": "text-delta", "runId": "r", "agentId": "a", "userId": "u", "payload": {"text": "x"}},
    {"type": "text-delta", "agentId": "a", "runId": "r", "payload": {"text": "x"}},  # another order
    {"type": "text-delta", "runId": "r", "payload": {"text": "x"}},  # agentId: the model adds ""
    {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "x", "more": 1}},
    {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": 5}},
    {"type": "run-start", "runId": "r", "agentId": "a", "payload": {"messageGroupId": "g", "messageId": "m"}},
    {"type": "run-start", "runId": "r", "agentId": "a", "payload": {}},  # the model adds messageId ""
    {"type": "run-start", "runId": "r", "agentId": "a", "payload": {"messageId": "m", "message_group_id": "g"}},
    {"type": "run-finish", "runId": "r", "agentId": "a", "payload": {"reason": "x"}},  # no status
    {"type": "run-finish", "runId": "r", "agentId": "a", "payload": {"status": "completed", "usage": {"cost": None}}},
    {"type": "run-finish", "runId": "r", "agentId": "a", "payload": {"status": "completed",
                                                                      "archivedWorkflowIds": ["w"]}},
    {"type": "tool-call", "runId": "r", "agentId": "a", "payload": {"toolCallId": "c"}},
    {"type": "thread-title-updated", "runId": "r", "agentId": "a", "payload": {"title": "T", "x": 1}},
]


@pytest.mark.parametrize("data", WIRE)
def test_the_lean_check_takes_what_the_model_writes_and_nothing_it_would_change(data: dict) -> None:
    assert is_wire_form(data)
    wire = parse_event(data).to_wire()
    assert json.dumps(wire) == json.dumps(data)  # the same keys, values and order: the same line printed


@pytest.mark.parametrize("data", NOT_WIRE)
def test_the_lean_check_leaves_every_other_form_to_the_typed_path(data: dict) -> None:
    assert not is_wire_form(data)


def _run(url: str, cwd: Path, *argv: str, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INSTANCE_AI_CONFIG": str(cwd / "none.toml"), "PYTHONPATH": str(ROOT)}
    env.pop("INSTANCE_AI_TOKEN", None)
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run([sys.executable, *flags, "-m", "instance_ai_tui", "run", "--url", url, *argv],
                          capture_output=True, text=True, cwd=cwd, timeout=120, env=env, stdin=subprocess.DEVNULL)


async def test_a_plain_run_on_our_server_imports_neither_httpx_nor_pydantic(tmp_path: Path) -> None:
    """A plain answer from the real server (the demo's words to "hello"): the run ends with exit 0,
    its answer printed, and ``-X importtime`` lists no httpx, anyio, pydantic nor protocol models."""
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.server.app import create_app

    from .conftest import demo_settings

    service = build_service(demo_settings(tmp_path))
    async with serve_app(create_app(service)) as url:
        result = await asyncio.to_thread(_run, url, tmp_path, "--json", "hello", importtime=True)
    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "run-finish" and "Hello" in json.dumps(events)
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert {name.split(".")[0] for name in imported} & {"httpx", "httpcore", "anyio", "pydantic", "pydantic_core"} \
        == set()
    assert "instance_ai_tui.protocol.events" not in imported and "instance_ai_tui.client.remote" not in imported
    # nor what only an error or the full settings need (the client's errors, the gateway flag), nor
    # platformdirs when INSTANCE_AI_CONFIG names the file
    assert not imported & {"instance_ai_tui.client.base", "instance_ai_tui.client.gateway_flag", "platformdirs"}


START = {"type": "run-start", "runId": "run-h", "agentId": "o", "ts": 1, "payload": {"messageId": "m"}}
TITLE = {"type": "thread-title-updated", "runId": "run-h", "agentId": "o", "ts": 2, "payload": {"title": "A \x1b[2J"}}
USAGE = {"inputTokens": 1200, "outputTokens": 34, "cost": 0.01}
FINISH = {"type": "run-finish", "runId": "run-h", "agentId": "o", "ts": 9, "payload": {"status": "completed",
                                                                                   "usage": USAGE}}


def delta(text: str, rid: str = "x") -> dict:
    return {"type": "text-delta", "runId": "run-h", "agentId": "o", "responseId": rid, "payload": {"text": text}}


STREAMS = {
    "plain": [START, TITLE, delta("The "), delta("answer\x1b]52;c;aGk=\x07 "), delta("is 42.\n"), FINISH],
    "block": [START, {"type": "text-block", "runId": "run-h", "agentId": "o", "responseId": "x",
                      "payload": {"text": "All at once."}}, FINISH],
    "tools": [START, delta("Looking. "),
              {"type": "tool-call", "runId": "run-h", "agentId": "o",
               "payload": {"toolCallId": "c1", "toolName": "list-workflows", "args": {"limit": 5}}},
              {"type": "tool-result", "runId": "run-h", "agentId": "o", "payload": {"toolCallId": "c1",
                                                                                    "result": {"count": 0}}},
              delta("None yet.", "y"), FINISH],
    "second response": [START, delta("One. "), delta("Two.", "y"), FINISH],
    "error": [START, delta("Half"), {"type": "error", "runId": "run-h", "agentId": "o", "payload": {"content": "boom"}},
              {"type": "run-finish", "runId": "run-h", "agentId": "o", "payload": {"status": "error", "reason": "boom"}}],
    "cancelled": [START, delta("Stop"), {"type": "run-finish", "runId": "run-h", "agentId": "o", "ts": 3,
                                         "payload": {"status": "cancelled", "reason": "user"}}],
}


@pytest.mark.parametrize("stream", list(STREAMS))
async def test_the_lean_path_prints_what_the_typed_path_prints(tmp_path: Path, stream: str) -> None:
    """The same recorded stream read by the lean path (a new thread) and by the typed path (``--thread``,
    never the lean path's): the same JSON lines but for the thread's id, the same text on stdout, the
    same notes on stderr, the same exit code — whether the lean path follows it to its end ("plain",
    "block", "cancelled") or hands over mid-stream (a tool call, a second response, an error)."""
    frames = [_frame(n, event) for n, event in enumerate(STREAMS[stream], 1)]
    outputs = []
    for argv in (["--json"], ["--thread", "t-typed", "--json"], [], ["--thread", "t-typed"]):
        async with RawServer(_server(frames)) as server:
            outputs.append(await asyncio.to_thread(_run, server.url, tmp_path, *argv, "hello"))
    lean_json, typed_json, lean_text, typed_text = outputs
    assert lean_json.returncode == typed_json.returncode == lean_text.returncode == typed_text.returncode
    assert lean_json.returncode == (0 if stream in ("plain", "block", "tools", "second response") else 1)
    thread = json.loads(lean_json.stdout.splitlines()[0])["threadId"]
    assert lean_json.stdout.replace(thread, "t-typed") == typed_json.stdout and typed_json.stdout
    assert lean_text.stdout == typed_text.stdout and "\x1b" not in lean_text.stdout + lean_text.stderr
    lean_thread = re.search(r"\[thread (\S+) ", lean_text.stderr)
    assert lean_thread is not None
    assert lean_text.stderr.replace(lean_thread.group(1), "t-typed") == typed_text.stderr


def _server(frames: list[bytes], *, end: bool = True):
    state: dict[str, str] = {}

    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        path = request.path.split("?")[0]
        if path.endswith("/health"):
            yield HEALTH
        elif request.method == "POST" and path.endswith("/threads"):
            yield json_response(200, {"ok": True})
        elif request.method == "POST" and "/chat/" in path and not path.endswith("/cancel"):
            state["thread"] = path.rsplit("/", 1)[-1]
            yield json_response(200, {"runId": "run-h"})
        elif path.endswith("/cancel"):
            yield json_response(200, {"ok": True})
        elif "/events/" in path:
            yield sse_head()
            for chunk in frames:
                yield chunk
            if not end:
                await asyncio.sleep(30)
        elif "/messages" in path:
            yield json_response(200, {"threadId": state.get("thread", ""), "messages": [], "nextEventId": 1})
        elif path.endswith("/status"):
            yield json_response(200, {"hasActiveRun": True, "isSuspended": False, "backgroundTasks": []})
        else:
            yield json_response(404, {"code": 404, "message": "no"})

    return handler


def _frame(event_id: int, event: dict) -> bytes:
    return f"id: {event_id}\ndata: {json.dumps(event)}\n\n".encode()


async def test_a_hostile_servers_words_stay_visible_text_and_a_silent_stream_is_given_up(tmp_path: Path) -> None:
    """Escape sequences in a plain stream never reach the terminal raw; a stream that goes silent
    after its start is handed over and the typed path gives up by --idle-timeout, cancelling the run."""
    start = {"type": "run-start", "runId": "run-h", "agentId": "o", "ts": 1, "payload": {"messageId": "m"}}
    delta = {"type": "text-delta", "runId": "run-h", "agentId": "o", "responseId": "x",
             "payload": {"text": "\x1b]52;c;aGk=\x07\x1b[2Jhi"}}
    finish = {"type": "run-finish", "runId": "run-h", "agentId": "o", "ts": 2, "payload": {"status": "completed"}}
    async with RawServer(_server([_frame(1, start), _frame(2, delta), _frame(3, finish)])) as server:
        shown = await asyncio.to_thread(_run, server.url, tmp_path, "hello")
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout + shown.stderr and "hi" in shown.stdout
    async with RawServer(_server([_frame(1, start)], end=False)) as server:
        silent = await asyncio.to_thread(_run, server.url, tmp_path, "--idle-timeout", "1", "hello")
        paths = [request.path for request in server.requests]
    assert silent.returncode == 1 and "giving up" in silent.stderr, silent.stderr
    assert any(path.endswith("/cancel") for path in paths)
