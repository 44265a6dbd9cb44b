"""The newest screenful of the last thread, kept beside the database, drawn in the first frame.

Restoring a thread reads its newest page of history and replays its events: with the imports of
the client, the store and the assistant that is about a second after the first frame, whatever
the thread's size. A person who starts ``instance-ai`` again wants to see where they were at
once. So when the app quits (``cli.tui``, after the client has closed) it writes what its open
thread's newest turns say (``save``): plain text (user messages, the answers' text, one line per
tool call), secrets redacted with the export's rule (``protocol.transcript.redact``), in
``<database>.screen.json`` (mode 0600). The next start reads it before the first frame (``load``:
the standard library only, no pydantic) and the first frame shows it (``show``) in the
conversation view, where ``ConversationView.load`` replaces it by the real thread once it is
open.

It is shown only when it is certainly the content that is about to open:

* the app would open the latest thread of an embedded database (no ``--url``/``--new``/
  ``--resume``; ``--thread`` only for the cached thread), and the cached thread was the latest
  one when it was written;
* the database is the one the cache was written for, and nothing wrote to it since (the size
  and modification time of the database file and of its write-ahead log, taken after the
  client closed, are the same);
* the settings, once read, name the same database (``confirm``; otherwise it is taken away at
  once).

A start that quits before it opened the database leaves the cache as it is (nothing was
written); one that opened the database but no thread removes it (the database may have changed).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ..protocol.command_turns import command_line

if TYPE_CHECKING:
    from ..protocol.conversation import Conversation, ConversationMessage
    from ..protocol.tree import AgentNode
    from .widgets.conversation_view import ConversationView

#: the file's format (a cache of another version is ignored); 3: a command's record is a "command" entry;
#: 4: a compaction's row is a "marker" entry of its own (drawn where the live view draws it)
VERSION = 4
#: what an entry may be
ROLES = ("user", "command", "assistant", "marker")
#: at most this many of the newest messages, and this many lines of text in all
MAX_MESSAGES = 12
MAX_LINES = 160
#: an answer longer than this keeps its last lines (the screen shows the newest)
MAX_LINES_PER_MESSAGE = 80


def cache_path(db_path: Path) -> Path:
    """Where the screen of the database at ``db_path`` is kept: beside it."""
    return db_path.with_name(db_path.name + ".screen.json")


def fingerprint(db_path: Path) -> list[list[int]]:
    """Size and modification time (ns) of the database and its write-ahead log ([-1, -1]: absent)."""
    out: list[list[int]] = []
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        try:
            stat = path.stat()
        except OSError:
            out.append([-1, -1])
        else:
            out.append([stat.st_size, stat.st_mtime_ns])
    return out


@dataclass(frozen=True, slots=True)
class Entry:
    """One message as the cache shows it."""

    role: str  # "user", "command" (``/compact``'s record: ``protocol.command_turns``), "assistant" or "marker"
    # (a compaction's "⟲ …" row, part of an answer: ``answer_parts``)
    text: str


@dataclass(frozen=True, slots=True)
class CachedScreen:
    """What ``load`` read: the thread, its title, its newest messages."""

    db_path: str
    thread_id: str
    title: str
    cursor: int
    entries: tuple[Entry, ...]


def load(db_path: Path, thread_id: str | None = None) -> CachedScreen | None:
    """The cached screen of ``db_path`` if it is certainly current (see the module docstring);
    ``thread_id``: the thread the app was asked to open (``--thread``), else the latest."""
    try:
        raw = json.loads(cache_path(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("version") != VERSION or not raw.get("latest"):
        return None
    if raw.get("db_path") != str(db_path.resolve()) or raw.get("fingerprint") != fingerprint(db_path):
        return None
    cached_thread, title, cursor, messages = raw.get("thread_id"), raw.get("title"), raw.get("cursor"), raw.get("entries")
    if not isinstance(cached_thread, str) or not isinstance(title, str) or not isinstance(cursor, int):
        return None
    if thread_id is not None and thread_id != cached_thread:
        return None
    if not isinstance(messages, list):
        return None
    entries: list[Entry] = []
    for item in messages:
        if not isinstance(item, dict):
            return None
        role, text = item.get("role"), item.get("text")
        if role not in ROLES or not isinstance(text, str):
            return None
        entries.append(Entry(role, text))
    return CachedScreen(str(db_path.resolve()), cached_thread, title, cursor, tuple(entries))


def entries_of(messages: Sequence[ConversationMessage]) -> list[Entry]:
    """The newest messages as text, secrets redacted (``MAX_MESSAGES``, ``MAX_LINES``)."""
    from ..protocol.command_turns import is_command_turn
    from ..protocol.safe_text import visible
    from ..protocol.transcript import redact

    out: list[Entry] = []
    lines = 0
    for message in reversed(messages[-MAX_MESSAGES:]):
        parts: list[Entry]
        if message.role == "user":
            parts = [Entry("command" if is_command_turn(message.content) else "user", message.content)]
        else:
            tree = message.tree()
            parts = answer_parts(tree) if tree is not None else [Entry("assistant", message.content)]
        for part in reversed(parts):
            text = visible(str(redact(part.text)).strip("\n"))
            if not text.strip():
                continue
            kept = text.split("\n")[-MAX_LINES_PER_MESSAGE:]
            out.append(Entry(part.role, "\n".join(kept)))
            lines += len(kept) + 1
        if lines >= MAX_LINES:
            break
    out.reverse()
    return out


#: a tool call's mark in the cached screen, by ``protocol.display_state`` kind (the glyphs the tool card draws)
_TOOL_MARKS = {"done": "✓", "failed": "✗", "denied": "✗", "waiting": "◷", "running": "●"}
#: how the one-line rows of an answer start (a tool call, reasoning, a sub-agent)
_ROW_MARKS = ("▸ ", "│ ▸ ")
#: a sub-agent's status as its line in the view says it
_CHILD_STATUS = {"completed": "✓ done", "failed": "✗ failed", "cancelled": "⊘ cancelled", "active": "● running"}


def answer_text(node: AgentNode) -> str:
    """An answer as the view shows it when folded, as one text (``answer_parts``, markers among them)."""
    return "\n\n".join(part.text for part in answer_parts(node))


def answer_parts(node: AgentNode) -> list[Entry]:
    """An answer as the view shows it when folded, in the order it came: its text as plain text
    (Markdown's marks taken away), a line per tool call with its state (its arguments and result
    left out), a line per sub-agent with its status (together, "assistant" entries), and the row of
    a compaction (a "marker" entry: the view draws it one column left of the answer's rows)."""
    from ..protocol.display_state import display_state
    from ..protocol.transcript import compaction_marker

    calls = {call.tool_call_id: call for call in node.tool_calls}
    children = {child.agent_id: child for child in node.children}
    parts: list[str] = []
    markers: set[int] = set()  # the indexes in ``parts`` of compaction rows
    for entry in node.timeline:
        if entry.type == "text":
            content = str(getattr(entry, "content", "")).strip("\n")
            if content.strip():
                parts.append(markdown_plain(content))
        elif entry.type == "tool-call":
            call = calls.get(getattr(entry, "tool_call_id", ""))
            if call is not None:
                state = display_state(call, run_active=False)
                mark = _TOOL_MARKS.get(state.kind, "⊘")
                words = "" if state.kind == "done" else f"  {state.label}"
                parts.append(f"▸ {mark} {call.tool_name}{words}")
        elif entry.type == "reasoning":
            count = len(str(getattr(entry, "content", "")).split())
            if count:
                parts.append(f"▸ ∴ Reasoning · {count} word{'s' if count != 1 else ''}")
        elif entry.type == "child":
            child = children.get(getattr(entry, "agent_id", ""))
            if child is not None:
                status = _CHILD_STATUS.get(child.status, child.status)
                parts.append(f"│ ▸ ◆ {child.title or child.role}  {status}")
        elif entry.type == "context-compacted":
            markers.add(len(parts))
            parts.append(compaction_marker(entry.model_dump()))
    if not any(entry.type == "text" for entry in node.timeline) and node.text_content.strip():
        parts.append(markdown_plain(node.text_content.strip("\n")))
    # the one-line rows (tool calls, reasoning, sub-agents) follow each other as in the view; a
    # block of text is set apart by a blank line; a compaction's row is an entry of its own
    out: list[Entry] = []
    text = ""
    for index, part in enumerate(parts):
        if index in markers:
            if text:
                out.append(Entry("assistant", text))
            out.append(Entry("marker", part))
            text = ""
            continue
        if text:
            text += "\n" if part.startswith(_ROW_MARKS) and parts[index - 1].startswith(_ROW_MARKS) else "\n\n"
        text += part
    if text:
        out.append(Entry("assistant", text))
    return out


def markdown_plain(text: str) -> str:
    """``text`` (Markdown) as plain lines, roughly as the view draws it: emphasis and code marks
    taken away, quotes marked "▌ ", list items "• " or "1. ", code blocks indented, table cells
    joined by " │ ". Run when the app quits (``save``), never on the way to the first frame."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": False}).enable("table").parse(text)
    lines: list[str] = []
    quote = 0
    lists: list[list[int]] = []  # per open list: [next number] (ordered) or [] (bullets)
    marker = ""
    row: list[str] = []
    in_cell = False

    def emit(content: str, indent: str = "") -> None:
        nonlocal marker
        prefix = "▌ " * quote + "  " * max(0, len(lists) - 1)
        for number, line in enumerate(content.split("\n")):
            lead = marker if number == 0 else " " * len(marker)
            lines.append(f"{prefix}{lead}{indent}{line}".rstrip())
        marker = ""

    for token in tokens:
        kind = token.type
        if kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([int(token.attrGet("start") or 1)] if kind == "ordered_list_open" else [])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                lines.append("")
        elif kind == "list_item_open" and lists:
            numbering = lists[-1]
            if numbering:
                marker = f"{numbering[0]}. "
                numbering[0] += 1
            else:
                marker = "• "
        elif kind == "inline":
            content = _inline_plain(token.children or [])
            if in_cell:
                row.append(content)
            else:
                emit(content)
        elif kind in ("th_open", "td_open"):
            in_cell = True
        elif kind in ("th_close", "td_close"):
            in_cell = False
        elif kind == "tr_close":
            emit(" │ ".join(row))
            row = []
        elif kind == "table_close":
            lines.append("")
        elif kind in ("fence", "code_block"):
            emit(token.content.rstrip("\n"), "  ")
            lines.append("")
        elif kind == "hr":
            emit("───")
            lines.append("")
        elif kind in ("paragraph_close", "heading_close") and not (lists and token.hidden):
            lines.append("")
    while lines and not lines[-1]:
        lines.pop()
    kept: list[str] = []
    for line in lines:  # one blank line at most between blocks
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept)


def _inline_plain(children: Sequence[Any]) -> str:
    """An inline run's text without its marks (a link keeps its words, an image its alt text)."""
    out: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline", "html_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
    return "".join(out)


def save(db_path: Path, conversation: Conversation, *, latest: bool) -> None:
    """Write the newest screenful of ``conversation`` (an open thread of ``db_path``, the client
    closed): atomically, readable by the user only. ``latest``: it was the latest thread."""
    thread_id = conversation.thread_id
    if not thread_id or not latest or conversation.is_streaming:
        forget(db_path)
        return
    data: dict[str, Any] = {
        "version": VERSION,
        "db_path": str(db_path.resolve()),
        "fingerprint": fingerprint(db_path),
        "thread_id": thread_id,
        "latest": latest,
        "title": title_of(conversation),
        "cursor": conversation.cursor,
        "entries": [{"role": entry.role, "text": entry.text} for entry in entries_of(conversation.messages)],
    }
    target = cache_path(db_path)
    temporary = target.with_name(target.name + ".tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, ensure_ascii=False)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def title_of(conversation: Conversation) -> str:
    """The thread's title as the cache keeps it: secrets redacted, control characters visible."""
    from ..protocol.safe_text import visible
    from ..protocol.transcript import redact

    return visible(str(redact(conversation.title or "")))


def forget(db_path: Path) -> None:
    """The cache of ``db_path`` may be out of date: remove it."""
    with contextlib.suppress(OSError):
        cache_path(db_path).unlink()


class CachedTurns(Vertical):
    """The cached messages, as the conversation view draws them (roughly: plain text)."""

    DEFAULT_CSS = """
    CachedTurns { height: auto; }
    CachedTurns > .cached-user {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $user-message;
        background: $user-message-background;
        color: $text;
    }
    CachedTurns > .cached-command { margin: 1 0 0 0; padding: 0 1; color: $text-muted; }
    CachedTurns > .cached-answer { padding: 1 1 0 3; }  /* where the real view draws an answer's rows */
    CachedTurns > .cached-marker { padding: 1 1 0 2; color: $text-muted; text-style: italic; }  /* its CompactedRow */
    """

    def __init__(self, cached: CachedScreen) -> None:
        super().__init__(classes="cached-screen")
        self.cached = cached

    def compose(self) -> ComposeResult:
        for entry in self.cached.entries:
            if entry.role == "user":
                yield Static(entry.text, classes="cached-user", markup=False)
            elif entry.role == "command":  # as the live view draws it (``widgets.turns.UserMessage``)
                yield Static(command_line(entry.text), classes="cached-command", markup=False)
            elif entry.role == "marker":
                yield Static(entry.text, classes="cached-marker", markup=False)
            else:
                yield Static(entry.text, classes="cached-answer", markup=False)


def show(view: ConversationView, cached: CachedScreen) -> None:
    """Put ``cached`` in the conversation view (not running yet: its first frame shows it;
    ``InstanceAiApp.show_cached``)."""
    view.compose_add_child(CachedTurns(cached))
    view.placeholder.display = False  # ("Loading…" under the cached turns would say the wrong thing)


def confirm(view: ConversationView, cached: CachedScreen, db_path: Path | None, thread_id: str | None) -> None:
    """The app is about to open ``thread_id`` of ``db_path`` (``None``: not an embedded database):
    the cached screen stays until the view draws that thread (``ConversationView.load`` replaces
    it), or goes at once if it shows another."""
    if db_path is not None and str(db_path.resolve()) == cached.db_path and thread_id == cached.thread_id:
        return
    for widget in view.query(CachedTurns):
        widget.display = False  # (from the next frame on; the removal follows)
        widget.remove()
    view.placeholder.display = True
