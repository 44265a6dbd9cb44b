"""A project's own MCP servers: ``.mcp.json`` in the workspace folder (``--workspace``) or the
current directory, in Claude Code's format, read after the person's config::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                  "env": {"LOG_LEVEL": "info"}},
        "tickets": {"type": "http", "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"}}}}

``${VAR}`` and ``${VAR:-default}`` in a command, an argument, an env or header value or a URL are
taken from the app's environment (as Claude Code does). A server of the person's config with the
same name wins. A project file is someone else's command line: its servers start only once the
person approved them (``/mcp``: ``a``), and an approval holds for that file's path and that
server's exact command or URL (a change asks again). Approvals are kept in the data folder
(``mcp-project-approvals.json``, 0600). Like every server, a project's stdio server gets only the
environment its entry names, plus ``HOME`` and ``PATH`` (``npx`` needs both).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

log = logging.getLogger(__name__)

FILE_NAME = ".mcp.json"
APPROVALS_FILE = "mcp-project-approvals.json"
#: the largest ``.mcp.json`` read
MAX_FILE_BYTES = 256 * 1024
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ProjectServers:
    """The servers of one ``.mcp.json`` (settings by name), what was wrong with it, its approvals."""

    def __init__(self, path: Path, servers: dict[str, Any], problems: list[str]) -> None:
        self.path = path
        self.servers = servers
        self.problems = problems


def find(folder: Path) -> Path | None:
    candidate = folder.expanduser() / FILE_NAME
    return candidate if candidate.is_file() else None


def _expand(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _VAR.sub(lambda m: env.get(m.group(1), m.group(2) or ""), value)
    if isinstance(value, list):
        return [_expand(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, env) for k, v in value.items()}
    return value


def read(path: Path, env: dict[str, str] | None = None) -> ProjectServers:
    """The servers of ``path`` as ``McpServerSettings`` (a broken file or entry is a problem said,
    never an error: the app starts without it)."""
    from ...config import McpServerSettings, McpSettings

    env = dict(os.environ if env is None else env)
    problems: list[str] = []
    servers: dict[str, Any] = {}
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ProjectServers(path, {}, [f"{path}: over {MAX_FILE_BYTES // 1024} KB, not read"])
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return ProjectServers(path, {}, [f"{path}: cannot be read ({exc})"])
    entries = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return ProjectServers(path, {}, [f"{path}: no \"mcpServers\" object"])
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            problems.append(f"{name}: not an object")
            continue
        entry = _expand(entry, env)
        kind = entry.get("type") or ("stdio" if entry.get("command") else "http")
        table: dict[str, Any] = {}
        if kind == "stdio":
            table = {"command": entry.get("command"), "args": entry.get("args") or [], "env": entry.get("env") or {},
                     "pass_env": ["HOME"]}
        elif kind in ("http", "sse", "streamable-http"):
            table = {"url": entry.get("url"), "headers": entry.get("headers") or {},
                     "transport": "sse" if kind == "sse" else "auto"}
        else:
            problems.append(f"{name}: type {kind!r} is not stdio, http or sse")
            continue
        try:
            McpSettings.model_validate({"servers": {name: table}})
            servers[name] = McpServerSettings.model_validate(table)
        except ValidationError as exc:
            from ...config import validation_summary

            problems.append(f"{name}: {validation_summary(exc, name)}")
    return ProjectServers(path, servers, problems)


def fingerprint(path: Path, settings: Any) -> str:
    """What an approval holds for: the file's path and the server's command line or URL."""
    what = json.dumps([str(path.resolve()), settings.command, settings.args, settings.url,
                       sorted(settings.env), sorted(settings.headers)], default=str)
    return hashlib.sha256(what.encode()).hexdigest()


class Approvals:
    """The project servers the person approved (a small private JSON file in the data folder)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / APPROVALS_FILE
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raw = {}
        self.approved: set[str] = set(raw.get("approved", [])) if isinstance(raw, dict) else set()

    def __contains__(self, key: str) -> bool:
        return key in self.approved

    def add(self, key: str) -> None:
        self.approved.add(key)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"approved": sorted(self.approved)}, fh)
        with contextlib.suppress(OSError):
            os.chmod(temporary, 0o600)
        os.replace(temporary, self.path)
