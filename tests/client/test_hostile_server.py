"""Issue 15 item 8: ``instance-ai run --url`` against a hostile or broken server (a raw TCP server).

Each scenario used to wait silently for ever (or print a traceback, or exit 0, or let the
server write escape sequences to the terminal). Now: a clear message on stderr and exit 1
within the configured bounds, and nothing a terminal would interpret on stdout/stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server.live import REPO

from .raw_servers import HEALTH, RawRequest, RawServer, json_response, sse_head

THREAD, RUN = "t-h", "run-h"
ESC = "\x1b"


def frame(event_id: int, event_type: str, payload: object, run: str = RUN) -> bytes:
    event = {"type": event_type, "runId": run, "agentId": "orchestrator", "payload": payload}
    return f"id: {event_id}\ndata: {json.dumps(event)}\n\n".encode()


def hostile(mode: str):
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        path = request.path.split("?")[0]
        if path.endswith("/health"):
            yield HEALTH
        elif path.endswith(f"/threads/{THREAD}/messages"):
            yield json_response(200, {"threadId": THREAD, "messages": [], "nextEventId": 1})
        elif path.endswith(f"/threads/{THREAD}/status"):
            yield json_response(200, {"hasActiveRun": True, "isSuspended": False, "backgroundTasks": []})
        elif path.endswith(f"/chat/{THREAD}"):
            if mode == "slow-send":  # the message is answered late, then the run sends only keep-alives
                await asyncio.sleep(2.5)
            yield json_response(200, {"runId": RUN})
        elif path.endswith("/cancel"):
            yield json_response(200, {"ok": True})
        elif path.endswith(f"/events/{THREAD}"):
            async for chunk in events(mode, request):
                yield chunk
        else:
            yield json_response(404, {"code": 404, "message": "no"})

    return handler


async def events(mode: str, request: RawRequest) -> AsyncIterator[bytes]:
    if mode == "500":
        yield json_response(500, {"code": 500, "message": "always broken"})
        return
    yield sse_head()
    if mode == "cut":
        yield frame(1, "run-start", {"messageId": "m"})[:30]  # dropped mid-frame, every time
        return
    if mode == "backwards":
        if request.headers.get("last-event-id") in (None, "0"):
            yield frame(50, "run-start", {"messageId": "m"})
        for event_id in range(49, 40, -1):
            yield frame(event_id, "text-delta", {"text": "again "})
    if mode == "deep":
        yield b"id: 1\ndata: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n"
        yield b'id: 2\ndata: {"type": "text-delta", "runId": "run-h", "payload": ' + b'{"a":' * 5000 + b"1" + b"}" * 5001 + b"\n\n"
    if mode == "escapes":
        yield frame(1, "run-start", {"messageId": "m"})
        evil = (f"hello {ESC}]52;c;cHduZWQ={ESC}\\ {ESC}[2J{ESC}]0;pwned title\x07 world\r\n"
                f"\x9b31mred\x9bm \u202eevil\u202c {ESC}P+q{ESC}\\done")
        yield frame(2, "text-delta", {"text": evil})
        yield frame(3, "tool-call", {"toolCallId": "c1", "toolName": f"x{ESC}[1;1H", "args": {"k": f"{ESC}]52;c;AA=="}})
        yield frame(4, "error", {"content": f"boom {ESC}[?1049h"})
        yield frame(5, "run-finish", {})  # no status
        return
    if mode == "broken":  # frames whose data is never an event, for ever
        for event_id in range(1, 10_000):
            yield f"id: {event_id}\ndata: {{not json at all\n\n".encode()
            await asyncio.sleep(0.05)
    if mode == "endless":  # one line that never ends, 1 MB at a time
        yield b"data: "
        while True:
            yield b"x" * 1_048_576
            await asyncio.sleep(0)
    while True:  # pings only, for ever
        yield b": ping\n\n"
        await asyncio.sleep(0.1)


async def run_cli(tmp_path: Path, url: str, *extra: str, timeout: float = 40) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "XDG_DATA_HOME": str(tmp_path / "d")}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "INSTANCE_AI_URL"):
        env.pop(name, None)
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", "run", "hello", "--url", url, "--thread", THREAD,
        "--approve", "none", *extra, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(tmp_path),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        pytest.fail(f"run did not end within {timeout} s; stderr: {err.decode()[-2000:]}")
    return proc.returncode or 0, out.decode(), err.decode(), time.monotonic() - started


LIMITS = ("--idle-timeout", "3", "--max-retries", "3")


@pytest.mark.parametrize(("mode", "expected"), [
    ("500", "times in a row without an event of the run"),
    ("cut", "times in a row without an event of the run"),
    ("pings", "only keep-alives"),
    ("backwards", "ids going backwards"),
    ("deep", "no new event of the run for 3 s"),
])
async def test_run_gives_up_clearly_instead_of_waiting_for_ever(tmp_path: Path, mode: str, expected: str) -> None:
    async with RawServer(hostile(mode)) as server:
        code, out, err, _ = await run_cli(tmp_path, server.url, *LIMITS)
        cancels = [r for r in server.requests if r.path.endswith("/cancel")]
    assert code == 1, (out, err)
    assert "Traceback" not in err and "RecursionError" not in err, err
    assert "giving up: " in err and expected in err, err
    assert cancels, "the run was not cancelled on the server"  # (run_cli fails a run that never ends)
    if mode in ("500", "cut"):
        assert "connection lost; reconnecting" in err  # not silent while it retries
        # --max-retries 3: it gives up after the 4th failure in a row (a frame cut mid-way can
        # count once more: the reader sees the cut and then the next refused attempt)
        failures = int(err.split("the connection failed ")[1].split(" times")[0])
        assert 4 <= failures <= 5, err


async def test_escape_sequences_never_reach_the_terminal_and_no_status_is_not_success(tmp_path: Path) -> None:
    async with RawServer(hostile("escapes")) as server:
        code, out, err, _ = await run_cli(tmp_path, server.url, *LIMITS)
        json_code, json_out, json_err, _ = await run_cli(tmp_path, server.url, "--json", *LIMITS)
    assert code == 1, (out, err)  # run-finish without a status
    assert "no status" in err
    for stream in (out, err, json_out, json_err):
        assert ESC not in stream and "\x9b" not in stream and "\x07" not in stream and "\r" not in stream
        assert "\u202e" not in stream or stream is json_out
    # made visible, not obeyed (protocol.safe_text.visible)
    assert "hello ␛]52;c;cHduZWQ=" in out and "␛]0;pwned title" in out and "<U+202E>evil" in out
    assert "world" in out and "done" in out
    assert "boom" in err
    # --json keeps the exact text, escaped
    assert json_code == 1
    events = [json.loads(line) for line in json_out.splitlines()]
    texts = [e["payload"]["text"] for e in events if e["type"] == "text-delta"]
    assert texts and texts[0].startswith(f"hello {ESC}]52;c;") and "\x9b31m" in texts[0]


@pytest.mark.parametrize(("mode", "expected"), [
    ("broken", "broken frame(s), the last: malformed frame (id "),
    ("pings", "the server sends only keep-alives"),
    ("backwards", "ids going backwards"),
])
async def test_run_says_what_the_server_does_while_it_waits_and_when_it_gives_up(
        tmp_path: Path, mode: str, expected: str) -> None:
    """Issue 26: never silent. Before giving up, a note says what the server sends instead of the
    run's events; the last line names it too."""
    async with RawServer(hostile(mode)) as server:
        code, out, err, _ = await run_cli(tmp_path, server.url, "--idle-timeout", "4", "--max-retries", "0")
    assert code == 1, (out, err)
    assert "Traceback" not in err
    notes = [line for line in err.splitlines() if line.startswith("instance-ai run: no event of the run for")]
    assert notes and expected in notes[0] and "giving up after 4 s (--idle-timeout)" in notes[0], err
    final = [line for line in err.splitlines() if "giving up: " in line]
    assert len(final) == 1 and expected in final[0], err


