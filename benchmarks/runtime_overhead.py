"""Runtime overhead: the agent loop per tool round trip, and chunks/s through the OpenAI adapter.

    python benchmarks/runtime_overhead.py [--rounds 300] [--chunks 20000]

Prints one JSON object:

* ``loop``: a ``ScriptedModel`` asks for one no-op tool call per response, ``rounds`` times, then
  answers. The time spent inside the model's stream is measured and subtracted, so
  ``overhead_per_round_trip_us`` is the loop's own cost (message list, request building, tool
  validation and execution, chunks, state) per model-call + tool-call round trip.
* ``round_trips``: ``--trips`` tool round trips (a no-op tool asked for each time, then an answer) against
  the same local OpenAI-wire server, each variant in a fresh process: our ``Agent`` + ``OpenAIModel``
  (``ours``: its own httpx requests and event-stream reader, no SDK since issue 46), and the peers
  ``openai-agents`` and
  ``pydantic-ai`` when installed (``pip install openai-agents 'pydantic-ai-slim[openai]'``; a missing
  peer is reported as skipped). Per variant: wall seconds, client CPU seconds, peak RSS (MB).
* ``adapter``: a local OpenAI-wire-format server (a separate process) streams ``chunks`` one-word
  SSE chunks; ``raw_client_chunks_per_s`` is the bare ``openai`` client, ``adapter_chunks_per_s``
  the same stream through ``OpenAIModel.stream`` and ``agent_chunks_per_s`` through ``Agent.stream``.

With ``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/before <commit>``) each part
runs in a fresh process of that checkout's own script and then of this one, ``--repeats`` times in
turn, so the load falls on both alike: ``before`` and ``after``, a list of results each.
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

from instance_ai_tui.runtime.agent import Agent  # noqa: E402
from instance_ai_tui.runtime.chunks import TextDeltaChunk  # noqa: E402
from instance_ai_tui.runtime.context import ContextBudget  # noqa: E402
from instance_ai_tui.runtime.model import ModelRequest  # noqa: E402
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall  # noqa: E402
from instance_ai_tui.runtime.tools import tool  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402


class TimedModel:
    """Wraps a model and measures the time spent inside its stream."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        # the policies count the results they are sent: a window that holds every round (issue 47's
        # fitting would otherwise leave the oldest rounds of the turn out, as it should)
        self.context = ContextBudget(inner.name, window=100_000_000)

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


async def start_server(script: list[dict[str, Any]], *flags: str) -> tuple[asyncio.subprocess.Process, str]:
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(script, fh)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.openai_server", "--script", path, *flags, cwd=str(ROOT),
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


VARIANTS = ("ours", "openai_agents", "pydantic_ai")


def _trip_script(trips: int) -> list[dict[str, Any]]:
    calls = [{"tool_calls": [{"name": "noop", "arguments": {"n": i}}], "prompt_tokens": 10, "completion_tokens": 5}
             for i in range(trips)]
    return [*calls, {"text": "done", "prompt_tokens": 10, "completion_tokens": 1}]


