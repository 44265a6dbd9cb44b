"""A turn with an MCP server of 10,000 tools configured, beside the same turn with no MCP server
(issue 40, "a server with 10,000 tools does not slow a turn").

    python benchmarks/mcp_many_tools.py [--tools 10000] [--turns 20]

Two real ``InstanceAI`` agents in this process, each on its own SQLite file, both talking to one
local OpenAI-wire server (``tests/support/openai_server.py``, the real ``openai`` client) that
answers every request at once with one short sentence:

* ``baseline``: no MCP server;
* ``many``: the suite's MCP test server (``tests/support/mcp_servers.py tools``, the ``mcp`` SDK over
  stdio, ``MCP_TEST_FILLERS`` listed-only tools added) configured and ready before the clock starts
  (its start, listing 10,000 tools, is timed apart: ``many_server_ready_s``).

Each side takes ``--turns`` turns (a new thread each: "hello" -> the model's one sentence), taking
turns with the other side. Per turn: wall time from ``send`` to ``run-finish`` read back from the
store, and the CPU time of this process over it (the MCP server is another process: what is counted
is the client's own work). Per side: the first model request's size (its JSON, bytes) and how many
tools it offered. ``turn_ratio`` is many's median over the baseline's. Prints one JSON object with
the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from machine import load, machine  # noqa: E402

from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI  # noqa: E402
from instance_ai_tui.bus.memory import InProcessBus  # noqa: E402
from instance_ai_tui.config import Settings  # noqa: E402
from instance_ai_tui.store.sqlite import SqliteStore  # noqa: E402
from tests.support.mcp_servers import stdio_config  # noqa: E402
from tests.support.openai_server import MockOpenAIServer, MockResponse  # noqa: E402

ANSWER = "Hello, here is a short answer of one sentence."


def _answer(body: dict[str, Any]) -> MockResponse:
    return MockResponse(text=ANSWER)


async def _agent(folder: Path, name: str, model: MockOpenAIServer, servers: dict[str, Any]) -> InstanceAI:
    settings = Settings.model_validate({"model": {"name": "gpt-test", "base_url": model.base_url, "api_key": "k"},
                                        "mcp": {"servers": servers}})
    store = SqliteStore(folder / f"{name}.sqlite3")
    ai = InstanceAI(store, InProcessBus(store), model="gpt-test", settings=settings,
                    options=AssistantOptions(generate_titles=False))
    await ai.start()
    return ai


async def _turn(ai: InstanceAI, thread: str) -> tuple[float, float]:
    """One turn: (wall seconds, CPU seconds of this process) from send to run-finish."""
    wall, cpu = time.perf_counter(), time.process_time()
    await ai.send(thread, "hello")
    async for event in ai.events(thread):
        data = event.data()
        if data["type"] == "run-finish":
            status = data["payload"].get("status")
            if status not in (None, "completed"):
                raise RuntimeError(f"turn of {thread} ended {status}: {data['payload']}")
            break
    return time.perf_counter() - wall, time.process_time() - cpu


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    ordered = sorted(walls)
    return {"turn_median_s": round(statistics.median(walls), 4),
            "turn_p90_s": round(ordered[max(0, int(len(ordered) * 0.9) - 1)], 4),
            "turn_min_s": round(ordered[0], 4),
            "cpu_median_s": round(statistics.median(cpus), 4)}


async def main(tools: int, turns: int) -> dict[str, Any]:
    started = load()
    with tempfile.TemporaryDirectory(prefix="mcp-many-") as tmp:
        folder = Path(tmp)
        async with MockOpenAIServer(_answer) as model:
            baseline = await _agent(folder, "baseline", model, {})
            ready_at = time.perf_counter()
            many = await _agent(folder, "many", model,
                                {"many": stdio_config("tools", env={"MCP_TEST_FILLERS": str(tools)})})
            try:
                mcp = many.mcp
                assert mcp is not None
                await mcp.wait_starting(600)
                ready_s = time.perf_counter() - ready_at
                conn = mcp.connections["many"]
                if conn.state != "ready":
                    raise RuntimeError(f"the MCP server did not start: {conn.failure()}")
                listed = len(conn.tools)
                # one warm-up turn each (imports, first connection), not counted
                await _turn(baseline, "warm-b")
                await _turn(many, "warm-m")
                sides: dict[str, InstanceAI] = {"baseline": baseline, "many": many}
                walls: dict[str, list[float]] = {k: [] for k in sides}
                cpus: dict[str, list[float]] = {k: [] for k in sides}
                first_request: dict[str, dict[str, Any]] = {}
                for i in range(turns):
                    order = ("baseline", "many") if i % 2 == 0 else ("many", "baseline")
                    for side in order:
                        before = len(model.requests)
                        wall, cpu = await _turn(sides[side], f"{side}-{i}")
                        walls[side].append(wall)
                        cpus[side].append(cpu)
                        if side not in first_request:
                            body = model.requests[before].body
                            first_request[side] = {
                                "request_bytes": len(json.dumps(body).encode()),
                                "tools_offered": len(body.get("tools") or []),
                                "mcp_tools_offered": sum(1 for t in body.get("tools") or []
                                                         if t["function"]["name"].startswith("mcp__")),
                            }
            finally:
                await many.shutdown()
                await baseline.shutdown()
    out: dict[str, Any] = {"benchmark": "mcp_many_tools", "tools_listed": listed, "turns_per_side": turns,
                           "many_server_ready_s": round(ready_s, 3)}
    for side in ("baseline", "many"):
        out[side] = {**_summary(walls[side], cpus[side]), **first_request[side]}
    out["turn_ratio"] = round(out["many"]["turn_median_s"] / out["baseline"]["turn_median_s"], 3)
    out["cpu_ratio"] = round(out["many"]["cpu_median_s"] / max(out["baseline"]["cpu_median_s"], 1e-9), 3)
    out["request_bytes_ratio"] = round(out["many"]["request_bytes"] / out["baseline"]["request_bytes"], 3)
    out["machine"] = machine(started)
    return out


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", type=int, default=10_000, help="listed-only tools of the MCP server")
    parser.add_argument("--turns", type=int, default=20, help="turns per side (taking turns)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.tools, args.turns)), indent=2))
