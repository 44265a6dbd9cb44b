"""An MCP server's prompts as the person's slash commands (``/mcp__<server>__<prompt>``).

``prompt_text`` gets one (``prompts/get`` with the arguments the person gave) and makes it the text
of the message the person sends: a single user message is its text; several messages are each
marked with their role. An embedded text resource is its text, an image or audio part a
placeholder. Outside input: within the server's ``max_result_bytes`` and scrubbed of its secrets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .connection import McpCallError, ServerConnection, describe

if TYPE_CHECKING:
    from ...protocol.mcp import McpPromptText

#: the longest argument value sent
MAX_ARGUMENT_CHARS = 10_000


def _part_text(content: Any) -> str:
    import mcp_types as t

    if isinstance(content, t.TextContent):
        return content.text
    if isinstance(content, t.EmbeddedResource):
        resource = content.resource
        if isinstance(resource, t.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return f"[resource {resource.uri}, {resource.mime_type or 'binary'}: not shown]"
    if isinstance(content, t.ResourceLink):
        return f"[resource: {content.title or content.name}]({content.uri})"
    kind = getattr(content, "type", "content")
    return f"[{kind} {getattr(content, 'mime_type', '') or ''}: not shown]".replace(" :", ":")


async def prompt_text(conn: ServerConnection, name: str, arguments: dict[str, str]) -> McpPromptText:
    """The text of prompt ``name`` of ``conn`` with ``arguments`` (``McpCallError`` when it fails)."""
    from ...protocol.mcp import McpPromptText

    known = next((p for p in conn.catalog.prompts if p.name == name), None)
    if known is None:
        raise McpCallError(f"MCP server {conn.name!r} has no prompt named {name!r}")
    missing = [a.name for a in known.arguments or [] if a.required and not str(arguments.get(a.name, "")).strip()]
    if missing:
        raise McpCallError(f"the prompt {name} of {conn.name} needs {', '.join(missing)}")
    sent = {k: str(v)[:MAX_ARGUMENT_CHARS] for k, v in arguments.items() if str(v).strip()}
    session = await conn.ensure_ready()
    try:
        result = await session.get_prompt(name, sent or None)
    except Exception as exc:  # noqa: BLE001 - the server's refusal is told in its words
        raise McpCallError(conn.scrub(f"MCP server {conn.name!r}: the prompt {name} failed: {describe(exc)}")) from None
    messages = [(m.role, _part_text(m.content)) for m in result.messages]
    if len(messages) == 1 and messages[0][0] == "user":
        text = messages[0][1]
    else:
        text = "\n\n".join(f"[{role}]\n{body}" for role, body in messages)
    raw = text.encode()
    limit = conn.settings.max_result_bytes
    if len(raw) > limit:
        text = raw[:limit].decode("utf-8", "ignore") + "\n[… cut: the prompt is over the MCP size limit …]"
    return McpPromptText(text=conn.scrub(text), description=conn.scrub((result.description or "")[:300]))
