"""Workspace file tools: list, read, search (free) and write, edit (with approval)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ...runtime.tools import Tool, ToolContext, ToolError
from ..approvals import approval
from ..previews import file_change
from ..workspace import Workspace, WorkspaceError


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ListArgs(_Args):
    path: str = Field(".", description="Folder, relative to the workspace root")
    recursive: bool = Field(False, description="Include sub-folders")


class ReadArgs(_Args):
    path: str = Field(description="File, relative to the workspace root")
    start_line: int = Field(1, ge=1, description="First line to return (1-based)")
    max_lines: int | None = Field(None, ge=1, description="At most this many lines")


class SearchArgs(_Args):
    query: str = Field(description="Text to find (or a regular expression when regex is true)")
    path: str = Field(".", description="Folder or file to search in")
    regex: bool = False
    case_sensitive: bool = False


class WriteArgs(_Args):
    path: str = Field(description="File to create or overwrite, relative to the workspace root")
    content: str = Field(description="The complete new content")


class EditArgs(_Args):
    path: str = Field(description="File to edit, relative to the workspace root")
    old_text: str = Field(description="Exact text to replace (must be unique unless replaceAll)")
    new_text: str = Field(description="Replacement text")
    replace_all: bool = False


def file_tools(workspace: Workspace) -> list[Tool]:
    """The five workspace tools bound to ``workspace``."""

    async def run(coro: Any) -> Any:
        try:
            return await coro
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from None

    async def list_files(args: ListArgs, ctx: ToolContext) -> Any:
        return await run(workspace.list(args.path, recursive=args.recursive))

    async def read_file(args: ReadArgs, ctx: ToolContext) -> Any:
        return await run(workspace.read(args.path, args.start_line, args.max_lines))

    async def search_files(args: SearchArgs, ctx: ToolContext) -> Any:
        return await run(workspace.search(args.query, args.path, regex=args.regex, case_sensitive=args.case_sensitive))

    async def write_file(args: WriteArgs, ctx: ToolContext) -> Any:
        return await run(workspace.write(args.path, args.content))

    async def edit_file(args: EditArgs, ctx: ToolContext) -> Any:
        return await run(workspace.edit(args.path, args.old_text, args.new_text, args.replace_all))

    async def current_text(path: str) -> str | None:
        """The file's text now (None: it does not exist yet); too large or binary: no preview."""
        try:
            result = await workspace.read(path)
        except WorkspaceError as exc:
            if "does not exist" in str(exc):
                return None
            raise
        if result.get("truncated"):
            raise WorkspaceError("too large to preview")
        return str(result.get("content", ""))

    async def preview_write(args: WriteArgs, ctx: ToolContext) -> dict[str, Any] | None:
        old = await current_text(args.path)
        return await asyncio.to_thread(file_change, args.path, old, args.content)

    async def preview_edit(args: EditArgs, ctx: ToolContext) -> dict[str, Any] | None:
        old = await current_text(args.path)
        if old is None or not args.old_text or args.old_text not in old:
            return None  # the edit will fail with its own message
        new = old.replace(args.old_text, args.new_text) if args.replace_all else old.replace(args.old_text, args.new_text, 1)
        return await asyncio.to_thread(functools.partial(file_change, args.path, old, new, edit=True))

    return [
        Tool("list-files", "List the files and folders of the workspace (or of one folder); what cannot be shown "
             "(a symlink loop, a folder it cannot read) is named under `skipped`.", ListArgs, list_files),
        Tool("read-file", "Read a text file of the workspace.", ReadArgs, read_file),
        Tool("search-files", "Find lines containing a text (or matching a regex) in the workspace files.",
             SearchArgs, search_files),
        Tool("write-file", "Create or overwrite a file in the workspace. The user approves it first.",
             WriteArgs, write_file,
             **approval("warning", lambda a: f"Write {len(a.content)} characters to `{a.path}`?", preview_write)),
        Tool("edit-file", "Replace text in a workspace file. The user approves it first.", EditArgs, edit_file,
             **approval("warning", lambda a: f"Edit `{a.path}` (replace {'every' if a.replace_all else 'one'} "
                                             f"occurrence of the given text)?", preview_edit)),
    ]
