"""Workspace file operations: confinement to the root, and the operations themselves."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest

from instance_ai_tui.assistant.workspace import Workspace, WorkspaceError
from tests.support import loop_turns

T = TypeVar("T")


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
    with pytest.raises(WorkspaceError, match=r"outside|NUL"):
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


# ---------------------------------------------------------------- issue 15: attacks on the workspace
async def test_planted_temp_symlink_is_not_followed(root: Path, tmp_path: Path) -> None:
    """The old writer used '.<name>.<pid>.tmp' and followed a symlink planted there (an approved write landed
    outside the folder). Plant that link (and a few neighbours): the write must land in the workspace only."""
    outside = tmp_path / "victim.txt"
    outside.write_text("original\n", encoding="utf-8")
    for pid in {os.getpid(), os.getppid(), 1}:
        os.symlink(outside, root / f".notes.md.{pid}.tmp")
    ws = Workspace(root)
    result = await ws.write("notes.md", "new notes\n")
    assert result["created"] is False
    assert outside.read_text(encoding="utf-8") == "original\n"
    assert (root / "notes.md").read_text(encoding="utf-8") == "new notes\n"
    assert not (root / "notes.md").is_symlink()
    # no temporary file is left behind
    assert sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()) == []


async def test_write_through_a_link_to_outside_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "victim.txt"
    outside.write_text("original\n", encoding="utf-8")
    os.symlink(outside, root / "config.yaml")
    os.symlink("../../victim.txt", root / "src" / "rel.txt")
    ws = Workspace(root)
    for path in ("config.yaml", "src/rel.txt"):
        with pytest.raises(WorkspaceError, match="symlink"):
            await ws.write(path, "pwned")
        with pytest.raises(WorkspaceError, match="symlink"):
            await ws.edit(path, "original", "pwned")
    assert outside.read_text(encoding="utf-8") == "original\n"


async def test_symlinked_folder_inside_root_is_followed_and_stays_confined(root: Path) -> None:
    os.symlink("src", root / "alias")
    ws = Workspace(root)
    await ws.write("alias/new.py", "x = 1\n")
    assert (root / "src" / "new.py").read_text(encoding="utf-8") == "x = 1\n"
    assert (await ws.read("alias/../notes.md"))["content"].startswith("# Notes")


async def test_hard_link_to_an_outside_file_is_not_read(root: Path, tmp_path: Path) -> None:
    os.link(tmp_path / "secret.txt", root / "innocent.txt")
    ws = Workspace(root)
    with pytest.raises(WorkspaceError, match="hard link"):
        await ws.read("innocent.txt")
    with pytest.raises(WorkspaceError, match="hard link"):
        await ws.edit("innocent.txt", "top", "bottom")
    assert (await ws.search("top secret"))["matches"] == []
    assert (tmp_path / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


def _fifo_in_use(fifo: Path) -> str | None:
    """Who has ``fifo`` open, or waits in ``open()`` for a partner (the kernel counts both): 'a reader',
    'a writer' or ``None``. The probes never block (O_NONBLOCK); a correct workspace never opens the FIFO
    (it is refused after a stat), so they cannot disturb it."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: nobody reads it
    except OSError:
        pass
    else:
        os.close(fd)
        return "a reader"
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return None if os.read(fd, 1) == b"" else "a writer"  # b"": end of file, so no writer
    except BlockingIOError:
        return "a writer"
    finally:
        os.close(fd)


async def _unless_stuck_on(fifo: Path, call: Awaitable[T], what: str) -> T:
    """``call``'s result, however long a busy machine makes its worker thread take; fails as soon as a
    thread of ours is seen on ``fifo`` (the bug: a worker blocked in ``open()`` until a partner came).
    A condition, not a time guess: before, a 3 s bound per call failed a correct workspace whose
    to_thread waited behind other work."""
    task = asyncio.ensure_future(call)
    while not task.done():
        holder = _fifo_in_use(fifo)
        if holder is not None:
            task.cancel()
            raise AssertionError(f"{what} opened the FIFO as {holder} (it blocks until a partner comes)")
        await asyncio.wait({task}, timeout=0.05)  # (how often to look, not a bound)
    return task.result()


async def test_fifo_does_not_block_a_worker(root: Path) -> None:
    """A FIFO blocked the reading thread for good (six of them exhausted the default executor)."""
    fifo = root / "pipe"
    os.mkfifo(fifo)
    ws = Workspace(root)
    try:
        with pytest.raises(WorkspaceError, match="FIFO"):
            await _unless_stuck_on(fifo, ws.read("pipe"), "read")
        with pytest.raises(WorkspaceError, match="FIFO"):
            await _unless_stuck_on(fifo, ws.edit("pipe", "a", "b"), "edit")
        with pytest.raises(WorkspaceError, match="FIFO"):
            await _unless_stuck_on(fifo, ws.write("pipe", "data"), "write")
        found = await _unless_stuck_on(fifo, ws.search("hello"), "search")
        assert [m["path"] for m in found["matches"]] == ["src/app.py"]
        listing = await _unless_stuck_on(fifo, ws.list("."), "list")
        assert {"path": "pipe", "type": "file", "size": None} in listing["entries"]
    finally:
        # unblock a reader the old code left waiting, so the test run can end
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


