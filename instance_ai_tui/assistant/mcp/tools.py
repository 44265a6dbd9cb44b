"""An MCP server's tool as a runtime ``Tool``: its JSON schema as is, its approval from its hints,
its result as text for the model and a value for the card.

Names: ``mcp__<server>__<tool>`` (letters, digits, ``_`` and ``-``; at most 64 characters, a
short hash keeps a shortened name unique), so two servers' tools never clash, nor with ours.

Results are outside input: text beyond the server's ``max_result_bytes`` (1 MB) is cut before
it is stored; an image or audio part becomes a placeholder with its type and size (its bytes
are never stored; an image's are held in memory for a model that reads images, the placeholder
naming it: ``runtime/images.py``); a resource link becomes a link; an embedded text
resource its text. ``isError`` results are tool errors the model reads.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import re
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ...protocol.text_render import byte_size
from ...runtime.images import IMAGES, reference
from ...runtime.tools import Tool, ToolContext, ToolError
from ..approvals import hinted_approval
from .connection import MAX_DESCRIPTION, McpCallError, ServerConnection
from .stdio import CUT_META

if TYPE_CHECKING:
    import mcp_types

PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: at most this many progress updates a second reach the events
PROGRESS_INTERVAL = 0.25
_call_numbers = itertools.count(1)


class McpArgs(BaseModel):
    """Whatever the model sends: the MCP server validates its own arguments."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, mcp_name: str) -> str:
    """``mcp__<server>__<tool>``, made safe and at most 64 characters."""
    safe = _UNSAFE.sub("_", mcp_name) or "tool"
    name = f"{PREFIX}{server}__{safe}"
    if len(name) <= 64 and safe == mcp_name:
        return name
    digest = hashlib.sha1(f"{server}/{mcp_name}".encode()).hexdigest()[:6]
    return f"{name[:57]}_{digest}"


def is_read_only(tool: mcp_types.Tool) -> bool:
    return bool(tool.annotations is not None and tool.annotations.read_only_hint)


def asks_first(conn: ServerConnection, tool: mcp_types.Tool) -> bool:
    """Whether a call asks the user (before any "always allow"): the config, then the hints."""
    s = conn.settings
    if tool.name in s.ask:
        return True
    if tool.name in s.allow:
        return False
    if s.approval == "always":
        return True
    if s.approval == "never":
        return False
    return not is_read_only(tool)


class McpTool(Tool):
    """One tool of one MCP server."""

    def __init__(self, conn: ServerConnection, tool: mcp_types.Tool) -> None:
        self.conn = conn
        self.mcp_tool = tool
        self.mcp_name = tool.name
        description = (tool.description or tool.title or "").strip()
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "…"
        label = f"[MCP server {conn.name}] "
        options: dict[str, Any] = {}
        asks = asks_first(conn, tool)
        if asks:
            destructive = bool(tool.annotations is not None and tool.annotations.destructive_hint)
            options = hinted_approval(destructive, lambda args: self._approval_message(args))
        super().__init__(tool_name(conn.name, tool.name), label + description, McpArgs, self._call,
                         strict=False, **options)
        self.asks = asks
        self.metadata.update({"mcp_server": conn.name, "mcp_tool": tool.name})
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.parameters = schema

    def _approval_message(self, args: Any) -> str:
        data = args.model_dump() if isinstance(args, BaseModel) else dict(args or {})
        shown = json.dumps(data, ensure_ascii=False, default=str)
        if len(shown) > 300:
            shown = shown[:299] + "…"
        return f"Run `{self.mcp_name}` of the MCP server `{self.conn.name}` with {shown}?"

    def definition(self, *, strict: bool = True) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def validate_args(self, args: dict[str, Any]) -> BaseModel:
        return McpArgs.model_validate(args)

    async def _call(self, args: McpArgs, ctx: ToolContext) -> Any:
        """The converted result's card value (text, or the structured JSON); the model reads
        the same (``to_text``: JSON for a structured result)."""
        arguments = args.model_dump()
        progress = _ProgressReporter(ctx)
        key = next(_call_numbers)
        self.conn.calls[key] = ctx  # a form the server asks meanwhile goes to this call's run
        try:
            result = await self.conn.call(self.mcp_name, arguments, progress.report)
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        finally:
            progress.close()
            del self.conn.calls[key]
            self.conn.hooks.questions.close_for(ctx.tool_call_id)
        converted = convert_result(result, self.conn.settings.max_result_bytes)
        # a server may echo its secrets (its env, the headers it was sent): never stored or exported
        converted = McpResult(model_text=self.conn.scrub(converted.model_text),
                              shown=self.conn.scrub_data(converted.shown), is_error=converted.is_error)
        if converted.is_error and not (getattr(result, "meta", None) or {}).get(CUT_META):
            raise ToolError(f"the MCP tool {self.mcp_name} failed: {converted.model_text}")
        return converted.shown


