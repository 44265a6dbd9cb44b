"""Keep a test away from the real user's config and data folders."""

from __future__ import annotations

from pathlib import Path

import pytest


def isolate_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the config file, the XDG config and data folders into ``tmp_path`` (for this test
    and the processes it starts); returns the config file's path (not created)."""
    config = tmp_path / "xdg-config" / "instance-ai" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("INSTANCE_AI_CONFIG", str(config))
    return config
