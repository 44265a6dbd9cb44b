"""TUI ingest benchmark: a recorded 100k-event stream, from bytes to the projected frame, headless.

    python benchmarks/tui_ingest.py [--events 100000] [--subagents 20] [--runs 4]
                                    [--paths embedded,remote,preparsed] [--cold-start]
                                    [--loaded] [--rounds N]

The stream is generated deterministically (fixed seed): ``--runs`` agent runs in one thread,
each with reasoning and text deltas (markdown with headings, lists and a code fence),
``tasks-update`` plans, orchestrator ``delegate`` tool calls and ``--subagents`` sub-agents
in total, each with tool calls, results, a few tool errors, status messages and streamed
text. ``StreamClient`` (a ``Client`` test double) hands the app what a real client's
``events()`` yields, so the clock covers what a person gets, decoding included:

* ``embedded``: ``EmbeddedClient.batches`` over a real SQLite log of the stream (written before
  the clock, as the bus writes it) read through the real in-process bus a page at a time
  (``subscribe_batches``): each stored JSON line decoded in the client, a run of deltas of a page
  read in bulk (``protocol.delta_runs.line_runs``), the rest parsed into a model unless it is a
  text delta, reasoning delta or status (``StreamItem.wire``);
* ``remote``: ``RemoteClient.batches`` (what the app asks for) over the SSE bytes of the stream
  (``id:``/``data:`` frames, each event's JSON as our server writes it) served over a real socket on
  127.0.0.1 by a process of its own (``--serve``): httpx, the reconnecting reader, the incremental
  SSE parser (a run of our delta frames read in bulk, ``protocol.delta_runs``) and the client's
  decoding, as from our server (the socket's backlog tells the app a flood, ``Batch.queued``);
* ``preparsed``: events parsed before the clock starts (the app's own cost only; a reference,
  not what a person gets).

Each path runs in its own interpreter. The app runs in ``App.run_test(size=(120, 40))``.

Printed JSON (one object):

* ``events_per_second``: events folded by the app / seconds from the first event pulled from
  the stream to the moment the app asked for the event after the last one;
* ``events_per_cpu_second``: the same events over the CPU time this process spent meanwhile
  (``ingest_cpu_seconds``: the ingest, the frames and Textual's work alike; less sensitive than
  the wall clock to other processes on a loaded machine);
* ``max_loop_stall_ms``: the longest gap seen by a 5 ms heartbeat task on the event loop while
  the stream arrives (beats that end after the app pulled the stream's first item, up to the final
  render): how late a keypress could be handled then; ``p99_loop_stall_ms`` too. The heartbeat runs
  from the app's start: the beats that end before the stream's first item (the app's own first
  layout and paint, which ``launch_to_ready.py`` times) are reported apart, never dropped:
  ``before_stream_max_loop_stall_ms`` (and its CPU), and ``whole_run_max_loop_stall_ms`` is the
  longest of all (``stall_phases`` in the JSON says so);
* ``max_loop_stall_cpu_ms`` (and ``p99_``): the event loop thread's CPU time between two beats of
  that heartbeat (``time.thread_time``), same phase: the work of the loop's longest turn, without
  the time the machine gave to other processes meanwhile (on a busy machine the wall-clock stall is
  mostly that);
* ``max_frame_gap_ms``: the longest interval between two runs of the app's 25 Hz frame
  projection; ``slowest_frame_ms``: the longest single projection;
* ``time_to_final_render_s``: from the last event ingested until ``wait_until_rendered``
  (model drained, every Markdown block parsed); ``total_s``: first event to final render;
* ``peak_rss_mb`` (``ru_maxrss``, includes the generated stream) and ``rss_before_app_mb``;
* ``cold_start`` (``--cold-start``): the first frame of ``python -m instance_ai_tui --model demo``
  in a pseudo-terminal (``launch_to_ready.py`` measures what a person waits for at start);
* ``client_path_over_app_only``: each client path's events/s over the preparsed path's;
* ``cpu_s_per_100k_events``: ``ingest_cpu_seconds`` per 100k events (work per unit: it must not
  depend on how busy the machine is);
* ``machine``: the load at the start and the end of the run (figures are only comparable at a
  similar load, and side by side within one run).

The figures are under ``quiet`` (a list, one entry a round); with ``--loaded`` also under ``loaded``:
the same paths beside ``stress-ng --cpu 2``, which the benchmark starts and stops itself, the rounds
alternating quiet and loaded; ``cpu_per_100k_loaded_over_quiet`` is the cliff of issue 44 (1.0: the
work per event does not depend on the load; target <= 1.5).

Targets (issues 5 and 30): >= 300k events/s and max stall < 40 ms, on the client paths.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import LOADED, QUIET, add_load_switch, conditions, load, machine, median, ratio  # noqa: E402

THREAD = "thread-bench"
SIZE = (120, 40)
TARGETS = {"events_per_second": 300_000, "max_loop_stall_ms": 40}
_WORDS = (
    "the workflow node sends a message to Slack every morning with weather data from the API and "
    "then checks each result item field value in JSON before the schedule trigger runs again"
).split()


# --------------------------------------------------------------------------- the stream


class _Tokens:
    """Deterministic markdown-ish tokens of 2-8 characters."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.count = 0

    def take(self, n: int, *, fence: bool = False) -> list[str]:
        rng, out = self.rng, []
        fence_at = n // 2 if fence and n > 40 else -1
        for index in range(n):
            self.count += 1
            if index == fence_at:
                out += ["\n\n```json\n", '{"node": ', '"slack",', ' "ok": true}', "\n```\n\n"]
                continue
            roll = rng.random()
            if self.count % 60 == 0:
                out.append("\n\n")
            elif self.count % 250 == 0:
                out.append(f"\n\n## Step {self.count // 250}\n\n")
            elif roll < 0.04:
                out.append("\n- ")
            elif roll < 0.06:
                out.append(" **" + rng.choice(_WORDS) + "**")
            else:
                out.append(" " + rng.choice(_WORDS))
        return out[:n] if len(out) > n else out


