"""Many MCP tools: the agent finds them with ``search-tools`` instead of getting every schema.

With more than ``MAX_OFFERED`` MCP tools, or their schemas over ``SCHEMA_SHARE`` of the model's
context window, the model is offered ``search-tools`` (and the tools it found before in this run)
instead of every MCP tool, as n8n's own agent defers its tools: it searches by words, gets the
names and descriptions of the best matches, and those tools are offered with their schemas from
its next step on. The index (words of each tool's name and description) is built once per change
of the servers' lists, so a server with 10,000 tools costs a turn the matches only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ...runtime.tools import Tool, ToolContext

#: the most MCP tools offered with their schemas before the agent searches instead
MAX_OFFERED = 40
#: the share of the model's context window MCP tool schemas may take before the agent searches
SCHEMA_SHARE = 0.10
#: characters per token, for that estimate
CHARS_PER_TOKEN = 4
#: the context window assumed for a model whose window is not known
DEFAULT_WINDOW = 128_000
#: matches returned (and offered from the next step) by one search
MATCHES = 8
SEARCH_TOOL = "search-tools"
_WORD = re.compile(r"[a-z0-9]+")


class SearchArgs(BaseModel):
    query: str = Field(description="words of what the tool should do, e.g. 'create github issue' or 'read file'")


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)  # camelCase -> camel Case
    return set(_WORD.findall(spaced.lower()))


class ToolSearch:
    """Which MCP tools a run is offered, and the ``search-tools`` tool that adds to them."""

    def __init__(self) -> None:
        self._index_key: int | None = None
        self._index: list[tuple[Tool, set[str], set[str]]] = []
        self._schema_chars = 0
        #: per run: the MCP tools found by its searches (offered from its next step)
        self.found: dict[str, dict[str, Tool]] = {}

    def _indexed(self, tools: Sequence[Tool], key: int) -> None:
        if key == self._index_key:
            return
        self._index = [(t, _words(t.name), _words(t.description)) for t in tools]
        self._schema_chars = sum(len(json.dumps(t.parameters, default=str)) for t in tools)
        self._index_key = key

    def defers(self, tools: Sequence[Tool], key: int, window: int | None) -> bool:
        """Whether ``tools`` (the MCP tools, their list's version ``key``) are too many to offer whole."""
        if len(tools) > MAX_OFFERED:
            return True
        self._indexed(tools, key)
        return self._schema_chars > SCHEMA_SHARE * (window or DEFAULT_WINDOW) * CHARS_PER_TOKEN

    def search(self, tools: Sequence[Tool], key: int, query: str) -> list[Tool]:
        self._indexed(tools, key)
        wanted = _words(query)
        if not wanted:
            return []
        scored = []
        for position, (tool, name_words, text_words) in enumerate(self._index):
            score = 3 * len(wanted & name_words) + len(wanted & text_words)
            if score:
                scored.append((-score, position, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [tool for _, _, tool in scored[:MATCHES]]

    def offered(self, run_id: str) -> list[Tool]:
        return list(self.found.get(run_id, {}).values())

    def forget(self, run_id: str) -> None:
        self.found.pop(run_id, None)

    def tool(self, current: Callable[[], tuple[Sequence[Tool], int]]) -> Tool:
        """The ``search-tools`` tool over ``current()`` (the MCP tools and their list's version)."""

        async def search(args: SearchArgs, ctx: ToolContext) -> dict[str, Any]:
            tools, key = current()
            matches = self.search(tools, key, args.query)
            found = self.found.setdefault(ctx.run_id, {})
            for tool in matches:
                found[tool.name] = tool
            return {
                "tools": [{"name": t.name, "description": t.description[:300]} for t in matches],
                "note": ("these tools are offered to you from your next step: call them by name"
                         if matches else f"no tool matches {args.query!r}: try other words"),
            }

        return Tool(SEARCH_TOOL, "Find tools of the MCP servers by what they do (there are too many to list): "
                    "give a few words; the best matches are offered to you from your next step.",
                    SearchArgs, search, metadata={"mcp_search": True})
