"""Runs n8n's shutdown cut, told apart from a person's cancel in n8n's history.

n8n 2.41.1 on SIGTERM (``InstanceAiService.shutdown``) ends a running run ``run-finish`` ``cancelled``
``service_shutdown``, then aborts it, and the aborted run's own path ends it again ``user_cancelled``
(the abort has no reason: ``getAbortReason`` says ``user_cancelled``). Live, the reducer keeps the first
cause. n8n's history (``GET threads/:id/messages``) is n8n's own fold of its durable event log
(``agent-run-reducer.js``), which keeps the *last* ``run-finish``: such a run reads "cancelled by the
user" after a reload.

Both ``run-finish`` events are still in n8n's durable log, which its SSE endpoint replays after a cursor.
So for a history whose newest runs fold to ``cancelled``/``user``, ``true_causes`` replays the log's tail
(at most ``TAIL_EVENTS`` events, ``MAX_BYTES``, ``DEADLINE`` seconds) and gives the runs whose first
``run-finish`` was another cancel cause; ``apply`` writes it into the history's trees. Nothing is asked
of n8n when no run reads "user".
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping

import httpx

from ..protocol.api import ThreadMessages
from ..protocol.sse import SSEParser

#: how far back the log is replayed (a run cut by a shutdown is among the thread's last; n8n stores text as
#: blocks, so a run is tens to hundreds of events)
TAIL_EVENTS = 500
#: how many of the newest assistant messages are looked at
NEWEST_MESSAGES = 5
MAX_BYTES = 8 * 1024 * 1024
DEADLINE = 5.0
#: n8n's reasons (``run-finish`` payload) -> the tree's ``cancellationReason`` (agent-run-reducer.js)
CAUSES = {"service_shutdown": "shutdown", "timeout": "timeout", "crash_interrupted": "interrupted"}


def suspects(history: ThreadMessages) -> set[str]:
    """Run ids of the newest assistant messages n8n's fold reads as cancelled by the user."""
    found: set[str] = set()
    assistants = [m for m in history.messages if m.role == "assistant"][-NEWEST_MESSAGES:]
    for message in assistants:
        tree = message.agent_tree
        run = message.run_id or (message.run_ids[-1] if message.run_ids else None)
        if run and tree is not None and tree.status == "cancelled" and tree.cancellation_reason == "user":
            found.add(run)  # the group's last run: its run-finish gives the tree's cause
    return found


async def true_causes(http: httpx.AsyncClient, url: str, headers: Mapping[str, str], next_event_id: int,
                      runs: set[str]) -> dict[str, str]:
    """Replay the tail of the thread's log (``url``: its SSE endpoint) up to ``next_event_id``; for each of
    ``runs`` whose first ``run-finish`` was cancelled for another reason than the user, that reason
    (``shutdown``...). Errors and limits give what was found so far (the history's words stay)."""
    last = next_event_id - 1
    cursor = max(0, last - TAIL_EVENTS)
    first: dict[str, str] = {}
    if last <= cursor or not runs:
        return {}
    parser = SSEParser()
    seen = 0
    try:
        async with asyncio.timeout(DEADLINE):
            async with http.stream("GET", url, headers={**headers, "Last-Event-ID": str(cursor),
                                                        "Accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    return {}
                started = time.monotonic()
                async for chunk in response.aiter_bytes():
                    seen += len(chunk)
                    done = False
                    for frame in parser.feed(chunk):
                        if frame.id is not None and frame.id.isdigit() and int(frame.id) >= last:
                            done = True
                        if '"run-finish"' not in frame.data:
                            continue
                        try:
                            event = json.loads(frame.data)
                        except ValueError:
                            continue
                        run = event.get("runId") if isinstance(event, dict) else None
                        payload = event.get("payload") if isinstance(event, dict) else None
                        if event.get("type") != "run-finish" or run not in runs or run in first \
                                or not isinstance(payload, dict):
                            continue
                        first[run] = str(payload.get("reason") or "") if payload.get("status") == "cancelled" else ""
                    if done or runs <= first.keys() or seen > MAX_BYTES or time.monotonic() - started > DEADLINE:
                        break
    except (httpx.HTTPError, TimeoutError):
        pass
    return {run: CAUSES[reason] for run, reason in first.items() if reason in CAUSES}


def apply(history: ThreadMessages, causes: Mapping[str, str]) -> ThreadMessages:
    """The history with the trees of ``causes``' runs saying their true cause."""
    if not causes:
        return history
    messages = []
    for message in history.messages:
        tree = message.agent_tree
        run = message.run_id or (message.run_ids[-1] if message.run_ids else None)
        cause = causes.get(run) if run else None
        if tree is not None and cause is not None and tree.cancellation_reason == "user":
            message = message.model_copy(update={"agent_tree": tree.model_copy(update={"cancellation_reason": cause})})
        messages.append(message)
    return history.model_copy(update={"messages": messages})
