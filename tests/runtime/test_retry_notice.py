"""A retried model request is said, not silent (issue 39.5).

The OpenAI-wire test server answers HTTP 429, then HTTP 500, then the answer. Before, the SDK
retried twice with nothing on screen. Now the adapter retries itself and says each retry
(``ModelRetry``: "retrying in 1 s (2/3): HTTP 429: slow down"); it reaches the status line as a
``status`` event (its message, with ``retry`` details) and ``instance-ai run``'s stderr in the same
words; a refusal (HTTP 400) is not retried; the answer's first words clear the notice.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.model import ModelRequest, ModelRetry, ModelTextDelta
from instance_ai_tui.runtime.openai_model import OpenAIModel
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

REPO = Path(__file__).resolve().parents[2]


def flaky() -> list[MockResponse]:
    return [MockResponse(status=429, error="slow down"), MockResponse(status=500, error="oops"),
            MockResponse(text="Here it is.")]


async def test_each_retry_is_a_model_retry_chunk_and_the_answer_follows() -> None:
    async with MockOpenAIServer(flaky()) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", max_retries=2)
        chunks = [chunk async for chunk in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}]))]
        await model.aclose()
    retries = [c for c in chunks if isinstance(c, ModelRetry)]
    assert [(r.attempt, r.attempts, r.reason) for r in retries] == [
        (2, 3, "HTTP 429: slow down"), (3, 3, "HTTP 500: oops")]
    assert [r.delay for r in retries] == [1.0, 2.0]
    assert "".join(c.text for c in chunks if isinstance(c, ModelTextDelta)) == "Here it is."
    assert len(server.requests) == 3


async def test_a_refusal_is_not_retried_and_retries_end() -> None:
    async with MockOpenAIServer([MockResponse(status=400, error="bad request")]) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", max_retries=2)
        chunks: list[object] = []
        try:
            async for chunk in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
                chunks.append(chunk)
        except Exception as exc:  # noqa: BLE001 - the refusal
            assert "HTTP 400: bad request" in str(exc)
        await model.aclose()
    assert not [c for c in chunks if isinstance(c, ModelRetry)] and len(server.requests) == 1
    async with MockOpenAIServer([MockResponse(status=503, error="down")] * 3) as server:
        model = OpenAIModel("m", base_url=server.base_url, api_key="k", max_retries=1)
        chunks = []
        try:
            async for chunk in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
                chunks.append(chunk)
        except Exception as exc:  # noqa: BLE001 - given up after the retries
            assert "HTTP 503: down" in str(exc)
        await model.aclose()
    assert len([c for c in chunks if isinstance(c, ModelRetry)]) == 1 and len(server.requests) == 2


async def test_run_says_each_retry_on_stderr(tmp_path: Path) -> None:
    async with MockOpenAIServer(flaky()) as server:
        environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                   "XDG_DATA_HOME": str(tmp_path / "data"), "OPENAI_BASE_URL": server.base_url,
                   "OPENAI_API_KEY": "x"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "instance_ai_tui", "run", "--model", "mock", "--db", str(tmp_path / "ia.db"), "hi",
            cwd=str(tmp_path), env=environ, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    stderr = err.decode()
    assert proc.returncode == 0, stderr
    assert "instance-ai run: retrying in 1 s (2/3): HTTP 429: slow down" in stderr, stderr
    assert "instance-ai run: retrying in 2 s (3/3): HTTP 500: oops" in stderr, stderr
    assert "Here it is." in out.decode()


async def test_the_status_line_shows_the_retry_then_the_answer_clears_it(tmp_path: Path) -> None:
    from tests.tui.scripts import make_app

    script = [MockResponse(status=429, error="slow down"), MockResponse(text="Here it is.", first_chunk_delay=1.5)]
    async with MockOpenAIServer(script) as server:
        settings = Settings.model_validate({
            "model": {"name": "gpt-test", "base_url": server.base_url, "api_key": "sk-test"},
            "db_path": tmp_path / "db.sqlite3"})
        app = make_app(EmbeddedClient(settings), settings)
        async with app.run_test(size=(160, 40)) as pilot:
            await app.wait_until_ready()
            app.prompt.load_text("hi")
            await pilot.press("enter")
            await until(lambda: "retrying in 1 s (2/3): HTTP 429: slow down" in app.status_line.plain, pilot, 30,
                        "the retry on the status line")
            await until(lambda: not app.conversation.is_streaming, pilot, 30, "the answer")
            assert "retrying" not in app.status_line.plain
            assert "Here it is." in app.conversation.messages[-1].content


async def test_run_says_it_waits_for_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A stream that stalls: 'run' says 'waiting for the model N s' on stderr (the status line's words),
    every WAIT_NOTE_EVERY s (20 s; 1 s here), before its own --timeout ends the run; before, it said
    nothing until its idle note at 30 s. ('run' in this process, as cli.main runs it: 29 s in a
    subprocess waiting for the 20 s note before, some 5 s now.)"""
    from instance_ai_tui.cli import main as cli_main
    from instance_ai_tui.cli import run as run_command

    monkeypatch.setattr(run_command, "WAIT_NOTE_EVERY", 1.0)
    for name, value in {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
                        "INSTANCE_AI_CONFIG": str(tmp_path / "config" / "none.toml"),
                        "OPENAI_API_KEY": "x"}.items():
        monkeypatch.setenv(name, value)
    async with MockOpenAIServer([MockResponse(text="Let me look at that for you", hang_after_chunks=2)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = await asyncio.wait_for(asyncio.to_thread(
            cli_main, ["run", "--model", "mock", "--db", str(tmp_path / "ia.db"), "--timeout", "4", "hi"]), 60)
    stderr = capsys.readouterr().err
    assert code != 0, stderr  # the run's own --timeout ended it
    assert re.search(r"instance-ai run: waiting for the model [1-4] s\n", stderr), stderr
    assert "no event of the run for" not in stderr, stderr
