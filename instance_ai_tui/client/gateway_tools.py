"""The local gateway's three read-only tools (``read_file``, ``list_files``, ``search_files``) over one
folder, confined by :mod:`instance_ai_tui.confine` (the module the workspace uses too).

Resource decisions (reference §7.5): a read of a file outside the ``allow`` globs, larger than
``confirm_reads_over`` bytes, or with more than one hard link (it may be a file from outside the
folder linked in) answers ``GATEWAY_CONFIRMATION_REQUIRED::{json}``; n8n asks the person and calls
again with ``_confirmation`` = ``denyOnce`` / ``allowOnce`` / ``allowForSession``. A listing or a
search skips what it cannot show (a symlink loop, a folder it cannot read) with a note.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..confine import ConfinedRoot, Target, Walk, compile_pattern, kind_of, matching_lines, read_text

CONFIRMATION_PREFIX = "GATEWAY_CONFIRMATION_REQUIRED::"
DECISIONS = ("denyOnce", "allowOnce", "allowForSession")
TOOL_GROUP = "filesystemRead"
_READ_ONLY = {"category": "filesystem", "readOnlyHint": True, "destructiveHint": False,
              "idempotentHint": True, "openWorldHint": False}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a text file in the shared folder. Paths are relative to the folder.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the shared folder"},
                "startLine": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)"},
                "maxLines": {"type": "integer", "minimum": 1, "description": "How many lines to return"},
            },
            "required": ["path"],
        },
        "annotations": _READ_ONLY,
    },
    {
        "name": "list_files",
        "description": "List the files and folders in a folder of the shared folder.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Folder relative to the shared folder (default: its root)"},
                "recursive": {"type": "boolean", "description": "Also list sub-folders (default false)"},
                "maxEntries": {"type": "integer", "minimum": 1, "maximum": 5000},
            },
        },
        "annotations": _READ_ONLY,
    },
    {
        "name": "search_files",
        "description": "Search the text of the files in the shared folder; returns path:line: text matches.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Text to find (a regular expression if regex is true)"},
                "path": {"type": "string", "description": "Folder to search in (default: the shared folder)"},
                "glob": {"type": "string", "description": "Only files whose name matches, e.g. *.md"},
                "regex": {"type": "boolean"},
                "caseSensitive": {"type": "boolean"},
                "maxResults": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
            "required": ["query"],
        },
        "annotations": _READ_ONLY,
    },
]


class ToolFailure(Exception):
    """A tool call the user or the agent got wrong: sent back as an ``isError`` result."""


@dataclass(frozen=True)
class Policy:
    """What may be read without asking. ``allow=None``: every file under the folder."""

    allow: tuple[str, ...] | None = None
    confirm_reads_over: int | None = None
    max_read_bytes: int = 256 * 1024
    max_search_file_bytes: int = 2 * 1024 * 1024
    #: seconds a search (the agent's regular expression over every file) may take in all
    search_timeout: float = 2.0


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        result["isError"] = True
    return result


class FolderTools:
    """The three read-only tools, confined to ``root`` by :mod:`instance_ai_tui.confine` (the module the
    workspace uses too). Blocking file work runs in threads."""

    def __init__(self, root: Path | str, policy: Policy | None = None) -> None:
        self.root = Path(root).expanduser().resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"{self.root} is not a folder")
        self.policy = policy or Policy()
        self.confined = ConfinedRoot(self.root, noun="the shared folder", error=ToolFailure)
        self._session_allowed: set[str] = set()

    @staticmethod
    def definitions() -> list[dict[str, Any]]:
        return [dict(tool) for tool in TOOLS]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call; always returns an MCP result (errors as ``isError``)."""
        args = dict(arguments) if isinstance(arguments, dict) else {}
        decision = args.pop("_confirmation", None)
        try:
            if decision is not None and decision not in DECISIONS:
                raise ToolFailure(f"unknown _confirmation {decision!r}; expected one of {', '.join(DECISIONS)}")
            if name == "read_file":
                return await self._read_file(args, decision)
            if name == "list_files":
                return await asyncio.to_thread(self._list_files, args)
            if name == "search_files":
                return await asyncio.to_thread(self._search_files, args)
            raise ToolFailure(f"unknown tool {name!r}; this gateway offers {', '.join(t['name'] for t in TOOLS)}")
        except ToolFailure as exc:
            return _text(str(exc), error=True)
        except OSError as exc:
            return _text(f"{exc.strerror or exc}", error=True)

    # ------------------------------------------------------------------ confinement
    @staticmethod
    def _path(path: Any, default: str | None = None) -> str:
        if path is None and default is not None:
            path = default
        if not isinstance(path, str) or not path.strip():
            raise ToolFailure("path must be a non-empty string")
        return path

    def allowed(self, rel: str) -> bool:
        patterns = self.policy.allow
        if patterns is None or rel in self._session_allowed:
            return True
        return any(fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(rel, p.rstrip("/") + "/*") for p in patterns)

    # ------------------------------------------------------------------ tools
    def _inspect(self, path: str) -> tuple[str, os.stat_result]:
        """The path shown for ``path`` and its file's stat; a folder, a pipe or a missing file is refused."""
        target = self.confined.resolve(path)
        try:
            if target.name is None:
                raise ToolFailure(f"{target.display} is not a file (a folder; use list_files)")
            try:
                st = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise ToolFailure(f"no such file: {path}") from None
            if stat.S_ISDIR(st.st_mode):
                raise ToolFailure(f"{target.display} is not a file (a folder; use list_files)")
            if not stat.S_ISREG(st.st_mode):
                raise ToolFailure(f"{target.display} is not a file ({kind_of(st.st_mode)}); refused")
            return target.display, st
        finally:
            target.close()

    async def _read_file(self, args: dict[str, Any], decision: str | None) -> dict[str, Any]:
        path = self._path(args.get("path"))
        rel, st = await asyncio.to_thread(self._inspect, path)
        reasons = []
        if not self.allowed(rel):
            reasons.append("it is not in the gateway's allow-list")
        limit = self.policy.confirm_reads_over
        if limit is not None and st.st_size > limit and rel not in self._session_allowed:
            reasons.append(f"it is large ({st.st_size} bytes)")
        if st.st_nlink > 1 and rel not in self._session_allowed:
            reasons.append(f"it has {st.st_nlink} hard links (it may be a file from outside the shared folder)")
        if reasons:
            if decision is None:
                request = {"toolGroup": TOOL_GROUP, "resource": rel,
                           "description": f"Read file {rel}: " + " and ".join(reasons),
                           "options": list(DECISIONS)}
                return _text(CONFIRMATION_PREFIX + json.dumps(request), error=True)
            if decision == "denyOnce":
                raise ToolFailure(f"User denied access to {rel}")
            if decision == "allowForSession":
                self._session_allowed.add(rel)
        start, count = _positive(args.get("startLine"), "startLine"), _positive(args.get("maxLines"), "maxLines")
        # a person who was asked about this file's links may read it; otherwise a link made since is refused
        asked = bool(reasons) or rel in self._session_allowed
        return await asyncio.to_thread(self._read_text, path, start, count, asked)

    def _read_text(self, path: str, start: int | None, count: int | None, hard_links: bool) -> dict[str, Any]:
        cap = self.policy.max_read_bytes
        target = self.confined.resolve(path)
        try:
            if target.name is None:
                raise ToolFailure(f"{target.display} is not a file (a folder; use list_files)")
            fd, st = self.confined.open_file(target.dir_fd, target.name, target.display, hard_links=hard_links)
        finally:
            target.close()
        rel = target.display
        read = read_text(fd, cap)
        if read is None:
            raise ToolFailure(f"{rel} is a binary file ({st.st_size} bytes); only text can be read")
        text, truncated = read
        if start is not None or count is not None:
            lines = text.splitlines(keepends=True)
            first = (start or 1) - 1
            text = "".join(lines[first : first + count if count is not None else None])
        if truncated:
            text += f"\n[... truncated: {rel} is larger than {cap} bytes; use startLine/maxLines]"
        return _text(text)

    def _open_top(self, args: dict[str, Any]) -> Target:
        try:
            return self.confined.open_folder(self._path(args.get("path"), default="."))
        except ToolFailure as exc:
            if "is a file, not a folder" in str(exc):
                raise ToolFailure(str(exc).replace("is a file, not a folder", "is not a folder")) from None
            raise

    def _list_files(self, args: dict[str, Any]) -> dict[str, Any]:
        limit = _positive(args.get("maxEntries"), "maxEntries") or 500
        top = self._open_top(args)
        walk = Walk()
        lines: list[str] = []
        more = 0
        try:
            for entry in self.confined.walk(top.dir_fd, top.parts, bool(args.get("recursive")), walk):
                if len(lines) >= limit:
                    more += 1
                    continue
                if stat.S_ISDIR(entry.st.st_mode):
                    lines.append(entry.display + "/")
                elif stat.S_ISREG(entry.st.st_mode):
                    lines.append(f"{entry.display} ({entry.st.st_size} bytes)")
                else:
                    lines.append(entry.display)
        finally:
            top.close()
        if more:
            lines.append(f"[... {more} more entries; raise maxEntries or list a sub-folder]")
        lines.extend(f"[{note}]" for note in walk.notes)
        return _text("\n".join(lines) if lines else f"{top.display} is empty")

    def _search_files(self, args: dict[str, Any]) -> dict[str, Any]:
        query = args.get("query")
        if not isinstance(query, str) or not query:
            raise ToolFailure("query must be a non-empty string")
        pattern = compile_pattern(query, bool(args.get("regex")), bool(args.get("caseSensitive")), ToolFailure)
        deadline = time.monotonic() + self.policy.search_timeout
        glob = args.get("glob") if isinstance(args.get("glob"), str) else None
        limit = _positive(args.get("maxResults"), "maxResults") or 100
        top = self._open_top(args)
        matches: list[str] = []
        skipped = linked = 0
        walk = Walk()
        owned = [top.dir_fd]
        try:
            for entry in self.confined.walk_files(top.dir_fd, top.parts, owned, walk):
                if glob and not fnmatch.fnmatch(entry.display.rsplit("/", 1)[-1], glob):
                    continue
                if not self.allowed(entry.display):
                    skipped += 1
                    continue
                if entry.st.st_nlink > 1 and entry.display not in self._session_allowed:
                    linked += 1
                    continue
                try:
                    fd, _st = self.confined.open_file(entry.dir_fd, entry.name, entry.display,
                                                      self.policy.max_search_file_bytes,
                                                      hard_links=entry.display in self._session_allowed)
                    read = read_text(fd, self.policy.max_search_file_bytes)
                except (ToolFailure, OSError):
                    continue  # too large, changed, or not a regular file (a pipe is never opened)
                if read is None:
                    continue
                try:
                    for number, line in matching_lines(pattern, read[0], deadline):
                        matches.append(f"{entry.display}:{number}: {line}")
                        if len(matches) >= limit:
                            break
                except TimeoutError:
                    raise ToolFailure(f"the search took longer than {self.policy.search_timeout:g} s and was "
                                      "stopped; use a simpler pattern or search a sub-folder") from None
                if len(matches) >= limit:
                    matches.append(f"[... stopped at {limit} matches]")
                    break
        finally:
            for fd in owned:
                os.close(fd)
        if skipped:
            matches.append(f"[{skipped} files outside the allow-list were not searched; read them by name to ask]")
        if linked:
            matches.append(f"[{linked} files with more than one hard link were not searched (they may be files "
                           "from outside the shared folder); read them by name to ask]")
        matches.extend(f"[{note}]" for note in walk.notes)
        return _text("\n".join(matches) if matches else f"no matches for {query!r}")


def _positive(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolFailure(f"{name} must be a positive integer")
    return value
