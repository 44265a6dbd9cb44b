"""The screenshot script's own checks (the full session runs as a script, not a test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import screenshots


def test_size_argument_is_validated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        screenshots.main(["--size", "wide"])
    assert "is not WIDTHxHEIGHT" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        screenshots.main(["--size", "20x5"])
    assert "at least 40x12" in capsys.readouterr().err


async def test_unknown_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown screenshot name"):
        await screenshots.take_screenshots(tmp_path, only=["approval-card", "nope"])
    assert not any(tmp_path.iterdir())


def test_names_match_the_docstring() -> None:
    doc = screenshots.__doc__ or ""
    for name in screenshots.SHOTS:
        assert f"{name}.svg" in doc
