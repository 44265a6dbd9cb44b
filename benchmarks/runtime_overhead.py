"""Runtime overhead: the agent loop per tool round trip, and chunks/s through the OpenAI adapter.

    python benchmarks/runtime_overhead.py [--rounds 300] [--chunks 20000]

Prints one JSON object:

* ``loop``: a ``ScriptedModel`` asks for one no-op tool call per response, ``rounds`` times, then
  answers. The time spent inside the model's stream is measured and subtracted, so
  ``overhead_per_round_trip_us`` is the loop's own cost (message list, request building, context
  fitting, tool validation and execution, chunks, state) per model-call + tool-call round trip, in
  wall time; ``cpu_overhead_per_round_trip_us`` the same in this thread's CPU time (what a busy machine
  changes least). The script counts its calls and says its usage, so the model's own time stays the
  same per call however long the run grows (``--rounds 3000``: a thread ten times the default).
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
turn, so the load falls on both alike: ``before`` and ``after``, a list of results each. The ``loop``
part runs this script on both sides, over the baseline's package (``RUNTIME_OVERHEAD_PACKAGE``): the
same measurement of two loops (``package`` says which was imported).
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
#: the checkout whose package is measured (``--baseline`` sets it for the loop's ``before``)
PACKAGE = Path(os.environ.get("RUNTIME_OVERHEAD_PACKAGE") or ROOT)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(PACKAGE))

from instance_ai_tui.runtime.agent import Agent  # noqa: E402
from instance_ai_tui.runtime.chunks import TextDeltaChunk  # noqa: E402

try:
    from instance_ai_tui.runtime.context import ContextBudget
except ImportError:  # a baseline from before the context budget (issue 47)
    ContextBudget = None  # type: ignore[assignment,misc]
from instance_ai_tui.runtime.model import ModelRequest  # noqa: E402
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall  # noqa: E402
from instance_ai_tui.runtime.tools import tool  # noqa: E402
from instance_ai_tui.runtime.usage import Usage  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import with_machine  # noqa: E402


class TimedModel:
    """Wraps a model and measures the time spent inside its stream."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = self.cpu_seconds = 0.0
        # a window that holds every round (issue 47's fitting would otherwise leave the oldest rounds
        # of the turn out, as it should)
        if ContextBudget is not None:
            self.context = ContextBudget(inner.name, window=100_000_000)

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[Any]:
        it = self.inner.stream(request, cancel=cancel).__aiter__()
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                chunk = await it.__anext__()
            except StopAsyncIteration:
                return
            finally:
                self.seconds += time.perf_counter() - start
                self.cpu_seconds += time.thread_time() - cpu
            yield chunk


async def _loop_once(rounds: int) -> tuple[float, float]:
    """One run of ``rounds`` tool round trips: the loop's own wall and CPU seconds (model time out)."""
    @tool
    def noop(n: int) -> dict:
        "Do nothing."
        return {"n": n}

    calls = 0
    usage = Usage(input_tokens=0, output_tokens=1, total_tokens=1)  # (said: nothing estimated per call)

    def policy(request: ModelRequest) -> ScriptedResponse:
        nonlocal calls
        calls += 1
        if calls > rounds:
            return ScriptedResponse(text="finished", usage=usage)
        return ScriptedResponse(tool_calls=[ScriptedToolCall("noop", {"n": calls})], usage=usage)

    model = TimedModel(ScriptedModel(policy))
    agent = Agent("bench", "Benchmark.", model, [noop], max_iterations=rounds + 1)
    start, cpu = time.perf_counter(), time.thread_time()
    result = await agent.generate("go")
    wall, cpu = time.perf_counter() - start - model.seconds, time.thread_time() - cpu - model.cpu_seconds
    assert result.status == "success" and result.text == "finished", result.error
    return wall, cpu


async def bench_loop(rounds: int) -> dict[str, Any]:
    import instance_ai_tui

    runs = [await _loop_once(rounds) for _ in range(3)]
    short = [await _loop_once(50) for _ in range(5)]
    return {
        "rounds": rounds,
        "package": str(Path(instance_ai_tui.__file__).parents[1]),
        "overhead_per_round_trip_us": round(min(w for w, _ in runs) / rounds * 1e6, 1),
        "cpu_overhead_per_round_trip_us": round(min(c for _, c in runs) / rounds * 1e6, 1),
        "overhead_first_50_rounds_us": round(min(w for w, _ in short) / 50 * 1e6, 1),
        "cpu_overhead_first_50_rounds_us": round(min(c for _, c in short) / 50 * 1e6, 1),
        "note": "best of 3 runs (5 of 50 rounds); model time (ScriptedModel) excluded",
    }


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
                script = ROOT if part == "loop" else root  # (the loop: one measurement of two packages)
                run = await asyncio.create_subprocess_exec(
                    sys.executable, str(script / "benchmarks" / "runtime_overhead.py"), "--only", part, *sizes,
                    cwd=str(root), env={**os.environ, "PYTHONPATH": str(root), "RUNTIME_OVERHEAD_PACKAGE": str(root)},
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
