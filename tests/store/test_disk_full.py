"""A full disk says so (issue 43.5): "the disk is full (N MB free)", at open and at a write.

On a real, small tmpfs (mounted for the test; skipped where this process may not mount): the
database is made, the disk is filled to the last byte by another file, and then

- ``instance-ai serve`` and ``instance-ai run`` that open it (SQLite fails to map its ``-shm``
  file and says "disk I/O error") say the disk is full, with the space left, in one line;
- a write of an open store (SQLite says "database or disk is full") says the same, naming the file.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from instance_ai_tui.store.errors import StorageFull
from instance_ai_tui.store.sqlite import SqliteStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


async def make_database(path: Path) -> None:
    store = SqliteStore(path)
    await store.open()
    await store.create_thread("t1", title="kept")
    await store.close()


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "instance_ai_tui", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=environ, timeout=120)


async def test_opening_on_a_full_disk_says_the_disk_is_full(small_disk: Path, tmp_path: Path) -> None:
    db = small_disk / "ia.db"
    await make_database(db)
    fill(small_disk)
    with pytest.raises(StorageFull, match=r"the disk is full \(0\.\d MB free\)"):
        await SqliteStore(db).open()
    for args in (("serve", "--port", "1", "--db", str(db)), ("run", "--model", "demo", "--db", str(db), "hello")):
        done = await asyncio.to_thread(cli, tmp_path, *args)
        assert done.returncode == 1, done.stderr
        assert "the disk is full (0." in done.stderr and "MB free); free some space" in done.stderr, done.stderr
        assert "disk I/O error" not in done.stderr and "Traceback" not in done.stderr, done.stderr


async def test_a_write_on_a_full_disk_says_the_disk_is_full(small_disk: Path) -> None:
    db = small_disk / "ia.db"
    store = SqliteStore(db)
    await store.open()
    try:
        await store.create_thread("t1")
        fill(small_disk)
        with pytest.raises(StorageFull) as caught:
            for n in range(1000):
                await store.create_thread(f"t{n}x", title="y" * 5000)
        said = str(caught.value)
        assert said.startswith(f"cannot write the database {db}: the disk is full (0.") and "MB free" in said
    finally:
        (small_disk / "filler").unlink()
        await store.close()
