"""Deeply nested tool arguments are a tool error the model sees (issue 43.3), not a RecursionError.

A model that sends 200,000 levels of ``[[[[...]]]]`` as a tool call's arguments (400 KB, under
``max_tool_args_chars``) made ``json.loads`` raise ``RecursionError``: a traceback, the run lost.
Now the call fails as invalid JSON does — the model reads why and tries again — and arguments
that parse but nest deeper than ``MAX_ARGUMENT_DEPTH`` do the same, so nothing after the parse
(validation, storage, the screen) walks a structure that deep. Through the real ``openai``
client against the OpenAI-wire test server, and through ``instance-ai run``.

The answer-size guard that counts wire bytes names bytes (its own limit, and the setting it
comes from), not characters.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.limits import ModelLimits
from instance_ai_tui.runtime.tools import MAX_ARGUMENT_DEPTH, Tool, ToolContext, parse_arguments
from tests.support.openai_server import MockOpenAIServer, MockResponse, MockToolCall

REPO = Path(__file__).resolve().parents[2]
DEPTH = 200_000


class Lookup(BaseModel):
    key: object = None


def deep(levels: int) -> str:
    return '{"key": ' + "[" * levels + "]" * levels + "}"


def test_parse_refuses_deep_arguments_in_words() -> None:
    for raw in (deep(DEPTH), deep(MAX_ARGUMENT_DEPTH + 1)):
        args, error = parse_arguments(raw)
        assert args == {} and error is not None and f"more than {MAX_ARGUMENT_DEPTH} levels deep" in error
    args, error = parse_arguments(deep(MAX_ARGUMENT_DEPTH - 2))
    assert error is None and "key" in args


async def test_deep_arguments_are_a_tool_error_the_model_reads(server, make_model) -> None:  # type: ignore[no-untyped-def]
    calls: list[object] = []

    async def lookup(args: Lookup, ctx: ToolContext) -> str:
        calls.append(args.key)
        return "found"

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="lookup", arguments=deep(DEPTH))], args_chunk_size=65_536),
        MockResponse.call("lookup", {"key": "a"}),
        MockResponse(text="done"),
    ])
    agent = Agent("a", "x", make_model(), [Tool("lookup", "Look up.", Lookup, lookup)])
    result = await agent.generate("go")
    assert result.status == "success", result.error
    assert calls == ["a"]
    told = server.requests[1].body["messages"][-1]
    assert told["role"] == "tool" and f"more than {MAX_ARGUMENT_DEPTH} levels deep" in told["content"]


async def test_deep_arguments_through_run(tmp_path: Path) -> None:
    script = [
        MockResponse(tool_calls=[MockToolCall(name="read-file", arguments=deep(DEPTH))], args_chunk_size=65_536),
        MockResponse(text="I could not read it."),
    ]
    async with MockOpenAIServer(script) as server:
        environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                   "XDG_DATA_HOME": str(tmp_path / "data"), "OPENAI_BASE_URL": server.base_url,
                   "OPENAI_API_KEY": "x"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "--model", "mock", "--db", str(tmp_path / "ia.db"),
            "--workspace", str(tmp_path), "read it", cwd=str(tmp_path), env=environ,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    stderr = err.decode()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "RecursionError" not in stderr, stderr
    assert "levels deep" in stderr and "I could not read it." in out.decode()


@pytest.mark.parametrize("answer_chars", [10, 1_000])
async def test_the_byte_guard_names_bytes(server, make_model, answer_chars: int) -> None:  # type: ignore[no-untyped-def]
    limits = ModelLimits(max_answer_chars=answer_chars)
    server.set_script([MockResponse(text="x" * (limits.answer_bytes * 2), words_per_chunk=1)])
    agent = Agent("a", "x", make_model(limits=limits), [])
    result = await agent.generate("go")
    assert result.status == "failed" and result.error is not None
    message = str(result.error)
    assert f"over the limit of {limits.answer_bytes:,} bytes" in message, message
    assert "max_answer_chars" in message and f"{answer_chars:,} characters" in message, message
