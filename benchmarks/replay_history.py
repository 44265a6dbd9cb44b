"""Full history replay of a 50-run thread from our server: the runs as stored deltas vs as n8n stores
them (one ``text-block`` / ``reasoning-block`` per answer segment, issue 14 item 6).

    python benchmarks/replay_history.py [--runs 50] [--repeats 5]

Builds one thread of ``--runs`` demo-model runs (the offline demo streams its answers word by word)
with the assistant, keeps a copy of the SQLite file as it was before coalescing (``deltas``), lets
the store coalesce every run (``coalesced``), then serves each file with ``instance-ai serve``'s app on
127.0.0.1 and reads the full replay (``GET /events/{thread}``, no cursor) until the last event: best
seconds of ``--repeats``, bytes and events. The issue measured n8n 2.41.1 at 0.022 s for a 50-run
thread (its own answers, so not byte-for-byte the same thread): printed as a reference, not compared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))

from instance_ai_tui.assistant.factory import build_service  # noqa: E402
from instance_ai_tui.assistant.run_manager import RunManager  # noqa: E402
from instance_ai_tui.config import ModelSettings, Settings  # noqa: E402
from instance_ai_tui.server.app import PREFIX, create_app  # noqa: E402
from tests.support.asgi import serve_asgi  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402

PROMPTS = ["list my workflows", "create a workflow that posts a daily summary to Slack", "show my executions"]


async def build_thread(db: Path, runs: int) -> str:
    settings = Settings(db_path=db, model=ModelSettings(name="demo"))
    service = build_service(settings, demo_delay=0.0, generate_titles=False)
    await service.start()
    try:
        last = 0
        for index in range(runs):
            run_id = await service.send("long", PROMPTS[index % len(PROMPTS)])
            async for event in service.events("long", after=last):
                last = event.id
                data = event.data()
                if data.get("type") == "confirmation-request":
                    from instance_ai_tui.protocol.api import ApprovalConfirm

                    await service.confirm(data["payload"]["requestId"], ApprovalConfirm(approved=True))
                if data.get("type") == "run-finish" and data.get("runId") == run_id:
                    break
    finally:
        await service.shutdown()
    return "long"


def copy_database(source: Path, target: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")


#: an ``id:`` line of an SSE stream, after the newline that ends the line before it
_ID_LINE = re.compile(rb"\nid: ?(\d+)")


async def read_replay(url: str, headers: dict[str, str], last_id: int, *,
                      http: httpx.AsyncClient | None = None) -> tuple[float, int, int]:
    """Seconds, bytes and events of one full replay (SSE at ``url``) read up to event ``last_id``:
    from the request to the ``id:`` line of that event, on a new connection. ``http``: a client made
    before the clock (a client opening a thread has one already); the reader only looks for ``id:``
    lines, a small cost, the same for every server."""
    import httpx

    own = http is None
    client = http or httpx.AsyncClient(timeout=60)
    size = events = 0
    try:
        started = time.perf_counter()
        async with client.stream("GET", url, headers={**headers, "connection": "close"}) as response:
            response.raise_for_status()
            tail = b"\n"  # the stream starts at the start of a line
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                text = tail + chunk
                cut = text.rfind(b"\n")
                ids = _ID_LINE.findall(text, 0, cut + 1)
                tail = text[cut:]
                if ids:
                    events += len(ids)
                    if int(ids[-1]) >= last_id:
                        break
        seconds = time.perf_counter() - started
    finally:
        if own:
            await client.aclose()
    return seconds, size, events


async def measure(db: Path, repeats: int) -> dict[str, Any]:
    from instance_ai_tui.store.sqlite import SqliteStore

    async with SqliteStore(db) as store:
        last_id = await store.last_event_id("long")
        rows = len(await store.read_events("long"))
    settings = Settings(db_path=db, model=ModelSettings(name="demo"))
    service = build_service(settings, demo_delay=0.0, generate_titles=False)
    app = create_app(service)
    await service.start()
    try:
        async with serve_asgi(app) as url:
            best: tuple[float, int, int] | None = None
            for _ in range(repeats):
                got = await read_replay(f"{url}{PREFIX}/events/long", {}, last_id)
                if best is None or got[0] < best[0]:
                    best = got
    finally:
        await service.shutdown()
    assert best is not None
    return {"seconds": round(best[0], 4), "bytes": best[1], "events": best[2], "stored_rows": rows}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="replay-history-") as tmp:
        deltas, coalesced = Path(tmp) / "deltas.sqlite3", Path(tmp) / "coalesced.sqlite3"
        real = RunManager._coalesce

        async def keep_deltas(self: RunManager, run: Any) -> None:
            return None

        RunManager._coalesce = keep_deltas  # type: ignore[method-assign]
        try:
            await build_thread(deltas, args.runs)
        finally:
            RunManager._coalesce = real  # type: ignore[method-assign]
        await asyncio.to_thread(copy_database, deltas, coalesced)
        from instance_ai_tui.store.sqlite import SqliteStore

        async with SqliteStore(coalesced) as store:
            for run in await store.list_runs("long"):
                await store.coalesce_run("long", run.run_id)
        out = {
            "runs": args.runs,
            "deltas": await measure(deltas, args.repeats),
            "coalesced": await measure(coalesced, args.repeats),
            "n8n_2_41_1_reference_seconds": 0.022,
            "python": platform.python_version(), "cpus": os.cpu_count(),
        }
        out["speedup"] = round(out["deltas"]["seconds"] / out["coalesced"]["seconds"], 2)
        out["bytes_ratio"] = round(out["deltas"]["bytes"] / out["coalesced"]["bytes"], 2)
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    asyncio.run(main())
