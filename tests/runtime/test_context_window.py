"""Threads that never die of a full context (issue 47), against a model server that enforces its
window: ``MockOpenAIServer(context_window=N)`` counts a request's JSON at 3 characters a token (a
denser count than the runtime's own estimate, so the correction from ``usage`` is needed) and
refuses anything over the window with HTTP 400 and OpenAI's ``context_length_exceeded`` body, or, as
llama.cpp's server does, with an empty ``200`` stream.

The scripted model is a test double: it calls ``get-workflow`` for "get workflow <id>", answers after
a tool result, writes plain notes when it is the observer, and answers "which workflow came first?"
by reading its own request for the first ``workflow '<name>' id=<id>`` it holds, so what it says
is what reached the model's context.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import ContextCompactedChunk
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from instance_ai_tui.runtime.errors import ModelContextExceeded
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.runtime.tools import Tool, ToolContext
from instance_ai_tui.store.base import Store
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.openai_server import MockOpenAIServer, MockResponse

FIRST_ID, FIRST_NAME = "wf_first1", "Invoice sync"
RESULT_CHARS = 20_000


class GetWorkflow(BaseModel):
    id: str


async def get_workflow(args: GetWorkflow, ctx: ToolContext) -> dict[str, Any]:
    """A real-sized workflow: ~20 k characters of JSON."""
    name = FIRST_NAME if args.id == FIRST_ID else f"Workflow {args.id}"
    nodes = []
    while len(json.dumps(nodes)) < RESULT_CHARS:
        index = len(nodes)
        nodes.append({"id": f"{args.id}-node-{index}", "name": f"Step {index}", "type": "n8n-nodes-base.set",
                      "position": [index * 220, 300], "parameters": {"values": {"string": [
                          {"name": f"field{index}", "value": "x" * 120}]}}})
    return {"id": args.id, "name": name, "active": False, "nodes": nodes}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def respond(body: dict[str, Any]) -> MockResponse:
    messages = body["messages"]
    system = _text(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
    if system.startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n- to look at workflows one by one\n## Open questions\n- none")
    last = messages[-1]
    if last.get("role") == "tool":
        return MockResponse(text=f"Fetched: {_text(last.get('content'))[:60]}")
    question = _text(last.get("content"))
    if "came first" in question:
        everything = "\n".join(_text(m.get("content")) for m in messages)
        found = re.search(r"workflow '([^']+)' id=(\w+)", everything)
        return MockResponse(text=f"The first was {found.group(1)} ({found.group(2)})." if found else "I do not know.")
    asked = re.search(r"get workflow (\w+)", question)
    if asked:
        return MockResponse.call("get-workflow", {"id": asked.group(1)})
    return MockResponse(text="Ok.")


def agent_on(model: OpenAIModel, store: Store) -> Agent:
    return Agent("main", "You work on n8n workflows. Use get-workflow to read one.", model,
                 [Tool("get-workflow", "Read a workflow by id.", GetWorkflow, get_workflow)],
                 memory=StoreMemory(store), model_params={"max_tokens": 256})


async def ask(agent: Agent, thread: str, text: str) -> tuple[Any, list[Any]]:
    stream = agent.stream(text, thread_id=thread)
    chunks = [c async for c in stream]
    return await stream.result(), chunks


@pytest.mark.timeout(600)
async def test_a_60_turn_thread_with_20k_results_keeps_answering_and_remembers_turn_1(tmp_path: Path) -> None:
    window = 8_192
    async with MockOpenAIServer(respond, context_window=window) as server:
        path = tmp_path / "thread.sqlite3"
        async with SqliteStore(path) as store:
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": window})
            agent = agent_on(model, store)
            compactions: list[ContextCompactedChunk] = []
            result, chunks = await ask(agent, "t", f"My workflow is {FIRST_ID}, named {FIRST_NAME}: get workflow "
                                                   f"{FIRST_ID}")
            assert result.status == "success" and result.text.startswith("Fetched:"), result.error
            for turn in range(2, 60):
                result, chunks = await ask(agent, "t", f"get workflow wf_{turn:03d}")
                assert result.status == "success", f"turn {turn}: {result.error}"
                assert result.text.startswith("Fetched:"), f"turn {turn}: {result.text!r}"
                compactions += [c for c in chunks if isinstance(c, ContextCompactedChunk)]
            result, chunks = await ask(agent, "t", "Which workflow came first?")
            assert result.status == "success", result.error
            assert result.text == f"The first was {FIRST_NAME} ({FIRST_ID}).", result.text
            await model.aclose()
        # the server never refused a request: none over the window was sent
        assert server.refused == 0
        assert max(r.tokens for r in server.requests) <= window - 256
        assert compactions and all(c.after < c.before and c.reason == "auto" for c in compactions)
        assert all(c.window == window for c in compactions)
        # the raw messages stay stored
        async with SqliteStore(path) as store:
            stored = await store.list_messages("t")
            assert sum(1 for r in stored if r.role == "tool") == 59
            # a thread restored after a restart (new store, model, agent) goes on with what it knew
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": window})
            again = agent_on(model, store)
            result, _ = await ask(again, "t", "Which workflow came first?")
            assert result.text == f"The first was {FIRST_NAME} ({FIRST_ID}).", result.text
            result, _ = await ask(again, "t", "get workflow wf_061")
            assert result.status == "success" and result.text.startswith("Fetched:")
            await model.aclose()
        assert server.refused == 0


async def test_a_window_smaller_than_known_is_learned_from_the_refusal_and_the_request_retried(
        tmp_path: Path) -> None:
    """The server's window (4 k) is half what the table says (``gpt-4``: 8 k): the first request over
    it is refused; the runtime learns the window from OpenAI's words, compacts and tries once more."""
    async with MockOpenAIServer(respond, context_window=4_096, models=("gpt-4",)) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            model = OpenAIModel("gpt-4", base_url=server.base_url, api_key="x", max_retries=0)
            assert model.context.window == 8_192
            agent = agent_on(model, store)
            results = []
            for turn in range(1, 8):
                result, _ = await ask(agent, "t", f"get workflow wf_{turn:03d}")
                results.append(result)
                assert result.status == "success", f"turn {turn}: {result.error}"
            await model.aclose()
    assert server.refused >= 1
    assert (model.context.window, model.context.source) == (4_096, "learned")
    refused_at = next(i for i, r in enumerate(server.requests) if r.tokens + 256 > 4_096)
    assert all(r.tokens + 256 <= 4_096 for r in server.requests[refused_at + 1:])  # learned: never again


