"""Tool approvals: which tools ask first, how their card reads, and "always allow" per thread.

A tool built with ``approval(severity, message)`` suspends for approval unless the user chose
"always allow" for it in this thread (confirm with ``scope: "session"``). The allowance is kept
in the store's settings under ``thread:<id>`` / ``always_allow`` so it survives restarts and is
deleted with the thread. ``load_allowances`` lists them (``/permissions`` in the app) and
``revoke_allowance`` takes one back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..runtime.tools import ToolContext
from ..store.base import SettingsStore
from .context import EXTRA_KEY, AgentScope

SEVERITIES = ("destructive", "warning", "info")
ALWAYS_ALLOW_KEY = "always_allow"


def approval(
    severity: str,
    message: Callable[[Any], str],
    preview: Callable[[Any, ToolContext], Awaitable[dict[str, Any] | None]] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``Tool(...)``: ask before running, with this card (and ``preview``:
    what the call would change, e.g. ``{"summary": "overwrites 12 lines", "diff": "..."}``)."""
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {SEVERITIES}")

    async def needs_approval(args: Any, ctx: ToolContext) -> bool:
        scope = ctx.extra.get(EXTRA_KEY)
        if not (isinstance(scope, AgentScope) and scope.run.allows(ctx.tool_name)):
            return True
        await mark_auto_approved(scope, ctx)
        return False

    return {"needs_approval": needs_approval, "approval_message": message, "approval_preview": preview,
            "metadata": {"severity": severity}}


def hinted_approval(destructive: bool, message: Callable[[Any], str]) -> dict[str, Any]:
    """``approval`` for a tool described by its hints (an MCP server's tool that asks first):
    a ``destructiveHint`` makes its card "destructive", any other tool's card a "warning".
    (A tool whose ``readOnlyHint`` is set runs without asking: it gets no ``approval`` at all.)
    A call whose arguments name a path and a text to write shows them as a diff, as the built-in
    ``write-file`` does (``previews.call_writes_a_file``)."""
    return approval("destructive" if destructive else "warning", message, _written_file_preview)


async def _written_file_preview(args: Any, ctx: ToolContext) -> dict[str, Any] | None:
    from pydantic import BaseModel

    from .previews import call_writes_a_file

    arguments = args.model_dump() if isinstance(args, BaseModel) else args
    return call_writes_a_file(arguments) if isinstance(arguments, dict) else None


async def mark_auto_approved(scope: AgentScope, ctx: ToolContext) -> None:
    """The call runs without asking because of an "always allow" grant: say so in the tree.

    A second ``tool-call`` for the announced call carries ``autoApproved: true``; the reducer
    keeps it on the call (n8n's reducer only re-sets ``args`` on a repeated ``tool-call``, so
    the tree stays valid for every reader) and ``protocol.display_state`` marks it
    "auto-approved (always allow)" in the app, in export and in ``run``."""
    from ..protocol.events import ToolCallEvent, ToolCallPayload

    await scope.mapper.announced(ctx.tool_call_id)
    payload = ToolCallPayload.model_validate(
        {"toolCallId": ctx.tool_call_id, "toolName": ctx.tool_name, "autoApproved": True})
    scope.run.emitter.emit(ToolCallEvent(agent_id=scope.agent_id, payload=payload))


def _scope(thread_id: str) -> str:
    return f"thread:{thread_id}"


async def load_allowances(store: SettingsStore, thread_id: str) -> set[str]:
    value = await store.get_setting(_scope(thread_id), ALWAYS_ALLOW_KEY)
    return {str(v) for v in value} if isinstance(value, list) else set()


async def revoke_allowance(store: SettingsStore, thread_id: str, tool_name: str, live: set[str] | None = None) -> list[str]:
    """Take ``tool_name`` out of the thread's always-allowed tools (stored, and ``live``: the
    set of a run that is going now, so its next call asks again). Returns what is left."""
    stored = await load_allowances(store, thread_id)
    stored.discard(tool_name)
    await store.set_setting(_scope(thread_id), ALWAYS_ALLOW_KEY, sorted(stored))
    if live is not None:
        live.discard(tool_name)
    return sorted(stored)


async def remember_allowance(store: SettingsStore, thread_id: str, tool_name: str, allowances: set[str]) -> None:
    """Add ``tool_name`` to the thread's always-allowed tools (in memory and in the store)."""
    allowances.add(tool_name)
    stored = await load_allowances(store, thread_id)
    stored.add(tool_name)
    await store.set_setting(_scope(thread_id), ALWAYS_ALLOW_KEY, sorted(stored))
