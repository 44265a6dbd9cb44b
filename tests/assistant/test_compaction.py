"""Compaction in the assistant (issue 47 item 4): a ``context-compacted`` event in the thread's stream
(live and in the stored tree, so every client draws the same row), ``compact`` as a run of its own
whose ``run-finish`` carries the context's new size, the same through ``instance-ai serve``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.errors import RunActive
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.events import ContextCompactedPayload
from instance_ai_tui.runtime.compaction import OBSERVER_INSTRUCTIONS
from tests.assistant.conftest import collect, of_type
from tests.support.openai_server import MockOpenAIServer, MockResponse

MODEL = "mock-model"


def respond(body: dict[str, Any]) -> MockResponse:
    messages = body["messages"]
    first = str(messages[0].get("content") or "")
    if first.startswith(OBSERVER_INSTRUCTIONS[:40]):
        return MockResponse(text="## The user wants\n- notes about their files")
    if "titles" in first:
        return MockResponse(text='{"title": "Files"}')
    last = messages[-1]
    if last.get("role") == "tool":
        return MockResponse(text="Read it.")
    asked = re.search(r"read (\S+)", str(last.get("content") or ""))
    if asked:
        return MockResponse.call("read-file", {"path": asked.group(1)})
    return MockResponse(text="Ok.")


def settings_for(server: MockOpenAIServer, window: int) -> Settings:
    return Settings.model_validate({"model": {"name": MODEL, "base_url": server.base_url, "api_key": "sk-test",
                                              "context_windows": {MODEL: window}}})


@pytest.fixture
def big_workspace(workspace: Path) -> Path:
    for index in range(12):
        (workspace / f"notes{index}.md").write_text(f"# Notes {index}\n" + "A long line of notes.\n" * 900,
                                                      encoding="utf-8")
    return workspace


async def test_a_long_thread_compacts_itself_and_says_so_in_its_stream(make_ai: Any, big_workspace: Path) -> None:
    async with MockOpenAIServer(respond, context_window=16_384) as server:
        ai = await make_ai(MODEL, settings=settings_for(server, 16_384), workspace_root=big_workspace)
        events: list[dict[str, Any]] = []
        after = 0
        for index in range(12):
            await ai.send("t", f"read notes{index}.md")
            got = await collect(ai, "t", after=after, timeout=60)
            after = got[-1]["id"]
            events += got
            assert got[-1]["payload"]["status"] == "completed", got[-1]
        assert server.refused == 0
        rows = of_type(events, "context-compacted")
        assert rows, "no compaction in 12 turns of 20 k characters each in a 16 k window"
        payload = ContextCompactedPayload.model_validate(rows[0]["payload"])
        assert payload.reason == "auto" and payload.tokens_after < payload.tokens_before
        assert payload.context_window == 16_384 and payload.messages > 0
        assert payload.words().startswith("context compacted: ")
        # the observer's call is said while it runs, and the words go with the row
        for row in rows:
            at = events.index(row)
            said = [e["payload"].get("message") for e in of_type(events[:at], "status")]
            count = ContextCompactedPayload.model_validate(row["payload"]).messages
            assert said[-2] == f"compacting {count} older message{'s' if count != 1 else ''} into notes", said
            assert events[at - 1]["type"] == "status" and events[at - 1]["payload"].get("message") == ""
        # the stored tree has the same row where it happened (restored threads draw it too)
        history = await ai.messages("t")
        timelines = [m.agent_tree.timeline for m in history.messages if m.agent_tree is not None]
        stored = [e for line in timelines for e in line if getattr(e, "type", None) == "context-compacted"]
        assert len(stored) == len(rows)


async def test_compact_is_a_run_that_lowers_the_context_share(make_ai: Any, big_workspace: Path) -> None:
    async with MockOpenAIServer(respond, context_window=64_000) as server:
        ai = await make_ai(MODEL, settings=settings_for(server, 64_000), workspace_root=big_workspace)
        after = 0
        for index in range(3):
            await ai.send("t", f"read notes{index}.md")
            got = await collect(ai, "t", after=after, timeout=60)
            after = got[-1]["id"]
        before_tokens = got[-1]["payload"]["usage"]["contextTokens"]
        run_id = await ai.compact("t", "the file names")
        with pytest.raises(RunActive):
            await ai.send("t", "read notes9.md")  # one run at a time: the compaction is one
        got = await collect(ai, "t", after=after, timeout=60)
        assert [e["type"] for e in got] == ["run-start", "status", "status", "context-compacted", "run-finish"]
        assert [e["payload"]["message"] for e in got[1:3]] == ["compacting the thread's context into notes", ""]
        got = [e for e in got if e["type"] != "status"]
        assert got[0]["runId"] == run_id and got[0]["payload"]["userMessage"] == "/compact the file names"
        row = ContextCompactedPayload.model_validate(got[1]["payload"])
        assert row.reason == "manual" and row.messages == 12
        finish = got[-1]["payload"]
        assert finish["status"] == "completed"
        assert finish["usage"]["contextTokens"] == row.tokens_after < before_tokens / 3
        observer = [r for r in server.requests if str(r.body["messages"][0]["content"]).startswith(
            OBSERVER_INSTRUCTIONS[:40])]
        assert "the file names" in observer[-1].body["messages"][0]["content"]
        # the thread goes on, from its notes
        await ai.send("t", "read notes5.md")
        got = await collect(ai, "t", after=got[-1]["id"], timeout=60)
        assert got[-1]["payload"]["status"] == "completed"
        last = server.requests[-1].body["messages"]
        assert "<observations>" in last[0]["content"] and "notes0.md" in last[0]["content"]


async def test_compacting_an_empty_thread_says_there_is_nothing(make_ai: Any) -> None:
    async with MockOpenAIServer(respond) as server:
        ai = await make_ai(MODEL, settings=settings_for(server, 8_192))
        await ai.create_thread("e")
        await ai.compact("e")
        got = await collect(ai, "e", timeout=30)
    got = [e for e in got if e["type"] != "status"]
    assert [e["type"] for e in got] == ["run-start", "text-block", "run-finish"]
    assert "Nothing to compact" in got[1]["payload"]["text"]


async def test_headless_run_says_the_compaction_in_the_same_words(tmp_path: Path) -> None:
    """``instance-ai run`` on one thread, three long messages in an 8 k window: the compaction reaches
    its stderr as the TUI's row reads ("⟲ context compacted: …"), and every run completes."""
    import asyncio
    import os
    import sys

    repo = Path(__file__).resolve().parents[2]
    async with MockOpenAIServer(respond, context_window=8_192) as server:
        environ = {**os.environ, "PYTHONPATH": str(repo), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                   "XDG_DATA_HOME": str(tmp_path / "data"), "OPENAI_BASE_URL": server.base_url,
                   "OPENAI_API_KEY": "x"}
        config = tmp_path / "config" / "instance-ai"
        config.mkdir(parents=True)
        (config / "config.toml").write_text(f'[model.context_windows]\n"{MODEL}" = 8192\n', encoding="utf-8")
        environ["INSTANCE_AI_CONFIG"] = str(config / "config.toml")
        errs: list[str] = []
        for index in range(3):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "instance_ai_tui", "run", "--model", MODEL, "--db", str(tmp_path / "ia.db"),
                "--thread", "h1", f"log {index}: " + "a long log line " * 800, cwd=str(tmp_path), env=environ,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            _, err = await asyncio.wait_for(proc.communicate(), timeout=180)
            assert proc.returncode == 0, err.decode()
            errs.append(err.decode())
    assert server.refused == 0
    lines = [line for text in errs for line in text.splitlines() if line.startswith("⟲ context compacted: ")]
    assert lines and "of 8.2k)" in lines[0], errs
    # (each 12.8 k-character message is more than half of what an 8 k window leaves: cut, and said so)
    cut = [line for text in errs for line in text.splitlines() if line.startswith("⟲ context full: your message")]
    assert cut and "of its 12,807 characters" in cut[0], errs


