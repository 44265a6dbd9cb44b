"""Every model failure class against a real server (issue 26), and the limits on what a model may
send (issue 31 item 2): each test asserts the exact class and that the words name the model server.

The runs go through the real ``openai`` client and ``Agent`` against ``tests/support/openai_server.py``
(a closed port, a stalling server, an HTML page, a stream cut after N bytes, junk, huge chunks, huge
tool arguments, a stream that never ends)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.limits import ModelLimits
from instance_ai_tui.runtime.model import (
    ModelError,
    ModelHTTPError,
    ModelLimitExceeded,
    ModelMalformedStream,
    ModelRefused,
    ModelRequest,
    ModelStreamCut,
    ModelTextDelta,
    ModelTimeout,
    ModelUnreachable,
)
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.runtime.tools import Tool, ToolContext
from instance_ai_tui.store.errors import is_unavailable
from tests.support.openai_server import MockOpenAIServer, MockResponse, MockToolCall, closed_port_url


async def collect(model: OpenAIModel) -> list[Any]:
    request = ModelRequest(messages=[{"role": "user", "content": "hi"}])
    return [c async for c in model.stream(request)]


async def failure(model: OpenAIModel) -> tuple[ModelError, list[Any]]:
    got: list[Any] = []
    with pytest.raises(ModelError) as info:
        async for chunk in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
            got.append(chunk)
    return info.value, got


def names_the_server(error: BaseException, base_url: str) -> None:
    assert f"the model server at {base_url}" in str(error), str(error)


async def test_closed_port_is_unreachable_and_not_storage() -> None:
    url = closed_port_url()
    model = OpenAIModel("m", base_url=url, api_key="x", max_retries=0)
    error, _ = await failure(model)
    assert type(error) is ModelUnreachable and error.code == "model_unreachable"
    assert str(error) == f"the model server at {url} refused the connection: is it running? (OPENAI_BASE_URL)"
    # the bug of issue 26: a refused connection of the *model* server counted as "storage unavailable"
    assert not is_unavailable(error)
    await model.aclose()


async def test_a_stalling_server_is_a_timeout(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse(text="never", first_chunk_delay=3.0)])
    error, _ = await failure(make_model(first_token_timeout=0.3))
    assert type(error) is ModelTimeout and error.code == "model_timeout"
    names_the_server(error, server.base_url)
    assert "sent nothing for 0.3 s" in str(error) and not is_unavailable(error)


async def test_a_first_token_that_never_comes_says_the_whole_wait(server: MockOpenAIServer,
                                                                   make_model: Any) -> None:
    """The headers come, the first chunk never: the wait for it is what was left of the first token's
    deadline, but the words say the whole wait as configured (tmux showed "sent nothing for 59.9048 s")."""
    server.set_script([MockResponse(text="never", first_chunk_delay=0.2, hang_after_chunks=0)])
    error, _ = await failure(make_model(first_token_timeout=0.7))
    assert type(error) is ModelTimeout
    assert "sent nothing for 0.7 s (" in str(error), str(error)


async def test_a_stream_that_stalls_midway_is_a_timeout(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse(text="a b c d", hang_after_chunks=2)])
    error, _ = await failure(make_model(idle_timeout=0.3))
    assert type(error) is ModelTimeout and "stream stalled" in str(error)
    names_the_server(error, server.base_url)


async def test_an_html_page_with_status_200_is_not_an_empty_answer(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse(content_type="text/html; charset=utf-8")])
    error, got = await failure(make_model())
    assert type(error) is ModelMalformedStream and error.code == "model_malformed"
    names_the_server(error, server.base_url)
    assert "answered with text/html instead of a chat-completions stream" in str(error) and not got


@pytest.mark.parametrize("mode", ["close", "reset"])
async def test_a_stream_cut_after_n_bytes_is_cut_not_completed(server: MockOpenAIServer, make_model: Any,
                                                                mode: str) -> None:
    server.set_script([MockResponse(text="half of a long answer that never ends", cut_after_bytes=700,
                                    cut_mode=mode)])  # type: ignore[arg-type]
    error, got = await failure(make_model())
    assert type(error) is ModelStreamCut and error.code == "model_cut"
    names_the_server(error, server.base_url)
    assert "incomplete" in str(error)
    assert "".join(c.text for c in got if isinstance(c, ModelTextDelta)).startswith("half")


async def test_junk_lines_are_a_malformed_stream(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse(text="ok", raw_lines=["<html>not json</html>"])])
    error, _ = await failure(make_model())
    assert type(error) is ModelMalformedStream and "not JSON" in str(error)
    names_the_server(error, server.base_url)


async def test_a_stream_of_only_unusable_chunks_is_malformed(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse(raw_chunks=[{"choices": "nope"}, {"choices": [42]}, {"id": "x"}])])
    error, _ = await failure(make_model())
    assert type(error) is ModelMalformedStream and "no usable chunk" in str(error)


async def test_a_stream_stopped_before_its_answer_says_so(server: MockOpenAIServer, make_model: Any) -> None:
    """What llama-cpp-python's server sends to a request that another request interrupts (its default):
    the assistant's turn opened, then ``[DONE]`` with no text and no finish reason (seen with curl
    against the peer). Not "is this an OpenAI-compatible server?": the answer was stopped."""
    opened = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "smollm2",
              "choices": [{"index": 0, "delta": {"role": "assistant"}, "logprobs": None, "finish_reason": None}]}
    server.set_script([MockResponse(raw_chunks=[opened])])
    error, _ = await failure(make_model())
    assert type(error) is ModelStreamCut and error.code == "model_cut"
    names_the_server(error, server.base_url)
    assert "stopped the answer before it began" in str(error) and "try again" in str(error)
    assert "OpenAI-compatible" not in str(error)


@pytest.mark.parametrize(("status", "cls", "words"), [
    (401, ModelRefused, "refused the credentials (HTTP 401: bad key): check the API key"),
    (404, ModelRefused, "does not know model"),
    (400, ModelRefused, "refused the request"),
    (429, ModelHTTPError, "is rate-limiting requests (HTTP 429: bad key)"),
    (503, ModelHTTPError, "failed to answer model 'gpt-4o-mini' (HTTP 503: bad key): try again later"),
])
async def test_http_statuses_carry_the_providers_message(server: MockOpenAIServer, make_model: Any, status: int,
                                                         cls: type[ModelError], words: str) -> None:
    server.set_script([MockResponse(status=status, error="bad key")])
    error, _ = await failure(make_model())
    assert type(error) is cls and error.status_code == status and words in str(error), str(error)
    names_the_server(error, server.base_url)


# ----------------------------------------------------------------------------- limits (issue 31 item 2)


class Note(BaseModel):
    text: str


def agent_on(model: OpenAIModel, seen: list[str] | None = None) -> Agent:
    async def save(args: Note, ctx: ToolContext) -> str:
        (seen if seen is not None else []).append(args.text)
        return "saved"

    return Agent("limits", "You save notes.", model, [Tool("save_note", "Save a note.", Note, save)], max_iterations=3)


async def test_one_text_delta_over_the_limit_stops_the_run_and_is_not_kept(server: MockOpenAIServer,
                                                                            make_model: Any) -> None:
    server.set_script([MockResponse(big_chunk_chars=5_000)])
    model = make_model(limits=ModelLimits(max_delta_chars=1_000))
    stream = agent_on(model).stream("hi")
    chunks = [c async for c in stream]
    result = await stream.result()
    assert result.status == "failed" and "max_delta_chars" in (result.error or "")
    assert f"the model server at {server.base_url} sent one text delta of 5,000 characters" in (result.error or "")
    assert not [c for c in chunks if c.type == "text-delta"]  # nothing oversized went out
    error = next(c for c in chunks if c.type == "error").exception
    assert type(error) is ModelLimitExceeded and error.limit == "max_delta_chars"


async def test_tool_arguments_over_the_limit_never_reach_the_tool(server: MockOpenAIServer, make_model: Any) -> None:
    big = '{"text": "' + "y" * 50_000 + '"}'
    server.set_script([MockResponse(tool_calls=[MockToolCall(name="save_note", arguments=big)], args_chunk_size=4096)])
    seen: list[str] = []
    stream = agent_on(make_model(limits=ModelLimits(max_tool_args_chars=10_000)), seen).stream("note this")
    chunks = [c async for c in stream]
    result = await stream.result()
    assert result.status == "failed" and "tool call arguments for save_note" in (result.error or "")
    assert not seen and not [c for c in chunks if c.type in ("tool-call", "tool-call-suspended")]


async def test_an_answer_that_never_ends_is_stopped_by_the_answer_limits(server: MockOpenAIServer,
                                                                          make_model: Any) -> None:
    server.set_script([MockResponse(text="start", endless=True, chunk_delay=0.001)])
    started = asyncio.get_running_loop().time()
    result = await agent_on(make_model(limits=ModelLimits(max_answer_chars=2_000))).generate("go")
    assert result.status == "failed" and "max_answer_chars" in (result.error or "")
    await server.wait_disconnect(0)  # the stream was closed, the server stopped sending
    server.set_script([MockResponse(text="start", endless=True, chunk_delay=0.01)])
    result = await agent_on(make_model(limits=ModelLimits(max_answer_seconds=0.5))).generate("go")
    assert result.status == "failed" and "max_answer_seconds" in (result.error or "")
    assert asyncio.get_running_loop().time() - started < 10


async def test_the_run_limit_counts_every_answer_of_the_run(server: MockOpenAIServer, make_model: Any) -> None:
    server.set_script([MockResponse.call("save_note", {"text": "a" * 600}), MockResponse(text="b " * 400)])
    result = await agent_on(make_model(limits=ModelLimits(max_run_chars=1_000))).generate("go")
    assert result.status == "failed" and "max_run_chars" in (result.error or "") and "in one run" in result.error


# ----------------------------------------------------------------------------- memory stays bounded


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


@pytest.fixture
async def process_server(tmp_path: Any) -> Any:
    """The OpenAI-wire server in its own process, so its own buffers do not count in our RSS."""
    import json
    import sys

    started: list[Any] = []

    async def start(response: dict[str, Any]) -> str:
        script = tmp_path / f"script{len(started)}.json"
        script.write_text(json.dumps([response]))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.support.openai_server", "--port", "0", "--script", str(script),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        started.append(proc)
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        return str(json.loads(line)["base_url"])

    yield start
    for proc in started:
        proc.kill()
        await proc.wait()


@pytest.mark.parametrize(("response", "limit"), [
    ({"big_chunk_chars": 50_000_000}, "max_delta_chars"),  # one 50 MB chunk
    ({"tool_calls": [{"name": "save_note", "arguments": '{"text": "' + "z" * 10_000_000 + '"}'}],
      "args_chunk_size": 20_000_000}, "max_delta_chars"),  # 10 MB of arguments in one chunk
    ({"tool_calls": [{"name": "save_note", "arguments": '{"text": "' + "z" * 10_000_000 + '"}'}],
      "args_chunk_size": 65_536}, "max_tool_args_chars"),  # 10 MB of arguments in 64 KB pieces
])
async def test_memory_stays_bounded_under_huge_output(process_server: Any, response: dict[str, Any],
                                                      limit: str) -> None:
    base_url = await process_server(response)
    model = OpenAIModel("m", base_url=base_url, api_key="x", max_retries=0)  # the default limits
    before = _rss_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # reset the peak (VmHWM) to the current RSS
    result = await agent_on(model).generate("go")
    peak = _rss_kib("VmHWM")
    await model.aclose()
    assert result.status == "failed" and limit in (result.error or ""), result.error
    assert f"the model server at {base_url}" in (result.error or "")
    grown_mb = (peak - before) / 1024
    print(f"\nRSS growth {limit}: {grown_mb:.1f} MB")
    assert grown_mb < 60, f"RSS grew by {grown_mb:.0f} MB while the model sent 10-50 MB"
