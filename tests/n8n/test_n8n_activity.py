"""Beside the conversation (issue 16): background tasks (listed, cancelled, corrected), setup
items, archived workflows, the quota banner; n8n's thread history search and cursor paging.

The real app and ``N8nClient`` against the fake n8n on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.base import ClientError
from instance_ai_tui.client.n8n import N8nClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from tests.support.fake_n8n import Emit, FakeN8n, Say, Step
from tests.support.waiting import until

from .conftest import make_client

SIZE = (120, 44)


SETUP_ITEMS = [
    {"id": "s1", "kind": "credential", "credentialType": "slackApi", "appDisplayName": "Slack",
     "nodeBindings": [{"nodeName": "Post to Slack"}]},
    {"id": "s2", "kind": "parameters", "nodeName": "Schedule", "parameterNames": ["hour", "minute"]},
]


def script(message: str) -> list[Step]:
    if "quota" in message:
        return [Emit("error", {"content": "You have used all your AI credits this month.", "code": "quota_exhausted",
                               "statusCode": 402})]
    if "setup" in message:
        return [Say("The workflow is built; it needs a credential.", "r1"),
                Emit("setup-items", {"workflowId": "wf_1", "items": SETUP_ITEMS})]
    return [Say("Started a builder in the background.", "r1")]


@pytest.fixture
async def fake() -> AsyncIterator[FakeN8n]:
    server = FakeN8n(script=script, ping_interval=0.5)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def make_app(client: N8nClient, **kwargs: Any) -> InstanceAiApp:
    return InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, **kwargs)


async def send(app: InstanceAiApp, pilot: Any, text: str) -> None:
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")
    await until(lambda: app.conversation is not None and app.conversation.messages and not app.conversation.is_streaming
                and any(m.role == "assistant" for m in app.conversation.messages), pilot)


def shown(widget: Any) -> str:
    return str(widget.visual) if widget.display else ""


async def test_background_tasks_are_listed_corrected_and_cancelled(fake: FakeN8n, tmp_path: Path) -> None:
    app = make_app(make_client(fake, tmp_path / "one"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(app, pilot, "build it in the background")
        activity = app.n8n_activity
        assert not activity.display  # nothing to show yet
        task = fake.start_background_task(str(app.thread_id), role="workflow-builder")
        await until(lambda: "workflow-builder  running" in shown(activity.task_list), pilot)
        assert activity.display
        # reach it with Tab (from the prompt), then c: a correction
        app.prompt.focus()
        for _ in range(12):
            if activity.task_list.has_focus:
                break
            await pilot.press("tab")
        assert activity.task_list.has_focus
        await pilot.press("c")
        assert activity.correction.has_focus
        await pilot.press(*"use the EU region", "enter")
        await until(lambda: fake.corrections == [(app.thread_id, task["taskId"], "use the EU region")], pilot)
        await until(lambda: "correction sent" in shown(activity.task_list), pilot)
        assert activity.task_list.has_focus
        # x: cancel; the server publishes agent-completed {status: cancelled}
        await pilot.press("x")
        await until(lambda: "workflow-builder  cancelled" in shown(activity.task_list), pilot)
        status = await app.client.status(str(app.thread_id))
        assert [(t.task_id, t.status) for t in status.background_tasks] == [(task["taskId"], "cancelled")]
        cancels = [r for r in fake.requests if r.path.endswith(f"/tasks/{task['taskId']}/cancel")]
        assert len(cancels) == 1
        await pilot.press("x")  # not running any more: nothing is sent
        await pilot.pause(0.2)  # the scenario: a window in which no cancel may be sent
        assert len([r for r in fake.requests if r.path.endswith("/cancel")]) == 1
        thread_id = app.thread_id

    # another terminal opens the thread: the task comes from the status route
    fake.start_background_task(str(thread_id), role="data-table-builder")
    again = make_app(make_client(fake, tmp_path / "two"), thread_id=thread_id)
    async with again.run_test(size=SIZE) as pilot:
        await again.wait_until_ready()
        await until(lambda: "data-table-builder  running" in shown(again.n8n_activity.task_list), pilot)
        assert "workflow-builder  cancelled" in shown(again.n8n_activity.task_list)


async def test_setup_items_archived_workflows_and_the_quota_banner(fake: FakeN8n, tmp_path: Path) -> None:
    app = make_app(make_client(fake, tmp_path / "one"))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        fake.archived_on_finish = ["wf_old_1", "wf_old_2"]
        await send(app, pilot, "setup the report workflow")
        activity = app.n8n_activity
        await until(lambda: "Setup needed" in shown(activity.setup_view), pilot)
        text = shown(activity.setup_view)
        assert "workflow wf_1" in text and "Slack credential (Post to Slack)" in text and "Schedule: hour, minute" in text
        await until(lambda: "wf_old_1, wf_old_2" in shown(activity.archived_view), pilot)
        assert not activity.quota_view.display
        await send(app, pilot, "quota please")
        await until(lambda: activity.quota_view.display, pilot)
        assert shown(activity.quota_view) == (
            "⚠ n8n: out of AI credits — You have used all your AI credits this month. (quota_exhausted)"
        )
        await send(app, pilot, "hello")  # the next run clears the banner
        await until(lambda: not activity.quota_view.display, pilot)
        thread_id = app.thread_id
    again = make_app(make_client(fake, tmp_path / "two"), thread_id=thread_id)
    async with again.run_test(size=SIZE) as pilot:
        await again.wait_until_ready()
        await until(lambda: "Setup needed" in shown(again.n8n_activity.setup_view), pilot)  # from the history's tree


async def test_other_backends_say_they_have_no_background_tasks(tmp_path: Path) -> None:
    from tests.support.recorded import RecordedClient

    client = RecordedClient(runs=[])
    with pytest.raises(ClientError, match="no background tasks"):
        await client.cancel_task("t", "task_1")
    with pytest.raises(ClientError, match="no background tasks"):
        await client.correct_task("t", "task_1", "fix")


# --------------------------------------------------------------------------- thread history


async def test_thread_history_search_and_cursor_paging(fake: FakeN8n, tmp_path: Path) -> None:
    client = make_client(fake, tmp_path / "c")
    try:
        ids = []
        for i in range(7):
            info = await client.create_thread(title=f"{'Weather' if i % 2 else 'Sales'} report {i}")
            ids.append(info.id)
            await asyncio.sleep(0.002)  # distinct updatedAt
        page, cursor = await client.thread_history(limit=3)
        seen = [t.id for t in page]
        while cursor is not None:
            page, cursor = await client.thread_history(cursor=cursor, limit=3)
            seen += [t.id for t in page]
        assert seen == list(reversed(ids))  # newest first, each once
        weather = await client.search_threads("WEATHER")
        assert [t.title for t in weather] == ["Weather report 5", "Weather report 3", "Weather report 1"]
        queries = [r.query for r in fake.requests if r.path == "/rest/instance-ai/threads/history"]
        assert any("search=WEATHER" in q and "limit=100" in q for q in queries)
        assert await client.search_threads("nothing like this") == []
        with pytest.raises(ClientError, match="Invalid thread history cursor"):
            await client.thread_history(cursor="not-a-cursor")
    finally:
        await client.close()
