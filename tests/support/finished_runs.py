"""A thread of finished runs, written as the runtime leaves them (a run record and an
agent-tree snapshot each): for history paging tests and ``benchmarks/long_thread.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from instance_ai_tui.protocol.reducer import build_agent_tree_wire
from instance_ai_tui.store.base import RunRecord
from instance_ai_tui.store.sqlite import SqliteStore


def run_tree(index: int) -> dict[str, object]:
    """A finished run's agent tree as the reducer stores it: a tool call and an answer."""
    run, agent = f"run_{index}", f"orchestrator-run_{index}"
    events = [
        {"type": "run-start", "runId": run, "agentId": agent, "payload": {"messageId": f"m{index}"}},
        {"type": "tool-call", "runId": run, "agentId": agent,
         "payload": {"toolCallId": f"call_{index}", "toolName": "list-workflows", "args": {"limit": 20}}},
        {"type": "tool-result", "runId": run, "agentId": agent,
         "payload": {"toolCallId": f"call_{index}", "result": {"items": [{"id": f"wf-{i}"} for i in range(10)]}}},
        {"type": "text-block", "runId": run, "agentId": agent, "responseId": f"r{index}",
         "payload": {"text": f"Answer {index}: " + "all of them ran fine. " * 20}},
        {"type": "run-finish", "runId": run, "agentId": agent, "payload": {"status": "completed"}},
    ]
    return build_agent_tree_wire(events).to_wire()


async def fill_runs(store: SqliteStore, thread_id: str, runs: int) -> None:
    """Run records and snapshots, as finished runs leave them (the thread is created if new)."""
    if await store.get_thread(thread_id) is None:
        await store.create_thread(thread_id)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for index in range(runs):
        run_id = f"run_{thread_id}_{index}"
        at = start + timedelta(seconds=index)
        await store.upsert_run(RunRecord(
            run_id=run_id, thread_id=thread_id, status="completed", message_group_id=run_id,
            started_at=at, finished_at=at + timedelta(milliseconds=500),
            data={"userMessage": f"question {index}: list my workflows", "messageId": f"m_{run_id}"},
        ))
        await store.save_snapshot(thread_id, run_id, run_tree(index))


