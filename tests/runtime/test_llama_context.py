"""Issue 47 against the real llama.cpp server (llama-cpp-python, SmolLM2-135M) with ``--n_ctx 2048``:
a server nobody here wrote that enforces its window (a streamed request over it gets ``200`` and an
empty stream, the same request unstreamed ``400 context_length_exceeded``).

Each turn the model is made to call ``get-workflow`` (a forced ``tool_choice`` on the turn's first
request: a 135 M model does not choose tools by itself), the tool returns ~20 k characters of workflow
JSON, and the model answers in a few tokens (``tool_choice: none``). What is asserted is the runtime's
part, not the tiny model's wit: every turn ends as the protocol says, no request was refused or
answered with an empty stream (none over the window was sent: the server's own ``usage`` plus the
answer's ``max_tokens`` stays within 2,048 for every request), the first turn's workflow id and name
are in the system prompt of the last turn's requests (the observations), and a thread restored with a
new store, model and agent goes on.

The server is slow on a shared 2-core machine (a 1,500-token prompt took 2 min 20 s at load 13), so
the turns are ``LLAMA_CONTEXT_TURNS`` (default 3: each turn's 20 k-character result is past the window, so
turns 2 and 3 each compact, and turn 1's id must survive both; 12 turns took 29 min of CI's 30 at load 15,
3 turns 58 s at load 2). Skips without the
cached server unless ``LLAMA_PEER_REQUIRED=1``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import ContextCompactedChunk
from instance_ai_tui.runtime.memory import StoreMemory
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.runtime.tools import Tool
from instance_ai_tui.store.sqlite import SqliteStore
from tests.runtime.test_context_window import FIRST_ID, FIRST_NAME, GetWorkflow, get_workflow
from tests.runtime.test_llama_smoke import MODEL, llama_peer

N_CTX = 2_048
TURNS = int(os.environ.get("LLAMA_CONTEXT_TURNS", "3"))
ANSWER_TOKENS = 8


@pytest.fixture(scope="module")
def small_llama() -> Iterator[str]:
    if not llama_peer.installed():
        reason = llama_peer.missing_reason()
        if os.environ.get("LLAMA_PEER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    peer = llama_peer.LlamaPeer(n_ctx=N_CTX).start(timeout=180)
    try:
        yield peer.url
    finally:
        peer.stop()


class Next(BaseModel):
    """The tool's one argument, an enum: llama.cpp's grammar for a forced call then writes it in a few
    tokens (a free string from a 135 M model runs past any small max_tokens, and broken JSON is a tool
    error, not a result). The workflow read is the turn's own (``ctx.extra["id"]``)."""

    id: Literal["next"]


class ForcedFirstCall:
    """The real adapter, with the turn's first request forced to call ``get-workflow`` and the others
    told not to call tools (what a 135 M model needs to take part in a tool-calling thread)."""

    def __init__(self, inner: OpenAIModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.context = inner.context
        self.limits = inner.limits
        self.where = inner.where

    async def probe_context_window(self) -> int | None:
        return await self.inner.probe_context_window()

    def stream(self, request: ModelRequest, **kw: Any) -> Any:
        if request.tools:
            last = request.messages[-1]
            forced = last.get("role") == "user"
            request.tool_choice = {"type": "function", "function": {"name": "get-workflow"}} if forced else "none"
            if forced:
                request.params = {**request.params, "max_tokens": 24}
        return self.inner.stream(request, **kw)


def _agent(model: Any, store: SqliteStore) -> Agent:
    async def fetch(args: Next, ctx: Any) -> dict[str, Any]:
        return await get_workflow(GetWorkflow(id=ctx.extra["id"]), ctx)

    return Agent("main", "You read n8n workflows. Answer in a few words.", model,
                 [Tool("get-workflow", "Read the next workflow.", Next, fetch)],
                 memory=StoreMemory(store), model_params={"max_tokens": ANSWER_TOKENS}, max_iterations=3,
                 observer_max_tokens=48)


@pytest.mark.timeout(7200)
async def test_a_long_thread_with_20k_results_lives_in_2048_tokens_of_real_llama_cpp(
        small_llama: str, tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []
    statuses: list[int] = []

    async def on_request(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            sent.append(json.loads(request.content))

    async def on_response(response: httpx.Response) -> None:
        if response.request.url.path.endswith("/chat/completions"):
            statuses.append(response.status_code)

    def model() -> ForcedFirstCall:
        http = httpx.AsyncClient(timeout=httpx.Timeout(connect=15, read=None, write=60, pool=60),
                                 event_hooks={"request": [on_request], "response": [on_response]})
        # the window as a user sets it (model.context_windows): llama-cpp-python does not report it
        return ForcedFirstCall(OpenAIModel(MODEL, base_url=small_llama, api_key="x", max_retries=0, client=http,
                                           first_token_timeout=900, idle_timeout=900,
                                           context_windows={MODEL: N_CTX}))

    path = tmp_path / "llama.sqlite3"
    compactions: list[ContextCompactedChunk] = []
    usages: list[tuple[int, int]] = []
    async with SqliteStore(path) as store:
        adapter = model()
        agent = _agent(adapter, store)
        for turn in range(1, TURNS + 1):
            ident = FIRST_ID if turn == 1 else f"wf_{turn:03d}"
            words = (f"My first workflow is {ident}, named {FIRST_NAME}. Read it." if turn == 1
                     else f"Read workflow {ident}.")
            stream = agent.stream(words, thread_id="t", extra={"id": ident})
            chunks = [c async for c in stream]
            result = await stream.result()
            assert result.status == "success", f"turn {turn}: {result.error}"
            compactions += [c for c in chunks if isinstance(c, ContextCompactedChunk)]
            usages.append((result.usage.input_tokens, result.usage.requests))
        await adapter.inner.aclose()
        window = adapter.context.window
    assert all(status == 200 for status in statuses), statuses
    assert all(body.get("stream") for body in sent), "an empty stream was asked again unstreamed"
    assert compactions, "20 k-character results in a 2 k window and no compaction"
    last_system = sent[-1]["messages"][0]["content"]
    assert FIRST_ID in last_system and FIRST_NAME in last_system
    # a thread restored after a restart goes on
    async with SqliteStore(path) as store:
        adapter = model()
        again = _agent(adapter, store)
        stream = again.stream("Read workflow wf_999.", thread_id="t", extra={"id": "wf_999"})
        [c async for c in stream]
        result = await stream.result()
        await adapter.inner.aclose()
    assert result.status == "success", result.error
    assert all(status == 200 for status in statuses)
    print(json.dumps({"turns": TURNS, "requests": len(sent), "compactions": len(compactions), "window": window,
                      "input_tokens_per_turn": [u[0] for u in usages]}))


@pytest.mark.timeout(3600)
async def test_a_window_it_does_not_report_is_learned_from_its_refusal(small_llama: str) -> None:
    """Without ``model.context_windows`` the table says 8 k for SmolLM2; the server's 2 k is learned
    from the first refusal (an empty 200 stream, then 400 unstreamed) and the request retried cut to
    fit: the run answers."""
    model = OpenAIModel(MODEL, base_url=small_llama, api_key="x", max_retries=0, first_token_timeout=900,
                        idle_timeout=900)
    assert model.context.window == 8_192
    agent = Agent("main", "Answer in a few words.", model, model_params={"max_tokens": ANSWER_TOKENS})
    result = await agent.generate("Here is my log:\n" + "line of a long log\n" * 600 + "What is it?")
    await model.aclose()
    assert result.status == "success", result.error
    assert (model.context.window, model.context.source) == (N_CTX, "learned")