def make_events(total: int = 100_000, subagents: int = 20, runs: int = 4, seed: int = 7) -> list[dict[str, Any]]:
    """The recorded stream: ``total`` events, ``runs`` runs, ``subagents`` sub-agents."""
    if runs < 1 or subagents < runs:
        raise ValueError("need at least one run and one sub-agent per run")
    rng = random.Random(seed)
    tokens = _Tokens(rng)
    events: list[dict[str, Any]] = []
    per_run = total // runs
    for r in range(runs):
        budget = per_run if r < runs - 1 else total - per_run * (runs - 1)
        agents = subagents // runs + (1 if r < subagents % runs else 0)
        events.extend(_make_run(r, budget, agents, rng, tokens))
    assert len(events) == total, (len(events), total)
    return events


def _make_run(r: int, budget: int, agents: int, rng: random.Random, tokens: _Tokens) -> list[dict[str, Any]]:
    run, root = f"run-{r + 1}", "agent-001"

    def ev(kind: str, agent: str, payload: dict[str, Any], response: str | None = None) -> dict[str, Any]:
        event: dict[str, Any] = {"type": kind, "runId": run, "agentId": agent, "payload": payload}
        if response is not None:
            event["responseId"] = response
        return event

    def tasks(done: int, running: int | None) -> dict[str, Any]:
        items = []
        for k in range(agents + 1):
            status = "done" if k < done else ("in_progress" if k == running else "todo")
            label = f"Build part {k + 1} with builder {k + 1}" if k < agents else "Check and activate"
            items.append({"id": f"t{r}-{k}", "description": label, "status": status})
        return ev("tasks-update", root, {"tasks": {"tasks": items}})

    tool_calls_per_agent = 10
    structural = 4 + 2 + agents * (5 + tool_calls_per_agent * 2 + 3) + 2
    deltas = budget - structural
    if deltas < agents * 20:
        raise ValueError(f"--events too small for {agents} sub-agents per run")
    reasoning_n = deltas * 4 // 100
    intro_n = deltas * 4 // 100
    final_n = deltas * 22 // 100
    between_n = deltas * 2 // 100 // agents
    sub_total = deltas - reasoning_n - intro_n - final_n - between_n * agents
    sub_n = [sub_total // agents + (1 if k < sub_total % agents else 0) for k in range(agents)]

    out: list[dict[str, Any]] = [
        ev("run-start", root, {"messageId": f"m{r}", "messageGroupId": f"mg-{r}",
                               "userMessage": f"Request {r + 1}: build {agents} workflows that post the weather to Slack"}),
    ]
    if r == 0:
        out.append(ev("thread-title-updated", root, {"title": "Benchmark: weather to Slack"}))
    else:
        out.append(ev("status", root, {"message": f"Planning request {r + 1}"}))
    out += [ev("reasoning-delta", root, {"text": t}, f"r{r}-0") for t in tokens.take(reasoning_n)]
    out.append(tasks(0, 0))
    out += [ev("text-delta", root, {"text": t}, f"r{r}-1") for t in tokens.take(intro_n)]
    out.append(ev("status", root, {"message": "Delegating to the builders"}))
    for k in range(agents):
        child, delegate = f"agent-{r + 1:02d}{k + 1:02d}", f"tc-{r}-d{k}"
        out.append(ev("tool-call", root, {"toolCallId": delegate, "toolName": "delegate",
                                          "args": {"role": "workflow-builder", "task": f"part {k + 1}"}}, f"r{r}-2"))
        out.append(ev("agent-spawned", child, {"parentId": root, "role": "workflow-builder",
                                                "tools": ["search-nodes", "create-workflow"], "taskId": f"t{r}-{k}"}))
        out.append(ev("status", child, {"message": f"builder {k + 1}: looking up nodes"}))
        text = tokens.take(sub_n[k], fence=True)
        chunk = max(1, len(text) // (tool_calls_per_agent + 1))
        for j in range(tool_calls_per_agent):
            call = f"tc-{r}-{k}-{j}"
            out.append(ev("tool-call", child, {"toolCallId": call, "toolName": "search-nodes",
                                               "args": {"query": rng.choice(_WORDS), "limit": 5}}, f"c{r}-{k}-{j}"))
            out += [ev("text-delta", child, {"text": t}, f"c{r}-{k}-{j}") for t in text[j * chunk:(j + 1) * chunk]]
            if j % 4 == 3:
                out.append(ev("tool-error", child, {"toolCallId": call, "error": "rate limited: try again in 1 s"}))
            else:
                out.append(ev("tool-result", child, {"toolCallId": call, "result": {
                    "nodes": [{"type": f"n8n-nodes-base.{w}", "name": w.title()} for w in rng.sample(_WORDS, 3)]}}))
        out += [ev("text-delta", child, {"text": t}, f"c{r}-{k}-end") for t in text[tool_calls_per_agent * chunk:]]
        out.append(ev("agent-completed", child, {"role": "workflow-builder",
                                                  "result": f"Built part {k + 1}: 4 nodes, connected and saved."}))
        out.append(ev("tool-result", root, {"toolCallId": delegate, "result": {"ok": True, "part": k + 1}}))
        out.append(tasks(k + 1, k + 1))
        out += [ev("text-delta", root, {"text": t}, f"r{r}-3-{k}") for t in tokens.take(between_n)]
    out += [ev("text-delta", root, {"text": t}, f"r{r}-4") for t in tokens.take(final_n, fence=True)]
    out.append(tasks(agents + 1, None))
    out.append(ev("run-finish", root, {"status": "completed"}))
    # pad or trim the final answer so the run has exactly ``budget`` events
    while len(out) < budget:
        out.insert(-2, ev("text-delta", root, {"text": " done"}, f"r{r}-4"))
    while len(out) > budget:
        index = max(i for i, e in enumerate(out) if e["type"] == "text-delta")
        del out[index]
    return out


# --------------------------------------------------------------------------- the client double


def _stream_client_class() -> type:
    from instance_ai_tui.client.base import Client, ClientError, ConnectionState, StreamItem
    from instance_ai_tui.protocol.api import ThreadInfo, ThreadMessages, ThreadStatus
    from instance_ai_tui.protocol.ingest import Batch

    class StreamClient(Client):
        """One thread whose whole log is the recorded stream; read-only. ``events()`` hands the
        app what ``source`` yields (a real client's ``events()``, or items parsed up front)."""

        mode = "embedded"
        model_name = "recorded stream"

        def __init__(self, source: Any, count: int) -> None:
            super().__init__()
            self.source = source
            self.count = count
            self.first_pulled: float | None = None
            self.done_at: float | None = None
            self.cpu_first_pulled = self.cpu_done_at = 0.0
            self.done = asyncio.Event()
            from datetime import datetime

            now = datetime.now(UTC)
            self.info = ThreadInfo(id=THREAD, title="", created_at=now, updated_at=now)

        async def open(self) -> None:
            self._set_state(ConnectionState.EMBEDDED)

        async def close(self) -> None:
            self._set_state(ConnectionState.OFFLINE)

        async def list_threads(self) -> list[ThreadInfo]:
            return [self.info]

        async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
            raise ClientError("the benchmark client is read-only")

        async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
            raise ClientError("the benchmark client is read-only")

        async def delete_thread(self, thread_id: str) -> None:
            raise ClientError("the benchmark client is read-only")

        async def send(self, thread_id: str, text: str) -> str:
            raise ClientError("the benchmark client is read-only")

        async def cancel(self, thread_id: str) -> None:
            return None

        async def confirm(self, request_id: str, body: Any) -> Any:
            raise ClientError("the benchmark client is read-only")

        async def messages(self, thread_id: str) -> ThreadMessages:
            return ThreadMessages(thread_id=thread_id, messages=[], next_event_id=1)

        async def status(self, thread_id: str) -> ThreadStatus:
            return ThreadStatus()

        async def events(self, thread_id: str, after: int | None = None) -> AsyncIterator[StreamItem]:
            raise ClientError("the app reads batches()")
            yield  # (an async generator, as the interface's)

        async def batches(self, thread_id: str, after: int | None = None) -> AsyncIterator[Batch]:
            self.first_pulled = time.perf_counter()
            self.cpu_first_pulled = time.process_time()
            seen = 0
            done = False
            async for item in self.source(thread_id, after):
                yield item
                seen += item.count  # (a batch stands for its events)
                if seen >= self.count and not done:
                    done = True
                    self.done_at = time.perf_counter()  # the app asked for the item after the last one
                    self.cpu_done_at = time.process_time()
                    self.done.set()
            await asyncio.Event().wait()  # live: nothing more comes

    return StreamClient


def wire_lines(events: list[dict[str, Any]]) -> list[str]:
    """Each event's JSON as our server writes it to its log and its SSE frames (the bus's one
    serialisation, ``bus.base.to_new_event``: the model's key order, no ``None``)."""
    from instance_ai_tui.bus.base import to_new_event
    from instance_ai_tui.protocol.events import parse_event

    return [to_new_event(parse_event(event)).json for event in events]


def _preparsed_source(lines: list[str]) -> Any:
    """Events parsed before the clock starts: the app's own cost only (not what a person gets)."""
    from instance_ai_tui.protocol.events import parse_event
    from instance_ai_tui.protocol.ingest import Batch, StreamItem

    parsed = [parse_event(line) for line in lines]

    async def source(thread_id: str, after: int | None) -> AsyncIterator[Any]:
        start = max(0, after or 0)
        for first in range(start, len(parsed), 1000):  # pages of models, as the log's pages
            items: list[Any] = [StreamItem(index + 1, parsed[index]) for index in range(first, min(len(parsed), first + 1000))]
            yield Batch(items, max(0, len(parsed) - first - 1000))

    return source


async def _embedded_source(lines: list[str]) -> Any:
    """The embedded client's real ``batches`` over a real SQLite log holding the stream (written
    before the clock starts, as the bus writes it: type and run id columns beside each event's JSON),
    read through the real in-process bus (``subscribe_batches``: a page of the log at a time), as
    the app reads a thread it opens."""
    from instance_ai_tui.bus.memory import InProcessBus
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.store.base import NewEvent, StoredEvent
    from instance_ai_tui.store.sqlite import SqliteStore

    folder = tempfile.mkdtemp(prefix="tui-ingest-")
    store = SqliteStore(Path(folder) / "log.sqlite3")
    await store.open()
    await store.create_thread(THREAD)
    kinds = [str(json.loads(line).get("type", "")) for line in lines]
    runs = [str(json.loads(line).get("runId", "")) for line in lines]
    for start in range(0, len(lines), 10_000):
        await store.append_events(THREAD, [NewEvent(kinds[i], runs[i], lines[i])
                                           for i in range(start, min(len(lines), start + 10_000))])
    bus = InProcessBus(store)

    async def close() -> None:
        await bus.close()
        await store.close()

    _CLOSE.append(close)

    class Service:
        """The part of the assistant service that ``EmbeddedClient`` reads (``AssistantService``'s
        own ``events``/``event_batches`` are these two bus calls)."""

        async def get_thread(self, thread_id: str) -> None:
            return None

        def events(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
            return bus.subscribe(thread_id, after)

        def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
            return bus.subscribe_batches(thread_id, after)

    client = EmbeddedClient(Service())  # type: ignore[arg-type]
    return client.batches  # (what the app's ingest asks for)


def _remote_source(lines: list[str]) -> Any:
    """The remote client's real ``batches()``: the SSE bytes of the stream (``id:``/``data:`` frames,
    as our server sends them) served by a process of its own on 127.0.0.1 (``--serve``: written to
    the socket as fast as it takes them, after ``Last-Event-ID``), read through httpx by the
    reconnecting reader, the incremental SSE parser and the client's decoding, as from our server.
    The client is opened first (``RemoteClient.open``: its health request), before the clock, as
    the app opens it at launch before it reads a thread: the stream's first read does not pay the
    import of httpcore and the connection pool, which no stream of the app pays either."""
    from instance_ai_tui.client.remote import RemoteClient

    folder = tempfile.mkdtemp(prefix="tui-ingest-sse-")
    body = Path(folder) / "stream.sse"
    with body.open("w", encoding="utf-8") as out:
        for index, line in enumerate(lines):
            out.write(f"id: {index + 1}\ndata: {line}\n\n")
    port_file = Path(folder) / "port"
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(body), "--port-file", str(port_file)],
                              stdin=subprocess.DEVNULL)
    while not port_file.exists() or not port_file.read_text().strip():
        if server.poll() is not None:
            raise SystemExit("the SSE server of the benchmark did not start")
        time.sleep(0.02)
    port = int(port_file.read_text())
    client = RemoteClient(f"http://127.0.0.1:{port}")

    async def close() -> None:
        await client.close()
        server.terminate()
        server.wait()

    _CLOSE.append(close)

    async def opened() -> Any:
        await client.open()
        return client.batches  # (what the app's ingest asks for)

    return opened()


def serve(path: str, port_file: str) -> None:
    """``--serve``: the SSE frames of ``path`` after each request's ``Last-Event-ID``, then nothing
    (a live stream that waits), on 127.0.0.1 (a free port, written to ``port_file``)."""

    text = Path(path).read_text(encoding="utf-8")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:  # (requests on one connection: the health check, then the stream)
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            if head.split(" ", 2)[1].endswith("/health"):
                health = json.dumps({"service": "instance-ai", "model": "recorded stream"}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(health)).encode() + b"\r\n\r\n" + health)
                await writer.drain()
                continue
            after = 0
            for header in head.split("\r\n")[1:]:
                name, _, value = header.partition(":")
                if name.strip().lower() == "last-event-id" and value.strip().isdigit():
                    after = int(value.strip())
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\n\r\n")
            start = 0 if after == 0 else text.find(f"id: {after + 1}\n")
            data = text[start:].encode() if start >= 0 else b""
            for at in range(0, len(data), 1 << 16):
                writer.write(data[at:at + (1 << 16)])
                await writer.drain()
            await asyncio.Event().wait()  # live: nothing more comes

    def write_port(port: int) -> None:
        Path(port_file).write_text(str(port))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        write_port(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


#: what a source opened, closed when the measurement ends
_CLOSE: list[Any] = []

SOURCES = {"embedded": _embedded_source, "remote": _remote_source, "preparsed": _preparsed_source}


# --------------------------------------------------------------------------- measuring


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def run_ingest(events: list[dict[str, Any]], *, path: str, timeout: float) -> dict[str, Any]:
    from instance_ai_tui.config import Settings, UiSettings
    from instance_ai_tui.tui.app import InstanceAiApp

    lines = wire_lines(events)
    source = SOURCES[path](lines)
    if asyncio.iscoroutine(source):  # (a log to write, a client to open first: before the clock)
        source = await source
    client = _stream_client_class()(source, len(lines))
    frame_times: list[float] = []

    import instance_ai_tui.tui.app as app_module

    class BenchApp(InstanceAiApp):
        # CSS_PATH is resolved next to the class's module: point it back at the app's
        CSS_PATH = str(Path(app_module.__file__).with_name(str(InstanceAiApp.CSS_PATH)))

        async def _frame(self) -> None:  # the app's frame projection, timed from outside
            frame_times.append(time.perf_counter())
            await super()._frame()

    settings = Settings(ui=UiSettings(theme="textual-dark"))
    # tune_gc: as the CLI starts it (tui/heap.py); BENCH_TUNE_GC=0 measures the collector untuned
    tune_gc = os.environ.get("BENCH_TUNE_GC", "1") == "1"
    app = BenchApp(client, settings, watch_themes=False, persist_theme=False, tune_gc=tune_gc)
    rss_before = _rss_mb()
    beats: list[tuple[float, float, float]] = []  # (when the beat came, wall gap, CPU of the loop's thread)
    stop = asyncio.Event()

    async def heartbeat() -> None:
        loop_time, cpu_time = time.perf_counter, time.thread_time
        previous, previous_cpu = loop_time(), cpu_time()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now, now_cpu = loop_time(), cpu_time()
            beats.append((now, now - previous, now_cpu - previous_cpu))
            previous, previous_cpu = now, now_cpu

    async with app.run_test(size=SIZE) as pilot:
        beat = asyncio.create_task(heartbeat())
        await app.wait_until_ready(timeout=timeout)
        await asyncio.wait_for(client.done.wait(), timeout)
        ingest_done = client.done_at
        await app.wait_until_rendered(timeout=timeout, events=len(events))
        rendered_at = time.perf_counter()
        stop.set()
        await beat
        await pilot.pause()
        stats = app.stats
        conversation = app.conversation
        assistant_messages = sum(1 for m in conversation.messages if m.reducer is not None) if conversation else 0
        widgets = len(list(app.screen.query("*")))
    for close in _CLOSE:
        await close()

    assert client.first_pulled is not None and ingest_done is not None
    ingest_seconds = ingest_done - client.first_pulled
    gaps = [b - a for a, b in itertools.pairwise(frame_times)]
    # the phases of the heartbeat: before the stream's first item (the app's first layout) and while it arrives
    before = [(gap, cpu) for at, gap, cpu in beats if at <= client.first_pulled]
    during = [(gap, cpu) for at, gap, cpu in beats if at > client.first_pulled]
    stalls = sorted(gap for gap, _ in during)
    cpu_stalls = sorted(cpu for _, cpu in during)
    return {
        "events": len(events),
        "events_ingested": stats.events,
        "assistant_messages": assistant_messages,
        "mounted_widgets_at_end": widgets,
        "ingest_seconds": round(ingest_seconds, 4),
        "events_per_second": round(len(events) / ingest_seconds),
        "ingest_cpu_seconds": round(client.cpu_done_at - client.cpu_first_pulled, 4),
        "events_per_cpu_second": round(len(events) / max(1e-9, client.cpu_done_at - client.cpu_first_pulled)),
        "stall_phases": "max_/p99_loop_stall_*: heartbeat beats after the app pulled the stream's first item, to the "
                        "final render; before_stream_*: the beats before it (the app's first layout); whole_run_*: all",
        "max_loop_stall_ms": round(stalls[-1] * 1000, 1) if stalls else None,
        "p99_loop_stall_ms": round(stalls[int(len(stalls) * 0.99) - 1] * 1000, 1) if stalls else None,
        "max_loop_stall_cpu_ms": round(cpu_stalls[-1] * 1000, 1) if cpu_stalls else None,
        "p99_loop_stall_cpu_ms": round(cpu_stalls[int(len(cpu_stalls) * 0.99) - 1] * 1000, 1) if cpu_stalls else None,
        "before_stream_max_loop_stall_ms": round(max(gap for gap, _ in before) * 1000, 1) if before else None,
        "before_stream_max_loop_stall_cpu_ms": round(max(cpu for _, cpu in before) * 1000, 1) if before else None,
        "whole_run_max_loop_stall_ms": round(max(gap for _, gap, _ in beats) * 1000, 1) if beats else None,
        "whole_run_max_loop_stall_cpu_ms": round(max(cpu for _, _, cpu in beats) * 1000, 1) if beats else None,
        "beats_before_stream": len(before),
        "max_frame_gap_ms": round(max(gaps) * 1000, 1) if gaps else None,
        "slowest_frame_ms": round(stats.slowest_frame * 1000, 1),
        "frames": stats.frames,
        "busy_frames": stats.busy_frames,
        "time_to_final_render_s": round(rendered_at - ingest_done, 3),
        "total_s": round(rendered_at - client.first_pulled, 3),
        "rss_before_app_mb": round(rss_before, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "path": path,
    }




def _cold_start_once(timeout: float = 20.0) -> float | None:
    """Seconds from exec to the first frame of ``python -m instance_ai_tui`` in a pty (the measure of
    ``benchmarks/cold_start.py``, which also compares it with a minimal Textual app)."""
    from benchmarks.cold_start import first_paint

    return first_paint([sys.executable, "-m", "instance_ai_tui", "--model", "demo", "--db", "cold.sqlite3"],
                       b"Message Instance AI", SIZE, timeout)


def _import_seconds() -> float:
    code = "import time; t = time.perf_counter(); import instance_ai_tui.tui.app; print(time.perf_counter() - t)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return float(result.stdout.strip())


def measure_cold_start(runs: int) -> dict[str, Any]:
    if not sys.platform.startswith("linux"):
        return {"skipped": "the pseudo-terminal measurement needs Linux"}
    times = [t for t in (_cold_start_once() for _ in range(runs)) if t is not None]
    imports = [_import_seconds() for _ in range(runs)]
    return {
        "first_frame_s_min": round(min(times), 3) if times else None,
        "first_frame_s_median": round(statistics.median(times), 3) if times else None,
        "runs": runs,
        "runs_with_a_frame": len(times),
        "import_tui_app_s_median": round(statistics.median(imports), 3),
    }


def _one_path(args: argparse.Namespace, path: str) -> dict[str, Any]:
    """One client path measured in a fresh interpreter (its own heap, its own peak RSS)."""
    argv = [sys.executable, __file__, "--only", path, "--events", str(args.events), "--subagents",
            str(args.subagents), "--runs", str(args.runs), "--timeout", str(args.timeout)]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=False)
    if result.returncode != 0:
        return {"path": path, "failed": result.stderr[-2000:]}
    return dict(json.loads(result.stdout))


def _judge(measured: dict[str, Any], events: int) -> None:
    """CPU-s per 100k events and the targets, beside a path's figures."""
    if "events_per_second" in measured:
        measured["cpu_s_per_100k_events"] = round(measured["ingest_cpu_seconds"] * 100_000 / events, 4)
        measured["meets_targets"] = {
            "events_per_second": measured["events_per_second"] >= TARGETS["events_per_second"],
            "max_loop_stall_ms": (measured["max_loop_stall_ms"] or 0) < TARGETS["max_loop_stall_ms"],
        }


def _median_of(rounds: list[dict[str, Any]], path: str, key: str) -> float | None:
    return median([r.get(path, {}).get(key) for r in rounds])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--subagents", type=int, default=20)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--paths", default="embedded,remote,preparsed",
                        help="client paths to measure, each in its own interpreter: " + ", ".join(SOURCES))
    parser.add_argument("--only", choices=sorted(SOURCES), help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port-file", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--cold-start", action="store_true",
                        help="also time the first frame (launch_to_ready.py measures what a person waits for)")
    parser.add_argument("--cold-start-runs", type=int, default=3)
    add_load_switch(parser)
    args = parser.parse_args()

    if args.serve:
        serve(args.serve, args.port_file)
        return 0
    if args.only:
        with tempfile.TemporaryDirectory(prefix="instance-ai-bench-") as tmp:
            os.environ["XDG_CONFIG_HOME"] = f"{tmp}/config"  # no user config or themes in the run
            os.environ["XDG_DATA_HOME"] = f"{tmp}/data"
            os.environ["INSTANCE_AI_CONFIG"] = f"{tmp}/config/config.toml"
            os.environ.pop("TEXTUAL_THEME", None)
            events = make_events(args.events, args.subagents, args.runs)
            print(json.dumps(asyncio.run(run_ingest(events, path=args.only, timeout=args.timeout))))
        return 0

    started_load = load()
    events = make_events(args.events, args.subagents, args.runs)
    result: dict[str, Any] = {
        "benchmark": "tui_ingest",
        "event_mix": dict(Counter(e["type"] for e in events).most_common()),
        "subagents": args.subagents,
        "runs": args.runs,
    }
    del events
    paths = args.paths.split(",")
    rounds: dict[str, list[dict[str, Any]]] = {}
    for condition, index in conditions(args.loaded, args.rounds):
        measured: dict[str, Any] = {"round": index, "load_at_start": load()}
        for path in paths:  # (the paths take turns: the app-only one is measured beside the others)
            measured[path] = _one_path(args, path)
            _judge(measured[path], args.events)
            print(json.dumps({condition: {path: measured[path]}}), file=sys.stderr, flush=True)
        measured["load_at_end"] = load()
        app_only = measured.get("preparsed", {}).get("events_per_second")
        measured["client_path_over_app_only"] = {
            path: ratio(measured[path].get("events_per_second"), app_only) for path in paths if path != "preparsed"
        }
        rounds.setdefault(condition, []).append(measured)
    result.update(rounds)
    if args.loaded:
        # the cliff of issue 44: CPU per event loaded over quiet, per path (medians of the rounds)
        result["cpu_per_100k_loaded_over_quiet"] = {
            path: ratio(_median_of(rounds[LOADED], path, "cpu_s_per_100k_events"),
                        _median_of(rounds[QUIET], path, "cpu_s_per_100k_events"))
            for path in paths
        }
    if args.cold_start:
        result["cold_start"] = measure_cold_start(args.cold_start_runs)
    import textual

    result["targets"] = TARGETS
    result["environment"] = {"textual": textual.__version__}
    result["machine"] = machine(started_load)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
