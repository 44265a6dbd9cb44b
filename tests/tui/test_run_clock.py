"""The clock on waiting (issue 39.5): a silent stream is not a frozen screen.

A real model server (the repo's OpenAI-wire server through the real ``openai`` client) starts an
answer and then sends nothing: the status line goes from ``⠦ running N s · ~T tokens`` to
``⠦ waiting for the model N s``, counting, instead of a bare ``⠦ running`` (before). The words
themselves are checked on ``RunClock`` with a clock of the test's own and a real conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.protocol.ingest import StreamItem
from instance_ai_tui.tui.run_clock import WAIT_AFTER, RunClock
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import make_app


def ev(kind: str, **payload: Any) -> Any:
    return parse_event({"type": kind, "runId": "r1", "agentId": "a1", "payload": payload})


def test_the_words_count_the_step_the_tokens_and_the_silence() -> None:
    now = [100.0]
    conversation = Conversation("t1")
    clock = RunClock(lambda: conversation, clock=lambda: now[0])
    assert clock() == ""  # nothing runs
    conversation.fold([StreamItem(1, ev("run-start", messageId="m1", userMessage="hello"))])
    assert conversation.is_streaming
    assert clock() == "running 0 s"
    now[0] += 3
    conversation.fold([StreamItem(2, ev("text-delta", text="x" * 400))])
    assert clock() == "running 3 s · ~100 tokens"
    now[0] += WAIT_AFTER + 1
    assert clock() == f"waiting for the model {WAIT_AFTER + 1:.0f} s"
    now[0] += 14
    assert clock() == f"waiting for the model {WAIT_AFTER + 15:.0f} s"
    conversation.fold([StreamItem(3, ev("tool-call", toolCallId="c1", toolName="search-files", args={"q": "x"}))])
    assert clock() == "running search-files 0 s"  # (the status line asks at every frame)
    now[0] += 8
    assert clock() == "running search-files 8 s"  # a tool runs: not the model's silence
    conversation.fold([StreamItem(4, ev("tool-result", toolCallId="c1", result="found"))])
    assert clock() == "running 0 s · ~100 tokens"  # the model's next step
    now[0] += 2
    assert clock() == "running 2 s · ~100 tokens"
    conversation.fold([StreamItem(5, ev("run-finish", status="completed"))])
    assert clock() == ""


def test_compaction_is_said_with_its_clock_until_its_row() -> None:
    """Issue 47: the observer's model call may take minutes on a small local model (tmux against the
    llama.cpp peer: 'waiting for the model 285 s' while the thread was being compacted)."""
    now = [100.0]
    conversation = Conversation("t1")
    clock = RunClock(lambda: conversation, clock=lambda: now[0])
    conversation.fold([StreamItem(1, ev("run-start", messageId="m1", userMessage="hello"))])
    conversation.fold([StreamItem(2, ev("status", message="compacting 12 older messages into notes"))])
    assert clock() == "compacting 12 older messages into notes 0 s"  # (the status line asks at every frame)
    now[0] += 40
    assert clock() == "compacting 12 older messages into notes 40 s"
    conversation.fold([StreamItem(3, ev("status", message="")),
                       StreamItem(4, ev("context-compacted", messages=12, tokensBefore=9000, tokensAfter=3000,
                                        contextWindow=8192, reason="auto"))])
    now[0] += 1
    assert clock() == "running 41 s"


async def test_a_stalled_stream_shows_the_clock_in_the_status_line(tmp_path: Path) -> None:
    async with MockOpenAIServer([MockResponse(text="Let me look at that for you now", hang_after_chunks=3)]) as model:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "sk-test"},
            "db_path": tmp_path / "db.sqlite3"})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(160, 40)) as pilot:
            await app.wait_until_ready()
            app.prompt.load_text("hi")
            await pilot.press("enter")
            await until(lambda: "running" in app.status_line.plain and " s" in app.status_line.plain, pilot, 30,
                        "the clock while the answer starts")
            await until(lambda: "waiting for the model" in app.status_line.plain, pilot, 60, "the silence counted")
            first = app.status_line.plain
            await until(lambda: app.status_line.plain != first and "waiting for the model" in app.status_line.plain,
                        pilot, 30, "the clock moving")
            await pilot.press("escape")
            await until(lambda: not app.conversation.is_streaming, pilot, 30, "the run stopped")
            assert "waiting" not in app.status_line.plain


async def test_a_status_that_comes_with_the_runs_start_is_shown() -> None:
    """A retry's words arrive right after run-start, in the same frame as the new message: the
    status line showed nothing for them (the first frame of a message names no agent); now the
    clock reads them from the run's root agent, and says them once."""
    from .scripts import ev as wire
    from .scripts import recorded, text_deltas

    run = [wire("run-start", messageId="m1"),
           wire("status", message="retrying in 1 s (2/3): HTTP 429: slow down", retry={"attempt": 2}),
           *text_deltas("word " * 2000, size=5)]
    app = make_app(recorded(runs=[run]))
    async with app.run_test(size=(160, 40)) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("hi")
        await pilot.press("enter")
        await until(lambda: "⠀" not in app.status_line.plain and "retrying in 1 s (2/3): HTTP 429: slow down"
                    in app.status_line.plain, pilot, 30, "the retry's words")
        assert app.status_line.plain.count("retrying in") == 1  # in the run state's place, once


