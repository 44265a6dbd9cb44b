"""Fixtures of the TUI tests: every test gets its own config/data dirs and working dir."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(tmp_path / "config" / "config.toml"))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.chdir(tmp_path)
