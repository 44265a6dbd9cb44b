"""A folder the agent may read and (with approval) change: every path is confined to its root.

Paths are resolved (following symlinks) and must stay inside the root, so ``..`` traversal,
absolute paths elsewhere and symlinks pointing out of the root are refused. File I/O runs in
a worker thread (``asyncio.to_thread``) so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: directories never listed or searched (noise, not user content)
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache"})


class WorkspaceError(Exception):
    """A file operation the agent asked for cannot be done; the message is shown to it and the user."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    line: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "text": self.text}


class Workspace:
    """File operations inside ``root``. All public methods are coroutines."""

    def __init__(self, root: Path | str, *, max_read_bytes: int = 200_000, max_write_bytes: int = 2_000_000) -> None:
        self.root = Path(root).expanduser().resolve()
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes

    # ----------------------------------------------------------------- paths
    def resolve(self, path: str) -> Path:
        """The absolute path of ``path`` (relative to the root), refusing anything outside it."""
        if not isinstance(path, str):
            raise WorkspaceError("path must be a string")
        if "\x00" in path:
            raise WorkspaceError("path contains a NUL byte")
        raw = Path(path.strip() or ".")
        candidate = raw if raw.is_absolute() else self.root / raw
        resolved = candidate.resolve(strict=False)
        if not resolved.is_relative_to(self.root):
            if candidate.is_symlink() or any(p.is_symlink() for p in candidate.parents if p.is_relative_to(self.root)):
                raise WorkspaceError(f"'{path}' is a symlink that points outside the workspace; refused")
            raise WorkspaceError(f"'{path}' is outside the workspace root; refused")
        return resolved

    def relative(self, absolute: Path) -> str:
        rel = absolute.relative_to(self.root).as_posix()
        return rel or "."

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve(strict=False).is_relative_to(self.root)
        except OSError:
            return False

    # ----------------------------------------------------------------- list
    async def list(self, path: str = ".", recursive: bool = False, limit: int = 500) -> dict[str, Any]:
        target = self.resolve(path)
        return await asyncio.to_thread(self._list_sync, target, recursive, max(1, min(limit, 5000)))

    def _list_sync(self, target: Path, recursive: bool, limit: int) -> dict[str, Any]:
        if not target.exists():
            raise WorkspaceError(f"'{self.relative(target)}' does not exist")
        if not target.is_dir():
            raise WorkspaceError(f"'{self.relative(target)}' is a file, not a folder")
        entries: list[dict[str, Any]] = []
        truncated = False
        for entry in self._walk(target, recursive):
            if len(entries) >= limit:
                truncated = True
                break
            is_dir = entry.is_dir()
            item: dict[str, Any] = {"path": self._display(entry), "type": "dir" if is_dir else "file"}
            if not is_dir:
                try:
                    item["size"] = entry.stat().st_size
                except OSError:
                    item["size"] = None
            entries.append(item)
        return {"path": self.relative(target), "entries": entries, "truncated": truncated}

    def _display(self, entry: Path) -> str:
        """An entry's own path below the root (a symlink shows its name, not its target)."""
        return entry.relative_to(self.root).as_posix()

    def _walk(self, folder: Path, recursive: bool) -> Any:
        try:
            children = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
        except OSError as exc:
            raise WorkspaceError(f"cannot list '{self.relative(folder)}': {exc.strerror}") from None
        for child in children:
            if not self._inside(child):
                continue  # symlink escaping the root: invisible
            if child.is_dir() and child.name in SKIPPED_DIRS:
                continue
            yield child
            if recursive and child.is_dir() and not child.is_symlink():
                yield from self._walk(child, True)

    # ----------------------------------------------------------------- read
    async def read(self, path: str, start_line: int = 1, max_lines: int | None = None) -> dict[str, Any]:
        target = self.resolve(path)
        return await asyncio.to_thread(self._read_sync, target, max(1, start_line), max_lines)

    def _read_sync(self, target: Path, start_line: int, max_lines: int | None) -> dict[str, Any]:
        if not target.exists():
            raise WorkspaceError(f"'{self.relative(target)}' does not exist")
        if target.is_dir():
            raise WorkspaceError(f"'{self.relative(target)}' is a folder; use list-files")
        try:
            with target.open("rb") as fh:
                data = fh.read(self.max_read_bytes + 1)
        except OSError as exc:
            raise WorkspaceError(f"cannot read '{self.relative(target)}': {exc.strerror}") from None
        if b"\x00" in data[:8192]:
            raise WorkspaceError(f"'{self.relative(target)}' looks like a binary file; not read")
        truncated = len(data) > self.max_read_bytes
        text = data[: self.max_read_bytes].decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        end = len(lines) if max_lines is None else min(len(lines), start_line - 1 + max(0, max_lines))
        selected = lines[start_line - 1 : end]
        if end < len(lines):
            truncated = True
        return {
            "path": self.relative(target),
            "content": "".join(selected),
            "startLine": start_line,
            "endLine": start_line - 1 + len(selected),
            "truncated": truncated,
        }

    # ----------------------------------------------------------------- search
    async def search(
        self,
        query: str,
        path: str = ".",
        regex: bool = False,
        case_sensitive: bool = False,
        limit: int = 100,
    ) -> dict[str, Any]:
        if not query:
            raise WorkspaceError("search query must not be empty")
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            pattern = re.compile(query if regex else re.escape(query), flags)
        except re.error as exc:
            raise WorkspaceError(f"invalid regular expression: {exc}") from None
        target = self.resolve(path)
        return await asyncio.to_thread(self._search_sync, pattern, target, max(1, min(limit, 1000)))

    def _search_sync(self, pattern: re.Pattern[str], target: Path, limit: int) -> dict[str, Any]:
        if not target.exists():
            raise WorkspaceError(f"'{self.relative(target)}' does not exist")
        files = [target] if target.is_file() else [p for p in self._walk(target, True) if p.is_file()]
        hits: list[SearchHit] = []
        truncated = False
        for file in files:
            try:
                if file.stat().st_size > self.max_read_bytes * 5:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if b"\x00" in data[:8192]:
                continue
            rel = self._display(file) if file != target else self.relative(target)
            for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
                if pattern.search(line):
                    if len(hits) >= limit:
                        truncated = True
                        break
                    hits.append(SearchHit(rel, number, line.strip()[:300]))
            if truncated:
                break
        return {"matches": [h.to_dict() for h in hits], "truncated": truncated}

    # ----------------------------------------------------------------- write / edit
    async def write(self, path: str, content: str) -> dict[str, Any]:
        target = self.resolve(path)
        encoded = content.encode("utf-8")
        if len(encoded) > self.max_write_bytes:
            raise WorkspaceError(f"content is {len(encoded)} bytes; the limit is {self.max_write_bytes}")
        return await asyncio.to_thread(self._write_sync, target, encoded)

    def _write_sync(self, target: Path, encoded: bytes) -> dict[str, Any]:
        if target == self.root or target.is_dir():
            raise WorkspaceError(f"'{self.relative(target)}' is a folder")
        existed = target.exists()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # parents created now must still be inside the root (a racing symlink would be caught here)
            if not target.parent.resolve().is_relative_to(self.root):
                raise WorkspaceError("the target folder resolves outside the workspace; refused")
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(encoded)
            os.replace(tmp, target)
        except OSError as exc:
            raise WorkspaceError(f"cannot write '{self.relative(target)}': {exc.strerror}") from None
        return {"path": self.relative(target), "bytes": len(encoded), "created": not existed}

    async def edit(self, path: str, old_text: str, new_text: str, replace_all: bool = False) -> dict[str, Any]:
        if not old_text:
            raise WorkspaceError("old_text must not be empty")
        target = self.resolve(path)
        return await asyncio.to_thread(self._edit_sync, target, old_text, new_text, replace_all)

    def _edit_sync(self, target: Path, old_text: str, new_text: str, replace_all: bool) -> dict[str, Any]:
        if not target.is_file():
            raise WorkspaceError(f"'{self.relative(target)}' does not exist or is not a file")
        try:
            text = target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError(f"'{self.relative(target)}' is not UTF-8 text; not edited") from None
        except OSError as exc:
            raise WorkspaceError(f"cannot read '{self.relative(target)}': {exc.strerror}") from None
        count = text.count(old_text)
        if count == 0:
            raise WorkspaceError(f"old_text was not found in '{self.relative(target)}'")
        if count > 1 and not replace_all:
            raise WorkspaceError(
                f"old_text occurs {count} times in '{self.relative(target)}'; give more context or set replaceAll"
            )
        updated = text.replace(old_text, new_text) if replace_all else text.replace(old_text, new_text, 1)
        self._write_sync(target, updated.encode("utf-8"))
        return {"path": self.relative(target), "replacements": count if replace_all else 1}
