"""Fixtures for every test. Shared helpers live in ``tests/support`` (ports, served apps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import isolate_config


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the real user's config or data (folders' own conftests may
    narrow this further)."""
    return isolate_config(tmp_path, monkeypatch)
