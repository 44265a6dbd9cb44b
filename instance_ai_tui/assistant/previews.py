"""What an approved call would change, for its approval card: unified diffs of files and workflows.

``file_change(path, old, new)`` compares a file's text on disk (``None``: it does not exist yet)
with what a call would write; ``workflow_change(current, nodes, connections)`` compares a
workflow's nodes and connections with an update. Both return the ``preview`` of a
``confirmation-request`` (``protocol.events.ChangePreview`` on the wire): a one-line summary
("new file, 12 lines", "overwrites 30 lines: +4 −2", "changes 1 of 5 lines: +1 −1", "nodes: +1 added,
1 changed") and a
unified diff capped at ``MAX_DIFF_LINES`` lines.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

MAX_DIFF_LINES = 400


def _capped(lines: list[str]) -> tuple[str, int]:
    if len(lines) <= MAX_DIFF_LINES:
        return "".join(lines), 0
    return "".join(lines[:MAX_DIFF_LINES]), len(lines) - MAX_DIFF_LINES


def _lines(count: int) -> str:
    return "1 line" if count == 1 else f"{count} lines"


def _line_count(text: str) -> int:
    return len(text.splitlines())


def _with_newlines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _edit_summary(total: int, added: int, removed: int) -> str:
    """An edit's words: what it does to the file's ``total`` lines ("changes 1 of 5 lines: +1 −1";
    it said "overwrites 5 lines: +1 −1" for a one-line edit)."""
    if not removed:
        return f"adds {_lines(added)} (the file has {_lines(total)}): +{added}"
    if not added:
        return f"removes {removed} of {_lines(total)}: −{removed}"
    return f"changes {max(added, removed)} of {_lines(total)}: +{added} −{removed}"


def file_change(path: str, old: str | None, new: str, *, edit: bool = False) -> dict[str, Any]:
    """The preview of writing ``new`` to ``path`` whose current text is ``old`` (``edit``: the call
    changes part of the file, as ``edit-file`` does, rather than writing it whole)."""
    before = _with_newlines(old or "")
    after = _with_newlines(new)
    diff = list(difflib.unified_diff(before, after, "/dev/null" if old is None else f"a/{path}", f"b/{path}"))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    if old is None:
        summary = f"new file, {_lines(_line_count(new))}"
    elif old == new:
        summary = "no change: the file already has this content"
    elif edit:
        summary = _edit_summary(_line_count(old), added, removed)
    else:
        summary = f"overwrites {_lines(_line_count(old))}: +{added} −{removed}"
    text, omitted = _capped(diff)
    return {"summary": summary, "diff": text, "omittedLines": omitted}


#: argument names an MCP tool's call gives a file's path and its new text by (a write_file-like tool)
PATH_ARGUMENTS = ("path", "file_path", "filePath", "filepath", "filename", "file")
CONTENT_ARGUMENTS = ("content", "contents", "text", "new_content", "newContent", "data")


def written_content(path: str, content: str) -> dict[str, Any]:
    """The preview of a call that writes ``content`` to ``path`` somewhere this process does not
    read (an MCP server's files): every line is shown as written; the file's current text is not
    compared (it is the server's, and reading any path it names is not ours to do)."""
    after = _with_newlines(content)
    diff = list(difflib.unified_diff([], after, f"{path} (now: not read)", f"b/{path}"))
    text, omitted = _capped(diff)
    summary = f"writes {_lines(_line_count(content))} to {path} (its current text, on the server, is not compared)"
    return {"summary": summary, "diff": text, "omittedLines": omitted}


def call_writes_a_file(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``written_content`` of a tool call whose arguments name a path and a text to write, else None."""
    path = next((arguments[k] for k in PATH_ARGUMENTS if isinstance(arguments.get(k), str) and arguments[k].strip()),
                None)
    content = next((arguments[k] for k in CONTENT_ARGUMENTS if isinstance(arguments.get(k), str)), None)
    if path is None or content is None:
        return None
    return written_content(path.strip(), content)


def _node_key(node: dict[str, Any]) -> str:
    return str(node.get("name") or node.get("id") or "?")


def _node_lines(node: dict[str, Any]) -> list[str]:
    shown = {k: node[k] for k in ("type", "typeVersion", "parameters", "credentials", "disabled") if k in node}
    return [line + "\n" for line in json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False).splitlines()]


def _edges(connections: dict[str, Any]) -> set[str]:
    edges: set[str] = set()
    for source, outputs in (connections or {}).items():
        if not isinstance(outputs, dict):
            continue
        for kind, branches in outputs.items():
            for index, branch in enumerate(branches or []):
                for target in branch or []:
                    if isinstance(target, dict):
                        label = "" if kind == "main" and index == 0 else f" [{kind} {index}]"
                        edges.add(f"{source} → {target.get('node')}{label}")
    return edges


def workflow_change(
    current: dict[str, Any], nodes: list[dict[str, Any]] | None, connections: dict[str, Any] | None,
    name: str | None = None,
) -> dict[str, Any]:
    """The preview of updating ``current`` (an n8n workflow) with new nodes/connections/name."""
    old_nodes = {_node_key(n): n for n in current.get("nodes") or [] if isinstance(n, dict)}
    new_nodes = old_nodes if nodes is None else {_node_key(n): n for n in nodes if isinstance(n, dict)}
    added = [k for k in new_nodes if k not in old_nodes]
    removed = [k for k in old_nodes if k not in new_nodes]
    changed = [k for k in new_nodes if k in old_nodes and _node_lines(new_nodes[k]) != _node_lines(old_nodes[k])]
    diff: list[str] = []
    if name is not None and name != current.get("name"):
        diff += [f"--- name: {current.get('name')}\n", f"+++ name: {name}\n"]
    for key in removed:
        diff += [f"@@ node {key}: removed @@\n", *("-" + line for line in _node_lines(old_nodes[key]))]
    for key in added:
        diff += [f"@@ node {key}: added @@\n", *("+" + line for line in _node_lines(new_nodes[key]))]
    for key in changed:
        lines = difflib.unified_diff(_node_lines(old_nodes[key]), _node_lines(new_nodes[key]), n=2)
        diff += [f"@@ node {key}: changed @@\n", *[line for line in lines if not line.startswith(("---", "+++", "@@"))]]
    old_edges = _edges(current.get("connections") or {})
    new_edges = old_edges if connections is None else _edges(connections)
    for edge in sorted(old_edges - new_edges):
        diff.append(f"- connection {edge}\n")
    for edge in sorted(new_edges - old_edges):
        diff.append(f"+ connection {edge}\n")
    parts = [f"+{len(added)} added" if added else "", f"−{len(removed)} removed" if removed else "",
             f"{len(changed)} changed" if changed else ""]
    node_part = ", ".join(p for p in parts if p)
    edge_delta = len(new_edges ^ old_edges)
    summary = "; ".join(x for x in (
        f"nodes: {node_part}" if node_part else "",
        f"connections: {edge_delta} changed" if edge_delta else "",
        "renamed" if name is not None and name != current.get("name") else "",
    ) if x) or "no change to nodes or connections"
    text, omitted = _capped(diff)
    return {"summary": summary, "diff": text, "omittedLines": omitted}
