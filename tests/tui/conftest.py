"""Fixtures of the TUI tests: the root conftest isolates the config and data folders (and the
terminal's Textual settings); a TUI test also runs in its own working directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
