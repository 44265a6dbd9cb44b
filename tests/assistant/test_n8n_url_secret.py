"""Issue 15 item 11: a password inside N8N_URL reached httpx's log and the model's tool descriptions."""

from __future__ import annotations

import asyncio
import base64
import json
import logging

import pytest

from instance_ai_tui.assistant.n8n_client import N8nPublicApi


async def test_password_in_n8n_url_travels_as_basic_auth_only(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[dict[str, str]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        seen.append({k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
                    | {"request-line": head[0]})
        body = json.dumps({"data": [], "nextCursor": None}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                     + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    caplog.set_level(logging.DEBUG)
    api = N8nPublicApi(f"http://admin:p%40ss-w0rd@127.0.0.1:{port}", "api-key")
    try:
        for text in (api.base, api.label, repr(api)):
            assert "p@ss-w0rd" not in text and "p%40ss" not in text and "admin" not in text
        await api.list_workflows()
    finally:
        await api.aclose()
        server.close()
    assert seen and seen[0]["authorization"] == "Basic " + base64.b64encode(b"admin:p@ss-w0rd").decode()
    assert seen[0]["x-n8n-api-key"] == "api-key"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "127.0.0.1" in logged  # httpx did log the request ...
    assert "p%40ss" not in logged and "p@ss-w0rd" not in logged  # ... without the password
