"""A folder the agent may read and (with approval) change: every path is confined to its root.

Paths are confined by :mod:`instance_ai_tui.confine` (the one module the local gateway uses too):
resolved one component at a time with ``O_NOFOLLOW`` from a descriptor of the root, symlinks
followed only inside it, only regular files opened (``O_NONBLOCK``), a file with more than one
hard link refused (it may be a file from outside the folder). A listing or search skips what it
cannot show (a symlink loop, a folder it cannot read) and says so in ``skipped``; a link leading
outside is left out.
Writes go to a fresh temporary file created ``O_EXCL | O_NOFOLLOW`` with an unpredictable
name in the target folder, then renamed over the target. Every path has a size limit.

Regular expressions come from a model: they run on the ``regex`` engine with a time budget
(:attr:`Workspace.search_timeout`), in a worker thread that releases the GIL, so a
catastrophic pattern ends with an error instead of holding the server.

File I/O runs in a worker thread (``asyncio.to_thread``) so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import re
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..confine import ConfinedRoot, Walk, compile_pattern, kind_of, matching_lines, read_fd, read_text

#: directories never listed or searched (noise, not user content)
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache"})

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _O_CLOEXEC


#: files that hold credentials and nothing else: never read (their text would be stored with the run)
PRIVATE_KEY_FILES = frozenset({"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".pgpass"})
PRIVATE_KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks")
# (our own fixed patterns: the standard engine; a model's patterns run on ``regex``, with a time budget)
_ENV_LINE = re.compile(r"^(\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*[=:]\s*)(.+?)\s*$")
_PRIVATE_BLOCK = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL)


def is_env_file(name: str) -> bool:
    """``.env``, ``.env.local``, ``prod.env``, ``.envrc``: settings files whose values are secrets."""
    lower = name.lower()
    return lower in (".env", ".envrc") or lower.startswith(".env.") or lower.endswith(".env")


def is_private_key_file(name: str) -> bool:
    lower = name.lower()
    return lower in PRIVATE_KEY_FILES or lower.endswith(PRIVATE_KEY_SUFFIXES)


def redact_secrets(name: str, text: str) -> tuple[str, int]:
    """``text`` of the file ``name`` with secret values replaced by ``***`` (every value of an env
    file; private key blocks in any file) and how many were hidden. The agent still sees which
    settings exist; the values never reach the model, the event log or an export."""
    hidden = 0

    def block(_match: Any) -> str:
        nonlocal hidden
        hidden += 1
        return "-----PRIVATE KEY (hidden)-----"

    text = _PRIVATE_BLOCK.sub(block, text)
    if not is_env_file(name):
        return text, hidden
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        match = _ENV_LINE.match(body) if not body.lstrip().startswith("#") else None
        if match and match.group(2):
            hidden += 1
            line = f"{match.group(1)}***" + line[len(body):]
        lines.append(line)
    return "".join(lines), hidden


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

    def __init__(
        self,
        root: Path | str,
        *,
        max_read_bytes: int = 200_000,
        max_write_bytes: int = 2_000_000,
        search_timeout: float = 2.0,
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes
        self.search_timeout = search_timeout
        self._confined = ConfinedRoot(self.root, noun="the workspace", error=WorkspaceError,
                                      skipped_dirs=SKIPPED_DIRS)

    # ----------------------------------------------------------------- paths
    def resolve(self, path: str) -> Path:
        """The absolute path of ``path`` (relative to the root), refusing anything outside it."""
        target = self._confined.resolve(path)
        target.close()
        return self.root.joinpath(*target.parts)

    def _open_file(self, dir_fd: int, name: str, display: str, limit: int | None = None) -> tuple[int, os.stat_result]:
        """An open descriptor of the regular file ``name`` in ``dir_fd``; anything else (a folder, a FIFO, a
        file with more than one hard link) is refused before reading."""
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(f"'{display}' is a folder; use list-files")
        return self._confined.open_file(dir_fd, name, display, limit)

    # ----------------------------------------------------------------- list
    async def list(self, path: str = ".", recursive: bool = False, limit: int = 500) -> dict[str, Any]:
        return await asyncio.to_thread(self._list_sync, path, recursive, max(1, min(limit, 5000)))

    def _list_sync(self, path: str, recursive: bool, limit: int) -> dict[str, Any]:
        folder = self._confined.open_folder(path)
        entries: builtins.list[dict[str, Any]] = []
        truncated = False
        walk = Walk()
        try:
            for entry in self._confined.walk(folder.dir_fd, folder.parts, recursive, walk):
                if len(entries) >= limit:
                    truncated = True
                    break
                is_dir = stat.S_ISDIR(entry.st.st_mode)
                item: dict[str, Any] = {"path": entry.display, "type": "dir" if is_dir else "file"}
                if not is_dir:
                    item["size"] = entry.st.st_size if stat.S_ISREG(entry.st.st_mode) else None
                entries.append(item)
        finally:
            folder.close()
        result: dict[str, Any] = {"path": folder.display, "entries": entries, "truncated": truncated}
        if walk.notes:
            result["skipped"] = walk.notes
        return result

    # ----------------------------------------------------------------- read
    async def read(self, path: str, start_line: int = 1, max_lines: int | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self._read_sync, path, max(1, start_line), max_lines)

    def _read_sync(self, path: str, start_line: int, max_lines: int | None) -> dict[str, Any]:
        target = self._confined.resolve(path)
        try:
            if target.name is None:
                raise WorkspaceError(f"'{target.display}' is a folder; use list-files")
            if is_private_key_file(target.name):
                raise WorkspaceError(f"'{target.display}' holds a private key or credentials; not read")
            fd, _st = self._open_file(target.dir_fd, target.name, target.display)
        finally:
            target.close()
        try:
            read = read_text(fd, self.max_read_bytes)
        except OSError as exc:
            raise WorkspaceError(f"cannot read '{target.display}': {exc.strerror}") from None
        if read is None:
            raise WorkspaceError(f"'{target.display}' looks like a binary file; not read")
        text, truncated = read
        text, hidden = redact_secrets(target.parts[-1] if target.parts else "", text)
        lines = text.splitlines(keepends=True)
        end = len(lines) if max_lines is None else min(len(lines), start_line - 1 + max(0, max_lines))
        selected = lines[start_line - 1 : end]
        if end < len(lines):
            truncated = True
        return {
            "path": target.display,
            "content": "".join(selected),
            "startLine": start_line,
            "endLine": start_line - 1 + len(selected),
            "truncated": truncated,
            **({"secretsHidden": hidden} if hidden else {}),
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
        pattern = compile_pattern(query, regex, case_sensitive, WorkspaceError, max_length=1000)
        return await asyncio.to_thread(self._search_sync, pattern, path, max(1, min(limit, 1000)))

    def _search_sync(self, pattern: Any, path: str, limit: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.search_timeout
        target = self._confined.resolve(path)
        files: builtins.list[tuple[int, str, str]] = []  # (dir fd, name, display); the fds are closed below
        owned: builtins.list[int] = []
        walk = Walk()
        try:
            if target.name is not None:
                try:
                    st = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise WorkspaceError(f"'{target.display}' does not exist") from None
                if not stat.S_ISDIR(st.st_mode):
                    files.append((target.dir_fd, target.name, target.display))
            if not files:
                folder = self._confined.open_folder(path)
                owned.append(folder.dir_fd)
                for entry in self._confined.walk_files(folder.dir_fd, folder.parts, owned, walk):
                    files.append((entry.dir_fd, entry.name, entry.display))
            result = self._search_files(pattern, files, limit, deadline, walk)
        finally:
            target.close()
            for fd in owned:
                os.close(fd)
        if walk.notes:
            result["skipped"] = walk.notes
        return result

    def _search_files(self, pattern: Any, files: builtins.list[tuple[int, str, str]], limit: int,
                      deadline: float, walk: Walk) -> dict[str, Any]:
        hits: builtins.list[SearchHit] = []
        truncated = False
        for dir_fd, name, display in files:
            if is_private_key_file(name):
                continue
            try:
                fd, _st = self._open_file(dir_fd, name, display, limit=self.max_read_bytes * 5)
                read = read_text(fd, self.max_read_bytes * 5)
            except WorkspaceError as exc:
                if "hard link" in str(exc):
                    walk.note(f"'{display}' skipped: {exc}")
                continue
            except OSError:
                continue
            if read is None:
                continue
            text, _hidden = redact_secrets(name, read[0])
            try:
                for number, line in matching_lines(pattern, text, deadline):
                    if len(hits) >= limit:
                        truncated = True
                        break
                    hits.append(SearchHit(display, number, line))
            except TimeoutError:
                raise WorkspaceError(
                    f"the search took longer than {self.search_timeout:g} s (a regular expression that "
                    "backtracks too much?); stopped — simplify the pattern or narrow the path"
                ) from None
            if truncated:
                break
        return {"matches": [h.to_dict() for h in hits], "truncated": truncated}

    # ----------------------------------------------------------------- write / edit
    async def write(self, path: str, content: str) -> dict[str, Any]:
        encoded = self._encode(content)
        return await asyncio.to_thread(self._write_sync, path, encoded)

    def _encode(self, content: str) -> bytes:
        try:
            encoded = content.encode("utf-8")
        except UnicodeEncodeError:
            raise WorkspaceError("content is not valid Unicode text (a lone surrogate?); not written") from None
        if len(encoded) > self.max_write_bytes:
            raise WorkspaceError(f"content is {len(encoded)} bytes; the limit is {self.max_write_bytes}")
        return encoded

    def _write_sync(self, path: str, encoded: bytes) -> dict[str, Any]:
        self._confined.components(path)  # validation errors before anything is created
        target = self._confined.resolve(path, create_parents=True)
        try:
            if target.name is None:
                raise WorkspaceError(f"'{target.display}' is a folder")
            return self._replace(target.dir_fd, target.name, target.display, encoded)
        finally:
            target.close()

    def _replace(self, dir_fd: int, name: str, display: str, encoded: bytes) -> dict[str, Any]:
        try:
            existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if stat.S_ISDIR(existing.st_mode):
                raise WorkspaceError(f"'{display}' is a folder")
            if not stat.S_ISREG(existing.st_mode):
                raise WorkspaceError(f"'{display}' is {kind_of(existing.st_mode)}, not a regular file; refused")
        tmp = ""
        try:
            for _ in range(16):
                tmp = f".{name[:200]}.{secrets.token_hex(8)}.tmp"
                try:
                    fd = os.open(tmp, _O_TEMP, 0o666, dir_fd=dir_fd)
                    break
                except FileExistsError:
                    continue
            else:  # pragma: no cover - 16 collisions of 64 random bits
                raise WorkspaceError(f"cannot create a temporary file next to '{display}'")
            try:
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                view = memoryview(encoded)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            tmp = ""
        except OSError as exc:
            raise WorkspaceError(f"cannot write '{display}': {exc.strerror}") from None
        finally:
            if tmp:
                try:
                    os.unlink(tmp, dir_fd=dir_fd)
                except OSError:
                    pass
        return {"path": display, "bytes": len(encoded), "created": existing is None}

    async def edit(self, path: str, old_text: str, new_text: str, replace_all: bool = False) -> dict[str, Any]:
        if not old_text:
            raise WorkspaceError("old_text must not be empty")
        return await asyncio.to_thread(self._edit_sync, path, old_text, new_text, replace_all)

    def _edit_sync(self, path: str, old_text: str, new_text: str, replace_all: bool) -> dict[str, Any]:
        target = self._confined.resolve(path)
        try:
            if target.name is None:
                raise WorkspaceError(f"'{target.display}' is a folder")
            try:
                fd, _st = self._open_file(target.dir_fd, target.name, target.display, limit=self.max_write_bytes)
            except WorkspaceError as exc:
                if "does not exist" in str(exc):
                    raise WorkspaceError(f"'{target.display}' does not exist or is not a file") from None
                raise
            try:
                data = read_fd(fd, self.max_write_bytes + 1)
            except OSError as exc:
                raise WorkspaceError(f"cannot read '{target.display}': {exc.strerror}") from None
            if len(data) > self.max_write_bytes:
                raise WorkspaceError(f"'{target.display}' is larger than {self.max_write_bytes} bytes; not edited")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise WorkspaceError(f"'{target.display}' is not UTF-8 text; not edited") from None
            count = text.count(old_text)
            if count == 0:
                raise WorkspaceError(f"old_text was not found in '{target.display}'")
            if count > 1 and not replace_all:
                raise WorkspaceError(
                    f"old_text occurs {count} times in '{target.display}'; give more context or set replaceAll"
                )
            updated = text.replace(old_text, new_text) if replace_all else text.replace(old_text, new_text, 1)
            self._replace(target.dir_fd, target.name, target.display, self._encode(updated))
            return {"path": target.display, "replacements": count if replace_all else 1}
        finally:
            target.close()
