"""The log path is outside text too (issue 43.1, 39.6): every log line is visible text.

A hostile model server answers the title request with an error body full of what a terminal
obeys (OSC 52, OSC 0, CSI 2J, BEL, a C1 CSI, an RLO). Through ``run`` (its stderr) and
``serve`` (its stderr, kept in a file as a service manager would) no such byte is written, and
the stand-ins are. Third-party records (the ``mcp`` SDK, uvicorn) are one line each, never a
traceback; an MCP server that answers invalid JSON-RPC through ``run``: one line per answer.
The TUI's log (a file beside its database) obeys the same rule.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import re
import socket
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from instance_ai_tui.cli import logs
from tests.support.openai_server import MockOpenAIServer, MockResponse

REPO = Path(__file__).resolve().parents[1]
HOSTILE = "body\x1b]52;c;cHduZWQ=\x07 wipe\x1b[2J title\x1b]0;pwned\x07 csi\x9b2J \u202eevil\u202c\nforged line\x07"
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_clean(text: str) -> None:
    found = _RAW.search(text)
    assert found is None, f"{found.group()!r} written raw: {text[max(0, found.start() - 60):found.end() + 60]!r}"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


def _raise(message: str) -> None:
    raise ValueError(message)


def test_a_third_party_record_is_one_visible_line_without_a_traceback(restore_logging: None) -> None:
    out = io.StringIO()
    logs.install(stream=out, fmt="%(levelname)s %(name)s: %(message)s")
    try:
        _raise(f"from the server {HOSTILE}")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse JSONRPC message %s", HOSTILE)
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received: %s", HOSTILE)
    text = out.getvalue()
    assert_clean(text)
    lines = text.splitlines()
    assert len(lines) == 2, text
    assert "Traceback" not in text
    assert lines[0].startswith("ERROR mcp.client.stdio: Failed to parse JSONRPC message body␛]52;c;cHduZWQ=␇")
    assert "<U+202E>evil" in lines[0] and "␤forged line" in lines[0]
    assert lines[0].endswith("(ValueError: from the server body␛]52;c;cHduZWQ=␇ wipe␛[2J title␛]0;pwned␇ csi<U+009B>2J "
                             "<U+202E>evil<U+202C> …)")  # the exception's first line


def test_our_record_keeps_its_traceback_made_visible(restore_logging: None) -> None:
    out = io.StringIO()
    logs.install(stream=out)
    try:
        _raise(HOSTILE)
    except ValueError:
        logging.getLogger("instance_ai_tui.assistant.run_manager").exception("a bug of ours: %s", HOSTILE)
    text = out.getvalue()
    assert_clean(text)
    assert text.splitlines()[0].startswith("a bug of ours: body␛]52;")  # the message: one line
    assert "Traceback (most recent call last)" in text and "in _raise" in text


def test_a_huge_message_is_cut(restore_logging: None) -> None:
    out = io.StringIO()
    logs.install(stream=out)
    logging.getLogger("instance_ai_tui.x").warning("body: %s", "\x1b" * 1_000_000)
    assert len(out.getvalue()) < 3 * logs.MAX_MESSAGE_CHARS and "more characters)" in out.getvalue()


def test_install_replaces_itself_and_a_library_handler(restore_logging: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    logs.install(stream=first)
    uvicorn_logger = logging.getLogger("uvicorn")
    uvicorn_logger.addHandler(logging.StreamHandler(io.StringIO()))
    uvicorn_logger.propagate = False  # what uvicorn's own configuration does
    logs.install(stream=second)
    uvicorn_logger.warning("once %s", "\x1b[2J")
    assert first.getvalue() == "" and second.getvalue() == "once ␛[2J\n"


def test_the_tui_log_is_a_file_of_visible_lines(tmp_path: Path, restore_logging: None) -> None:
    handler = logs.install_tui_log(tmp_path / "data")
    assert handler is not None
    try:
        _raise(HOSTILE)
    except ValueError:
        logging.getLogger("httpx").warning("answer %s", HOSTILE, exc_info=True)
    handler.flush()
    text = (tmp_path / "data" / logs.TUI_LOG_NAME).read_text(encoding="utf-8")
    assert_clean(text)
    assert len(text.splitlines()) == 1 and "httpx: answer body␛]52;" in text


def test_the_tui_log_in_a_folder_that_cannot_be_written_is_no_error(tmp_path: Path, restore_logging: None) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert logs.install_tui_log(blocked / "data") is None
    logging.getLogger("mcp").warning("dropped, never on the screen")  # no lastResort on stderr


# ------------------------------------------------------------------ through the commands
def _title_fails(body: dict[str, Any]) -> MockResponse:
    if "title" in str(body["messages"][0].get("content", "")).lower():
        return MockResponse(status=400, error=HOSTILE)
    return MockResponse(text="Here is the answer.")


def _environ(tmp_path: Path, base_url: str) -> dict[str, str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data"), "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "x"}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "INSTANCE_AI_DB", "INSTANCE_AI_MODEL"):
        environ.pop(name, None)
    return environ


MESSAGE = "Please list the workflows that send the weekly sales report by email"


async def test_run_prints_the_hostile_title_error_as_visible_text(tmp_path: Path) -> None:
    async with MockOpenAIServer(_title_fails) as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "--model", "mock", "--db", str(tmp_path / "ia.db"),
            MESSAGE, cwd=str(tmp_path), env=_environ(tmp_path, server.base_url), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert any("title" in str(r.body["messages"][0].get("content", "")).lower() for r in server.requests)
    stderr = err.decode()
    assert proc.returncode == 0, stderr
    assert "Here is the answer." in out.decode()
    assert_clean(stderr)
    warning = [line for line in stderr.splitlines() if "title generation" in line]
    assert len(warning) == 1, stderr
    assert "␛]52;c;cHduZWQ=␇" in warning[0] and "<U+202E>evil" in warning[0] and "forged line" in warning[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_serve_logs_the_hostile_title_error_as_visible_text(tmp_path: Path) -> None:
    port = _free_port()
    log_file = tmp_path / "serve.log"
    async with MockOpenAIServer(_title_fails) as server:
        with open(log_file, "wb") as log_out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "instance_ai_tui", "serve", "--port", str(port), "--model", "mock",
                "--db", str(tmp_path / "ia.db"), cwd=str(tmp_path), env=_environ(tmp_path, server.base_url),
                stdin=asyncio.subprocess.DEVNULL, stdout=log_out, stderr=log_out)
        try:
            api = f"http://127.0.0.1:{port}/instance-ai"
            async with httpx.AsyncClient(timeout=30) as http:
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if (await http.get(f"{api}/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert proc.returncode is None and time.monotonic() < deadline, log_file.read_text()
                    await asyncio.sleep(0.1)
                # a request uvicorn logs itself (an invalid one): its line goes through the same rule
                with socket.create_connection(("127.0.0.1", port)) as raw:
                    raw.sendall(b"GET /\x1b]52;c;eA==\x07 HTTP/1.1\r\nHost: x\r\n\r\n")
                    raw.recv(1024)
                sent = await http.post(f"{api}/chat/t1", json={"message": MESSAGE})
                assert sent.status_code == 200, sent.text
                while "title generation" not in log_file.read_text(encoding="utf-8", errors="replace"):
                    assert time.monotonic() < deadline, log_file.read_text()
                    await asyncio.sleep(0.1)
        finally:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)
    text = log_file.read_bytes().decode("utf-8")
    assert_clean(text)
    warning = [line for line in text.splitlines() if "title generation" in line]
    assert len(warning) == 1 and "␛]52;c;cHduZWQ=␇" in warning[0] and "<U+202E>evil" in warning[0], text
    assert "Traceback" not in text, text


BAD_MCP_SERVER = textwrap.dedent("""
    import json, sys
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if "id" not in request:
            continue
        # not JSON-RPC: a JSON object without "jsonrpc", then a line that is not JSON at all
        sys.stdout.write(json.dumps({"id": request["id"], "answer": "\\u001b]52;c;eA==\\u0007"}) + "\\n")
        sys.stdout.write("not json \\u001b[2J at all\\n")
        sys.stdout.flush()
