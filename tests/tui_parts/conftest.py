"""Fixtures for the TUI parts (themes, key map, thread list)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from instance_ai_tui.protocol.api import ThreadInfo

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def make_thread(index: int, title: str, minutes_ago: float) -> ThreadInfo:
    updated = NOW - timedelta(minutes=minutes_ago)
    return ThreadInfo(id=f"thread-{index}", title=title, created_at=updated - timedelta(minutes=5), updated_at=updated)


@pytest.fixture(name="make_thread")
def _make_thread_fixture():
    return make_thread


@pytest.fixture
def sample_threads() -> list[ThreadInfo]:
    return [
        make_thread(1, "Fix the failing webhook", 90),
        make_thread(2, "Build a Slack digest workflow", 3),
        make_thread(3, "", 60 * 30),
        make_thread(4, "Weekly report to Google Sheets", 60 * 24 * 40),
    ]