async def test_the_wait_for_the_message_to_be_answered_is_not_told_as_the_runs(tmp_path: Path) -> None:
    """A busy machine or server answers the message late: the run's clock starts when the run exists, and
    the note before says the message is not answered (once it blamed keep-alives the server had not sent)."""
    async with RawServer(hostile("slow-send")) as server:
        code, out, err, _ = await run_cli(tmp_path, server.url, "--idle-timeout", "4", "--max-retries", "0")
    assert code == 1, (out, err)
    lines = err.splitlines()
    started = next(i for i, line in enumerate(lines) if line.startswith("[thread t-h · run run-h]"))
    before, after = lines[:started], lines[started + 1:]
    assert before and all("has not answered the message yet" in line for line in before), err
    assert any("only keep-alives" in line and "giving up after 4 s" in line for line in after), err
    assert "giving up: no new event of the run for 4 s (the server sends only keep-alives" in err, err


async def test_a_line_without_end_is_cut_off_not_buffered(tmp_path: Path) -> None:
    async with RawServer(hostile("endless")) as server:
        code, out, err, _ = await run_cli(tmp_path, server.url, "--idle-timeout", "20", "--max-retries", "2")
    assert code == 1, (out, err)
    assert "giving up: the connection failed" in err and "without an event of the run" in err, err
    # given up because each endless line was cut off, not after waiting out the 20 s idle timeout
    assert "no event of the run for" not in err, err
