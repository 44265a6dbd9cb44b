"""Export a thread as Markdown or JSON.

Secrets never leave: values under secret-looking keys (``apiKey``, ``token``,
``password``, ``authorization``, ...) and strings that look like credentials
(``sk-...``, ``Bearer ...``, JWTs) are replaced by ``[redacted]`` in tool arguments,
results and confirmations, everywhere in the exported data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .api import InstanceAiMessage
from .command_turns import command_line, is_command_turn
from .conversation import Conversation
from .display_state import AUTO_APPROVED_LABEL, display_state
from .events import TaskStatus
from .safe_text import json_safe, visible
from .text_render import summarize_result, task_glyph
from .tree import AgentNode, ToolCallState
from .usage_words import usage_line

REDACTED = "[redacted]"

_SECRET_KEY = re.compile(
    r"(api[-_]?key|apikey|token|secret|password|passwd|passphrase|authorization|auth[-_]?header|cookie|"
    r"private[-_]?key|access[-_]?key|client[-_]?secret|credential[-_]?data|session[-_]?key|x-gateway-key)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._\-+/=]{12,}|"
    r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}|\bgw_[A-Za-z0-9]{24,}|\bsess_[A-Za-z0-9]{24,})"
)
#: keys of our own models that contain a secret-looking word but hold none
_SAFE_KEYS = frozenset({"tokens", "tokenCount", "inputTokens", "outputTokens", "totalTokens", "credentialType"})


def redact(value: Any) -> Any:
    """A copy of ``value`` with secrets replaced by ``[redacted]``."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and key not in _SAFE_KEYS
                and _SECRET_KEY.search(key)
                and isinstance(item, (str, dict, list))
                and item
            ):
                out[key] = REDACTED
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value)
    return value


def _messages(source: Conversation | Sequence[InstanceAiMessage]) -> list[InstanceAiMessage]:
    return source.to_messages() if isinstance(source, Conversation) else list(source)


def to_json(
    source: Conversation | Sequence[InstanceAiMessage],
    *,
    thread_id: str | None = None,
    title: str | None = None,
    indent: int | None = 2,
    usage: dict[str, Any] | None = None,
) -> str:
    """``{"threadId", "title", "usage"?, "messages": [InstanceAiMessage...]}`` with secrets redacted.
    ``usage`` is the thread's token/cost total (``{inputTokens, outputTokens, cost?, ...}``)."""
    if isinstance(source, Conversation):
        thread_id = thread_id if thread_id is not None else source.thread_id
        title = title if title is not None else source.title
    data = {
        "threadId": thread_id or "",
        "title": title or "",
        **({"usage": usage} if usage else {}),
        "messages": [message.to_wire() for message in _messages(source)],
    }
    # (JSON escapes C0 itself; DEL, C1 and bidi overrides would stay raw)
    return json_safe(json.dumps(redact(data), indent=indent, ensure_ascii=False))


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.strip("\n").split("\n"))


def _tool_md(call: ToolCallState, run_active: bool) -> list[str]:
    shown = display_state(call, run_active=run_active)
    state = shown.label + (f", {AUTO_APPROVED_LABEL}" if shown.auto_approved else "")
    lines = [f"**🔧 {call.tool_name or '?'}** ({state})", ""]
    if call.args:
        lines += ["Arguments:", "", _fence(json.dumps(redact(call.args), indent=2, ensure_ascii=False, default=str), "json"), ""]
    if call.confirmation is not None:
        conf = call.confirmation
        status = _confirmation_word(call, shown.kind)
        lines += [f"⚠ Approval ({conf.effective_input_type}, {status}): {redact(conf.message)}", ""]
    if call.error is not None:
        lines += [f"Error: {redact(call.error)}", ""]
    elif not call.is_loading and call.result is not None and shown.kind != "denied":
        result = redact(call.result)
        text = result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False, default=str)
        if len(text) > 2000:
            text = text[:2000] + f"\n… ({len(text) - 2000} more characters; summary: {summarize_result(result)})"
        lines += ["Result:", "", _fence(text, "" if isinstance(result, str) else "json"), ""]
    return lines


def compaction_marker(entry: dict[str, Any]) -> str:
    """The one line of a ``context-compacted`` timeline entry, as the live view's row, the export and
    the screen kept for the next start say it: "⟲ context compacted: 12 older messages became notes
    (78% → 21% of 8.2k)"."""
    from .events import ContextCompactedPayload

    try:
        return f"⟲ {ContextCompactedPayload.model_validate(entry).words()}"
    except ValueError:
        return "⟲ context compacted"


