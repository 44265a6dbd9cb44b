"""The local gateway against the fake n8n's gateway routes (reference §7)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.gateway import CONFIRMATION_PREFIX, FolderTools, LocalGateway, Policy
from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.protocol.api import ResourceDecisionConfirm
from tests.support.fake_n8n import FakeN8n, GatewayCall, Say
from tests.support.waiting import until

from .test_n8n_dialect import Stream, is_type

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "readme.md").write_text("# Project\nThe deploy key lives in vault.\n")
    (root / "notes.txt").write_text("line one\nline two\nline three\n")
    (root / "private").mkdir()
    (root / "private" / "plan.txt").write_text("secret plan: deploy on friday\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    outside = tmp_path / "outside.txt"
    outside.write_text("deploy credentials outside the folder\n")
    (root / "escape.txt").symlink_to(outside)
    (root / "escape-dir").symlink_to(tmp_path)
    (root / "inner-link.md").symlink_to(root / "docs" / "readme.md")
    return root


@pytest.fixture
async def gateway(fake: FakeN8n, client: N8nClient, shared: Path) -> AsyncIterator[LocalGateway]:
    gw = await client.start_gateway(shared, allow=["docs/*", "notes.txt", "inner-link.md"], initial_backoff=0.05,
                                    max_backoff=0.2, keepalive_timeout=5.0)
    try:
        yield gw
    finally:
        await gw.stop()


def text_of(result: dict) -> str:
    return "\n".join(item["text"] for item in result["content"])


async def test_pairing_init_and_a_tool_call_round_trip(fake: FakeN8n, gateway: LocalGateway, shared: Path) -> None:
    init = fake.requests_to("/rest/instance-ai/gateway/init")
    assert len(init) == 1 and init[0].headers["x-gateway-key"].startswith("gw_")
    state = fake.gateway()
    assert state is not None and state.root_path == str(shared.resolve())
    tools = {t["name"]: t for t in state.tools}
    assert set(tools) == {"read_file", "list_files", "search_files"}
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert tool["annotations"]["readOnlyHint"] is True and tool["annotations"]["destructiveHint"] is False
    assert tools["read_file"]["inputSchema"]["required"] == ["path"]

    result = await fake.gateway_call("read_file", {"path": "notes.txt", "startLine": 2, "maxLines": 1})
    assert result == {"content": [{"type": "text", "text": "line two\n"}]}
    listing = text_of(await fake.gateway_call("list_files", {}))
    assert "docs/" in listing and "notes.txt (" in listing and "inner-link.md" in listing
    events = fake.requests_to("/rest/instance-ai/gateway/events")
    assert events and all(r.headers["x-gateway-key"].startswith("sess_") for r in events)
    responses = fake.requests_to("/rest/instance-ai/gateway/response/")
    assert len(responses) == 2
    await until(lambda: gateway.handled == 2)  # the answer's HTTP response reaches the gateway just after n8n has it
    assert gateway.handled == 2

    # the pairing token was exchanged for the session key: it no longer works
    async with httpx.AsyncClient() as http:
        again = await http.post(fake.base_url + "/rest/instance-ai/gateway/init",
                                headers={"X-Gateway-Key": init[0].headers["x-gateway-key"]},
                                json={"rootPath": "/", "tools": []})
    assert again.status_code == 403 and again.json()["message"] == "Invalid API key"  # as n8n 2.41.1


async def test_paths_outside_the_folder_are_refused(fake: FakeN8n, gateway: LocalGateway, tmp_path: Path) -> None:
    for path in ["../outside.txt", str(tmp_path / "outside.txt"), "escape.txt", "escape-dir/outside.txt",
                 "docs/../../outside.txt"]:
        result = await fake.gateway_call("read_file", {"path": path})
        assert result.get("isError") is True, path
        assert "outside the shared folder" in text_of(result), path
    refused_list = await fake.gateway_call("list_files", {"path": ".."})
    assert refused_list.get("isError") and "outside" in text_of(refused_list)
    listing = text_of(await fake.gateway_call("list_files", {"recursive": True}))
    assert "escape" not in listing and "outside.txt" not in listing
    found = text_of(await fake.gateway_call("search_files", {"query": "deploy"}))
    assert "docs/readme.md:2:" in found and "credentials outside the folder" not in found
    assert "2 files outside the allow-list were not searched" in found  # private/plan.txt, blob.bin
    inner = await fake.gateway_call("read_file", {"path": "inner-link.md"})
    assert text_of(inner).startswith("# Project")


async def test_resource_decision_round_trip_through_the_agent(
    fake: FakeN8n, client: N8nClient, gateway: LocalGateway
) -> None:
    fake.script = lambda message: [
        GatewayCall("call_fs_1", "read_file", {"path": "private/plan.txt"}),
        Say("Read it.", "resp-1"),
    ]
    tid = str(uuid.uuid4())
    decisions = iter(["denyOnce", "allowForSession"])
    outcomes = []
    async with Stream(client, tid) as stream:
        for _ in range(2):
            seen = len(stream.items)
            await client.send(tid, "read my plan")
            request = await stream.until(lambda i, seen=seen: stream.items.index(i) >= seen and is_type("confirmation-request")(i))
            payload = request.event.payload  # type: ignore[union-attr]
            assert payload.input_type == "resource-decision"
            assert payload.resource_decision.resource == "private/plan.txt"
            assert payload.resource_decision.options == ["denyOnce", "allowOnce", "allowForSession"]
            assert payload.resource_decision.tool_group == "filesystemRead"
            await client.confirm(payload.request_id, ResourceDecisionConfirm(resource_decision=next(decisions)))
            result = await stream.until(lambda i, seen=seen: stream.items.index(i) > seen and is_type("tool-result")(i))
            outcomes.append(result.event.payload.result)  # type: ignore[union-attr]
            await stream.until(lambda i, seen=seen: stream.items.index(i) > seen and is_type("run-finish")(i))
        # allowed for the session: a third read needs no decision
        seen = len(stream.items)
        await client.send(tid, "read it again")
        result = await stream.until(lambda i, seen=seen: stream.items.index(i) > seen and is_type("tool-result")(i))
        assert not any(is_type("confirmation-request")(i) for i in stream.items[seen:])
    denied, allowed = outcomes
    assert denied["isError"] is True and "User denied access to private/plan.txt" in text_of(denied)
    assert text_of(allowed) == "secret plan: deploy on friday\n"
    assert text_of(result.event.payload.result) == "secret plan: deploy on friday\n"  # type: ignore[union-attr]
    retries = [r for r in fake.requests_to("/rest/instance-ai/confirm/")]
    assert len(retries) == 2


async def test_the_gateway_reconnects_and_reinitializes(fake: FakeN8n, gateway: LocalGateway) -> None:
    fake.drop_gateway_stream()
    result = await fake.gateway_call("read_file", {"path": "notes.txt"}, timeout=5)
    assert text_of(result).startswith("line one")
    fake.forget_gateway()  # n8n's grace timer fired: the next stream gets 403 "not initialized"
    await until(lambda: fake.gateway() is not None)
    result = await fake.gateway_call("list_files", {"path": "docs"}, timeout=5)
    assert "docs/readme.md" in text_of(result)
    inits = fake.requests_to("/rest/instance-ai/gateway/init")
    assert len(inits) == 2 and inits[1].headers["x-gateway-key"].startswith("sess_")
    assert len(fake.requests_to("/rest/instance-ai/gateway/events")) >= 3


async def test_gateway_disconnect_ends_the_session(fake: FakeN8n, gateway: LocalGateway) -> None:
    fake.send_gateway_disconnect()
    await asyncio.wait_for(gateway.wait(), 5)
    assert gateway.ended_by_server


async def test_a_static_key_and_a_refused_key(fake: FakeN8n, shared: Path) -> None:
    fake.gateway_static_key = "static-key-123"
    gw = LocalGateway(fake.base_url, shared, key="static-key-123", initial_backoff=0.05)
    await gw.start()
    try:
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"}, owner="env-gateway", timeout=5)
        assert text_of(result).startswith("# Project")
    finally:
        await gw.stop()
    assert fake.requests_to("/rest/instance-ai/gateway/disconnect")
    refused = LocalGateway(fake.base_url, shared, key="wrong")
    with pytest.raises(ClientError, match="refused the local gateway"):
        await refused.start()
    await refused.stop(disconnect=False)


async def test_folder_tools_policy_and_errors(shared: Path) -> None:
    tools = FolderTools(shared, Policy(confirm_reads_over=10))
    first = await tools.call("read_file", {"path": "notes.txt"})
    assert first["isError"] is True
    text = text_of(first)
    assert text.startswith(CONFIRMATION_PREFIX)
    request = json.loads(text[len(CONFIRMATION_PREFIX):])
    assert request["resource"] == "notes.txt" and "large" in request["description"]
    once = await tools.call("read_file", {"path": "notes.txt", "_confirmation": "allowOnce"})
    assert text_of(once) == "line one\nline two\nline three\n"
    assert text_of(await tools.call("read_file", {"path": "notes.txt"})).startswith(CONFIRMATION_PREFIX)
    bad = await tools.call("read_file", {"path": "notes.txt", "_confirmation": "always"})
    assert bad["isError"] and "unknown _confirmation" in text_of(bad)

    open_tools = FolderTools(shared)
    binary = await open_tools.call("read_file", {"path": "blob.bin"})
    assert binary["isError"] and "binary" in text_of(binary)
    missing = await open_tools.call("read_file", {"path": "nope.txt"})
    assert missing["isError"] and "no such file" in text_of(missing)
    unknown = await open_tools.call("write_file", {"path": "x"})
    assert unknown["isError"] and "unknown tool" in text_of(unknown)
    bad_regex = await open_tools.call("search_files", {"query": "(", "regex": True})
    assert bad_regex["isError"] and "invalid regular expression" in text_of(bad_regex)
    bad_arg = await open_tools.call("read_file", {"path": "notes.txt", "maxLines": 0})
    assert bad_arg["isError"] and "maxLines" in text_of(bad_arg)
    regex = await open_tools.call("search_files", {"query": r"LINE t\w+", "regex": True, "glob": "*.txt"})
    assert text_of(regex) == "notes.txt:2: line two\nnotes.txt:3: line three"
    exact = await open_tools.call("search_files", {"query": "LINE", "caseSensitive": True})
    assert text_of(exact) == "no matches for 'LINE'"


async def test_the_gateway_command_serves_until_n8n_disconnects(
    fake: FakeN8n, client: N8nClient, shared: Path
) -> None:
    await client.open()
    async with httpx.AsyncClient() as http:
        link = await http.post(fake.base_url + "/rest/instance-ai/gateway/create-link", headers=client.session.headers())
    token = link.json()["data"]["token"]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui.cli.gateway", "--url", fake.base_url, "--key", token,
        "--dir", str(shared), "--allow", "docs/*",
        cwd=str(Path(__file__).resolve().parents[2]), stderr=asyncio.subprocess.PIPE,
    )
    try:
        await until(lambda: fake.gateway() is not None and fake.gateway().streams)
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"}, timeout=10)
        assert text_of(result).startswith("# Project")
        asked = await fake.gateway_call("read_file", {"path": "notes.txt"}, timeout=10)
        assert text_of(asked).startswith(CONFIRMATION_PREFIX)
        fake.send_gateway_disconnect()
        assert await asyncio.wait_for(process.wait(), 15) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.stderr is not None
    log = (await process.stderr.read()).decode()
    assert "gateway ready" in log and "read_file docs/readme.md" in log and "ended the gateway session" in log


async def test_the_gateway_command_logged_in_pairs_again_after_a_kill(
    fake: FakeN8n, shared: Path, tmp_path: Path
) -> None:
    """``--email``: after n8n is killed and started again (no gateway-disconnect, keys forgotten) the
    command pairs again by itself and serves the next request (issue 27)."""
    from tests.support.n8n_boot import restart

    env = {**os.environ, "N8N_PASSWORD": fake.password, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui.cli.gateway", "--url", fake.base_url, "--email", fake.email,
        "--dir", str(shared), stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL, env=env)
    try:
        await until(lambda: fake.gateway() is not None and fake.gateway().streams)
        await restart(fake, html_answers=1, not_found_seconds=0.3, gateway_disconnect=False)
        await until(lambda: fake.gateway() is not None and fake.gateway().streams)
        result = await fake.gateway_call("read_file", {"path": "docs/readme.md"}, timeout=10)
        assert text_of(result).startswith("# Project")
        assert process.returncode is None  # still serving
    finally:
        process.terminate()
        await process.wait()
    assert process.stderr is not None
    log = (await process.stderr.read()).decode()
    assert "pairing again" in log and "paired again with n8n (n8n restarted)" in log, log
