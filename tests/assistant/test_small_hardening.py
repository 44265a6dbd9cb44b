"""Issue 15 item 11: smaller holes (file modes, confirm coercion, cancel racing the first POST)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.protocol.api import parse_confirm_body


async def test_data_folder_is_0700_and_an_existing_0644_database_becomes_0600(tmp_path: Path) -> None:
    data = tmp_path / "data" / "instance-ai-tui"
    service = build_service(Settings(db_path=data / "db.sqlite3", model=ModelSettings(name="demo")))
    await service.start()
    await service.shutdown()
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(data / "db.sqlite3").st_mode) == 0o600
    os.chmod(data / "db.sqlite3", 0o644)
    again = build_service(Settings(db_path=data / "db.sqlite3", model=ModelSettings(name="demo")))
    await again.start()
    await again.shutdown()
    assert stat.S_IMODE(os.stat(data / "db.sqlite3").st_mode) == 0o600


@pytest.mark.parametrize("value", ["yes", 1, "on", "true", "1", 1.0])
def test_confirm_does_not_coerce_to_approved(value: object) -> None:
    with pytest.raises(ValidationError):
        parse_confirm_body({"approved": value})
    with pytest.raises(ValidationError):
        parse_confirm_body({"kind": "approval", "approved": value})
    assert parse_confirm_body(json.loads('{"approved": true}')).approved is True
    assert parse_confirm_body({"approved": False}).approved is False


async def test_cancel_racing_the_first_post_cancels_the_run(tmp_path: Path) -> None:
    service = build_service(Settings(db_path=tmp_path / "race.sqlite3", model=ModelSettings(name="demo")),
                            demo_delay=0.05, generate_titles=False)
    await service.start()
    try:
        await service.create_thread("race", "")
        for _ in range(5):
            send = asyncio.ensure_future(service.send("race", "list my workflows please"))
            await asyncio.sleep(0)  # the POST is inside start(), holding the thread
            cancelled = await service.cancel("race")
            run_id = await send
            live = service.runs.live("race")
            if live is not None and live.finished is not None:
                await asyncio.wait_for(asyncio.shield(live.finished), 10)
            record = await service.store.get_run(run_id)
            assert cancelled is True and record is not None and record.status == "cancelled", (cancelled, record)
    finally:
        await service.shutdown()
