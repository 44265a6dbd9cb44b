"""Fixtures for every test. Shared helpers live in ``tests/support`` (ports, served apps, waiting).

The one isolation fixture is here: no test reads or writes the real user's config or data, or
depends on the terminal's Textual settings (``tests.support.isolate_config``). Folder conftests
add only what their tests need beyond it (the TUI tests also run in ``tmp_path``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.support import isolate_config, serve_asgi


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The config file's path in ``tmp_path`` (not created): ``config/config.toml``."""
    return isolate_config(tmp_path, monkeypatch)


@pytest.fixture
async def asgi_server() -> AsyncIterator[Callable[..., Any]]:
    """The one ASGI server fixture: ``url = await asgi_server(app)`` serves ``app`` on a real
    uvicorn on 127.0.0.1 (any free port, bound with no race; ``serve_asgi``'s options pass
    through) until the test ends; every server it started is shut down and awaited."""
    async with AsyncExitStack() as stack:

        async def start(app: Any, **options: Any) -> str:
            return await stack.enter_async_context(serve_asgi(app, **options))

        yield start
