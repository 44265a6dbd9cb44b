"""Opening a client does its heavy work off the event loop (profiled per loop turn, issue 44): on the
loop it was one turn after the app's first frame that keys typed at start waited for.

* the embedded client builds the in-process assistant (the model's HTTP client and its TLS context,
  the store, the tools: 60-140 ms of CPU) in a thread;
* the remote client's ``preload`` (run in a thread by the app's boot before ``open``) makes its HTTP
  client and imports what the first request needs (httpcore's pool, h11, anyio's backend: 45 ms)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from instance_ai_tui.assistant import factory
from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings


async def test_the_assistant_is_built_off_the_event_loop_and_works(tmp_path: Path, monkeypatch) -> None:
    loop_thread = threading.get_ident()
    built_on: list[int] = []
    real = factory.build_service

    def build_service(*args, **kwargs):  # type: ignore[no-untyped-def]
        built_on.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(factory, "build_service", build_service)
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3"})
    async with EmbeddedClient(settings, demo_delay=0.001) as client:
        assert len(built_on) == 1 and built_on[0] != loop_thread
        thread = await client.create_thread(title="built in a thread")  # and the assistant works
        await client.send(thread.id, "hello")
        assert [t.id for t in await client.list_threads()] == [thread.id]


async def test_an_assistant_that_cannot_be_built_is_a_clear_error(tmp_path: Path) -> None:
    """Its failure still comes back from ``open`` as the client's error (from the thread)."""
    (tmp_path / "file").write_text("not a folder")
    settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "file" / "db.sqlite3"})
    with pytest.raises(ClientError):
        await EmbeddedClient(settings).open()


REMOTE_OPEN = """
import asyncio, json, sys, threading
on_loop = []
opening = [False]
class Finder:
    def find_spec(self, name, path=None, target=None):
        if opening[0] and threading.current_thread() is threading.main_thread():
            on_loop.append(name)
        return None
sys.meta_path.insert(0, Finder())
from instance_ai_tui.client.remote import RemoteClient
async def handle(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\\r\\n\\r\\n")
            body = json.dumps({"service": "instance-ai", "model": "m"}).encode()
            writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: "
                         + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    client = RemoteClient(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    await asyncio.to_thread(client.preload)  # as the app's boot does, before it opens the client
    opening[0] = True
    await client.open()
    opening[0] = False
    await client.close()
    server.close()
    print(json.dumps({"model": client.model_name, "imported_on_the_loop": sorted(set(on_loop))}))
asyncio.run(main())
"""


def test_the_remote_client_opens_without_importing_on_the_loop(tmp_path: Path) -> None:
    """In a fresh interpreter, after ``preload`` in a thread, ``open`` (its health request) imports nothing
    on the event loop's thread (a finder on ``sys.meta_path`` notes every import there) and is open."""
    result = subprocess.run([sys.executable, "-c", REMOTE_OPEN], capture_output=True, text=True, timeout=120,
                            check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"model": "m", "imported_on_the_loop": []}


EMBEDDED_MODEL_REQUEST = """
import asyncio, json, sys, threading
on_loop = []
watching = [False]
class Finder:
    def find_spec(self, name, path=None, target=None):
        if watching[0] and threading.current_thread() is threading.main_thread():
            on_loop.append(name)
        return None
sys.meta_path.insert(0, Finder())
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
async def main():
    settings = Settings.model_validate({"model": {"name": "gpt-4o-mini", "base_url": sys.argv[1], "api_key": "sk-x"},
                                        "db_path": sys.argv[2]})
    client = EmbeddedClient(settings)
    await asyncio.to_thread(client.preload)  # as the app's boot does, before it opens the client
    async with client:
        watching[0] = True
        models = await client.list_models()  # the model's first request (the app's first frames ask it)
        watching[0] = False
    print(json.dumps({"models": sorted(m.name for m in models.models),
                      "network_imports_on_the_loop": sorted({n for n in on_loop
                                                             if n.split(".")[0] in ("anyio", "sniffio", "httpcore", "h11")})}))
asyncio.run(main())
"""


def test_the_embedded_models_first_request_imports_nothing_of_the_network_on_the_loop(tmp_path: Path) -> None:
    """In a fresh interpreter, after ``preload`` in a thread, the model's first request (its model list,
    from an OpenAI-wire server in a process of its own) imports none of the HTTP stack on the loop."""
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    server = subprocess.Popen([sys.executable, "-m", "tests.support.openai_server"], stdout=subprocess.PIPE,
                              text=True, env=env, cwd=root)
    try:
        assert server.stdout is not None
        base_url = json.loads(server.stdout.readline())["base_url"]
        result = subprocess.run([sys.executable, "-c", EMBEDDED_MODEL_REQUEST, base_url, str(tmp_path / "db.sqlite3")],
                                capture_output=True, text=True, timeout=120, check=False, env=env)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["models"] and seen["network_imports_on_the_loop"] == []
