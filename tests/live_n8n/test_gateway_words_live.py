"""Live: the words of the local gateway's calls as a real n8n 2.41.1 reports them (issue 42.7):
``read_file`` reads as the file it read (its lines), not as n8n's wrapper ("1 value")."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.gateway_flag import GatewayRequest
from instance_ai_tui.tui.widgets.tool_card import result_summary
from tests.support.waiting import until

from .driving import SIZE, app_on_new_thread, send, thread_open
from .test_gateway_live import script

pytestmark = pytest.mark.timeout(400)


def read_call(app: Any) -> Any:
    for msg in app.conversation.messages:
        if msg.reducer is not None:
            for call in msg.reducer.tree().tool_calls:
                if call.tool_name == "read_file" and not call.is_loading:
                    return call
    return None


async def test_read_file_reads_as_the_file(n8n: Any, responder: Callable[[Any], None], tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.md").write_text("".join(f"line {i}\n" for i in range(12)), encoding="utf-8")
    seen: list[dict[str, Any]] = []
    responder(script(seen))
    _client, thread, app = await app_on_new_thread(n8n, tmp_path / "cfg", gateway=GatewayRequest(shared.resolve()))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.gateway_state == "sharing", pilot, 60, "the gateway sharing")
        await thread_open(app, pilot, thread)
        await send(app, pilot, f"gw-live-{uuid.uuid4().hex[:6]} read notes.md")
        await until(lambda: read_call(app) is not None and not app.conversation.is_streaming, pilot, 120, "read")
        call = read_call(app)
        summary = result_summary(call.result)
        assert summary == "12 lines", (summary, call.result)
