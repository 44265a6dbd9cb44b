"""A readable drawing of an agent tree, like the seed's "Frontend Rendering".

```
🤖 Orchestrator
├── 💭 "Let me check what credentials are available..."
├── 🔧 list-credentials → [slack-bot, weather-api]
├── 🤖 Sub-Agent A (workflow builder)
│   ├── 🔧 create-workflow → wf-123
│   └── ✅ "Created wf-123 with 3 nodes"
└── 💬 Done! Your workflow runs daily at 8am...
```

``text_lines`` yields its lines of plain text one at a time (``ascii=True`` avoids emoji and box
characters).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .events import TaskList, TaskStatus
from .safe_text import visible
from .tree import AgentNode, ToolCallState

_TASK_GLYPHS = {
    TaskStatus.TODO: ("○", "[ ]"),
    TaskStatus.IN_PROGRESS: ("◐", "[~]"),
    TaskStatus.DONE: ("✔", "[x]"),
    TaskStatus.FAILED: ("✗", "[!]"),
    TaskStatus.CANCELLED: ("⊘", "[-]"),
}

_ICONS = {
    "agent": ("🤖", "[agent]"),
    "reasoning": ("💭", "[thinking]"),
    "tool": ("🔧", "[tool]"),
    "text": ("💬", "[text]"),
    "tasks": ("📋", "[tasks]"),
    "done": ("✅", "[done]"),
    "error": ("❌", "[error]"),
    "cancelled": ("⊘", "[cancelled]"),
    "confirm": ("⚠", "[approval]"),
    "status": ("⏳", "[status]"),
    "running": ("…", "..."),
}


def task_glyph(status: TaskStatus | str, *, ascii: bool = False) -> str:
    try:
        key = TaskStatus(status)
    except ValueError:
        return "?"
    return _TASK_GLYPHS[key][1 if ascii else 0]


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _label(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("name", "id", "title", "status"):
            if isinstance(value.get(key), (str, int, float)):
                return str(value[key])
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


_UNTRUSTED = re.compile(r'\A<untrusted_data source="[^"]*"(?: label="[^"]*")?>\n(.*)\n</untrusted_data>\Z', re.S)


def content_text(result: Any) -> str | None:
    """The text of an MCP tool's result (the local gateway's ``read_file``, an MCP server's tool): MCP's
    ``{content: [{type: "text", text}]}``, or n8n 2.41's ``{type: "content", value: [...]}`` whose texts it
    wraps in ``<untrusted_data source="tool:NAME">`` (``@n8n/agents`` ``wrapUntrustedData``, taken off
    here). ``None`` for anything else (or content that is not all text)."""
    if not isinstance(result, dict):
        return None
    parts = result.get("value") if result.get("type") == "content" else result.get("content")
    if not isinstance(parts, list) or not parts or result.get("isError"):
        return None
    texts = []
    for part in parts:
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            return None
        text = part["text"]
        wrapped = _UNTRUSTED.match(text)
        texts.append((wrapped.group(1) if wrapped else text).replace("&lt;/untrusted_data", "</untrusted_data"))
    return "\n".join(texts)


def text_summary(text: str, limit: int = 80) -> str:
    """A text result in a few words: its line, or how many lines it has."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > 1:
        return f"{len(lines)} lines"
    return _shorten(lines[0] if lines else "(empty)", limit)


def summarize_result(result: Any, limit: int = 80) -> str:
    """A short one-line summary of a tool result (lists by item names, objects by id, an MCP
    tool's text by its line or how many lines it has)."""
    if result is None:
        return "done"
    text = content_text(result)
    if text is not None:
        return text_summary(text, limit)
    if isinstance(result, str):
        return _shorten(result, limit)
    if isinstance(result, list):
        return _shorten("[" + ", ".join(_label(item) for item in result) + "]", limit)
    if isinstance(result, dict):
        if result.get("success") is False or result.get("denied"):
            return _shorten("denied: " + str(result.get("reason", "")) if result.get("denied") else "failed", limit)
        if len(result) == 1:
            (value,) = result.values()
            return summarize_result(value, limit)
        for key in ("id", "name", "status"):
            if isinstance(result.get(key), (str, int, float)):
                return _shorten(str(result[key]), limit)
    return _shorten(json.dumps(result, ensure_ascii=False, default=str, separators=(",", ":")), limit)