def test_a_run_held_by_the_storage_says_so_also_while_cancelling() -> None:
    """Issue 39.1 (lock mid-run): the run's progress waits for the database, not the model; Esc
    pressed meanwhile shows "cancelling" with the same reason, not a bare spinner for a minute."""
    from instance_ai_tui.tui.widgets.status_line import StatusInfo, render_status

    now = [100.0]
    held = [""]
    conversation = Conversation("t1")
    clock = RunClock(lambda: conversation, lambda: held[0], clock=lambda: now[0])
    conversation.fold([StreamItem(1, ev("run-start", messageId="m1", userMessage="hello"))])
    assert clock() == "running 0 s"
    now[0] += WAIT_AFTER + 1
    assert clock() == f"waiting for the model {WAIT_AFTER + 1:.0f} s"
    held[0] = "the database is locked by another program (PID 4242)"
    words = clock()
    assert words == f"waiting for the storage {WAIT_AFTER + 1:.0f} s: the database is locked by another program (PID 4242)"
    running = render_status(StatusInfo(connection="embedded", run_state="running", clock=words)).plain
    assert words in running
    cancelling = render_status(StatusInfo(connection="embedded", run_state="cancelling", clock=words)).plain
    assert f"cancelling, {words}" in cancelling, cancelling
    plain = render_status(StatusInfo(connection="embedded", run_state="cancelling",
                                     clock=f"waiting for the model {WAIT_AFTER + 1:.0f} s")).plain
    assert "cancelling" in plain and "waiting for the model" not in plain  # (as before: the model is stopped)


def test_a_silent_run_while_the_connection_is_down_waits_for_the_server_not_the_model() -> None:
    """Seen by hand (serve killed mid-answer): '● reconnecting (attempt 5…) │ waiting for the model 9 s'
    blamed the model while the server was gone; the connection is what the run waits for then."""
    from instance_ai_tui.tui.widgets.status_line import StatusInfo, render_status

    down = render_status(StatusInfo(connection="reconnecting", connection_detail="(attempt 5, next try in 3s)",
                                    run_state="running", clock="waiting for the model 9 s")).plain
    assert "waiting for the server 9 s" in down and "waiting for the model" not in down, down
    up = render_status(StatusInfo(connection="connected", run_state="running", clock="waiting for the model 9 s")).plain
    assert "waiting for the model 9 s" in up
    busy = render_status(StatusInfo(connection="reconnecting", run_state="running", clock="running 3 s · ~8 tokens")).plain
    assert "running 3 s · ~8 tokens" in busy


def test_the_running_tool_is_named_once() -> None:
    """Seen in tmux (the demo's delegate): '⠧ running delegate 2 s │ Running delegate…': the clock and the
    server's status said the same. The status is left out when the clock says it, and a tool's progress
    keeps only its own words."""
    from instance_ai_tui.tui.widgets.status_line import StatusInfo, render_status

    same = render_status(StatusInfo(run_state="running", clock="running delegate 2 s",
                                    message="Running delegate…")).plain
    assert "running delegate 2 s" in same and "Running delegate" not in same, same
    progress = render_status(StatusInfo(run_state="running", clock="running search-files 4 s",
                                        message="Running search-files… 3 of 10 folders")).plain
    assert "running search-files 4 s  │  3 of 10 folders" in progress and "Running" not in progress, progress
    other = render_status(StatusInfo(run_state="running", clock="waiting for the model 9 s",
                                     message="Running delegate…")).plain
    assert "Running delegate…" in other, other  # (the clock says something else: the status stays)