class McpResult(BaseModel):
    """A converted ``CallToolResult``: ``shown`` is what the card keeps (the text, or the
    structured JSON when the text is just that JSON), ``model_text`` what the model reads."""

    model_text: str
    shown: Any
    is_error: bool = False


def _b64_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (ValueError, TypeError):
        return len(data) * 3 // 4


def _cut(text: str, budget: int) -> tuple[str, int]:
    """``text`` within ``budget`` UTF-8 bytes, with a marker when cut; returns the bytes used."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= budget:
        return text, len(raw)
    kept = raw[: max(budget, 0)].decode("utf-8", "ignore")
    marker = f"\n[... {byte_size(len(raw) - len(kept.encode()))} cut: the result is over the MCP size limit ...]"
    return kept + marker, budget


def convert_result(result: Any, max_bytes: int) -> McpResult:
    """A ``CallToolResult`` as text for the model and a value for the card, within ``max_bytes``."""
    import mcp_types as t

    budget = max_bytes
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        if budget <= 0:
            parts.append("[... more content left out: the result is over the MCP size limit ...]")
            break
        if isinstance(item, t.TextContent):
            text, used = _cut(item.text, budget)
        elif isinstance(item, t.ImageContent):
            key = IMAGES.keep(item.mime_type, item.data)  # for a model that reads images: never stored
            said = reference(key) if key else ": not shown]"
            text = f"[image {item.mime_type}, {byte_size(_b64_size(item.data))}{' ' if key else ''}{said}"
            used = len(text)
        elif isinstance(item, t.AudioContent):
            text = f"[audio {item.mime_type}, {byte_size(_b64_size(item.data))}: not shown]"
            used = len(text)
        elif isinstance(item, t.ResourceLink):
            label = item.title or item.name
            extra = f" ({item.mime_type})" if item.mime_type else ""
            text, used = _cut(f"[resource: {label}]({item.uri}){extra}", budget)
        elif isinstance(item, t.EmbeddedResource):
            res = item.resource
            if isinstance(res, t.TextResourceContents):
                text, used = _cut(f"[resource {res.uri}]\n{res.text}", budget)
            else:
                size = _b64_size(getattr(res, "blob", "") or "")
                text = f"[resource {res.uri}, {res.mime_type or 'binary'}, {byte_size(size)}: not shown]"
                used = len(text)
        else:
            text = f"[{getattr(item, 'type', 'unknown')} content: not shown]"
            used = len(text)
        parts.append(text)
        budget -= used
    structured = getattr(result, "structured_content", None)
    is_error = bool(getattr(result, "is_error", False))
    text = "\n".join(parts)
    if structured is not None:
        encoded = json.dumps(structured, ensure_ascii=False, default=str)
        if len(encoded.encode()) <= max_bytes:
            if not text:
                text = encoded
            if len(parts) <= 1 and (not parts or _same_json(parts[0], structured)):
                return McpResult(model_text=text, shown=structured, is_error=is_error)
        elif not text:
            text, _ = _cut(encoded, max_bytes)
    if not text:
        text = "(the tool returned no content)"
    return McpResult(model_text=text, shown=text, is_error=is_error)


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


class _ProgressReporter:
    """Progress notifications of one call, at most one per ``PROGRESS_INTERVAL``, told to the run
    (``ToolContext.report_progress``: the call's card and the agent's status show them)."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self._last = 0.0
        self._closed = False

    async def report(self, progress: float, total: float | None, message: str | None) -> None:
        if self._closed:
            return
        now = time.monotonic()
        if now - self._last < PROGRESS_INTERVAL:
            return
        self._last = now
        self.ctx.report_progress(progress, total, message)
        await asyncio.sleep(0)

    def close(self) -> None:
        self._closed = True