def _args_summary(args: dict[str, Any], limit: int) -> str:
    if not args:
        return ""
    values = [_label(v) for v in args.values() if isinstance(v, (str, int, float))]
    text = " ".join(values) if values and len(values) == len(args) else json.dumps(args, default=str)
    return _shorten(text, limit)



def byte_size(num: int) -> str:
    """A size for a person: ``512 B``, ``2.0 KB``, ``1.5 MB``."""
    if num < 1024:
        return f"{num} B"
    return f"{num / 1024:.1f} KB" if num < 1024 * 1024 else f"{num / (1024 * 1024):.1f} MB"

@dataclass
class _Line:
    text: str
    children: list[_Line]


class _Builder:
    def __init__(self, ascii: bool, reasoning_limit: int, result_limit: int) -> None:
        self.ascii = ascii
        self.reasoning_limit = reasoning_limit
        self.result_limit = result_limit
        #: the run is going (the root is active); a loading call of an ended run has no result
        self.run_active = True

    def icon(self, name: str) -> str:
        return _ICONS[name][1 if self.ascii else 0]

    def agent(self, node: AgentNode, title: str) -> _Line:
        line = _Line(f"{self.icon('agent')} {title}", [])
        calls = {call.tool_call_id: call for call in node.tool_calls}
        children = {child.agent_id: child for child in node.children}
        letters = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        names: dict[str, str] = {}
        for child in node.children:
            letter = next(letters, "")
            role = child.role or "sub-agent"
            label = f"Sub-Agent {letter} ({role})" if letter else f"Sub-Agent ({role})"
            if child.title:
                label += f": {child.title}"
            names[child.agent_id] = label
        shown_calls: set[str] = set()
        shown_children: set[str] = set()
        timeline = node.timeline
        for index, entry in enumerate(timeline):
            kind = entry.type
            if kind == "reasoning":
                content = getattr(entry, "content", "")
                if content.strip():
                    line.children.append(self.reasoning(content))
            elif kind == "text":
                content = getattr(entry, "content", "")
                if content.strip():
                    line.children.append(self.text(content))
            elif kind == "tool-call":
                call = calls.get(getattr(entry, "tool_call_id", ""))
                if call is None:
                    continue
                shown_calls.add(call.tool_call_id)
                following = timeline[index + 1] if index + 1 < len(timeline) else None
                if call.tool_name == "delegate" and following is not None and following.type == "child":
                    continue  # the sub-agent it spawned is drawn instead, as in the seed
                line.children.append(self.tool(call))
            elif kind == "child":
                spawned = children.get(getattr(entry, "agent_id", ""))
                if spawned is not None and spawned.agent_id not in shown_children:
                    shown_children.add(spawned.agent_id)
                    line.children.append(self.agent(spawned, names[spawned.agent_id]))
        # anything the timeline does not mention (flat history trees) still shows
        if not any(e.type == "reasoning" for e in timeline) and node.reasoning.strip():
            line.children.insert(0, self.reasoning(node.reasoning))
        for call in node.tool_calls:
            if call.tool_call_id not in shown_calls:
                line.children.append(self.tool(call))
        for child in node.children:
            if child.agent_id not in shown_children:
                line.children.append(self.agent(child, names[child.agent_id]))
        if not any(e.type == "text" for e in timeline) and node.text_content.strip():
            line.children.append(self.text(node.text_content))
        if node.tasks is not None and node.tasks.tasks:
            line.children.append(self.tasks(node.tasks))
        line.children.extend(self.outcome(node))
        return line

    def reasoning(self, content: str) -> _Line:
        return _Line(f'{self.icon("reasoning")} "{_shorten(content, self.reasoning_limit)}"', [])

    def text(self, content: str) -> _Line:
        body = content.strip("\n")
        return _Line(f"{self.icon('text')} {body}", [])

    def tool(self, call: ToolCallState) -> _Line:
        head = f"{self.icon('tool')} {call.tool_name or '?'}"
        args = _args_summary(call.args, 40)
        if args:
            head += f" {args}"
        arrow = "->" if self.ascii else "→"
        if call.error is not None:
            head += f" {arrow} error: {_shorten(call.error, self.result_limit)}"
        elif call.is_loading and self.run_active:
            head += f" {self.icon('running')}"
        elif call.result is None:
            head += f" {arrow} (no result)"
        else:
            head += f" {arrow} {summarize_result(call.result, self.result_limit)}"
        children: list[_Line] = []
        conf = call.confirmation
        if conf is not None:
            state = call.confirmation_status or ("expired" if conf.expired else "pending" if call.is_loading else "")
            text = f"{self.icon('confirm')} {conf.effective_input_type}: {_shorten(conf.message, 80)}"
            if state:
                text += f" ({state})"
            children.append(_Line(text, []))
        return _Line(head, children)

    def tasks(self, tasks: TaskList) -> _Line:
        done = sum(1 for t in tasks.tasks if t.status == TaskStatus.DONE)
        line = _Line(f"{self.icon('tasks')} Tasks {done}/{len(tasks.tasks)}", [])
        for task in tasks.tasks:
            line.children.append(_Line(f"{task_glyph(task.status, ascii=self.ascii)} {task.description}", []))
        return line

    def outcome(self, node: AgentNode) -> list[_Line]:
        out: list[_Line] = []
        if node.status == "active" and node.status_message:
            out.append(_Line(f"{self.icon('status')} {node.status_message}", []))
        if node.status == "completed" and node.result:
            out.append(_Line(f'{self.icon("done")} "{_shorten(node.result, self.result_limit)}"', []))
        elif node.status == "cancelled":
            reason = f" ({node.cancellation_reason})" if node.cancellation_reason else ""
            out.append(_Line(f"{self.icon('cancelled')} cancelled{reason}", []))
        if node.error:
            out.append(_Line(f"{self.icon('error')} {_shorten(node.error, 200)}", []))
        return out


