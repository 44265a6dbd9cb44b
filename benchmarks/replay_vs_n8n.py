"""Full history replay of a 50-run thread: our server side by side with a real n8n 2.41.1
(issue 14 item 6, issue 30 item 4: ours <= 0.7x n8n's time).

    python benchmarks/replay_vs_n8n.py [--runs 50] [--repeats 9]

What a person waits for when a client opens a thread: from the request for its whole history
(``GET .../events/{thread}``, no cursor) to the last event of that history read.

One local OpenAI wire-format server (``tests/support/openai_server.py``) answers both: every
request gets the same answer of 120 words, streamed a word per chunk. Both servers run as they
are deployed, each in a process of its own: the real n8n (``scripts/n8n_peer.py``: installed once,
then cached) runs its own Instance AI agent on it; ``instance-ai serve`` (uvicorn on 127.0.0.1,
SQLite) runs ours on it. The same ``--runs`` messages are sent to a new thread on each, one run
after the other, through each one's client. Then the two threads' full replays are read taking
turns (ours, n8n, ours, n8n, ...), so the load of the moment falls on both alike: one warm-up read
each, then ``--repeats`` each. Each read is timed from the request to the last event's ``id:``
line, on a new connection, by the same lean reader (an httpx client made before the clock that
only looks for ``id:`` lines: the client's own cost stays small and the same on both sides).

Prints JSON: per server best/median seconds, bytes and events; ``ours_over_n8n_median`` (< 1:
ours is faster; target <= 0.7); the machine's load at the start and the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import n8n_peer  # noqa: E402  (scripts/n8n_peer.py: install, cache and start a real n8n)
from headless_run import our_server  # noqa: E402  (instance-ai serve in a process of its own)
from machine import HANG_S, load, machine  # noqa: E402
from replay_history import read_replay  # noqa: E402

ANSWER = " ".join(f"word{i}" for i in range(1, 121)) + "."
TARGET_RATIO = 0.7


class ModelServer:
    """The scripted OpenAI wire-format server on a thread of its own (both servers call it)."""

    def __init__(self) -> None:
        from tests.support.openai_server import MockOpenAIServer, MockResponse

        self.server = MockOpenAIServer(lambda body: MockResponse(text=ANSWER), openai_null_content=True)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="model", daemon=True)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(HANG_S)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(HANG_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def summary(first: tuple[float, int, int], samples: list[tuple[float, int, int]]) -> dict[str, Any]:
    seconds = [s for s, _, _ in samples]
    return {
        "best_s": round(min(seconds), 4),
        "median_s": round(statistics.median(seconds), 4),
        "max_s": round(max(seconds), 4),
        "first_s": round(first[0], 4),
        "runs_s": [round(s, 4) for s in seconds],
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


async def fill_n8n(peer: Any, runs: int) -> tuple[str, int]:
    from instance_ai_tui.client.n8n import N8nClient

    with tempfile.TemporaryDirectory(prefix="replay-n8n-") as config:
        client = N8nClient(peer.url, peer.email, peer.password, config_dir=Path(config), interactive=False)
        await client.open()
        thread = str(uuid.uuid4())
        try:
            return thread, await fill_thread(client, thread, runs)
        finally:
            await client.close()


async def fill_ours(url: str, runs: int) -> tuple[str, int]:
    from instance_ai_tui.client.remote import RemoteClient

    client = RemoteClient(url)
    await client.open()
    thread = "replay-bench"
    try:
        await client.create_thread(thread)
        return thread, await fill_thread(client, thread, runs)
    finally:
        await client.close()


async def side_by_side(sides: dict[str, tuple[str, dict[str, str], int]], repeats: int) -> dict[str, Any]:
    """Read each side's full replay in turns: one warm-up each, then ``repeats`` each."""
    import httpx

    firsts: dict[str, tuple[float, int, int]] = {}
    samples: dict[str, list[tuple[float, int, int]]] = {name: [] for name in sides}
    async with httpx.AsyncClient(timeout=HANG_S) as http:
        for round_ in range(-1, repeats):
            for name, (url, headers, last) in sides.items():
                got = await read_replay(url, headers, last, http=http)
                if round_ < 0:
                    firsts[name] = got
                else:
                    samples[name].append(got)
    return {name: summary(firsts[name], samples[name]) for name in sides}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    started_load = load()
    if not n8n_peer.installed():
        print(json.dumps({"skipped": n8n_peer.missing_reason(), "machine": machine(started_load)}))
        return
    with ModelServer() as model:
        model_url = model.server.base_url
        peer = n8n_peer.N8nPeer(model_url=model_url)
        await asyncio.to_thread(peer.start, HANG_S)
        try:
            with our_server(model_url) as url:
                from instance_ai_tui.server.app import PREFIX

                ours_thread, ours_last = await fill_ours(url, args.runs)
                n8n_thread, n8n_last = await fill_n8n(peer, args.runs)
                headers = await asyncio.to_thread(n8n_peer.login_headers, peer)
                fill_load = load()
                result = await side_by_side({
                    "ours": (f"{url}{PREFIX}/events/{ours_thread}", {}, ours_last),
                    "n8n": (f"{peer.url}/rest/instance-ai/events/{n8n_thread}", headers, n8n_last),
                }, args.repeats)
        finally:
            peer.close()
    ours, n8n = result["ours"], result["n8n"]
    out = {
        "benchmark": "replay_vs_n8n",
        "runs": args.runs,
        "repeats": args.repeats,
        "ours": {"server": "instance-ai serve", "last_event_id": ours_last, **ours},
        "n8n": {"version": n8n_peer.N8N_VERSION, "last_event_id": n8n_last, **n8n},
        "ours_over_n8n_median": round(ours["median_s"] / n8n["median_s"], 2),
        "ours_over_n8n_best": round(ours["best_s"] / n8n["best_s"], 2),
        "bytes_ours_over_n8n": round(ours["bytes"] / n8n["bytes"], 2),
        "target_ratio": TARGET_RATIO,
        "load_when_reading": fill_load,
        "machine": machine(started_load),
    }
    out["meets_target"] = out["ours_over_n8n_median"] <= TARGET_RATIO
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    asyncio.run(main())
