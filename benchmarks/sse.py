"""SSE delivery benchmark of ``instance-ai serve``'s app (real uvicorn, SQLite store, in-process bus).

The server runs in a subprocess (its own core) and publishes through the real ``InProcessBus``
(persist in SQLite, then deliver); subscribers are raw-socket SSE readers in this process.
Prints JSON:

* ``throughput``: events/s delivered to one subscriber while the server publishes a burst;
* ``fanout``: 200 subscribers on one thread, 1,000 events/s for ``--seconds`` seconds:
  p50/p99/max latency from publish (before persisting) to receive, and delivery counts.

    python benchmarks/sse.py [--events 20000] [--subscribers 200] [--rate 1000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.net import free_port  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402

THREAD = "bench"


# --------------------------------------------------------------------------- server side


class BusService:
    """What the SSE route needs from an ``AssistantService``, on the real store and bus."""

    model_label = "benchmark"

    def __init__(self, db: Path) -> None:
        from instance_ai_tui.bus.memory import InProcessBus
        from instance_ai_tui.store.sqlite import SqliteStore

        self.store = SqliteStore(db)
        self.bus = InProcessBus(self.store)

    async def start(self) -> None:
        await self.store.open()
        await self.store.create_thread(THREAD, "benchmark")

    async def shutdown(self) -> None:
        await self.bus.close()
        await self.store.close()

    async def get_thread(self, thread_id: str) -> Any:
        from instance_ai_tui.assistant.errors import ThreadNotFound

        record = await self.store.get_thread(thread_id)
        if record is None:
            raise ThreadNotFound(f"thread {thread_id} not found")
        return record

    def events(self, thread_id: str, after: int = 0) -> Any:
        return self.bus.subscribe(thread_id, after)


def serve(port: int, db: Path) -> None:
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from instance_ai_tui.protocol.events import parse_event
    from instance_ai_tui.server.app import create_app
    from instance_ai_tui.server.runner import make_server

    service = BusService(db)
    app = create_app(service)  # type: ignore[arg-type]

    async def publish(request: Request) -> JSONResponse:
        """Publish ``count`` text-delta events at ``rate``/s (0 = as fast as possible)."""
        spec = await request.json()
        count, rate = int(spec["count"]), float(spec["rate"])
        text = "x" * 24
        started = time.monotonic()
        if rate <= 0:
            batch = 100
            for first in range(0, count, batch):
                now = time.monotonic()
                events = [
                    parse_event({"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": text}, "ts": now})
                    for _ in range(min(batch, count - first))
                ]
                await service.bus.publish_many(THREAD, events)
        else:
            # a paced producer: each event is published at its due time without waiting for the
            # previous one to be persisted (the bus keeps the order and commits in groups)
            pending = []
            for i in range(count):
                delay = started + i / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                event = parse_event({"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": text},
                                     "ts": time.monotonic()})
                pending.append(asyncio.ensure_future(service.bus.publish(THREAD, event)))
            await asyncio.gather(*pending)
        return JSONResponse({"published": count, "seconds": time.monotonic() - started,
                             "lastId": await service.bus.last_id(THREAD)})

    async def last(request: Request) -> JSONResponse:
        return JSONResponse({"lastId": await service.bus.last_id(THREAD), "cpu": time.process_time()})

    app.router.routes.append(Route("/bench/publish", publish, methods=["POST"]))
    app.router.routes.append(Route("/bench/last", last, methods=["GET"]))
    asyncio.run(make_server(app, "127.0.0.1", port, log_level="error").serve())


# --------------------------------------------------------------------------- client side


class Subscriber:
    """A raw-socket SSE subscriber (cheaper than a full HTTP client, so the server is what is
    measured): counts frames and records publish->receive latency with a scan for ``"ts":``.
    The chunked transfer framing between frames does not disturb the scan."""

    def __init__(self) -> None:
        self.received = 0
        self.latencies: list[float] = []
        self.first_at = 0.0
        self.last_at = 0.0
        self.ready = asyncio.Event()

    async def run(self, host: str, port: int, path: str, after: int, expected: int, record: bool) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(
            f"GET {path}?lastEventId={after} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"unexpected answer: {head[:80]!r}")
        self.ready.set()
        buffer = b""
        try:
            while self.received < expected:
                chunk = await reader.read(65536)
                if not chunk:
                    raise RuntimeError("the stream ended early")
                now = time.monotonic()
                buffer += chunk
                *frames, buffer = buffer.split(b"\n\n")
                for frame in frames:
                    at = frame.find(b'"ts":')
                    if at < 0:
                        continue
                    if self.received == 0:
                        self.first_at = now
                    self.received += 1
                    self.last_at = now
                    if record:
                        end = frame.find(b"}", at)
                        self.latencies.append(now - float(frame[at + 5 : end]))
        finally:
            writer.close()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(base: str, events: int, subscribers: int, rate: float, seconds: float) -> dict[str, Any]:
    import httpx

    host, port = base.rsplit("//", 1)[1].split(":")[0], int(base.rsplit(":", 1)[1])
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:  # control requests
        url = f"/instance-ai/events/{THREAD}"

        # 1) throughput to one subscriber
        start_id = (await http.get("/bench/last")).json()["lastId"]
        one = Subscriber()
        task = asyncio.create_task(one.run(host, port, url, start_id, events, record=False))
        await one.ready.wait()
        published = (await http.post("/bench/publish", json={"count": events, "rate": 0})).json()
        await asyncio.wait_for(task, 120)
        span = max(one.last_at - one.first_at, 1e-9)
        throughput = {
            "events": events,
            "publish_seconds": round(published["seconds"], 3),
            "publish_events_per_s": round(events / published["seconds"]),
            "delivered_events_per_s": round(one.received / span),
        }

        # 2) 200 subscribers on one thread at ``rate`` events/s
        count = int(rate * seconds)
        start_id = (await http.get("/bench/last")).json()["lastId"]
        server_cpu = (await http.get("/bench/last")).json()["cpu"]
        client_cpu = time.process_time()
        subs = [Subscriber() for _ in range(subscribers)]
        tasks = [asyncio.create_task(s.run(host, port, url, start_id, count, record=True)) for s in subs]
        await asyncio.gather(*(s.ready.wait() for s in subs))
        await asyncio.sleep(0.5)  # let every stream reach the live phase
        wall = time.monotonic()
        published = (await http.post("/bench/publish", json={"count": count, "rate": rate})).json()
        done, pending = await asyncio.wait(tasks, timeout=seconds * 4 + 30)
        for task in pending:
            task.cancel()
        wall = time.monotonic() - wall
        server_cpu = (await http.get("/bench/last")).json()["cpu"] - server_cpu
        client_cpu = time.process_time() - client_cpu
        latencies = [lat for s in subs for lat in s.latencies]
        fanout = {
            "subscribers": subscribers,
            "target_rate": rate,
            "events": count,
            "publish_seconds": round(published["seconds"], 3),
            "achieved_publish_rate": round(count / published["seconds"]),
            "delivered": sum(s.received for s in subs),
            "expected": count * subscribers,
            "complete_subscribers": len(done),
            "frames_per_s": round(sum(s.received for s in subs) / wall),
            "wall_seconds": round(wall, 2),
            "server_cpu_seconds": round(server_cpu, 2),
            "client_cpu_seconds": round(client_cpu, 2),
            "latency_ms": {
                "p50": round(statistics.median(latencies) * 1000, 2) if latencies else None,
                "p99": round(_percentile(latencies, 0.99) * 1000, 2) if latencies else None,
                "max": round(max(latencies) * 1000, 2) if latencies else None,
            },
        }
    return {"throughput_one_subscriber": throughput, "fanout": fanout}


async def _wait_up(base: str, proc: subprocess.Popen[bytes]) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        for _ in range(400):
            if proc.poll() is not None:
                raise SystemExit(f"benchmark server exited with {proc.returncode}")
            try:
                if (await http.get(f"{base}/instance-ai/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit("benchmark server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--subscribers", type=int, default=200)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.db)
        return
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), "--db", str(Path(tmp) / "bench.sqlite3")],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            asyncio.run(_wait_up(base, proc))
            result = asyncio.run(measure(base, args.events, args.subscribers, args.rate, args.seconds))
        finally:
            proc.terminate()
            proc.wait(15)
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    print(json.dumps(with_machine(result), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    main()
