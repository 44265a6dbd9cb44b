"""The shared test helpers work as they say (they are used by many tests)."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from instance_ai_tui import config
from tests.support import free_port, isolate_config, serve_asgi, wait_for_port


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"hello {request.query_params.get('name', '')}")


def app() -> Starlette:
    return Starlette(routes=[Route("/hello", hello)])


async def test_serve_asgi_serves_and_stops() -> None:
    async with serve_asgi(app()) as url:
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(base_url=url) as http:
            answer = await http.get("/hello", params={"name": "you"})
        assert answer.status_code == 200 and answer.text == "hello you"
        port = int(url.rsplit(":", 1)[1])
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient(base_url=url) as http:
            await http.get("/hello")
    with socket.socket() as sock:  # the port is free again
        sock.bind(("127.0.0.1", port))


async def test_a_served_app_leaves_the_tests_signal_handlers_alone() -> None:
    """uvicorn takes SIGINT in ``serve()``: a Ctrl+C during the test would only stop the test's server,
    and at stop it put back the handler it found, a fixture's asyncio Runner handler long finished."""
    before = signal.getsignal(signal.SIGINT)
    async with serve_asgi(app()):
        assert signal.getsignal(signal.SIGINT) is before
    assert signal.getsignal(signal.SIGINT) is before


async def test_serve_asgi_reports_a_port_in_use() -> None:
    async with serve_asgi(app()) as url:
        taken = int(url.rsplit(":", 1)[1])
        with pytest.raises(OSError):
            async with serve_asgi(app(), port=taken):
                pass


async def test_serve_asgi_raises_what_stopped_a_failing_lifespan() -> None:
    async def broken(scope: dict[str, Any], receive: object, send: object) -> None:
        raise RuntimeError("no lifespan today")

    with pytest.raises(RuntimeError, match="could not start"):
        async with serve_asgi(broken, lifespan="on"):
            pass


def test_free_port_and_wait_for_port() -> None:
    port = free_port()
    assert 1024 <= port <= 65535
    assert not wait_for_port(port, timeout=0.3)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert wait_for_port(port, timeout=2)


def test_every_test_is_kept_away_from_the_real_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the root conftest already did it for this test
    assert Path(os.environ["XDG_CONFIG_HOME"]).is_relative_to(tmp_path)
    assert config.config_dir().is_relative_to(tmp_path) and config.data_dir().is_relative_to(tmp_path)
    path = isolate_config(tmp_path / "again", monkeypatch)
    assert config.config_path() == path and not path.exists()


@pytest.mark.skipif(importlib.util.find_spec("pytest_rerunfailures") is None,
                    reason="pytest-rerunfailures is not installed: nothing could rerun a test")
@pytest.mark.parametrize("option", ["--reruns=2", "-o reruns=1"])
def test_the_suite_refuses_reruns(option: str, tmp_path: Path) -> None:
    """With pytest-rerunfailures installed, asking for reruns is a usage error, not a quiet retry."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *option.split(),
                           "tests/test_support.py::test_free_port_and_wait_for_port"],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "without reruns" in done.stderr + done.stdout


def test_a_test_marked_flaky_is_refused(tmp_path: Path) -> None:
    """``@pytest.mark.flaky`` (a rerun asked by the test itself) is refused by the suite's hooks."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems, pytest_configure\n")
    (tmp_path / "test_x.py").write_text("import pytest\n\n@pytest.mark.flaky(reruns=3)\ndef test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "marked flaky: test_x.py::test_x" in done.stderr + done.stdout
