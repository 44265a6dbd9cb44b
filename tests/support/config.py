"""Keep a test away from the real user's config, data and terminal settings."""

from __future__ import annotations

from pathlib import Path

import pytest


def isolate_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the config file, the XDG config and data folders into ``tmp_path`` (for this test
    and the processes it starts): ``tmp_path/config`` (the config file is ``config/config.toml``)
    and ``tmp_path/data``. The user's Textual theme is dropped and animations are off, so what
    a test sees does not depend on the terminal it runs in. Returns the config file's path (not
    created)."""
    config = tmp_path / "config" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(config))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    return config
