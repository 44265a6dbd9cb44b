"""The local gateway's folder tools against a hostile folder: FIFOs, catastrophic patterns, links."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from instance_ai_tui.client.gateway import FolderTools, Policy
from tests.support import loop_gaps


def _text(result: dict) -> str:
    return result["content"][0]["text"]


async def test_a_fifo_in_the_folder_blocks_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("slack alerts\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe")
    tools = FolderTools(tmp_path)
    started = time.monotonic()
    found = await asyncio.wait_for(tools.call("search_files", {"query": "slack"}), 10)
    assert "notes.md:1: slack alerts" in _text(found)
    read = await asyncio.wait_for(tools.call("read_file", {"path": "pipe"}), 10)
    assert read.get("isError") and "not a file" in _text(read)
    assert time.monotonic() - started < 10


async def test_a_catastrophic_pattern_is_stopped_and_never_holds_the_loop(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("a" * 34 + "!\n", encoding="utf-8")
    tools = FolderTools(tmp_path, Policy(search_timeout=0.5))
    async with loop_gaps() as gaps:
        result = await asyncio.wait_for(tools.call("search_files", {"query": r"(a|aa)+$", "regex": True}), 30)
    assert result.get("isError") and "longer than 0.5 s" in _text(result)
    assert max(gaps) < 1.0  # without the budget: the GIL held for minutes


async def test_a_link_swapped_in_after_the_listing_is_not_followed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "secret.txt").write_text("password=hunter2\n", encoding="utf-8")
    (shared / "a.txt").write_text("harmless\n", encoding="utf-8")
    (shared / "b.txt").symlink_to(shared / "a.txt")  # inside: listed
    tools = FolderTools(shared)
    (shared / "b.txt").unlink()
    (shared / "b.txt").symlink_to(tmp_path / "secret.txt")  # now points outside
    found = await tools.call("search_files", {"query": "password"})
    assert "hunter2" not in _text(found)
    read = await tools.call("read_file", {"path": "b.txt"})
    assert read.get("isError") and "hunter2" not in _text(read)
