"""Fixtures for the TUI parts (themes, key map, thread list)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from instance_ai_tui.protocol.api import ThreadInfo

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the real user's config dir."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "xdg-config" / "instance-ai" / "config.toml"))
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)


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