async def _one_variant(variant: str, base_url: str, trips: int) -> dict[str, Any]:
    """Run ``trips`` tool round trips with one runtime (in this process) and return its figures."""
    import resource

    import httpx
    import openai

    async with httpx.AsyncClient() as http:  # a fresh script for this run
        root = base_url.removesuffix("/").removesuffix("/v1")
        (await http.post(f"{root}/_mock/script", json=_trip_script(trips))).raise_for_status()
    client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0)
    calls = 0

    def noop(n: int) -> dict[str, int]:
        nonlocal calls
        calls += 1
        return {"n": n}

    start, cpu = time.perf_counter(), time.process_time()
    if variant == "ours":
        from instance_ai_tui.runtime.openai_model import OpenAIModel

        model = OpenAIModel("m", base_url=base_url, api_key="x", max_retries=0)
        agent = Agent("bench", "Call noop until told otherwise.", model, tools=[tool(noop)], max_iterations=trips + 5)
        result = await agent.generate("go")
        text = result.text
    elif variant == "openai_agents":
        from agents import Agent as PeerAgent
        from agents import OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

        set_tracing_disabled(True)
        peer = PeerAgent(name="bench", instructions="Call noop until told otherwise.", tools=[function_tool(noop)],
                         model=OpenAIChatCompletionsModel(model="m", openai_client=client))
        streamed = Runner.run_streamed(peer, "go", max_turns=trips + 5)
        async for _event in streamed.stream_events():
            pass
        text = str(streamed.final_output)
    else:
        from pydantic_ai import Agent as PeerAgent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.usage import UsageLimits

        peer = PeerAgent(OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client)),
                         instructions="Call noop until told otherwise.", tools=[noop])
        async with peer.iter("go", usage_limits=UsageLimits(request_limit=None)) as run:
            async for node in run:
                if peer.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _event in events:
                            pass
        assert run.result is not None
        text = str(run.result.output)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    await client.close()
    return {"variant": variant, "trips": calls, "answer": text, "wall_s": round(wall, 3), "cpu_s": round(used, 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _installed(variant: str) -> bool:
    import importlib.util

    module = {"openai_agents": "agents", "pydantic_ai": "pydantic_ai"}.get(variant)
    return module is None or importlib.util.find_spec(module) is not None


async def bench_round_trips(trips: int, repeats: int) -> dict[str, Any]:
    proc, base_url = await start_server([], "--openai-null-content")  # the peers send null, as OpenAI allows
    out: dict[str, Any] = {"trips": trips, "note": "best of the repeats; each run a fresh process (cold imports "
                           "excluded from the timings, included in RSS)"}
    try:
        for variant in VARIANTS:
            if not _installed(variant):
                out[variant] = {"skipped": "not installed: pip install openai-agents 'pydantic-ai-slim[openai]'"}
                continue
            best: dict[str, Any] | None = None
            for _ in range(repeats):
                run = await asyncio.create_subprocess_exec(
                    sys.executable, str(ROOT / "benchmarks" / "runtime_overhead.py"), "--one", variant, "--base-url", base_url,
                    "--trips", str(trips), cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)},
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                stdout, stderr = await run.communicate()
                if run.returncode != 0:
                    best = {"error": stderr.decode()[-500:]}
                    break
                figures = json.loads(stdout.decode().strip().splitlines()[-1])
                if best is None or figures["cpu_s"] < best["cpu_s"]:
                    best = figures
            out[variant] = best
        ours = out.get("ours", {})
        for variant in VARIANTS[1:]:
            other = out.get(variant, {})
            if "cpu_s" in other and "cpu_s" in ours and ours["cpu_s"]:
                other["cpu_vs_ours"] = round(other["cpu_s"] / ours["cpu_s"], 2)
    finally:
        proc.terminate()
        await proc.wait()
    return out


async def _before_after(args: argparse.Namespace) -> dict[str, Any]:
    """Each part (``--only``) of the baseline checkout's script and of this one, in turns."""
    sides = {"before": args.baseline.resolve(), "after": ROOT}
    out: dict[str, Any] = {"baseline": str(sides["before"]), "before": {}, "after": {}}
    sizes = ["--rounds", str(args.rounds), "--chunks", str(args.chunks), "--trips", str(args.trips), "--repeats", "1"]
    for part in ([args.only] if args.only else ["loop", "adapter", "round_trips"]):
        for _ in range(args.repeats):
            for side, root in sides.items():
                run = await asyncio.create_subprocess_exec(
                    sys.executable, str(root / "benchmarks" / "runtime_overhead.py"), "--only", part, *sizes,
                    cwd=str(root), env={**os.environ, "PYTHONPATH": str(root)},
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
                stdout, stderr = await run.communicate()
                result = json.loads(stdout) if run.returncode == 0 else {"error": stderr.decode()[-500:]}
                out[side].setdefault(part, []).append(result.get(part, result))
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--trips", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("loop", "adapter", "round_trips"))
    parser.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", type=Path, help="another checkout: before / after in one run, in turns")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(await _one_variant(args.one, args.base_url, args.trips)))
        return
    if args.baseline is not None:
        print(json.dumps(with_machine(await _before_after(args)), indent=2))
        return
    out: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    if args.only in (None, "loop"):
        out["loop"] = await bench_loop(args.rounds)
    if args.only in (None, "adapter"):
        out["adapter"] = await bench_adapter(args.chunks)
    if args.only in (None, "round_trips"):
        out["round_trips"] = await bench_round_trips(args.trips, args.repeats)
    print(json.dumps(with_machine(out), indent=2))


if __name__ == "__main__":
    from machine import quiet_and_loaded

    quiet_and_loaded(__file__)  # --loaded [--rounds N]: quiet and beside stress-ng --cpu 2, alternating
    asyncio.run(main())
