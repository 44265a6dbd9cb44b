"""Fixtures for every test. Shared helpers live in ``tests/support`` (ports, served apps, waiting).

The one isolation fixture is here: no test reads or writes the real user's config or data, or
depends on the terminal's Textual settings (``tests.support.isolate_config``). Folder conftests
add only what their tests need beyond it (the TUI tests also run in ``tmp_path``).
"""

from __future__ import annotations

import gc
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.support import isolate_config, serve_asgi

#: the words the suite refuses reruns with (issue 25)
NO_RERUNS = "this suite runs without reruns: a test that needs one is a bug in the test or the app (issue 25)"


def pytest_configure(config: pytest.Config) -> None:
    """No reruns: should pytest-rerunfailures be installed, its ``--reruns`` (or a ``reruns`` ini
    value) is refused instead of hiding a test that fails now and then."""
    reruns = getattr(config.option, "reruns", None)
    try:
        reruns = reruns or config.getini("reruns")
    except ValueError:  # (the plugin is not installed: nothing can rerun)
        pass
    if reruns and str(reruns) != "0":
        raise pytest.UsageError(NO_RERUNS)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A pytest-xdist worker ends within execnet's 5 s: one collection here, then the objects that
    survive it are frozen, so pytest's own cleanup after it (5 full ``gc.collect()`` passes, looking
    for unraisable exceptions) walks only what is new since. A whole run's worker holds ~10^6
    objects: five full passes on a busy machine took more than 5 s after the worker had reported
    finished, execnet then sent it a SIGINT (``_terminate_execution``) and the run ended on
    "PytestUnraisableExceptionWarning: Exception ignored in: gc_callback ... KeyboardInterrupt".
    The garbage found here still reaches pytest's unraisable hook (it runs before that cleanup)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        gc.collect()
        gc.freeze()


#: tests that share one heavy real peer (a session or module fixture) run in one worker of pytest-xdist, so
#: the suite boots one n8n and one llama.cpp server, not one per worker (``--dist loadgroup``, pyproject.toml)
HEAVY_PEERS = {"tests/live_n8n/": "real-n8n", "tests/runtime/test_llama_": "real-llama-cpp"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """No test may ask for reruns of its own either (``@pytest.mark.flaky``); the tests of one heavy
    peer are grouped for the workers (``HEAVY_PEERS``)."""
    flaky = [item.nodeid for item in items if item.get_closest_marker("flaky") is not None]
    if flaky:
        raise pytest.UsageError(f"{NO_RERUNS}; marked flaky: {', '.join(flaky[:5])}")
    for item in items:
        group = next((name for prefix, name in HEAVY_PEERS.items() if item.nodeid.startswith(prefix)), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


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