""")


async def test_an_mcp_server_answering_invalid_json_rpc_is_one_line_per_answer(tmp_path: Path) -> None:
    script = tmp_path / "bad_mcp.py"
    script.write_text(BAD_MCP_SERVER)
    # the message waits for the server (--mcp-wait) until its start fails (startup_timeout), so its
    # answers are read before the run ends
    config = tmp_path / "config" / "instance-ai" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[mcp.servers.bad]\nstartup_timeout = 5\n")
    async with MockOpenAIServer([MockResponse(text="No tools today.")] * 3) as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "--model", "mock", "--db", str(tmp_path / "ia.db"),
            "--mcp", f"bad={sys.executable} {script}", "--mcp-wait", "60", "hi", cwd=str(tmp_path),
            env=_environ(tmp_path, server.base_url), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    stderr = err.decode()
    assert_clean(stderr)
    assert "Traceback" not in stderr, stderr
    for line in stderr.splitlines():  # no line of a traceback or a continuation
        assert not line.startswith((" ", "\t")), stderr
    parse_errors = [line for line in stderr.splitlines() if "wrote a line that is not JSON-RPC" in line]
    assert len(parse_errors) == 2, stderr  # one per answer the server wrote
    assert all(len(line) < 500 and "MCP server 'bad'" in line for line in parse_errors), stderr
