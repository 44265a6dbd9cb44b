"""Workspace file operations: confinement to the root, and the operations themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from instance_ai_tui.assistant.workspace import Workspace, WorkspaceError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hello')\nWEATHER = 1\n", encoding="utf-8")
    (ws / "notes.md").write_text("# Notes\nslack channel: #ops\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return ws


async def test_list_and_read(root: Path) -> None:
    ws = Workspace(root)
    listing = await ws.list(".", recursive=True)
    paths = [e["path"] for e in listing["entries"]]
    assert paths == ["src", "src/app.py", "notes.md"]
    assert listing["entries"][1]["size"] == len("print('hello')\nWEATHER = 1\n")
    read = await ws.read("src/app.py", start_line=2)
    assert read["content"] == "WEATHER = 1\n"
    assert read["startLine"] == 2 and not read["truncated"]


@pytest.mark.parametrize("bad", ["../secret.txt", "src/../../secret.txt", "/etc/passwd", "..", "a\x00b"])
async def test_traversal_refused(root: Path, bad: str) -> None:
    ws = Workspace(root)
    with pytest.raises(WorkspaceError, match="outside|NUL"):
        await ws.read(bad)
    with pytest.raises(WorkspaceError):
        await ws.write(bad, "x")


async def test_absolute_path_inside_root_is_allowed(root: Path) -> None:
    ws = Workspace(root)
    read = await ws.read(str(root / "notes.md"))
    assert read["path"] == "notes.md"


async def test_symlink_escape_refused(root: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", root / "link.txt")
    os.symlink(tmp_path, root / "outside_dir")
    os.symlink(root / "notes.md", root / "inner_link.md")
    ws = Workspace(root)
    with pytest.raises(WorkspaceError, match="symlink"):
        await ws.read("link.txt")
    with pytest.raises(WorkspaceError, match="symlink"):
        await ws.read("outside_dir/secret.txt")
    with pytest.raises(WorkspaceError):
        await ws.write("outside_dir/new.txt", "pwned")
    assert not (tmp_path / "new.txt").exists()
    # escaping links are invisible to list and search; a link inside the root works
    listing = await ws.list(".", recursive=True)
    paths = {e["path"] for e in listing["entries"]}
    assert "link.txt" not in paths and "outside_dir" not in paths
    assert "inner_link.md" in paths
    found = await ws.search("secret")
    assert found["matches"] == []
    assert (await ws.read("inner_link.md"))["content"].startswith("# Notes")


async def test_search_substring_and_regex(root: Path) -> None:
    ws = Workspace(root)
    hits = (await ws.search("weather"))["matches"]
    assert hits == [{"path": "src/app.py", "line": 2, "text": "WEATHER = 1"}]
    assert (await ws.search("weather", case_sensitive=True))["matches"] == []
    regex_hits = (await ws.search(r"#\w+$", regex=True))["matches"]
    assert [h["path"] for h in regex_hits] == ["notes.md"]
    with pytest.raises(WorkspaceError, match="regular expression"):
        await ws.search("(", regex=True)


async def test_write_and_edit(root: Path) -> None:
    ws = Workspace(root)
    result = await ws.write("new/dir/file.txt", "one two two\n")
    assert result == {"path": "new/dir/file.txt", "bytes": 12, "created": True}
    assert (root / "new/dir/file.txt").read_text() == "one two two\n"
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        await ws.edit("new/dir/file.txt", "two", "three")
    assert (await ws.edit("new/dir/file.txt", "two", "three", replace_all=True))["replacements"] == 2
    assert (root / "new/dir/file.txt").read_text() == "one three three\n"
    with pytest.raises(WorkspaceError, match="not found"):
        await ws.edit("new/dir/file.txt", "absent", "x")
    with pytest.raises(WorkspaceError, match="folder"):
        await ws.write("src", "x")


async def test_binary_and_missing(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    ws = Workspace(root)
    with pytest.raises(WorkspaceError, match="binary"):
        await ws.read("blob.bin")
    with pytest.raises(WorkspaceError, match="does not exist"):
        await ws.read("nope.txt")
