"""Issue 15 item 10: state that grew with every run (per-thread locks, the scripted model's requests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from instance_ai_tui.assistant.errors import RunActive
from instance_ai_tui.assistant.factory import build_service
from instance_ai_tui.config import ModelSettings, Settings
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.scripted import ScriptedModel


async def test_no_lock_is_kept_per_thread_id(tmp_path: Path) -> None:
    service = build_service(Settings(db_path=tmp_path / "b.sqlite3", model=ModelSettings(name="demo")),
                            demo_delay=0.0, generate_titles=False)
    await service.start()
    try:
        for index in range(40):
            thread = f"t-{index}"
            await service.send(thread, "hello")
            live = service.runs.live(thread)
            if live is not None and live.finished is not None:
                await live.finished
        assert service.runs.table._locks == {}
        # the lock still serialises: two sends racing on one thread start one run
        results = await asyncio.gather(service.send("race", "hello"), service.send("race", "hello"),
                                       return_exceptions=True)
        assert sum(isinstance(r, str) for r in results) == 1
        assert sum(isinstance(r, RunActive) for r in results) == 1
    finally:
        await service.shutdown()
    assert service.runs.table._locks == {}


async def test_scripted_model_keeps_a_bounded_request_history() -> None:
    model = ScriptedModel(lambda request: "ok", keep_requests=8)
    for index in range(100):
        request = ModelRequest(messages=[{"role": "user", "content": f"message {index}"}])
        async for _chunk in model.stream(request):
            pass
    assert model.calls == 100
    assert len(model.requests) == 8
    assert model.requests[-1].messages[0]["content"] == "message 99"