async def test_a_learned_window_outlives_a_restart(tmp_path: Path) -> None:
    """tmux against llama.cpp (2 k, the table says 8 k): after a restart the first request over the
    real window was refused again, and the thread compacted again, to learn what was known. The window
    a refusal taught is kept in the store: a new process fits to it at once."""
    async with MockOpenAIServer(respond, context_window=4_096, models=("gpt-4",)) as server:
        path = tmp_path / "t.sqlite3"
        async with SqliteStore(path) as store:
            model = OpenAIModel("gpt-4", base_url=server.base_url, api_key="x", max_retries=0)
            agent = agent_on(model, store)
            for turn in range(1, 5):
                result, _ = await ask(agent, "t", f"get workflow wf_{turn:03d}")
                assert result.status == "success", result.error
            await model.aclose()
        refused = server.refused
        assert refused >= 1 and model.context.window == 4_096
        async with SqliteStore(path) as store:  # a restart: new store, model and agent
            model = OpenAIModel("gpt-4", base_url=server.base_url, api_key="x", max_retries=0)
            assert model.context.window == 8_192
            agent = agent_on(model, store)
            for turn in range(5, 8):
                result, _ = await ask(agent, "u", f"get workflow wf_{turn:03d}")
                assert result.status == "success", result.error
            await model.aclose()
    assert server.refused == refused, "the window was learned a second time"
    assert (model.context.window, model.context.source) == (4_096, "learned")


async def test_a_model_that_keeps_refusing_gets_words_that_say_what_to_do(tmp_path: Path) -> None:
    """A server whose real window is far below anything the request can be cut to: after the retry the
    run fails with the part, the window and the next step."""
    def always_too_big(body: dict[str, Any]) -> MockResponse:
        return MockResponse(status=400, error="This model's maximum context length is 8192 tokens. However, your "
                                              "messages resulted in 9000 tokens.")

    async with MockOpenAIServer(always_too_big) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            model = OpenAIModel("local-model", base_url=server.base_url, api_key="x", max_retries=0)
            result, _ = await ask(agent_on(model, store), "t", "hello")
            await model.aclose()
    assert result.status == "failed"
    assert result.error.startswith("this thread is over 'local-model''s 8.2k token context even compacted")
    assert result.error.endswith("/compact [what to keep], or start a new thread (Ctrl+N)")
    assert len(server.requests) == 2  # the request and one retry, no more


