"""``--continue`` / ``--resume`` / ``--new``: which thread opens at start."""

from __future__ import annotations

from typing import Any

from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.screens.resume_picker import ResumePicker

from .scripts import SIZE, ev, recorded, text_deltas
from .test_interactions import until


def _run(run_id: str, question: str, answer: str) -> list[dict[str, Any]]:
    return [
        {**e, "runId": run_id}
        for e in [ev("run-start", messageId=f"m-{run_id}", userMessage=question), *text_deltas(answer),
                  ev("run-finish", status="completed")]
    ]


def _client() -> Any:
    logs = {
        "t-slack": _run("r1", "post to slack", "Posted."),
        "t-weather": _run("r2", "weather report", "Sunny."),
        "t-backup": _run("r3", "backup my db", "Backed up."),
    }
    titles = {"t-slack": "Slack alerts", "t-weather": "Weather report", "t-backup": "Nightly backup"}
    return recorded(logs=logs, titles=titles)


def _app(start: str) -> InstanceAiApp:
    return InstanceAiApp(_client(), Settings(), watch_themes=False, persist_theme=False, start=start)


async def test_continue_opens_the_latest_thread() -> None:
    app = _app("latest")
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        threads = await app.client.list_threads()
        latest = max(threads, key=lambda t: t.updated_at).id
        assert latest == "t-backup"  # the recorded client's last thread is its newest
        await until(lambda: app.thread_id == latest, pilot)


async def test_new_starts_in_a_new_thread() -> None:
    app = _app("new")
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        assert app.thread_id is None


async def test_resume_picker_searches_and_opens_the_choice() -> None:
    app = _app("pick")
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ResumePicker) and bool(app.screen.query("#resume-list")), pilot)
        picker = app.screen
        assert picker.query_one("#resume-list").option_count == 4  # three threads and "New thread"
        await pilot.press(*"weather")
        await until(lambda: picker.query_one("#resume-list").option_count == 2, pilot)
        await pilot.press("enter")
        await app.wait_until_ready()
        await until(lambda: app.thread_id == "t-weather", pilot)


async def test_resume_picker_escape_starts_a_new_thread() -> None:
    app = _app("pick")
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ResumePicker) and bool(app.screen.query("#resume-list")), pilot)
        await pilot.press("escape")
        await app.wait_until_ready()
        assert app.thread_id is None


async def test_resume_picker_finds_message_text_as_the_thread_list_does() -> None:
    """Issue 33 item 5: the picker asks the client's search (titles and message text), as the thread
    list's search does, and lists a thread found by its messages under the title matches."""
    client = _client()
    asked: list[str] = []

    async def search_threads(query: str) -> list[Any]:
        asked.append(query)
        threads = await client.list_threads()
        return [t for t in threads if t.id == "t-backup"] if "db" in query.split() else []

    client.search_threads = search_threads  # type: ignore[method-assign]
    app = InstanceAiApp(client, Settings(), watch_themes=False, persist_theme=False, start="pick")
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ResumePicker) and bool(app.screen.query("#resume-list")), pilot)
        picker = app.screen
        options = picker.query_one("#resume-list")
        await pilot.press(*"db")
        await until(lambda: options.option_count == 2, pilot)  # "Nightly backup" (in messages) and "New thread"
        label = str(options.get_option_at_index(0).prompt)
        assert "Nightly backup" in label and "in messages" in label
        assert asked and asked[-1] == "db"
        await pilot.press("enter")
        await app.wait_until_ready()
        await until(lambda: app.thread_id == "t-backup", pilot)
