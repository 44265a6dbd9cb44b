"""/compact through ``instance-ai serve`` (issue 47 item 4): the server compacts; a ``RemoteClient``
asks for it and reads the ``context-compacted`` row and the run's new context size from the stream."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.client.base import RunActiveError
from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from instance_ai_tui.server.app import create_app
from tests.support.openai_server import MockOpenAIServer, MockResponse

from .live import serve_app


def _answers(release: asyncio.Event) -> Any:
    async def answer(body: dict[str, Any]) -> MockResponse:
        if str(body["messages"][0].get("content") or "").startswith(OBSERVER_INSTRUCTIONS[:40]):
            await release.wait()  # the compaction is under way until the test lets its observer answer
            return MockResponse(text="## The user wants\n- logs kept")
        return MockResponse(text="Got it.")

    return answer


async def _until_finish(client: RemoteClient, thread: str, run_id: str) -> list[Any]:
    seen: list[Any] = []
    async for item in client.events(thread):
        event = item.event
        seen.append(event)
        if event.type == "run-finish" and event.run_id == run_id:
            return seen
    return seen


def _serve_on(model_server: MockOpenAIServer, tmp_path: Path) -> Any:
    """``serve``'s app on the mock model server ``local-model`` (a 32 k window), its SQLite in ``tmp_path``."""
    settings = Settings(db_path=tmp_path / "serve.sqlite3", model=ModelSettings(
        name="local-model", base_url=model_server.base_url, api_key="sk-test",
        context_windows={"local-model": 32_000}))
    return create_app(build_service(settings, generate_titles=False))


async def test_a_remote_client_compacts_a_thread_of_the_server(tmp_path: Path) -> None:
    release = asyncio.Event()
    async with MockOpenAIServer(_answers(release), context_window=32_000) as model_server:
        app = _serve_on(model_server, tmp_path)
        async with serve_app(app) as url:
            client = RemoteClient(url)
            try:
                assert client.can_compact
                await client.create_thread("r1")
                for index in range(2):
                    run_id = await client.send("r1", f"log {index}: " + "a long log line " * 500)
                    await asyncio.wait_for(_until_finish(client, "r1", run_id), 60)
                run_id = await client.compact("r1", "the log numbers")
                with pytest.raises(RunActiveError):
                    await client.compact("r1")  # one run per thread: the compaction is one
                release.set()
                events = await asyncio.wait_for(_until_finish(client, "r1", run_id), 60)
            finally:
                await client.close()
    mine = [e for e in events if e.run_id == run_id]
    assert [e.type for e in mine] == ["run-start", "status", "status", "context-compacted", "run-finish"]
    assert mine[1].payload.message.startswith("compacting ") and mine[2].payload.message == ""  # said while it runs
    row = mine[3].payload
    assert row.reason == "manual" and row.messages == 4 and row.tokens_after < row.tokens_before
    usage = (mine[-1].payload.model_extra or {})["usage"]
    assert usage["contextTokens"] == row.tokens_after and usage["contextWindow"] == 32_000


async def test_a_remote_compact_that_gains_nothing_says_so_and_keeps_the_context(tmp_path: Path) -> None:
    """Notes longer than the thread's two messages: the server keeps the messages, the row says there was
    nothing to gain, and the run's context size is the same as before."""
    async def answer(body: dict[str, Any]) -> MockResponse:
        if str(body["messages"][0].get("content") or "").startswith(OBSERVER_INSTRUCTIONS[:40]):
            return MockResponse(text="## The user wants\n" + "- a greeting, and a polite one at that\n" * 40)
        return MockResponse(text="Hi.")

    async with MockOpenAIServer(answer, context_window=32_000) as model_server:
        app = _serve_on(model_server, tmp_path)
        async with serve_app(app) as url:
            client = RemoteClient(url)
            try:
                await client.create_thread("r1")
                run_id = await client.send("r1", "hello")
                await asyncio.wait_for(_until_finish(client, "r1", run_id), 60)
                run_id = await client.compact("r1")
                events = await asyncio.wait_for(_until_finish(client, "r1", run_id), 60)
            finally:
                await client.close()
    row = next(e for e in events if e.run_id == run_id and e.type == "context-compacted").payload
    assert row.kept and row.messages == 2 and row.tokens_after == row.tokens_before
    share = f"{round(100 * row.tokens_after / 32_000)}% of 32k"
    assert row.words() == f"nothing to gain: these 2 messages are already shorter than notes about them (context {share})"
    usage = (events[-1].payload.model_extra or {})["usage"]
    assert usage["contextTokens"] == row.tokens_after
