"""An MCP server's resources: the agent's ``mcp__<server>__list_resources`` and
``mcp__<server>__read_resource`` tools, and the person's ``@server:uri`` attachments.

Reading is outside input with the server's limit (``max_result_bytes``): a text part past it is
cut with a note; a blob is never stored or sent, only a placeholder with its type and size. A
server's secrets it echoes are scrubbed as in tool results.

``@server:uri`` in a message (as in Claude Code): each mention of a configured server's resource is
read when the message is sent; the model gets the message followed by the resources' text (marked
as attachments), the message keeps its words as typed, and the attachments are listed with it
(``Attachment``: server, uri, type, size) so the bubble can show them.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ...protocol.text_render import byte_size
from ...runtime.tools import Tool, ToolContext, ToolError
from .connection import McpCallError, ServerConnection
from .tools import PREFIX

if TYPE_CHECKING:
    from collections.abc import Mapping

#: resources and templates shown by one ``list_resources`` call
LIST_LIMIT = 200
#: ``@server:uri`` (the uri runs to the next blank; a trailing sentence mark is not part of it)
MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_-]{1,32}):(\S+?)(?=[.,;:!?)\]]*(?:\s|$))")
#: the most attachments one message may carry
MAX_ATTACHMENTS = 10


class ResourceText(BaseModel):
    """A read resource as text: what the model reads, and its type and size."""

    uri: str
    text: str
    mime_type: str | None = None
    size: int = 0
    #: every part was a blob (placeholders only)
    binary: bool = False


class Attachment(BaseModel):
    """One ``@server:uri`` of a message, as the bubble lists it."""

    model_config = ConfigDict(populate_by_name=True)

    server: str
    uri: str
    mime_type: str | None = Field(default=None, alias="mimeType")
    size: int = 0
    binary: bool = False
    #: why it could not be read (the message goes without it)
    error: str | None = None

    def label(self) -> str:
        if self.error:
            return f"@{self.server}:{self.uri} (not attached: {self.error})"
        kind = self.mime_type or ("binary" if self.binary else "text")
        return f"@{self.server}:{self.uri} ({kind}, {byte_size(self.size)})"


async def read(conn: ServerConnection, uri: str) -> ResourceText:
    """``resources/read`` of ``uri`` on ``conn``, as text within its limit (``McpCallError`` if not)."""
    import mcp_types

    session = await conn.ensure_ready()
    try:
        result = await session.read_resource(uri)
    except Exception as exc:  # noqa: BLE001 - the server's refusal (unknown uri) is told as its words
        from .connection import describe

        raise McpCallError(conn.scrub(f"MCP server {conn.name!r} could not read {uri}: {describe(exc)}")) from None
    budget = conn.settings.max_result_bytes
    parts: list[str] = []
    size = 0
    mime: str | None = None
    binary = True
    for item in result.contents:
        mime = mime or item.mime_type
        if isinstance(item, mcp_types.TextResourceContents):
            binary = False
            raw = item.text.encode()
            size += len(raw)
            if budget <= 0:
                parts.append("[… more content left out: over the MCP size limit …]")
                break
            kept = raw[:budget].decode("utf-8", "ignore")
            if len(raw) > budget:
                kept += f"\n[… {byte_size(len(raw) - budget)} cut: over the MCP size limit (max_result_bytes) …]"
            budget -= len(raw)
            parts.append(conn.scrub(kept))
        else:
            blob = getattr(item, "blob", "") or ""
            try:
                length = len(base64.b64decode(blob, validate=False))
            except (ValueError, TypeError):
                length = len(blob) * 3 // 4
            size += length
            parts.append(f"[binary resource {item.uri}, {item.mime_type or 'unknown type'}, {byte_size(length)}: not shown]")
    return ResourceText(uri=uri, text="\n".join(parts), mime_type=mime, size=size, binary=binary and bool(parts))


class ReadArgs(BaseModel):
    uri: str = Field(description="the resource's URI (from list_resources, or a template filled in)")


class ListArgs(BaseModel):
    query: str = Field("", description="only resources whose name, URI or description contain this (optional)")


def resource_tools(conn: ServerConnection) -> list[Tool]:
    """The two tools of a server that has resources (or templates)."""

    async def list_them(args: ListArgs, ctx: ToolContext) -> dict[str, Any]:
        query = args.query.lower().strip()

        def keep(*texts: str | None) -> bool:
            return not query or any(query in (t or "").lower() for t in texts)

        resources = [{"uri": r.uri, "name": r.name, "mimeType": r.mime_type, "description": r.description}
                     for r in conn.catalog.resources if keep(r.name, r.uri, r.description)]
        templates = [{"uriTemplate": t.uri_template, "name": t.name, "mimeType": t.mime_type,
                      "description": t.description}
                     for t in conn.catalog.templates if keep(t.name, t.uri_template, t.description)]
        data: dict[str, Any] = {"resources": resources[:LIST_LIMIT], "templates": templates[:LIST_LIMIT]}
        if len(resources) > LIST_LIMIT or len(templates) > LIST_LIMIT:
            data["note"] = f"only the first {LIST_LIMIT} of each are listed: give a query to narrow them"
        scrubbed: dict[str, Any] = conn.scrub_data(json.loads(json.dumps(data, default=str)))
        return scrubbed

    async def read_it(args: ReadArgs, ctx: ToolContext) -> str:
        try:
            return (await read(conn, args.uri)).text or "(the resource is empty)"
        except McpCallError as exc:
            raise ToolError(str(exc)) from None

    label = f"[MCP server {conn.name}] "
    metadata = {"mcp_server": conn.name}
    return [
        Tool(f"{PREFIX}{conn.name}__list_resources",
             label + "List the resources (files, documents, data) and resource templates this server offers.",
             ListArgs, list_them, metadata=metadata),
        Tool(f"{PREFIX}{conn.name}__read_resource",
             label + "Read one resource by its URI (a template's URI with its parameters filled in works too).",
             ReadArgs, read_it, metadata=metadata),
    ]


def mentions(text: str) -> list[tuple[str, str]]:
    """``(server, uri)`` of each ``@server:uri`` in ``text``, in order, without repeats."""
    seen: list[tuple[str, str]] = []
    for match in MENTION.finditer(text):
        pair = (match.group(1), match.group(2))
        if pair not in seen:
            seen.append(pair)
    return seen


async def attach(servers: Mapping[str, ServerConnection], text: str) -> tuple[str, list[Attachment]]:
    """The model's text for a message with ``@server:uri`` mentions (the message, then each read
    resource marked as an attachment) and the attachments as the bubble lists them. Mentions of
    names that are no configured server are left as they are (an e-mail address, a handle)."""
    found = [(s, u) for s, u in mentions(text) if s in servers][:MAX_ATTACHMENTS]
    if not found:
        return text, []
    blocks: list[str] = []
    attachments: list[Attachment] = []
    for server, uri in found:
        conn = servers[server]
        try:
            content = await read(conn, uri)
        except McpCallError as exc:
            attachments.append(Attachment(server=server, uri=uri, error=str(exc).split("\n")[0][:300]))
            continue
        attachments.append(Attachment(server=server, uri=uri, mime_type=content.mime_type, size=content.size,
                                      binary=content.binary))
        blocks.append(f'<attachment source="@{server}:{uri}" type="{content.mime_type or "text"}">\n'
                      f"{content.text}\n</attachment>")
    if not blocks:
        return text, attachments
    return text + "\n\n" + "\n\n".join(blocks), attachments