async def test_an_empty_stream_is_asked_once_more_unstreamed_and_its_refusal_classified() -> None:
    """llama.cpp's server answers a streamed request over its window with 200 and no event; the same
    request unstreamed is refused with ``context_length_exceeded``: that, not "no usable chunk", is
    what the adapter says."""
    async with MockOpenAIServer(respond, context_window=1_000, empty_stream_over_window=True) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="x", max_retries=0)
        request = ModelRequest(messages=[{"role": "user", "content": "get workflow " + "x" * 6_000}])
        with pytest.raises(ModelContextExceeded) as caught:
            [c async for c in model.stream(request)]
        await model.aclose()
    assert caught.value.window == 1_000 and caught.value.requested and caught.value.requested > 1_000
    assert [r.body.get("stream") for r in server.requests] == [True, None]
    assert "as too big for its context window" in str(caught.value)


async def test_compact_now_lowers_the_context_and_keeps_what_to_keep(tmp_path: Path) -> None:
    """``Agent.compact(thread, keep)`` (``/compact``): every message in the context becomes
    observations; the estimate of the thread's next request falls; the user's words reach the
    observer."""
    async with MockOpenAIServer(respond, context_window=32_000) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": 32_000})
            agent = agent_on(model, store)
            for turn in range(1, 4):
                await ask(agent, "t", f"get workflow wf_{turn:03d}")
            result, before, after, window = await agent.compact("t", "the workflow ids")
            await model.aclose()
            assert result is not None and result.messages == 12 and window == 32_000
            assert after < before / 3
            observer = [r for r in server.requests if _text(r.body["messages"][0]["content"]).startswith(
                OBSERVER_INSTRUCTIONS[:40])]
            assert len(observer) == 1 and "the workflow ids" in observer[0].body["messages"][0]["content"]
            kept = await StoreMemory(store).get_observations("t")
            assert kept is not None and "workflow 'Workflow wf_001' id=wf_001" in kept.facts
            assert await StoreMemory(store).load_history("t") == []  # all of it is in the observations now


async def test_a_history_as_long_as_memory_reads_is_compacted_before_older_messages_go_unread(
        tmp_path: Path) -> None:
    """A big window and short turns: the token threshold is never reached, but memory reads at most
    ``last_messages`` after the cursor; when the history holds that many, its older half becomes notes,
    so nothing leaves the context without being observed."""
    async with MockOpenAIServer(respond, context_window=128_000) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": 128_000})
            agent = Agent("main", "You work on n8n workflows.", model,
                          [Tool("get-workflow", "Read a workflow by id.", GetWorkflow, get_workflow)],
                          memory=StoreMemory(store, last_messages=12), model_params={"max_tokens": 256})
            compacted = 0
            result, _ = await ask(agent, "t", f"My workflow is {FIRST_ID}: get workflow {FIRST_ID}")
            for _ in range(2, 16):
                result, chunks = await ask(agent, "t", "Thanks, noted.")
                assert result.status == "success"
                compacted += sum(isinstance(c, ContextCompactedChunk) for c in chunks)
            result, _ = await ask(agent, "t", "Which workflow came first?")
            await model.aclose()
    assert compacted >= 2
    assert result.text == f"The first was {FIRST_NAME} ({FIRST_ID}).", result.text


async def test_an_agent_without_memory_fits_its_own_long_turn(tmp_path: Path) -> None:
    """How a sub-agent runs (``assistant/tools/delegate.py``: an ``Agent`` of its own, no memory): its
    one long turn of 20 k-character results is fitted request by request within the window (the
    answered results as stubs, the newest cut to half the room); nothing over the window is sent."""
    reads = iter([f"wf_{i:03d}" for i in range(6)])

    def worker(body: dict[str, Any]) -> MockResponse:
        nxt = next(reads, None)
        return MockResponse.call("get-workflow", {"id": nxt}) if nxt else MockResponse(text="Read them all.")

    async with MockOpenAIServer(worker, context_window=4_096) as server:
        model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                            context_windows={"mock": 4_096})
        sub = Agent("sub-agent", "You read workflows.", model,
                    [Tool("get-workflow", "Read a workflow by id.", GetWorkflow, get_workflow)],
                    model_params={"max_tokens": 256})
        result = await sub.generate("Read workflows wf_000 to wf_005.")
        await model.aclose()
    assert result.status == "success" and result.text == "Read them all.", result.error
    assert len(server.requests) == 7 and server.refused == 0
    assert all(r.tokens + 256 <= 4_096 for r in server.requests)


