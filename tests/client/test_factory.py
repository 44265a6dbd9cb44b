"""``client.factory``: flags -> settings -> the right client; dialect detection."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from instance_ai_tui.cli.connection import add_connection_arguments, settings_from_args
from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.client.factory import build_client, detect_dialect
from instance_ai_tui.client.remote import RemoteClient

from .raw_servers import HEALTH, RawRequest, RawServer, json_response


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_connection_arguments(parser)
    return parser.parse_args(list(argv))


def test_flags_choose_the_client(tmp_path: Path) -> None:
    empty = tmp_path / "none.toml"
    env = {"INSTANCE_AI_CONFIG": str(empty)}
    settings = settings_from_args(parse("--db", str(tmp_path / "x.db"), "--model", "demo"), env=env)
    assert settings.db_path == tmp_path / "x.db" and settings.model.name == "demo"
    assert isinstance(build_client(settings), EmbeddedClient)

    settings = settings_from_args(parse("--url", "http://127.0.0.1:5680/instance-ai/"), env={**env, "INSTANCE_AI_TOKEN": "Zq9secret"})
    remote = build_client(settings)
    assert isinstance(remote, RemoteClient) and remote.base_url == "http://127.0.0.1:5680"
    assert settings.remote.token is not None and settings.remote.token.get_secret_value() == "Zq9secret"
    assert "Zq9secret" not in repr(remote)

    n8n = build_client(settings_from_args(parse("--url", "http://127.0.0.1:5678", "--email", "a@b.c"), env=env))
    assert type(n8n).__name__ == "N8nClient" and n8n.mode == "n8n"
    forced = build_client(settings_from_args(parse("--url", "http://h:1", "--dialect", "n8n"), env=env))
    assert forced.mode == "n8n"


async def test_detect_dialect() -> None:
    async def handler(request: RawRequest) -> AsyncIterator[bytes]:
        if request.path == "/instance-ai/health" and kind == "ours":
            yield HEALTH
        elif request.path == "/rest/settings" and kind == "n8n":
            yield json_response(200, {"data": {"versionCli": "2.41.1"}})
        else:
            yield json_response(404, {"message": "nope"})

    async with RawServer(handler) as server:
        kind = "ours"
        assert await detect_dialect(server.url) == "instance-ai"
        kind = "n8n"
        assert await detect_dialect(server.url + "/") == "n8n"
        kind = "other"
        with pytest.raises(ClientError, match="neither an Instance AI server"):
            await detect_dialect(server.url)
