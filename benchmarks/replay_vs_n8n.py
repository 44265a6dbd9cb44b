"""Full history replay of a 50-run thread, our server side by side with a real n8n 2.41.1
(issue 14 item 6: "at least as fast as n8n's on the same thread").

    python benchmarks/replay_vs_n8n.py [--runs 50] [--repeats 7]

One local OpenAI wire-format server (``tests/support/openai_server.py``) answers both: every
request gets the same answer of 120 words, streamed a word per chunk. The real n8n (``scripts/
n8n_peer.py``: installed once, then cached) runs its own Instance AI agent on it; our
``instance-ai serve`` app (real uvicorn on 127.0.0.1, SQLite) runs ours on it. The same ``--runs``
messages are sent to a new thread on each, one run after the other. Then the thread's full replay
(``GET .../events/{thread}``, no cursor) is read until its last event, ``--repeats`` times: best and
median seconds, bytes, events. Prints JSON; ``ours_over_n8n`` < 1 means ours is faster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))
sys.path.append(str(ROOT / "scripts"))

import n8n_peer  # noqa: E402  (scripts/n8n_peer.py: install, cache and start a real n8n)
from replay_history import read_replay  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402

ANSWER = " ".join(f"word{i}" for i in range(1, 121)) + "."


class ModelServer:
    """The scripted OpenAI wire-format server on a thread of its own (n8n calls it too)."""

    def __init__(self) -> None:
        from tests.support.openai_server import MockOpenAIServer, MockResponse

        self.server = MockOpenAIServer(lambda body: MockResponse(text=ANSWER), openai_null_content=True)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="model", daemon=True)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(15)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(15)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def summary(samples: list[tuple[float, int, int]]) -> dict[str, Any]:
    seconds = [s for s, _, _ in samples]
    return {
        "best_s": round(min(seconds), 4),
        "median_s": round(statistics.median(seconds), 4),
        "bytes": samples[0][1],
        "events": samples[0][2],
    }


async def fill_thread(client: Any, thread: str, runs: int) -> int:
    """Send ``runs`` messages one after the other; the id of the last event."""
    last = 0
    for index in range(runs):
        await client.send(thread, f"replay benchmark message {index}: list my workflows")
        async for item in client.events(thread, after=last):
            if item.id is not None:
                last = max(last, item.id)
            if item.event is not None and item.event.type == "run-finish":
                break
    return last


async def measure_n8n(model_url: str, runs: int, repeats: int) -> dict[str, Any]:
    from instance_ai_tui.client.n8n import N8nClient

    peer = n8n_peer.N8nPeer(model_url=model_url)
    peer.start()
    try:
        with tempfile.TemporaryDirectory(prefix="replay-n8n-") as config:
            client = N8nClient(peer.url, peer.email, peer.password, config_dir=Path(config), interactive=False)
            await client.open()
            thread = str(uuid.uuid4())
            try:
                last = await fill_thread(client, thread, runs)
            finally:
                await client.close()
        headers = n8n_peer.login_headers(peer)
        url = f"{peer.url}/rest/instance-ai/events/{thread}"
        samples = [await read_replay(url, headers, last) for _ in range(repeats)]
        return {"version": "2.41.1", "last_event_id": last, **summary(samples)}
    finally:
        peer.close()


async def measure_ours(model_url: str, runs: int, repeats: int) -> dict[str, Any]:
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import ModelSettings, Settings
    from instance_ai_tui.server.app import PREFIX, create_app
    from tests.support.asgi import serve_asgi

    with tempfile.TemporaryDirectory(prefix="replay-ours-") as tmp:
        settings = Settings(
            db_path=Path(tmp) / "ours.sqlite3",
            workspace_root=Path(tmp),
            model=ModelSettings(name="gpt-4o-mini", base_url=model_url, api_key="sk-bench"),
        )
        client = EmbeddedClient(settings)
        await client.open()
        try:
            last = await fill_thread(client, "replay-bench", runs)
        finally:
            await client.close()
        from instance_ai_tui.assistant.factory import build_service

        service = build_service(settings, generate_titles=False)
        await service.start()
        try:
            async with serve_asgi(create_app(service)) as url:
                events_url = f"{url}{PREFIX}/events/replay-bench"
                samples = [await read_replay(events_url, {}, last) for _ in range(repeats)]
        finally:
            await service.shutdown()
    return {"last_event_id": last, **summary(samples)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if not n8n_peer.installed():
        print(json.dumps(with_machine({"skipped": n8n_peer.missing_reason()})))
        return
    with ModelServer() as model:
        ours = await measure_ours(model.server.base_url, args.runs, args.repeats)
        n8n = await measure_n8n(model.server.base_url, args.runs, args.repeats)
    out = {
        "runs": args.runs,
        "ours": ours,
        "n8n": n8n,
        "ours_over_n8n_best": round(ours["best_s"] / n8n["best_s"], 2),
        "ours_over_n8n_median": round(ours["median_s"] / n8n["median_s"], 2),
        "bytes_ours_over_n8n": round(ours["bytes"] / n8n["bytes"], 2),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    asyncio.run(main())