async def test_a_server_that_reports_no_usage_still_gets_a_context_share(make_ai: Any, big_workspace: Path) -> None:
    """llama-cpp-python's server streams no ``usage`` (not even when asked): the context share is then the
    runtime's own estimate of the request, so the status line shows how full the window is and
    ``/compact`` lowers it, as with a server that counts."""
    async with MockOpenAIServer(respond, context_window=64_000, stream_usage=False) as server:
        ai = await make_ai(MODEL, settings=settings_for(server, 64_000), workspace_root=big_workspace)
        after = 0
        for index in range(3):
            await ai.send("t", f"read notes{index}.md")
            got = await collect(ai, "t", after=after, timeout=60)
            after = got[-1]["id"]
        usage = got[-1]["payload"]["usage"]
        assert usage["contextWindow"] == 64_000
        assert 2_000 < usage["contextTokens"] < 64_000  # (three files of ~20 k characters, older ones stubbed)
        await ai.compact("t")
        got = await collect(ai, "t", after=after, timeout=60)
        assert got[-1]["payload"]["usage"]["contextTokens"] < usage["contextTokens"] / 3


async def test_a_message_cut_to_fit_is_said_to_the_person(make_ai: Any) -> None:
    """A paste bigger than the window (tmux against llama.cpp at 2 k: the retry after compaction sent 566
    tokens of a ~1,000-token paste, and nobody was told): the model gets its head and tail, the person a
    row that says so, and the thread keeps the message whole."""
    paste = "Here is my log:\n" + "".join(f"12:00:{i % 60:02d} GET /webhook/{i} 200\n" for i in range(1_200))
    async with MockOpenAIServer(respond, context_window=4_096) as server:
        ai = await make_ai(MODEL, settings=settings_for(server, 4_096))
        await ai.send("t", paste)
        got = await collect(ai, "t", timeout=60)
        assert got[-1]["payload"]["status"] == "completed", got[-1]
        rows = of_type(got, "context-compacted")
        assert len(rows) == 1, rows
        row = ContextCompactedPayload.model_validate(rows[0]["payload"])
        assert row.reason == "cut" and row.written_chars == len(paste) and 0 < row.sent_chars < len(paste) / 2
        assert row.words().startswith(f"context full: your message was cut to {row.sent_chars:,} of its "
                                      f"{len(paste):,} characters to fit the model's 4.1k context")
        sent = server.requests[-1].body["messages"][-1]["content"]
        assert "characters cut here to fit the model's context" in sent and sent.startswith("Here is my log:")
        history = await ai.messages("t")
        assert [m.content for m in history.messages if m.role == "user"] == [paste]
    assert server.refused == 0