def _confirmation_word(call: ToolCallState, kind: str) -> str:
    """What became of a confirmation: pending only while someone can still answer it."""
    if kind == "denied":
        return "denied"
    if kind == "expired":
        return "expired"
    if call.confirmation_status in ("approved", "denied"):
        return call.confirmation_status
    if kind == "waiting":
        return "pending"
    if kind in ("unresolved", "not-run") and (call.is_loading or call.result is None):
        return "not answered"
    return "answered"


def _agent_md(node: AgentNode, depth: int, run_active: bool = False) -> list[str]:
    lines: list[str] = []
    calls = {call.tool_call_id: call for call in node.tool_calls}
    children = {child.agent_id: child for child in node.children}
    seen_calls: set[str] = set()
    seen_children: set[str] = set()
    if not any(e.type == "reasoning" for e in node.timeline) and node.reasoning.strip():
        lines += [_quote("💭 " + node.reasoning), ""]
    for entry in node.timeline:
        if entry.type == "text":
            content = redact(getattr(entry, "content", ""))
            if content.strip():
                lines += [content.strip("\n"), ""]
        elif entry.type == "reasoning":
            content = redact(getattr(entry, "content", ""))
            if content.strip():
                lines += [_quote("💭 " + content), ""]
        elif entry.type == "tool-call":
            call = calls.get(getattr(entry, "tool_call_id", ""))
            if call is not None:
                seen_calls.add(call.tool_call_id)
                lines += _tool_md(call, run_active)
        elif entry.type == "context-compacted":  # the TUI's row and ``run``'s line, in the same words
            lines += [f"*{redact(compaction_marker(entry.model_dump()))}*", ""]
        elif entry.type == "child":
            child = children.get(getattr(entry, "agent_id", ""))
            if child is not None and child.agent_id not in seen_children:
                seen_children.add(child.agent_id)
                lines += _child_md(child, depth, run_active)
    for call in node.tool_calls:
        if call.tool_call_id not in seen_calls:
            lines += _tool_md(call, run_active)
    for child in node.children:
        if child.agent_id not in seen_children:
            lines += _child_md(child, depth, run_active)
    if not any(e.type == "text" for e in node.timeline) and node.text_content.strip():
        lines += [redact(node.text_content).strip("\n"), ""]
    if node.tasks is not None and node.tasks.tasks:
        done = sum(1 for t in node.tasks.tasks if t.status == TaskStatus.DONE)
        lines += [f"**📋 Tasks {done}/{len(node.tasks.tasks)}**", ""]
        lines += [f"- {task_glyph(t.status)} {t.description}" for t in node.tasks.tasks]
        lines.append("")
    if node.status == "cancelled":
        reason = f" ({node.cancellation_reason})" if node.cancellation_reason else ""
        lines += [f"_⊘ Cancelled{reason}_", ""]
    if node.error:
        lines += [f"_❌ Error: {redact(node.error)}_", ""]
    return lines


def _child_md(child: AgentNode, depth: int, run_active: bool = False) -> list[str]:
    level = "#" * min(6, depth + 3)
    heading = f"{level} 🤖 Sub-agent: {child.role or 'agent'}"
    if child.title:
        heading += f" — {child.title}"
    lines = [heading + f" ({child.status})", ""]
    lines += _agent_md(child, depth + 1, run_active)
    if child.result:
        lines += [f"✅ {redact(child.result)}", ""]
    return lines


def to_markdown(source: Conversation | Sequence[InstanceAiMessage], *, title: str | None = None,
                usage: dict[str, Any] | None = None) -> str:
    """The thread as Markdown: user turns, then each answer's timeline in order
    (reasoning quoted, tool calls with arguments and results, sub-agents as sections).
    ``usage`` (the thread's token/cost total) is shown under the title."""
    if isinstance(source, Conversation) and title is None:
        title = source.title
    lines = [f"# {title or 'Instance AI conversation'}", ""]
    if line := usage_line(usage):
        lines += [f"*Usage: {line}*", ""]
    for message in _messages(source):
        stamp = message.created_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        if message.role == "user" and is_command_turn(message.content):  # /compact's run: not a message
            lines += [f"## ⟲ Command · {stamp}", "", command_line(redact(message.content).strip("\n")), ""]
            continue
        if message.role == "user":
            lines += [f"## 👤 User · {stamp}", "", redact(message.content).strip("\n"), ""]
            continue
        lines += [f"## 🤖 Assistant · {stamp}", ""]
        if message.agent_tree is not None:
            lines += _agent_md(message.agent_tree, 0, bool(message.is_streaming))
        elif message.content.strip():
            lines += [redact(message.content).strip("\n"), ""]
    return visible("\n".join(lines).rstrip("\n") + "\n")
