"""The local gateway's folder tools against a hostile folder: FIFOs, catastrophic patterns, links."""

from __future__ import annotations

import json
import os
from pathlib import Path

from instance_ai_tui.client.gateway import CONFIRMATION_PREFIX, FolderTools, Policy
from tests.support import loop_turns


def _text(result: dict) -> str:
    return result["content"][0]["text"]


async def test_a_fifo_in_the_folder_blocks_nothing(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("slack alerts\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe")
    tools = FolderTools(tmp_path)
    # opening a FIFO for reading waits for a writer, and none comes: a search or read that opened
    # it would never return; these return, with the FIFO left out and refused by name
    found = await tools.call("search_files", {"query": "slack"})
    read = await tools.call("read_file", {"path": "pipe"})
    assert "notes.md:1: slack alerts" in _text(found)
    assert read.get("isError") and "not a file" in _text(read)


async def test_a_catastrophic_pattern_is_stopped_and_never_holds_the_loop(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("a" * 34 + "!\n", encoding="utf-8")
    tools = FolderTools(tmp_path, Policy(search_timeout=0.5))
    async with loop_turns() as turns:
        result = await tools.call("search_files", {"query": r"(a|aa)+$", "regex": True})
    # the budget stopped it (without it: minutes, the GIL held all along, and no such error) ...
    assert result.get("isError") and "longer than 0.5 s" in _text(result)
    assert turns.count > 0  # ... and the loop ran other tasks meanwhile


async def test_a_pattern_nested_too_deep_is_an_error_result_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("slack alerts\n", encoding="utf-8")
    result = await FolderTools(tmp_path).call("search_files", {"query": "(" * 50_000 + ")" * 50_000, "regex": True})
    # (the regex engine's compiler recurses per level: before the shared compile_pattern the RecursionError
    # escaped the tool call instead of coming back to the agent as an error)
    assert result.get("isError") and "invalid regular expression" in _text(result)


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


async def test_a_symlink_loop_is_skipped_with_a_note_and_the_rest_is_listed_and_searched(tmp_path: Path) -> None:
    """Issue 31 item 4: before, one loop made ``Path.resolve`` raise and the whole listing/search fail."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.md").write_text("slack alerts\n", encoding="utf-8")
    os.symlink("b", tmp_path / "docs" / "a")
    os.symlink("a", tmp_path / "docs" / "b")
    os.symlink("loop", tmp_path / "loop")
    tools = FolderTools(tmp_path)
    listing = await tools.call("list_files", {"recursive": True})
    assert not listing.get("isError")
    lines = _text(listing).splitlines()
    assert lines[:2] == ["docs/", "docs/readme.md (13 bytes)"]
    assert sorted(lines[2:]) == [f"['{name}' skipped: a symlink loop (too many levels of symbolic links)]"
                                 for name in ("docs/a", "docs/b", "loop")]
    found = await tools.call("search_files", {"query": "slack"})
    assert _text(found).splitlines()[0] == "docs/readme.md:1: slack alerts"
    assert "symlink loop" in _text(found)
    loop = await tools.call("read_file", {"path": "loop"})
    assert loop.get("isError") and "too many levels of symbolic links" in _text(loop)


async def test_a_hard_link_to_a_file_outside_is_read_only_after_asking(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n", encoding="utf-8")
    os.link(secret, shared / "linked.txt")
    tools = FolderTools(shared)  # no allow-list: every other file is read without a question
    asked = await tools.call("read_file", {"path": "linked.txt"})
    assert asked.get("isError") and _text(asked).startswith(CONFIRMATION_PREFIX)
    request = json.loads(_text(asked)[len(CONFIRMATION_PREFIX):])
    assert request["resource"] == "linked.txt" and "2 hard links" in request["description"]
    assert "hunter2" not in _text(asked)
    denied = await tools.call("read_file", {"path": "linked.txt", "_confirmation": "denyOnce"})
    assert "User denied access to linked.txt" in _text(denied)
    found = await tools.call("search_files", {"query": "password"})
    assert "hunter2" not in _text(found) and "1 files with more than one hard link were not searched" in _text(found)
    allowed = await tools.call("read_file", {"path": "linked.txt", "_confirmation": "allowOnce"})
    assert _text(allowed) == "password=hunter2\n"
    listing = await tools.call("list_files", {})
    assert _text(listing) == "linked.txt (17 bytes)"  # named (its size only), never read
