"""``--gateway DIR`` / ``--gateway-allow GLOB`` on ``instance-ai run`` and the TUI, against the fake n8n."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.cli import main as cli_main
from instance_ai_tui.client.gateway_flag import GatewayRequest
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.fake_n8n import FakeN8n, GatewayCall, Say
from tests.support.waiting import until

from .conftest import make_client

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "readme.md").write_text("# Project\nDeploys go through the staging pipeline.\n")
    (root / "private").mkdir()
    (root / "private" / "plan.txt").write_text("launch plan: friday at noon\n")
    (tmp_path / "outside.txt").write_text("not shared\n")
    return root


def cli_env(tmp_path: Path, fake: FakeN8n) -> dict[str, str]:
    env = {**os.environ, "N8N_PASSWORD": fake.password, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}
    env.pop("N8N_EMAIL", None)
    return env


async def run_cli(env: dict[str, str], *args: str, timeout: float = 40) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, stdin=asyncio.subprocess.DEVNULL,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def result_text(line: dict[str, Any]) -> str:
    return "\n".join(item["text"] for item in line["payload"]["result"]["content"])


async def test_run_with_gateway_serves_the_agents_file_reads(fake: FakeN8n, shared: Path, tmp_path: Path) -> None:
    fake.script = lambda message: [
        GatewayCall("call_fs_1", "read_file", {"path": "docs/readme.md"}),
        GatewayCall("call_fs_2", "read_file", {"path": "private/plan.txt"}),  # outside the allow-list: asks
        GatewayCall("call_fs_3", "read_file", {"path": "../outside.txt"}),  # outside the folder: refused
        Say("I read the readme and the plan.", "resp-1"),
    ]
    tid = str(uuid.uuid4())
    code, out, err = await run_cli(
        cli_env(tmp_path, fake), "run", "--url", fake.base_url, "--email", fake.email, "--gateway", str(shared),
        "--gateway-allow", "docs/*", "--json", "--approve", "all", "--thread", tid, "summarise my project files")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]  # stdout: protocol events only
    assert lines[0]["type"] == "run-start" and lines[-1]["type"] == "run-finish"
    results = {line["payload"]["toolCallId"]: line for line in lines if line["type"] == "tool-result"}
    assert result_text(results["call_fs_1"]) == "# Project\nDeploys go through the staging pipeline.\n"
    # not in --gateway-allow: n8n asked (resource decision), --approve all allowed it once
    decision = next(line for line in lines if line["type"] == "confirmation-request")
    assert decision["payload"]["inputType"] == "resource-decision"
    assert decision["payload"]["resourceDecision"]["resource"] == "private/plan.txt"
    assert result_text(results["call_fs_2"]) == "launch plan: friday at noon\n"
    refused = results["call_fs_3"]["payload"]["result"]
    assert refused["isError"] is True and "outside the shared folder" in result_text(results["call_fs_3"])
    assert "not shared" not in out
    # the gateway announced the folder, said what it served on stderr, and was disconnected at exit
    init = fake.requests_to("/rest/instance-ai/gateway/init")
    assert len(init) == 1 and init[0].headers["x-gateway-key"].startswith("gw_")  # paired with the session
    assert f"gateway: gateway ready: {shared.resolve()} shared with {fake.base_url}" in err
    assert "gateway: read_file docs/readme.md" in err
    assert len(fake.requests_to("/rest/instance-ai/gateway/disconnect")) == 1
    assert fake.gateway() is None
    assert fake.password not in out + err


async def test_gateway_flag_errors_are_clear(fake: FakeN8n, shared: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "cfg" / "none.toml"))
    cases = [
        (["run", "hello", "--gateway", str(shared)], "it needs --url of an n8n instance"),  # embedded
        (["run", "hello", "--url", fake.base_url, "--dialect", "instance-ai", "--gateway", str(shared)],
         "it needs --url of an n8n instance"),
        (["run", "hello", "--url", fake.base_url, "--email", fake.email, "--gateway", str(tmp_path / "missing")],
         "no such folder"),
        (["run", "hello", "--url", fake.base_url, "--email", fake.email, "--gateway", str(tmp_path / "outside.txt")],
         "not a folder"),
        (["run", "hello", "--url", fake.base_url, "--email", fake.email, "--gateway-allow", "*.md"],
         "--gateway-allow needs --gateway DIR"),
        (["--gateway", str(shared)], "it needs --url of an n8n instance"),  # the TUI, embedded
    ]
    for argv, message in cases:
        assert await asyncio.to_thread(cli_main, argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err, (argv, err)
    assert not fake.requests_to("/rest/login")  # refused before connecting anywhere


async def test_tui_shows_the_gateway_state(fake: FakeN8n, shared: Path, tmp_path: Path) -> None:
    client = make_client(fake, tmp_path / "config")
    app = InstanceAiApp(client, Settings(), gateway=GatewayRequest(shared.resolve(), ("docs/*",)),
                        watch_themes=False, persist_theme=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.gateway_state == "sharing" and fake.gateway() is not None, pilot)
        assert app.boot.booted.gateway is not None
        await until(lambda: "⇄ shared sharing" in app.status_line.plain, pilot)
        state = fake.gateway()
        assert state is not None and state.root_path == str(shared.resolve())
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"})
        assert result["content"][0]["text"].startswith("# Project")
        # n8n ends the session (it does so when it shuts down): the gateway pairs again (issue 13)
        first = fake.gateway()
        fake.send_gateway_disconnect()
        await until(lambda: app.boot.booted.gateway.gateway.repairs == 1 and app.status_info.gateway_state == "sharing", pilot)
        assert app.boot.booted.gateway.gateway.repairs == 1 and app.status_info.gateway_state == "sharing"
        assert len(fake.requests_to("/rest/instance-ai/gateway/create-link")) == 2
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"})
        assert result["content"][0]["text"].startswith("# Project") and first is not None


async def test_tui_gateway_stopped_on_exit(fake: FakeN8n, shared: Path, tmp_path: Path) -> None:
    client = make_client(fake, tmp_path / "config")
    app = InstanceAiApp(client, Settings(), gateway=GatewayRequest(shared.resolve()),
                        watch_themes=False, persist_theme=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: fake.gateway() is not None, pilot)
        assert fake.gateway() is not None
    # quitting the app ends the gateway session on the n8n side
    assert fake.gateway() is None
    assert len(fake.requests_to("/rest/instance-ai/gateway/disconnect")) == 1


@pytest.mark.parametrize(("clean", "stale_500"), [(True, False), (False, False), (False, True)],
                         ids=["clean-stop", "kill-9", "kill-9-n8n-2.35"])
async def test_tui_gateway_pairs_again_after_n8n_restarts(fake: FakeN8n, shared: Path, tmp_path: Path,
                                                          clean: bool, stale_500: bool) -> None:
    """n8n dies (clean: after sending gateway-disconnect; kill -9: without a word), boots (HTML,
    404s) and forgot every gateway key: the next stream gets 403 "Invalid API key" (issue 27: the
    gateway used to end there after a kill -9)."""
    from tests.support.n8n_boot import restart

    fake.gateway_stale_key_500 = stale_500  # n8n 2.35 answers a stale key with a 500 page, not a 403
    client = make_client(fake, tmp_path / "config")
    app = InstanceAiApp(client, Settings(), gateway=GatewayRequest(shared.resolve()),
                        watch_themes=False, persist_theme=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.gateway_state == "sharing" and fake.gateway() is not None, pilot)
        states: list[str] = []
        app.boot.booted.gateway.gateway._set_state = (lambda f: lambda s, d: (states.append(f"{s.value} {d}"), f(s, d)))(
            app.boot.booted.gateway.gateway._set_state)
        await restart(fake, html_answers=1, not_found_seconds=0.5, gateway_disconnect=clean)
        await until(lambda: fake.gateway() is not None and app.status_info.gateway_state == "sharing", pilot)
        assert fake.gateway() is not None and app.status_info.gateway_state == "sharing", (
            states, app.status_info.gateway_state, [(r.method, r.path) for r in fake.requests_to("/rest/instance-ai/gateway")][-8:])
        assert any("pairing again" in s for s in states), states
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"})
        assert result["content"][0]["text"].startswith("# Project")
        assert app.boot.booted.gateway.gateway.repairs >= 1  # once, or twice when a boot-window 404 met the new stream


async def test_a_forbidden_gateway_ends_with_n8ns_words(fake: FakeN8n, shared: Path, tmp_path: Path) -> None:
    """403 "Local gateway is disabled" is not a lost pairing: the gateway stops and says n8n's words."""
    client = make_client(fake, tmp_path / "config")
    app = InstanceAiApp(client, Settings(), gateway=GatewayRequest(shared.resolve()),
                        watch_themes=False, persist_theme=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.gateway_state == "sharing" and fake.gateway() is not None, pilot)
        notices: list[str] = []
        original = app.notify
        app.notify = lambda message, **kw: (notices.append(str(message)), original(message, **kw))[1]  # type: ignore[method-assign]
        fake.gateway_disabled = True
        fake.drop_gateway_stream()
        # the stream's end shows "stopped" first; n8n's words follow once the gateway has closed its
        # stream (a few awaits later: on a busy machine the status line was read in between)
        await until(lambda: any("Local gateway is disabled (HTTP 403)" in n for n in notices), pilot,
                    what="n8n's words told")
        assert app.status_info.gateway_state == "stopped"
        assert app.boot.booted.gateway.gateway.repairs == 0
        assert len(fake.requests_to("/rest/instance-ai/gateway/create-link")) == 1  # never paired again
