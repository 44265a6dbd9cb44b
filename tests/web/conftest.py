"""``instance-ai web`` as a user starts it (a real process on a free port) and Debian's chromium
driven by Playwright.

The browser tests carry the ``web`` marker (``-m "not web"`` leaves them out). Without
``/usr/bin/chromium`` (or ``INSTANCE_AI_CHROMIUM``) they are skipped with the install command;
``.ci/run`` installs it, so CI runs them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import free_port, wait_for_port

INSTALL = "apt-get install chromium (Debian/Ubuntu), then pip install -e '.[test]'"
#: what Playwright's chromium.launch needs here: its own browser download is not used
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "web: drives instance-ai web in a real browser (chromium + Playwright)")


@pytest.fixture
def chromium_path() -> str:
    path = os.environ.get("INSTANCE_AI_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.skip(f"no chromium for the browser tests: {INSTALL}")
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        pytest.skip(f"Playwright is not installed: {INSTALL}")
    return path


@dataclass
class WebProcess:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and the app processes it started (one process group)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
    try:  # app processes left behind by a server that died first
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture
def start_web(tmp_path: Path) -> Iterator[Callable[..., WebProcess]]:
    """``start_web(*args, env={...}, wait=True)``: ``instance-ai web --port P *args`` in its own
    process group, its output in a file; stopped (with its app processes) after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, env: dict[str, str] | None = None, wait: bool = True) -> WebProcess:
        port = free_port()
        log = tmp_path / f"web-{port}.log"
        full_env = {**os.environ, **(env or {})}
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "instance_ai_tui", "web", "--port", str(port), *args],
                stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=tmp_path, start_new_session=True,
            )
        started.append(process)
        web = WebProcess(process, f"http://127.0.0.1:{port}", log)
        if wait:
            deadline = time.monotonic() + 20
            while not wait_for_port(port, timeout=0.5):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"instance-ai web did not start:\n{web.output()}")
            httpx.get(web.url + "/static/css/xterm.css", timeout=5)  # served (maybe 401): the app is up
        return web

    yield start
    for process in started:
        _stop(process)
