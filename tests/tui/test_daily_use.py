"""Issue 45: what a daily user meets — the wizard, plan review, layout, the demo, the block
cursor, titles, the MCP words and the small ones — each checked in the real app (Pilot) or on
the real widget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from tests.support.waiting import until

from .scripts import make_app


def settings_at(tmp_path: Path, **extra: Any) -> Settings:
    return Settings.model_validate({"model": {"name": "demo"}, "db_path": tmp_path / "db.sqlite3", **extra})


# --------------------------------------------------------------------------- item 7: MCP words


def test_a_tool_summary_is_cut_at_a_word() -> None:
    """Tool descriptions were cut mid-word at 100 characters ("…the current weath")."""
    from instance_ai_tui.tui.screens.mcp import SUMMARY_CHARS, summary_of

    text = ("Fetches the current weather and a five day forecast for any city of the world, in metric or "
            "imperial units, with alerts")
    summary = summary_of(text)
    assert len(summary) <= SUMMARY_CHARS and summary.endswith("…")
    assert text.startswith(summary[:-1]) and text[len(summary) - 1] == " "  # a whole word ends it
    assert summary_of("Short one.\nSecond line") == "Short one."
    assert summary_of("x" * 300).endswith("…") and len(summary_of("x" * 300)) == SUMMARY_CHARS


async def test_mcp_view_and_help_name_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`/mcp` said "Add one to the config file" and `--help` never said where that file is."""
    from instance_ai_tui.cli import main
    from instance_ai_tui.tui.screens.mcp import McpScreen

    config = tmp_path / "conf" / "my config.toml"
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(config))
    with pytest.raises(SystemExit):
        main(["--help"])
    assert f"\n  {config}\n" in capsys.readouterr().out  # on a line of its own, whole

    settings = settings_at(tmp_path)
    app = make_app(EmbeddedClient(settings), settings)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready()
        app.prompt.load_text("/mcp")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, McpScreen), pilot)
        screen = app.screen
        await until(lambda: "No MCP server" in str(screen.message.render()), pilot)
        assert str(config) in str(screen.message.render())