def _build(tree: AgentNode, ascii: bool, reasoning_limit: int, result_limit: int) -> _Line:
    builder = _Builder(ascii, reasoning_limit, result_limit)
    builder.run_active = tree.status == "active"
    title = "Orchestrator" if tree.role in ("orchestrator", "") else tree.role
    return builder.agent(tree, title)


def text_lines(
    tree: AgentNode, *, ascii: bool = False, reasoning_limit: int = 160, result_limit: int = 80
) -> Iterator[str]:
    """The tree's lines one at a time (each made visible, without its newline), as they
    are drawn: a printer writes them as they come instead of holding the whole drawing."""
    root = _build(tree, ascii, reasoning_limit, result_limit)
    tee, last, pipe, blank = ("|-- ", "`-- ", "|   ", "    ") if ascii else ("├── ", "└── ", "│   ", "    ")
    first, *rest = root.text.split("\n")
    yield visible(first)
    for extra in rest:
        yield visible(extra)
    # depth first, children in order: (node, prefix, connector, child_prefix) still to draw, the next on top
    stack: list[tuple[_Line, str, str, str]] = []

    def push(children: list[_Line], prefix: str) -> None:
        count = len(children)
        for index in range(count - 1, -1, -1):
            is_last = index == count - 1
            stack.append((children[index], prefix, last if is_last else tee, blank if is_last else pipe))

    push(root.children, "")
    while stack:
        node, prefix, connector, child_prefix = stack.pop()
        first, *rest = node.text.split("\n")
        yield visible(prefix + connector + first)
        for extra in rest:
            yield visible(prefix + child_prefix + extra)
        push(node.children, prefix + child_prefix)
