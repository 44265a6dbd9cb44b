"""Snapshots (pytest-textual-snapshot) of the thread list and of themed status marks.

Update after an intended visual change: ``pytest tests/tui_parts --snapshot-update``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Static

from instance_ai_tui.protocol.api import ThreadInfo
from instance_ai_tui.tui.keymap import KeyMap
from instance_ai_tui.tui.themes.glyphs import SEVERITY, TASK_STATUS, TOOL_STATUS
from instance_ai_tui.tui.themes.manager import ThemeManager
from instance_ai_tui.tui.themes.variables import app_variable_defaults
from instance_ai_tui.tui.widgets.thread_list import ThreadList

REPO_THEMES = Path(__file__).resolve().parents[2] / "instance_ai_tui" / "tui" / "themes_builtin"
NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


class ThreadListApp(App[None]):
    CSS = "ThreadList { width: 44; }"

    def __init__(self, threads: list[ThreadInfo], redis: list[ThreadInfo]) -> None:
        super().__init__()
        self.threads, self.redis = threads, redis

    def compose(self) -> ComposeResult:
        yield ThreadList(self.threads, clock=lambda: NOW)

    def on_mount(self) -> None:
        thread_list = self.query_one(ThreadList)
        thread_list.set_section("redis", self.redis, title="Redis sessions", read_only=True)
        thread_list.active_thread_id = "thread-1"
        thread_list.focus_list()


def test_thread_list_snapshot(snap_compare, sample_threads, make_thread) -> None:  # type: ignore[no-untyped-def]
    app = ThreadListApp(sample_threads, [make_thread(9, "n8n chat: order status bot", 60 * 5)])
    assert snap_compare(app, terminal_size=(46, 16), press=["down"])


def test_thread_list_search_snapshot(snap_compare, sample_threads, make_thread) -> None:  # type: ignore[no-untyped-def]
    app = ThreadListApp(sample_threads, [make_thread(9, "Slack bot session", 60 * 5)])
    assert snap_compare(app, terminal_size=(46, 12), press=["slash", *"sl"])


class ThemeSample(App[None]):
    """Every app variable and status mark in one screen."""

    CSS = """
    Screen { padding: 0 1; }
    .user { border-left: thick $user-message; background: $user-message-background; padding: 0 1; }
    .agent { border: round $agent-border; padding: 0 1; height: auto; }
    .sub { border: round $subagent-border; padding: 0 1; height: auto; }
    .reasoning { color: $reasoning-text; text-style: italic; }
    .card-destructive { border: heavy $severity-destructive; height: auto; padding: 0 1; }
    """

    def __init__(self, theme_name: str) -> None:
        super().__init__()
        self.theme_name = theme_name

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return app_variable_defaults(self.current_theme)

    def compose(self) -> ComposeResult:
        yield Static("Build me a workflow that posts a Slack digest", classes="user")
        with Vertical(classes="agent"):
            yield Static("Planning the workflow…", classes="reasoning")
            yield Static(Content.from_markup("  ".join(TOOL_STATUS[s].markup() for s in ("running", "done", "failed", "waiting"))))
            with Vertical(classes="sub"):
                yield Static(Content.from_markup("builder  " + "  ".join(TASK_STATUS[s].markup() for s in TASK_STATUS)))
        with Vertical(classes="card-destructive"):
            yield Static(Content.from_markup(SEVERITY["destructive"].markup() + "  Delete workflow 'Slack digest'?"))
            yield Static(Content.from_markup("  ".join(mark.markup() for mark in SEVERITY.values())))
            yield Static(KeyMap().help_rows(["card"])[0].keys + " approve · n deny · a always allow")

    def on_mount(self) -> None:
        ThemeManager(self, dirs=[REPO_THEMES], persist=False, watch=False).install(self.theme_name)


@pytest.mark.parametrize("theme", ["instance-dark", "instance-light", "instance-high-contrast", "instance-ansi"])
def test_theme_sample_snapshot(snap_compare, theme: str) -> None:  # type: ignore[no-untyped-def]
    async def settle(pilot: Pilot[None]) -> None:
        await pilot.pause()

    assert snap_compare(ThemeSample(theme), terminal_size=(70, 16), run_before=settle)
