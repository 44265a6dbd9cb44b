"""Runtime overhead: the agent loop per tool round trip, and chunks/s through the OpenAI adapter.

    python benchmarks/runtime_overhead.py [--rounds 300] [--chunks 20000]

Prints one JSON object:

* ``loop``: a ``ScriptedModel`` asks for one no-op tool call per response, ``rounds`` times, then
  answers. The time spent inside the model's stream is measured and subtracted, so
  ``overhead_per_round_trip_us`` is the loop's own cost (message list, request building, tool
  validation and execution, chunks, state) per model-call + tool-call round trip.
* ``adapter``: a local OpenAI-wire-format server (a separate process) streams ``chunks`` one-word
  SSE chunks; ``raw_client_chunks_per_s`` is the bare ``openai`` client, ``adapter_chunks_per_s``
  the same stream through ``OpenAIModel.stream`` and ``agent_chunks_per_s`` through ``Agent.stream``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from instance_ai_tui.runtime import (  # noqa: E402
    Agent,
    ModelRequest,
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
    TextDeltaChunk,
    tool,
)


class TimedModel:
    """Wraps a model and measures the time spent inside its stream."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[Any]:
        it = self.inner.stream(request, cancel=cancel).__aiter__()
        while True:
            start = time.perf_counter()
            try:
                chunk = await it.__anext__()
            except StopAsyncIteration:
                self.seconds += time.perf_counter() - start
                return
            self.seconds += time.perf_counter() - start
            yield chunk


async def bench_loop(rounds: int) -> dict[str, Any]:
    @tool
    def noop(n: int) -> dict:
        "Do nothing."
        return {"n": n}

    def policy(request: ModelRequest) -> ScriptedResponse:
        done = sum(1 for m in request.messages if m["role"] == "tool")
        if done >= rounds:
            return ScriptedResponse(text="finished")
        return ScriptedResponse(tool_calls=[ScriptedToolCall("noop", {"n": done})])

    results = []
    for _ in range(3):
        model = TimedModel(ScriptedModel(policy))
        agent = Agent("bench", "Benchmark.", model, [noop], max_iterations=rounds + 1)
        start = time.perf_counter()
        result = await agent.generate("go")
        total = time.perf_counter() - start
        assert result.status == "success" and result.text == "finished", result.error
        results.append((total, model.seconds))
    total, model_seconds = min(results)
    return {
        "rounds": rounds,
        "total_s": round(total, 4),
        "model_s": round(model_seconds, 4),
        "overhead_per_round_trip_us": round((total - model_seconds) / rounds * 1e6, 1),
        "overhead_first_50_rounds_us": await _short(policy_rounds=50),
        "note": "best of several runs; model time (ScriptedModel) excluded; the model context is built "
        "incrementally (no per-call rebuild of the history)",
    }


async def _short(policy_rounds: int) -> float:
    @tool
    def noop(n: int) -> dict:
        "Do nothing."
        return {"n": n}

    def policy(request: ModelRequest) -> ScriptedResponse:
        done = sum(1 for m in request.messages if m["role"] == "tool")
        return ScriptedResponse(text="ok") if done >= policy_rounds else ScriptedResponse(
            tool_calls=[ScriptedToolCall("noop", {"n": done})])

    best = float("inf")
    for _ in range(5):
        model = TimedModel(ScriptedModel(policy))
        agent = Agent("bench", "Benchmark.", model, [noop], max_iterations=policy_rounds + 1)
        start = time.perf_counter()
        await agent.generate("go")
        best = min(best, (time.perf_counter() - start - model.seconds) / policy_rounds * 1e6)
    return round(best, 1)


async def start_server(script: list[dict[str, Any]]) -> tuple[asyncio.subprocess.Process, str]:
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(script, fh)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.openai_server", "--script", path, cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    return proc, json.loads(line)["base_url"]


async def bench_adapter(chunks: int) -> dict[str, Any]:
    import openai

    from instance_ai_tui.runtime.openai_model import OpenAIModel

    text = "tok " * chunks
    proc, base_url = await start_server([{"when": {"contains": "go"}, "respond": {"text": text}}])
    try:
        messages = [{"role": "user", "content": "go"}]
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
        raw_best = adapter_best = agent_best = 0.0
        for _ in range(3):
            start = time.perf_counter()
            stream = await client.chat.completions.create(model="m", messages=messages, stream=True,
                                                          stream_options={"include_usage": True})
            n = 0
            async for c in stream:
                if c.choices and c.choices[0].delta.content:
                    n += 1
            raw_best = max(raw_best, n / (time.perf_counter() - start))

            model = OpenAIModel("m", base_url=base_url, api_key="x", max_retries=0)
            start = time.perf_counter()
            n = 0
            async for _chunk in model.stream(ModelRequest(messages=messages)):
                n += 1
            adapter_best = max(adapter_best, (n - 2) / (time.perf_counter() - start))  # minus usage + finish

            agent = Agent("bench", "", model)
            start = time.perf_counter()
            n = 0
            async for chunk in agent.stream("go"):
                n += isinstance(chunk, TextDeltaChunk)
            agent_best = max(agent_best, n / (time.perf_counter() - start))
            await model.aclose()
        await client.close()
    finally:
        proc.terminate()
        await proc.wait()
    return {
        "chunks": chunks,
        "raw_client_chunks_per_s": round(raw_best),
        "adapter_chunks_per_s": round(adapter_best),
        "agent_chunks_per_s": round(agent_best),
        "note": "the server is a separate Python process on the same machine; it is the bottleneck of the raw number",
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=10000)
    args = parser.parse_args()
    out = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loop": await bench_loop(args.rounds),
        "adapter": await bench_adapter(args.chunks),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
