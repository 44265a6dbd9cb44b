"""Tokens and cost end to end: the real ``openai`` client against the local wire-format server
(usage chunks), ``run-finish`` ``payload.usage``, the thread's ``metadata.usage`` total (across
runs, restarts, our server's endpoints) and ``instance-ai export``."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.usage import usage_from_wire
from instance_ai_tui.cli.export import export_thread
from instance_ai_tui.cli.run import HeadlessRun
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.usage import DEFAULT_PRICES, Usage, compute_cost
from instance_ai_tui.server.app import create_app
from tests.support import serve_asgi
from tests.support.openai_server import MockOpenAIServer, MockResponse

from .conftest import answer, collect, of_type

pytestmark = pytest.mark.timeout(60)

MODEL = "gpt-4o-mini"  # in the built-in price table: the usage has a cost
PRICE = DEFAULT_PRICES[MODEL]


class Scripted:
    """Orchestrator -> delegate(scribe, write-file) -> the scribe writes (approval) -> answers.
    Every response reports distinct token counts; ``served`` keeps what was reported."""

    def __init__(self, *, hang_sub_answer: bool = False, answer_text: str = "The scribe wrote notes.md.") -> None:
        self.served: list[Usage] = []
        self.hang_sub_answer = hang_sub_answer
        self.answer_text = answer_text

    def _reply(self, response: MockResponse, n: int) -> MockResponse:
        tokens = {"prompt_tokens": 100 * n + 7, "completion_tokens": 10 * n + 3, "cached_tokens": 20 * n,
                  "reasoning_tokens": n}
        self.served.append(Usage(input_tokens=tokens["prompt_tokens"], output_tokens=tokens["completion_tokens"],
                                 total_tokens=tokens["prompt_tokens"] + tokens["completion_tokens"],
                                 cached_input_tokens=tokens["cached_tokens"], reasoning_tokens=n, requests=1))
        return response.model_copy(update=tokens)

    def __call__(self, body: dict[str, Any]) -> MockResponse:
        n = len(self.served) + 1
        messages = body["messages"]
        tools = {t["function"]["name"] for t in body.get("tools") or []}
        last = messages[-1]["role"]
        if not tools and "titles" in messages[0]["content"]:
            return self._reply(MockResponse(text='{"title": "Notes"}'), n)
        if "delegate" in tools:  # the orchestrator
            if last == "user":
                return self._reply(MockResponse.call("delegate", {
                    "role": "scribe", "instructions": "Write notes.md saying hello.", "tools": ["write-file"]}), n)
            return self._reply(MockResponse(text=self.answer_text), n)
        if last == "user":  # the sub-agent
            return self._reply(MockResponse.call("write-file", {"path": "notes.md", "content": "hello"}), n)
        if self.hang_sub_answer:
            return MockResponse(text="never finished", hang_after_chunks=1)  # no usage reported
        return self._reply(MockResponse(text="Wrote notes.md."), n)


def total(usages: list[Usage]) -> Usage:
    out = Usage()
    for usage in usages:
        out = out + usage
    return out


def expected_cost(usages: list[Usage]) -> float:
    return sum(compute_cost(u, PRICE) for u in usages)


def settings_for(server: MockOpenAIServer) -> Settings:
    return Settings.model_validate({"model": {"name": MODEL, "base_url": server.base_url, "api_key": "sk-test"}})


def finish_usage(events: list[dict[str, Any]]) -> dict[str, Any]:
    finish = events[-1]
    assert finish["type"] == "run-finish"
    return finish["payload"]["usage"]


async def test_run_finish_usage_is_the_sum_of_the_orchestrator_and_its_sub_agent(
        make_ai: Any, workspace: Path) -> None:
    script = Scripted()
    async with MockOpenAIServer(script) as server:
        from instance_ai_tui.assistant.service import AssistantOptions

        ai = await make_ai(MODEL, settings=settings_for(server), workspace_root=workspace,
                           options=AssistantOptions(generate_titles=True))
        run_id = await ai.send("u", "please write my notes file with a greeting")
        first = await collect(ai, "u", until=("confirmation-request",))
        request = of_type(first, "confirmation-request")[0]
        assert request["payload"]["toolName"] == "write-file"
        # suspended: the tokens so far are kept with the run (a restart would keep them too)
        record = await ai.store.get_run(run_id)
        assert record is not None and usage_from_wire(record.data["usage"]).requests == 2  # orchestrator, scribe
        await answer(ai, request["payload"]["requestId"], {"approved": True})
        events = await collect(ai, "u", after=first[-1]["id"])
    assert (workspace / "notes.md").read_text() == "hello"
    assert of_type(events, "agent-completed")[0]["payload"]["status"] == "completed"
    served = script.served
    assert len(served) == 5  # title, orchestrator x2, scribe x2 (once before and once after the approval)
    usage = finish_usage(events)
    want = total(served)
    assert usage["inputTokens"] == want.input_tokens
    assert usage["outputTokens"] == want.output_tokens
    assert usage["totalTokens"] == want.total_tokens
    assert usage["cachedInputTokens"] == want.cached_input_tokens > 0
    assert usage["reasoningTokens"] == want.reasoning_tokens > 0
    assert usage["requests"] == 5
    assert usage["cost"] == pytest.approx(expected_cost(served), rel=1e-9)
    # the thread's total is the run's (first run)
    thread = await ai.get_thread("u")
    assert thread.metadata["usage"] == {**usage, "runs": 1, "lastRunId": run_id}


async def test_a_cancelled_run_keeps_the_tokens_of_its_stopped_sub_agent(make_ai: Any, workspace: Path) -> None:
    script = Scripted(hang_sub_answer=True)
    async with MockOpenAIServer(script) as server:
        ai = await make_ai(MODEL, settings=settings_for(server), workspace_root=workspace)
        await ai.store.create_thread("c")
        await ai.store.set_setting("thread:c", "always_allow", ["write-file"])  # no approval: straight on
        await ai.send("c", "please write my notes file with a greeting")
        await server.wait_for_requests(3)  # the scribe's second call hangs
        await asyncio.sleep(0.05)  # the scenario: the person cancels while it hangs
        assert await ai.cancel("c")
        events = await collect(ai, "c")
    assert events[-1]["payload"]["status"] == "cancelled"
    assert len(script.served) == 2  # orchestrator, scribe (the hanging call reported nothing)
    usage = finish_usage(events)
    want = total(script.served)
    assert (usage["inputTokens"], usage["outputTokens"], usage["requests"]) == (
        want.input_tokens, want.output_tokens, 2)
    assert usage["cost"] == pytest.approx(expected_cost(script.served), rel=1e-9)
    assert (await ai.get_thread("c")).metadata["usage"]["inputTokens"] == want.input_tokens


async def test_thread_total_over_two_runs_survives_a_restart_and_is_served(
        make_ai: Any, workspace: Path, db_path: Path) -> None:
    script = Scripted()
    async with MockOpenAIServer(script) as server:
        ai = await make_ai(MODEL, settings=settings_for(server), workspace_root=workspace)
        await ai.store.create_thread("t")
        await ai.store.set_setting("thread:t", "always_allow", ["write-file"])
        run_usages = []
        run_ids = []
        after = 0
        for _ in range(2):
            run_ids.append(await ai.send("t", "please write my notes file with a greeting"))
            events = await collect(ai, "t", after=after)
            after = events[-1]["id"]
            assert events[-1]["runId"] == run_ids[-1] and events[-1]["payload"]["status"] == "completed"
            run_usages.append(usage_from_wire(finish_usage(events)))
        assert len(script.served) == 8
        want = total(script.served)
        assert total(run_usages).input_tokens == want.input_tokens  # each run counted its own calls only
        stored = (await ai.get_thread("t")).metadata["usage"]
        assert (stored["inputTokens"], stored["outputTokens"], stored["requests"]) == (
            want.input_tokens, want.output_tokens, 8)
        assert stored["cost"] == pytest.approx(expected_cost(script.served), rel=1e-9)
        assert stored["runs"] == 2 and stored["lastRunId"] == run_ids[1]
        await ai.shutdown()

        # a new process on the same SQLite file: the total is still there, also with the history
        again = await make_ai(MODEL, settings=settings_for(server), workspace_root=workspace, path=db_path)
        assert (await again.get_thread("t")).metadata["usage"] == stored
        history = await again.messages("t")
        assert history.metadata is not None and history.metadata["usage"] == stored
        assert history.to_wire()["metadata"]["usage"] == stored

        # our server's endpoints expose it (threads list and messages), read by RemoteClient
        async with serve_asgi(create_app(again, manage_service=False)) as url:
            async with RemoteClient(url) as remote:
                listed = next(t for t in await remote.list_threads() if t.id == "t")
                assert listed.metadata["usage"] == stored
                assert (await remote.messages("t")).metadata["usage"] == stored
    await again.shutdown()

    # instance-ai export carries the total (JSON and Markdown)
    settings = Settings.model_validate({"db_path": db_path, "model": {"name": "demo"}})
    exported = json.loads(await export_thread(settings, "t", "json"))
    assert exported["usage"]["inputTokens"] == want.input_tokens and exported["usage"]["runs"] == 2
    markdown = await export_thread(settings, "t", "md")
    assert f"{want.input_tokens:,} tokens in · {want.output_tokens:,} out · $" in markdown
    assert "(2 runs)" in markdown


async def test_demo_model_usage_is_estimated_from_the_text(make_ai: Any) -> None:
    """The offline demo reports modest token counts computed from the text (4 characters a
    token), and no cost: it has no price."""
    ai = await make_ai("demo")
    await ai.send("d", "hello there")
    events = await collect(ai, "d")
    usage = finish_usage(events)
    answer_text = "".join(e["payload"]["text"] for e in of_type(events, "text-delta"))
    assert usage["requests"] == 1 and "cost" not in usage
    assert usage["outputTokens"] >= (len(answer_text) + 3) // 4 > 0
    assert 0 < usage["inputTokens"] < 5000
    assert (await ai.get_thread("d")).metadata["usage"]["outputTokens"] == usage["outputTokens"]


async def test_headless_run_notes_the_runs_tokens(make_ai: Any) -> None:
    ai = await make_ai("demo")
    out, err = io.StringIO(), io.StringIO()
    async with EmbeddedClient(ai) as client:
        code = await HeadlessRun(client, "h", "hello there", json_mode=False, policy="none", out=out, err=err).run()
    assert code == 0
    usage = (await ai.get_thread("h")).metadata["usage"]
    assert f"[{usage['inputTokens']:,} tokens in · {usage['outputTokens']:,} out]" in err.getvalue()
    assert "tokens in" not in out.getvalue()  # stdout: the answer only
