"""``instance-ai run --url`` without building ``Settings`` (``cli.run.our_server_only``): which
invocations take that path, the precedence of the token, and a server that is not ours (n8n)
still reached through the detection of ``client.factory``; the message sent before the protocol's
models are imported (``cli.run_lean.LeanRun.send``), and what happens when that is refused."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from instance_ai_tui.cli.run import add_arguments, open_run_client, our_server_only
from instance_ai_tui.cli.run_lean import LeanRun
from instance_ai_tui.client.base import ServerUnreachable
from tests.support import free_port
from tests.support.fake_n8n import FakeN8n

ROOT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([*argv, "hello"])


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.toml"
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(path))
    return path


def test_a_url_alone_needs_no_settings_and_the_token_keeps_its_precedence(config: Path) -> None:
    assert our_server_only(parse("--url", "http://h:1"), env={}) == ("http://h:1", None)
    config.write_text('[remote]\ntoken = "from-file"\nurl = "http://other:2"\n[ui]\ntheme = "x"\n', encoding="utf-8")
    assert our_server_only(parse("--url", "http://h:1"), env={}) == ("http://h:1", "from-file")
    assert our_server_only(parse("--url", "http://h:1"), env={"INSTANCE_AI_TOKEN": "env"}) == ("http://h:1", "env")
    assert our_server_only(parse("--url", "http://h:1", "--token", "flag"),
                           env={"INSTANCE_AI_TOKEN": "env"}) == ("http://h:1", "flag")
    assert our_server_only(parse("--url", "http://h:1", "--dialect", "instance-ai"), env={}) == ("http://h:1",
                                                                                                "from-file")


@pytest.mark.parametrize("flags", [(), ("--email", "a@b.c"), ("--dialect", "n8n"), ("--gateway", "."),
                                   ("--model", "demo"), ("--db", "x.sqlite3"), ("--mcp", "x=y")])
def test_everything_else_builds_the_settings(config: Path, flags: tuple[str, ...]) -> None:
    argv = flags if flags else ()
    url = () if not flags else ("--url", "http://h:1")
    assert our_server_only(parse(*url, *argv), env={}) is None


@pytest.mark.parametrize("remote", ['email = "a@b.c"', 'dialect = "n8n"', "token = 5", 'dialect = "odd"'])
def test_a_file_that_names_n8n_or_holds_a_wrong_value_builds_the_settings(config: Path, remote: str) -> None:
    config.write_text(f"[remote]\n{remote}\n", encoding="utf-8")
    assert our_server_only(parse("--url", "http://h:1"), env={}) is None


def test_a_broken_file_builds_the_settings_which_say_why(config: Path) -> None:
    config.write_text("[remote\n", encoding="utf-8")
    assert our_server_only(parse("--url", "http://h:1"), env={}) is None


async def test_a_server_that_is_not_ours_goes_through_the_detection(config: Path) -> None:
    fake = FakeN8n()
    await fake.start()
    try:
        args = parse("--url", fake.base_url)
        lean = our_server_only(args, env={})
        assert lean == (fake.base_url, None)
        with pytest.raises(Exception) as raised:  # detected as n8n, which needs a login the run did not give
            client, _ = await open_run_client(None, args, lean)
            await client.close()
        assert "n8n" in str(raised.value)
        paths = [request.path for request in fake.requests]
        assert paths[:1] == ["/instance-ai/health"] and "/rest/settings" in paths  # ours first, then detected
    finally:
        await fake.stop()


async def test_an_unreachable_url_is_reported_once(config: Path) -> None:
    args = parse("--url", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ServerUnreachable, match="cannot reach"):
        await open_run_client(None, args, our_server_only(args, env={}))


async def test_send_first_creates_sends_and_leaves_servers_not_ours_alone(tmp_path: Path, config: Path) -> None:
    """``LeanRun.send``: on our server the thread is made and the run started before httpx and the
    protocol's models are imported; on n8n (not ours) or a server that wants a token, nothing is sent."""
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.server.app import create_app

    from .conftest import demo_settings

    def send_first(url: str, token: str | None, message: str):  # type: ignore[no-untyped-def]
        return LeanRun(url, token, json_mode=True).send(message)

    service = build_service(demo_settings(tmp_path))
    async with serve_app(create_app(service)) as url:
        sent = await send_first(url + "/instance-ai/", None, "list my workflows")
        assert sent is not None and sent.run_id is not None
        assert [t.id for t in await service.list_threads()] == [sent.thread_id]
        refused = await send_first(url, None, "   ")  # the server refuses an empty message: not sent
        assert refused is not None and refused.run_id is None
    (tmp_path / "guarded").mkdir()
    guarded = build_service(demo_settings(tmp_path / "guarded"))
    async with serve_app(create_app(guarded, token="sekrit")) as url:
        assert await send_first(url, None, "hello") is None
        assert await guarded.list_threads() == []
    fake = FakeN8n()
    await fake.start()
    try:
        assert await send_first(fake.base_url, None, "hello") is None
        assert [request.path for request in fake.requests] == ["/instance-ai/health"]
    finally:
        await fake.stop()


async def test_a_refused_send_is_reported_by_the_usual_path(tmp_path: Path) -> None:
    from server.live import serve_app

    from instance_ai_tui.assistant.factory import build_service
    from instance_ai_tui.server.app import create_app

    from .conftest import demo_settings

    env = {**os.environ, "INSTANCE_AI_CONFIG": str(tmp_path / "none.toml"), "PYTHONPATH": str(ROOT)}
    env.pop("INSTANCE_AI_TOKEN", None)
    service = build_service(demo_settings(tmp_path))
    async with serve_app(create_app(service)) as url:
        result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "instance_ai_tui", "run", "--url", url,
                                                          "   "], capture_output=True, text=True, cwd=tmp_path,
                                         timeout=120, env=env, stdin=subprocess.DEVNULL)
        threads = await service.list_threads()
    assert result.returncode == 1 and "must not be empty" in result.stderr, result.stderr
    assert len(threads) == 1  # the thread send_first made, used again: no second one
