"""Fixtures of the runtime tests: a real OpenAI-wire-format server and the real openai client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from instance_ai_tui.runtime.openai_model import OpenAIModel
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.openai_server import MockOpenAIServer


@pytest.fixture
async def server() -> AsyncIterator[MockOpenAIServer]:
    async with MockOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def make_model(server: MockOpenAIServer) -> AsyncIterator[Callable[..., OpenAIModel]]:
    made: list[OpenAIModel] = []

    def make(**kw: object) -> OpenAIModel:
        options: dict[str, object] = {"api_key": "test-key", "max_retries": 0, "first_token_timeout": 5.0,
                                      "idle_timeout": 5.0}
        options.update(kw)
        model = OpenAIModel(str(options.pop("model", "gpt-4o-mini")), base_url=server.base_url, **options)  # type: ignore[arg-type]
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "runtime.sqlite3") as s:
        yield s
