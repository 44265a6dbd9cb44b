"""What one MCP server offers besides calls: its tools, resources (and templates), prompts and
instructions, listed when it starts and again when it says a list changed (``…/list_changed``).

Everything here is outside input with a bound: at most ``MAX_LIST_PAGES`` pages of a list, at most
``MAX_TOOLS`` tools (a server with thousands of tools is listed whole: the agent finds them through
``search-tools`` when there are many), ``MAX_RESOURCES`` resources and templates, ``MAX_PROMPTS``
prompts, ``MAX_INSTRUCTIONS`` characters of instructions. A tool whose input schema is over
``MAX_SCHEMA_CHARS`` or that runs only as an MCP task (which this client does not run) is left out,
and what was left out is said (``Catalog.note``, shown by ``/mcp``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types
    from mcp import ClientSession

#: the most tools one server may offer (more are left out, with a note)
MAX_TOOLS = 20_000
#: largest tool input schema accepted (JSON characters)
MAX_SCHEMA_CHARS = 64_000
#: the most pages of one list read
MAX_LIST_PAGES = 200
#: the most resources and resource templates kept of one server (for ``@`` completion and the agent)
MAX_RESOURCES = 2_000
#: the most prompts kept of one server
MAX_PROMPTS = 500
#: the longest server instructions put into the agent's instructions
MAX_INSTRUCTIONS = 4_000


@dataclass
class Catalog:
    """One server's lists (each replaced whole when it is listed again)."""

    tools: list[mcp_types.Tool] = field(default_factory=list)
    resources: list[mcp_types.Resource] = field(default_factory=list)
    templates: list[mcp_types.ResourceTemplate] = field(default_factory=list)
    prompts: list[mcp_types.Prompt] = field(default_factory=list)
    instructions: str = ""
    #: what was left out of which list, and why
    left_out: dict[str, list[str]] = field(default_factory=dict)

    @property
    def note(self) -> str | None:
        parts = [f"left out: {'; '.join(items)}" for items in self.left_out.values() if items]
        return "; ".join(parts) or None


async def _pages(session: ClientSession, method: str) -> list[Any]:
    import mcp_types

    items: list[Any] = []
    cursor: str | None = None
    attribute = {"tools": "tools", "resources": "resources", "templates": "resource_templates",
                 "prompts": "prompts"}[method]
    call = {"tools": session.list_tools, "resources": session.list_resources,
            "templates": session.list_resource_templates, "prompts": session.list_prompts}[method]
    for _ in range(MAX_LIST_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await call(params=params)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def list_tools(session: ClientSession, catalog: Catalog) -> None:
    skipped: list[str] = []
    tools: list[mcp_types.Tool] = []
    for tool in await _pages(session, "tools"):
        if tool.execution is not None and tool.execution.task_support == "required":
            # it only runs as an MCP task, which this client does not run: offered, it always fails
            skipped.append(f"{tool.name} (it runs only as an MCP task, which instance-ai does not support)")
            continue
        if len(json.dumps(tool.input_schema, default=str)) > MAX_SCHEMA_CHARS:
            skipped.append(f"{tool.name} (its input schema is over {MAX_SCHEMA_CHARS} characters)")
            continue
        tools.append(tool)
    if len(tools) > MAX_TOOLS:
        skipped.append(f"{len(tools) - MAX_TOOLS} tools past the first {MAX_TOOLS}")
        tools = tools[:MAX_TOOLS]
    catalog.tools = tools
    catalog.left_out["tools"] = skipped


async def list_resources(session: ClientSession, catalog: Catalog) -> None:
    resources = await _pages(session, "resources")
    templates = await _pages(session, "templates")
    skipped = []
    if len(resources) > MAX_RESOURCES:
        skipped.append(f"{len(resources) - MAX_RESOURCES} resources past the first {MAX_RESOURCES}")
    catalog.resources = resources[:MAX_RESOURCES]
    catalog.templates = templates[:MAX_RESOURCES]
    catalog.left_out["resources"] = skipped


async def list_prompts(session: ClientSession, catalog: Catalog) -> None:
    prompts = await _pages(session, "prompts")
    catalog.prompts = prompts[:MAX_PROMPTS]
    catalog.left_out["prompts"] = ([f"{len(prompts) - MAX_PROMPTS} prompts past the first {MAX_PROMPTS}"]
                                   if len(prompts) > MAX_PROMPTS else [])


async def list_all(session: ClientSession) -> Catalog:
    """Every list the server's capabilities announce, and its instructions (bounded)."""
    catalog = Catalog()
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.tools is not None:
        await list_tools(session, catalog)
    if capabilities is not None and capabilities.resources is not None:
        await list_resources(session, catalog)
    if capabilities is not None and capabilities.prompts is not None:
        await list_prompts(session, catalog)
    text = (session.instructions or "").strip()
    if len(text) > MAX_INSTRUCTIONS:
        text = text[:MAX_INSTRUCTIONS] + f"\n[… {len(text) - MAX_INSTRUCTIONS} more characters left out]"
    catalog.instructions = text
    return catalog


#: the list each ``…/list_changed`` notification makes us read again
RELISTS = {"ToolListChangedNotification": list_tools, "ResourceListChangedNotification": list_resources,
           "PromptListChangedNotification": list_prompts}
