"""The local gateway: lets a remote n8n's agent read files in one folder the user chose.

It plays the part of n8n's ``@n8n/computer-use`` daemon (reference §7), read-only:

1. pair: ``POST /rest/instance-ai/gateway/create-link`` with the user's session gives a
   pairing token (or use a gateway key given by the user);
2. ``POST gateway/init`` (header ``X-Gateway-Key``) with the folder and the MCP tool list
   ``read_file``, ``list_files``, ``search_files``; a pairing token is exchanged for a session key;
3. consume ``GET gateway/events`` (SSE): each ``filesystem-request`` frame is a tool call,
   answered with ``POST gateway/response/:requestId`` and an MCP result
   ``{content: [{type: "text", text}], isError?}``; ``gateway-disconnect`` ends the session.
   A dropped stream is reconnected (backoff + jitter); a server that forgot the gateway gets
   ``init`` again. With ``pair_again`` (the TUI's ``--gateway``), ``gateway-disconnect`` (n8n
   sends it when it shuts down) and a key the restarted server no longer knows (n8n 2.41: 403
   "Invalid API key", after a clean stop or a ``kill -9``; 401 elsewhere) lead to pairing again,
   retried with capped backoff while n8n is away, instead of the end of the session; the
   connection state says "pairing again" meanwhile. A 403 that forbids the gateway ("Local
   gateway is disabled") ends it with n8n's words.

Every path is confined to the folder by :mod:`instance_ai_tui.confine`, the module the workspace
uses: resolved one component at a time with ``O_NOFOLLOW``; ``..``, absolute paths and symlinks
that lead outside are refused; a symlink loop is skipped with a note in a listing or search. A
file with more than one hard link (it may be a file from outside linked in) is read only after
asking, like a file outside the allow-list. Resource decisions (§7.5): a read of a file outside the ``allow`` globs, or larger
than ``confirm_reads_over`` bytes, answers ``GATEWAY_CONFIRMATION_REQUIRED::{json}``; n8n asks
the user and calls again with ``_confirmation`` = ``denyOnce`` / ``allowOnce`` /
``allowForSession``.

Run it alone: ``python -m instance_ai_tui.cli.gateway --url URL --email E --dir FOLDER``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import platform
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..confine import ConfinedRoot, Target, Walk, kind_of, read_fd
from .base import AuthError, ClientError, ConnectionState
from .n8n_auth import N8nSession
from .sse import SseStatusError, reconnecting_sse

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


class GatewayError(ClientError):
    """The gateway cannot (or may no longer) serve: refused key, disabled feature, ..."""


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
        data = read_fd(fd, cap + 1)
        if b"\x00" in data[:8192]:
            raise ToolFailure(f"{rel} is a binary file ({st.st_size} bytes); only text can be read")
        truncated = len(data) > cap
        text = data[:cap].decode("utf-8", errors="replace")
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
        # the agent's pattern runs on the regex engine with a time budget, releasing the GIL:
        # a catastrophic pattern such as (a+)+$ can neither hang the search nor stall the app
        import regex

        flags = regex.VERSION0 | (0 if args.get("caseSensitive") else regex.IGNORECASE)
        try:
            pattern = regex.compile(query if args.get("regex") else regex.escape(query), flags)
        except regex.error as exc:
            raise ToolFailure(f"invalid regular expression: {exc}") from None
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
                    data = read_fd(fd, self.policy.max_search_file_bytes + 1)
                except (ToolFailure, OSError):
                    continue  # too large, changed, or not a regular file (a pipe is never opened)
                if b"\x00" in data[:8192]:
                    continue
                for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                    remaining = deadline - time.monotonic()
                    try:
                        if remaining <= 0:
                            raise TimeoutError
                        found = pattern.search(line, timeout=remaining, concurrent=True)
                    except TimeoutError:
                        raise ToolFailure(f"the search took longer than {self.policy.search_timeout:g} s and was "
                                          "stopped; use a simpler pattern or search a sub-folder") from None
                    if found:
                        matches.append(f"{entry.display}:{number}: {line.strip()[:300]}")
                        if len(matches) >= limit:
                            break
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


# --------------------------------------------------------------------------- the daemon


class LocalGateway:
    """Serves ``root`` to the n8n at ``base_url``. ``start()`` runs it in the background.

    Authenticate with ``key`` (a pairing token, session key or the static
    ``N8N_INSTANCE_AI_GATEWAY_API_KEY``) or with ``session`` (a logged-in ``N8nSession``: a
    pairing token is then created for you).
    """

    def __init__(
        self,
        base_url: str,
        root: Path | str,
        *,
        key: str | None = None,
        session: N8nSession | None = None,
        allow: list[str] | tuple[str, ...] | None = None,
        confirm_reads_over: int | None = None,
        host_identifier: str | None = None,
        http: httpx.AsyncClient | None = None,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        keepalive_timeout: float = 45.0,
        log: Callable[[str], None] | None = None,
        set_state: Callable[[ConnectionState, str], None] | None = None,
        pair_again: bool = False,
    ) -> None:
        if key is None and session is None:
            raise GatewayError("the local gateway needs a gateway key or a logged-in n8n session")
        self.base_url = base_url.rstrip("/")
        policy = Policy(allow=tuple(allow) if allow is not None else None, confirm_reads_over=confirm_reads_over)
        self.tools = FolderTools(root, policy)
        self._key = key
        self._session = session
        self.host_identifier = host_identifier or platform.node() or "instance-ai"
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(timeout=30.0)
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._keepalive_timeout = keepalive_timeout
        self._log = log or (lambda message: None)
        self._set_state = set_state or (lambda state, detail: None)
        self._task: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.handled = 0
        self.ended_by_server = False
        self.pair_again = pair_again
        #: how many times the gateway paired again after n8n ended the session or restarted
        self.repairs = 0
        #: refusals of the stream in a row without it connecting in between (init/pair again at most 3)
        self._refusals = 0
        #: since when the stream has been failing (None: connected); what ``_pairing_lost`` watches
        self._reconnecting_since: float | None = None
        #: seconds between two looks at n8n's gateway status while the stream fails
        self._watch_interval = max(1.0, min(3.0, initial_backoff * 6))

    def __repr__(self) -> str:
        return f"LocalGateway({self.base_url!r}, root={str(self.tools.root)!r})"

    @property
    def api(self) -> str:
        return self.base_url + "/rest/instance-ai/gateway"

    # ------------------------------------------------------------------ handshake
    async def pair(self) -> str:
        """``create-link`` with the session: returns (and adopts) a fresh pairing token."""
        if self._session is None:
            raise GatewayError("pairing needs a logged-in n8n session")
        data = await self._post("/create-link", None, headers=self._session.headers())
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise GatewayError("n8n did not return a gateway pairing token")
        self._key = token
        return token

    async def init(self) -> None:
        """Announce the folder and the tools; exchanges a pairing token for a session key."""
        if self._key is None:
            await self.pair()
        body = {
            "rootPath": str(self.tools.root),
            "tools": self.tools.definitions(),
            "hostIdentifier": self.host_identifier,
            "toolCategories": [{"name": "filesystem", "enabled": True, "writeAccess": False}],
        }
        data = await self._post("/init", body, headers=self._key_headers())
        session_key = data.get("sessionKey") if isinstance(data, dict) else None
        if isinstance(session_key, str) and session_key:
            self._key = session_key
        self._log(f"gateway ready: {self.tools.root} shared with {self.base_url}")

    def _key_headers(self) -> dict[str, str]:
        assert self._key is not None
        return {"X-Gateway-Key": self._key}

    async def _post(self, path: str, body: Any, *, headers: dict[str, str]) -> Any:
        try:
            response = await self._http.post(self.api + path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise GatewayError(f"cannot reach n8n at {self.base_url}: {type(exc).__name__}") from None
        if response.status_code >= 400:
            raise _gateway_error(response.status_code, response.text, path)
        try:
            return response.json().get("data")
        except (ValueError, AttributeError):
            raise GatewayError(f"{self.api}{path} did not answer like n8n") from None

    # ------------------------------------------------------------------ serving
    async def start(self) -> None:
        """Pair if needed, init, then serve in a background task."""
        await self.init()
        self._task = asyncio.create_task(self.serve(initialized=True), name="local-gateway")

    async def wait(self) -> None:
        """Until the server ends the session (or ``stop()``); re-raises a fatal error."""
        if self._task is not None:
            await self._task

    def _stream_state(self, state: ConnectionState, detail: str) -> None:
        if state == ConnectionState.CONNECTED:
            self._refusals = 0  # n8n took the key: a later refusal is news (a restart), not a loop
            self._reconnecting_since = None
        elif state == ConnectionState.RECONNECTING and self._reconnecting_since is None:
            self._reconnecting_since = time.monotonic()
        self._set_state(state, detail)

    async def _pairing_lost(self) -> None:
        """Returns once n8n answers but no longer has this gateway connected while the stream keeps
        failing: n8n 2.35 answers a stale key on the stream with a 500 error page (which the stream
        retries for ever) instead of 2.41's 403 "Invalid API key". Asks n8n's own ``gateway/status``
        (the logged-in session's view) every few seconds while the stream is reconnecting."""
        assert self._session is not None
        while True:
            await asyncio.sleep(self._watch_interval)
            since = self._reconnecting_since
            if since is None or time.monotonic() - since < self._watch_interval:
                continue
            try:
                response = await self._http.get(self.api + "/status", headers=self._session.headers(), timeout=10.0)
                data = response.json().get("data") if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError, AttributeError):
                continue  # n8n away or booting: the stream's own retries go on
            if isinstance(data, dict) and data.get("connected") is False:
                return

    async def _consume(self, stream: Any) -> bool:
        """Dispatch the stream's frames; ``True`` when n8n ends the session."""
        async for frame in stream:
            if self._dispatch(frame.data):
                return True
        return False

    async def serve(self, *, initialized: bool = False) -> None:
        """Consume the request stream until ``gateway-disconnect`` (reconnecting on drops).

        What n8n 2.41's answers to the stream mean (``instance-ai.controller`` ``gatewayEvents``):
        403 "Local gateway not initialized" — its grace timer dropped us: ``init`` again; 403
        "Invalid API key" / "Missing API key" (and 401) — the pairing is gone (n8n restarted, even
        killed, and keeps session keys in memory only): pair again; any other 403 ("Local gateway
        is disabled") is final and shown with n8n's words. With ``pair_again`` and a session, a
        stream that keeps failing while n8n's ``gateway/status`` says it is not connected (n8n 2.35
        answers a stale key with a 500 page) is a lost pairing too.
        """
        if not initialized:
            await self.init()
        self._refusals = 0
        while True:
            self._reconnecting_since = None
            stream = reconnecting_sse(
                self._http,
                self.api + "/events",
                headers=self._key_headers(),
                set_state=self._stream_state,
                initial_backoff=self._initial_backoff,
                max_backoff=self._max_backoff,
                keepalive_timeout=self._keepalive_timeout,
            )
            consume = asyncio.create_task(self._consume(stream))
            watch = (asyncio.create_task(self._pairing_lost())
                     if self.pair_again and self._session is not None else None)
            ended = False
            try:
                waiting = {consume} if watch is None else {consume, watch}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if not consume.done():
                    consume.cancel()
                    await asyncio.gather(consume, return_exceptions=True)
                    self._log("n8n is back but no longer has the gateway connected; pairing again")
                    await self._pair_again("n8n restarted")
                    continue
                ended = consume.result()
            except SseStatusError as exc:
                refusal = refusal_kind(exc.status, exc.body)
                if refusal == "not-initialized" and self._refusals < 3:
                    self._refusals += 1  # n8n's grace timer dropped us: announce ourselves again
                    self._log("n8n forgot the gateway; initializing again")
                    await self.init()
                    continue
                if refusal == "pairing-gone" and self.pair_again and self._refusals < 3:
                    self._refusals += 1  # a restarted n8n (clean or killed) no longer knows our session key
                    self._log(f"n8n no longer knows the gateway key ({_message_of(exc.body)}); pairing again")
                    await self._pair_again("n8n restarted")
                    continue
                if self.pair_again and (exc.status in (200, 404) or exc.status >= 500):
                    # n8n restarting: an HTML page, then 404s while its module boots (its
                    # gateway-disconnect may have been lost with the old stream): pair again,
                    # with backoff, until it is back
                    self._log(f"n8n is restarting (HTTP {exc.status}); pairing again when it is back")
                    await self._pair_again("n8n is restarting")
                    continue
                raise _gateway_error(exc.status, exc.body, "/events") from None
            finally:
                for task in (consume, watch):
                    if task is not None and not task.done():
                        task.cancel()
                await asyncio.gather(*(t for t in (consume, watch) if t is not None), return_exceptions=True)
                await stream.aclose()
            if ended:
                self._log("n8n ended the gateway session")
                if not self.pair_again:
                    self.ended_by_server = True
                    self._set_state(ConnectionState.OFFLINE, "disconnected by n8n")
                    return
                await self._pair_again("n8n ended the session")

    async def _pair_again(self, why: str) -> None:
        """Pair (or, with a static key, init) again; while n8n is away or booting, retry with
        backoff (at most ``max_backoff`` between tries) for as long as the gateway runs. A refusal
        of the login session or a forbidden gateway (401/403 on pairing) is final."""
        from .sse import backoff_delay, format_wait

        attempt = 0
        self._set_state(ConnectionState.RECONNECTING, f"({why}: pairing again)")
        while True:
            attempt += 1
            if self._session is not None:
                self._key = None  # the old pairing is gone with the session: a fresh token
            try:
                await self.init()
            except ClientError as exc:
                if exc.status in (400, 401, 403):
                    raise
                delay = backoff_delay(attempt, self._initial_backoff, self._max_backoff)
                self._set_state(ConnectionState.RECONNECTING, f"({why}: pairing again, attempt {attempt}, "
                                                              f"next try in {format_wait(delay)})")
                await asyncio.sleep(delay)
                continue
            self.repairs += 1
            self._log(f"paired again with n8n ({why})")
            return

    def _dispatch(self, data: str) -> bool:
        """Handle one frame; ``True`` when the server ends the session."""
        try:
            message = json.loads(data)
        except ValueError:
            self._log(f"skipped a gateway frame that is not JSON: {data[:80]!r}")
            return False
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "gateway-disconnect":
            return True
        payload = message.get("payload") if isinstance(message, dict) else None
        if kind != "filesystem-request" or not isinstance(payload, dict):
            self._log(f"skipped a gateway frame of type {kind!r}")
            return False
        request_id = payload.get("requestId")
        call = payload.get("toolCall") or {}
        if not isinstance(request_id, str) or not isinstance(call, dict):
            self._log("skipped a filesystem-request without requestId/toolCall")
            return False
        task = asyncio.create_task(self._handle(request_id, str(call.get("name", "")), call.get("arguments") or {}))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)
        return False

    async def _handle(self, request_id: str, name: str, arguments: dict[str, Any]) -> None:
        shown = arguments.get("path") or arguments.get("query") or ""
        self._log(f"{name} {shown}".rstrip())
        try:
            body: dict[str, Any] = {"result": await self.tools.call(name, arguments)}
        except Exception as exc:  # noqa: BLE001 - a bug in a tool must still answer the request
            body = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            response = await self._http.post(f"{self.api}/response/{request_id}", json=body,
                                             headers=self._key_headers())
        except httpx.HTTPError as exc:
            self._log(f"could not answer {request_id}: {type(exc).__name__}")
            return
        if response.status_code == 404:
            self._log(f"n8n no longer waits for {request_id} (timed out?)")
        elif response.status_code >= 400:
            self._log(f"n8n refused the answer to {request_id}: HTTP {response.status_code}")
        else:
            self.handled += 1

    async def stop(self, *, disconnect: bool = True) -> None:
        """Stop serving; ``disconnect`` also ends the session on the server."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for task in list(self._handlers):
            task.cancel()
        if disconnect and self._key is not None and not self.ended_by_server:
            try:
                await self._http.post(self.api + "/disconnect", headers=self._key_headers())
            except httpx.HTTPError:
                pass
        if self._own_http:
            await self._http.aclose()


def _message_of(body: str) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else body[:200]


#: n8n 2.41's words when a gateway key is unknown (``validateGatewayApiKey``): the pairing is gone
_PAIRING_GONE = ("invalid api key", "missing api key")


def refusal_kind(status: int, body: str) -> str:
    """What a 401/403 from n8n's gateway routes means: ``"not-initialized"`` (init again),
    ``"pairing-gone"`` (the key is unknown: pair again, like a 401), ``"forbidden"`` (final:
    e.g. "Local gateway is disabled"), or ``""`` for another status."""
    if status == 401:
        return "pairing-gone"
    if status != 403:
        return ""
    message = _message_of(body).strip().lower()
    if "not initialized" in message:
        return "not-initialized"
    if message in _PAIRING_GONE:
        return "pairing-gone"
    return "forbidden"


def _gateway_error(status: int, body: str, path: str) -> ClientError:
    message = _message_of(body)
    if status in (401, 403):
        if path == "/create-link" and status == 401:
            return AuthError(f"n8n refused to pair a gateway: log in again ({message})", status)
        if refusal_kind(status, body) == "forbidden":
            return GatewayError(f"n8n refused the local gateway: {message} (HTTP {status})", status)
        return GatewayError(f"n8n refused the local gateway's key ({status}): {message}", status)
    return GatewayError(f"gateway {path} failed ({status}): {message}", status)


# --------------------------------------------------------------------------- command line


async def share_folder(url: str, folder: Path, *, key: str | None = None, email: str | None = None,
                       allow: list[str] | None = None, confirm_reads_over: int | None = None) -> int:
    """Share ``folder`` with the n8n at ``url`` until stopped (``python -m instance_ai_tui.cli.gateway``);
    the exit code. Pairs with ``key``, or logs in as ``email`` first. Logged in, it pairs again by
    itself after n8n restarts (cleanly or killed); with a key (a one-time pairing token) it ends when
    n8n ends the session."""
    from .n8n_auth import load_browser_id, login, resolve_credentials

    session: N8nSession | None = None
    async with httpx.AsyncClient(timeout=30.0) as http:
        if key is None:
            credentials = await asyncio.to_thread(resolve_credentials, email, None)
            if credentials is None:
                print("gateway: give --key, or --email with N8N_PASSWORD or a terminal to type it", file=sys.stderr)
                return 2
            session = N8nSession(browser_id=await asyncio.to_thread(load_browser_id))
            await login(http, url, session, credentials)
        gateway = LocalGateway(url, folder, key=key, session=session, allow=allow,
                               confirm_reads_over=confirm_reads_over, http=http, pair_again=session is not None,
                               max_backoff=8.0,
                               log=lambda message: print(f"gateway: {message}", file=sys.stderr, flush=True))
        await gateway.start()
        try:
            await gateway.wait()
        finally:
            await gateway.stop()
    return 0