@pytest.mark.parametrize("known", [True, False], ids=["window-known", "window-learned"])
async def test_a_thread_already_past_a_smaller_models_window_goes_on(tmp_path: Path, known: bool) -> None:
    """A thread of long pastes grown on a big model (nothing compacted: 128 k) is taken on by a model with
    a 4 k window (``/model``, or a thread from before compaction): its first request is compacted before
    it is sent (window known), or sent as it is, refused, the window learned and the thread compacted
    (window nobody knows); the question is answered from the observations, and the thread goes on."""
    paste = "Here is a log I want you to keep in mind:\n" + "12:00:01 GET /webhook/invoice 200 in 31 ms\n" * 180
    async with MockOpenAIServer(respond, context_window=128_000, models=("big", "small")) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            big = OpenAIModel("big", base_url=server.base_url, api_key="x", max_retries=0,
                              context_windows={"big": 128_000})
            agent = agent_on(big, store)
            await ask(agent, "t", f"My workflow is {FIRST_ID}, named {FIRST_NAME}: get workflow {FIRST_ID}")
            for _ in range(6):  # 8 k characters each: a user's paste is never stubbed
                result, chunks = await ask(agent, "t", paste)
                assert result.status == "success" and not any(isinstance(c, ContextCompactedChunk) for c in chunks)
            await big.aclose()
            server.context_window = 4_096
            small = OpenAIModel("small", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"small": 4_096} if known else None)
            agent = agent_on(small, store)
            result, chunks = await ask(agent, "t", "Which workflow came first?")
            assert result.status == "success", result.error
            assert result.text == f"The first was {FIRST_NAME} ({FIRST_ID}).", result.text
            assert any(isinstance(c, ContextCompactedChunk) for c in chunks)
            result, _ = await ask(agent, "t", "get workflow wf_020")
            assert result.status == "success" and result.text.startswith("Fetched:"), result.error
            await small.aclose()
    assert small.context.window == 4_096
    assert server.refused == (0 if known else 1)


def _wordy_observer(body: dict[str, Any]) -> MockResponse:
    """``respond``, but its observer writes notes longer than the short messages they would replace."""
    if _text(body["messages"][0].get("content")).startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n" + "- to be greeted back, politely and at some length\n" * 90)
    return respond(body)


def _observer_requests(server: MockOpenAIServer) -> list[Any]:
    return [r for r in server.requests if _text(r.body["messages"][0]["content"]).startswith(OBSERVER_INSTRUCTIONS[:40])]


async def test_a_compaction_that_would_grow_the_context_keeps_the_messages(tmp_path: Path) -> None:
    """Notes no smaller than the messages they replace (seen with SmolLM2 on llama.cpp: 68% → 69%): the
    compaction, automatic or ``/compact``, saves no notes and forgets no message; said with ``kept`` and the
    context unchanged; the next requests still carry the messages themselves."""
    async with MockOpenAIServer(_wordy_observer, context_window=8_192) as server:
        async with SqliteStore(tmp_path / "t.sqlite3") as store:
            model = OpenAIModel("mock", base_url=server.base_url, api_key="x", max_retries=0,
                                context_windows={"mock": 8_192})
            agent = Agent("main", "You work on n8n workflows.", model,
                          [Tool("get-workflow", "Read a workflow by id.", GetWorkflow, get_workflow)],
                          memory=StoreMemory(store), model_params={"max_tokens": 256}, context_threshold=0.1)
            compactions: list[ContextCompactedChunk] = []
            for turn in range(5):
                result, chunks = await ask(agent, "t", f"My workflow is {FIRST_ID}, turn {turn}. " + "Hello. " * 90)
                assert result.status == "success", result.error
                compactions += [c for c in chunks if isinstance(c, ContextCompactedChunk)]
            assert compactions, "the 10 % threshold was never passed"
            assert all(c.kept and c.reason == "auto" and c.after <= c.before for c in compactions), compactions
            result, before, after, _ = await agent.compact("t")
            assert result is not None and result.kept and result.messages == 10 and after == before
            assert await StoreMemory(store).get_observations("t") is None
            assert len(await StoreMemory(store).load_history("t")) == 10
            # a turn of two model calls (a tool's result between them): the observer is not asked twice for nothing
            observed = len(_observer_requests(server))
            result, chunks = await ask(agent, "t", "get workflow wf_002")
            assert result.status == "success" and result.text.startswith("Fetched:"), result.error
            assert len(_observer_requests(server)) == observed + 1
            assert [c.kept for c in chunks if isinstance(c, ContextCompactedChunk)] == [True]
            await model.aclose()
            last = [r for r in server.requests if r not in _observer_requests(server)][-1].body["messages"]
            assert any(_text(m.get("content")).startswith(f"My workflow is {FIRST_ID}, turn 0.") for m in last)
            assert "<observations>" not in _text(last[0]["content"])