async def test_edit_respects_the_size_limit(root: Path) -> None:
    (root / "big.txt").write_text("needle\n" + "x" * 5000, encoding="utf-8")
    ws = Workspace(root, max_write_bytes=1000)
    with pytest.raises(WorkspaceError, match="limit is 1000"):
        await ws.edit("big.txt", "needle", "pin")
    assert (root / "big.txt").read_text(encoding="utf-8").startswith("needle\n")


async def test_symlink_loop_is_a_clear_error(root: Path) -> None:
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink("loop", root / "loop")
    ws = Workspace(root)
    for path in ("a", "loop", "a/x.txt"):
        with pytest.raises(WorkspaceError, match="symbolic links"):
            await ws.read(path)
    with pytest.raises(WorkspaceError, match="symbolic links"):
        await ws.write("loop", "x")
    paths = {e["path"] for e in (await ws.list("."))["entries"]}
    assert "a" not in paths and "notes.md" in paths


async def test_catastrophic_regex_has_a_time_budget_and_never_holds_the_loop(root: Path) -> None:
    """'(a|aa)+$' backtracks exponentially; the old search held the GIL (and so every request) until done."""
    (root / "evil.txt").write_text("a" * 34 + "!\n", encoding="utf-8")
    ws = Workspace(root, search_timeout=0.5)
    async with loop_turns() as turns:
        # the budget stopped it: without it this search runs for minutes (and never says this)
        with pytest.raises(WorkspaceError, match=r"longer than 0\.5 s"):
            await ws.search(r"(a|aa)+$", regex=True)
    # and the loop ran other tasks meanwhile (a search on the loop, or one holding the GIL, lets none)
    assert turns.count > 0
    # an ordinary pattern still works
    assert (await ws.search(r"^WEATHER", regex=True, case_sensitive=True))["matches"][0]["line"] == 2


async def test_secrets_the_agent_reads_are_hidden(root: Path) -> None:
    """A workspace .env was read in clear: its values went to the model, the event log and exports."""
    (root / ".env").write_text("# settings\nOPENAI_API_KEY=sk-live-abc123\nexport DB_PASSWORD = 'hunter2'\nEMPTY=\n",
                               encoding="utf-8")
    (root / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n", encoding="utf-8")
    (root / "notes.md").write_text("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\nok\n",
                                   encoding="utf-8")
    ws = Workspace(root)
    read = await ws.read(".env")
    assert "sk-live" not in read["content"] and "hunter2" not in read["content"]
    assert read["content"] == "# settings\nOPENAI_API_KEY=***\nexport DB_PASSWORD = ***\nEMPTY=\n"
    assert read["secretsHidden"] == 2
    with pytest.raises(WorkspaceError, match="private key"):
        await ws.read("deploy.pem")
    notes = await ws.read("notes.md")
    assert "MIIB" not in notes["content"] and notes["content"].endswith("ok\n")
    for probe in ("sk-live", "hunter2", "MIIE", "MIIB"):
        assert (await ws.search(probe))["matches"] == []
    assert [m["path"] for m in (await ws.search("OPENAI_API_KEY"))["matches"]] == [".env"]


async def test_a_symlink_loop_is_skipped_with_a_note_and_the_rest_is_listed_and_searched(root: Path) -> None:
    """Issue 31 item 4: one loop anywhere must not make listing or search of the whole folder fail."""
    (root / "deep").mkdir()
    (root / "deep" / "found.md").write_text("needle in the deep folder\n", encoding="utf-8")
    os.symlink("b", root / "deep" / "a")
    os.symlink("a", root / "deep" / "b")
    os.symlink("loop", root / "loop")
    ws = Workspace(root)
    listing = await ws.list(".", recursive=True)
    paths = {e["path"] for e in listing["entries"]}
    assert {"notes.md", "deep/found.md"} <= paths and "loop" not in paths and "deep/a" not in paths
    assert sorted(listing["skipped"]) == [
        "'deep/a' skipped: a symlink loop (too many levels of symbolic links)",
        "'deep/b' skipped: a symlink loop (too many levels of symbolic links)",
        "'loop' skipped: a symlink loop (too many levels of symbolic links)",
    ]
    found = await ws.search("needle")
    assert [m["path"] for m in found["matches"]] == ["deep/found.md"]
    assert len(found["skipped"]) == 3 and all("symlink loop" in note for note in found["skipped"])


async def test_a_hard_link_to_a_file_outside_is_refused_by_read_and_named_by_search(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("needle: the password outside\n", encoding="utf-8")
    os.link(outside, root / "linked.txt")
    ws = Workspace(root)
    with pytest.raises(WorkspaceError, match="2 hard links"):
        await ws.read("linked.txt")
    found = await ws.search("needle")
    assert found["matches"] == []
    assert found["skipped"] == ["'linked.txt' skipped: 'linked.txt' has 2 hard links (it may be a file from outside "
                                "the workspace); refused"]


def test_the_workspace_and_the_gateway_share_one_confinement(root: Path) -> None:
    from instance_ai_tui.client.gateway import FolderTools
    from instance_ai_tui.confine import ConfinedRoot

    assert type(Workspace(root)._confined) is ConfinedRoot and type(FolderTools(root).confined) is ConfinedRoot
