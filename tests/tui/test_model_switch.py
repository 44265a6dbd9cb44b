"""/model switches the model of the open thread (embedded and our server); the status line shows
the model and how full its context window is. Against the real ``openai`` client and a local
OpenAI wire-format server, so the model name reaches the server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.screens.model_picker import ModelPicker
from tests.support.openai_server import MockOpenAIServer, MockResponse
from tests.support.waiting import until

from .scripts import make_app, recorded
from .test_embedded import type_and_send


def _answer(body: dict[str, Any]) -> MockResponse:
    """Each model answers in its own words, with its own prompt size (titles get a short answer)."""
    model = body.get("model", "?")
    tokens = {"gpt-4o-mini": 1200, "gpt-4.1-nano": 3400}.get(model, 10)
    return MockResponse(text=f"Hello from {model}.", prompt_tokens=tokens, completion_tokens=5)


@pytest.fixture
async def model_server() -> Any:
    async with MockOpenAIServer(_answer, models=["gpt-4o-mini", "gpt-4.1-nano"]) as server:
        yield server


def _settings(tmp_path: Path, url: str) -> Settings:
    return Settings.model_validate({
        "model": {"name": "gpt-4o-mini", "base_url": url, "api_key": "sk-test", "choices": ["gpt-4.1-nano"]},
        "db_path": tmp_path / "db.sqlite3",
    })


async def test_model_picker_switches_the_thread_and_the_next_run_uses_it(tmp_path: Path, model_server: Any) -> None:
    settings = _settings(tmp_path, model_server.base_url)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.model == "gpt-4o-mini" and app.status_info.context_window == 128_000, pilot)
        await type_and_send(pilot, app, "hello")
        await until(lambda: app.thread_id is not None and not app.conversation.is_streaming
                    and len(app.view.assistant_turns()) == 1, pilot)
        await until(lambda: app.status_info.context_tokens == 1200, pilot)
        await until(lambda: "gpt-4o-mini · context 1.2k/128k (1%)" in app.status_line.render().plain, pilot)
        await type_and_send(pilot, app, "/model")
        await until(lambda: isinstance(app.screen, ModelPicker), pilot)
        names = [o.id for o in app.screen.query_one("#model-list").options]
        assert names[:2] == ["gpt-4o-mini", "gpt-4.1-nano"] and "demo" in names
        await pilot.press("down", "enter")
        await until(lambda: app.status_info.model == "gpt-4.1-nano" and app.status_info.context_window == 1_047_576, pilot)
        await type_and_send(pilot, app, "hello again")
        await until(lambda: len(app.view.assistant_turns()) == 2 and not app.conversation.is_streaming, pilot)
        models_used = [r.body["model"] for r in model_server.requests]
        assert models_used[0] == "gpt-4o-mini" and models_used[-1] == "gpt-4.1-nano"
        await until(lambda: app.status_info.context_tokens == 3400, pilot)


async def test_model_by_name_and_a_model_that_cannot_be_built(tmp_path: Path) -> None:
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})
    app = make_app(EmbeddedClient(settings, demo_delay=0.0), settings)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "/model gpt-4o")  # no API key: refused, with the reason
        await until(lambda: any("Cannot switch the model" in str(n.message) for n in app._notifications), pilot)
        assert app.status_info.model.startswith("demo")


async def test_servers_without_a_model_choice_say_so() -> None:
    app = make_app(recorded())
    async with app.run_test(size=(140, 40)) as pilot:
        await app.wait_until_ready()
        await type_and_send(pilot, app, "/model")
        await until(lambda: any("does not let the app choose the model" in str(n.message)
                                for n in app._notifications), pilot)
        await asyncio.sleep(0)
