"""The built wheel holds the product only: no test doubles, recorded clients or dev scripts (issue 11).

Builds a real wheel with pip from a copy of the tracked files (a clean clone's view: no stale ``build/``),
then reads its file list.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked_copy(dest: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the wheel is built from the tracked files")
    for name in listed.stdout.decode().split("\0"):
        if not name or not (ROOT / name).is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def test_the_wheel_holds_no_test_doubles(tmp_path: Path) -> None:
    source = _tracked_copy(tmp_path / "src")
    out = tmp_path / "wheel"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = out.glob("instance_ai_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert "instance_ai_tui/tui/app.py" in modules  # the product is there
    assert "instance_ai_tui/tui/app.tcss" in names  # and its data files
    assert "instance_ai_tui/assistant/data/n8n_nodes.json" in names
    doubles = [
        n
        for n in modules
        if "/testing/" in n
        or Path(n).stem in {"fake_n8n", "openai_server", "n8n_shapes", "n8n_boot", "recorded", "screenshots"}
        or n.startswith(("tests/", "scripts/", "benchmarks/"))
    ]
    assert doubles == []
