"""The key map: every binding of the app, with a stable id, remappable from the config file.

Registry
--------
``KEYS``: one ``KeySpec(id, action, keys, description, scope, show, priority)`` per
binding; every ``Binding`` of the app's widgets comes from here (``bindings(scope)``), so
every key can be remapped. ``scope`` says where it works: ``app`` (anywhere),
``conversation`` (the transcript has focus), ``input`` (the message input), ``card`` (a
confirmation card), ``thread_list`` (the thread sidebar), and the scopes of single widgets:
``block`` (a reasoning block, sub-agent or tool card), ``tool_card``, ``plan`` (the plan
review card), ``more_steps`` / ``earlier_text`` / ``earlier_turns`` (the "… earlier" lines
of a timeline, a long text, the conversation), ``help`` (the help screen),
``thread_search`` / ``thread_rename`` / ``thread_delete`` (the thread list's search field
and its rename and delete dialogs). ``action`` is the Textual action the binding runs on
the widget that declares it (``action_<name>``), ``keys`` its default key(s),
comma-separated, in Textual's notation (``ctrl+n``, ``f1``, ``shift+enter``).

Every binding's id, default keys, scope and action: ``docs/keymap.md``, written from ``KEYS`` by
``reference_markdown()`` (``python -m instance_ai_tui.tui.keymap > docs/keymap.md``; a test checks
it is up to date).

With ``ui.enter_sends = false`` the defaults of ``send`` and ``newline`` swap
(send: shift+enter,ctrl+j; newline: enter). Input-scope bindings are ``priority`` so that
they run before ``TextArea`` consumes Enter.

Use
---
In widget classes (default keys, ids attached)::

    class Conversation(VerticalScroll):
        KEY_SCOPE = "conversation"
        BINDINGS = keymap.bindings("conversation")

In the app (user remaps from ``settings.ui.keys``, e.g. ``{"approve": "y,ctrl+y"}``)::

    self.keymap = keymap.KeyMap.from_settings(settings.ui)    # raises KeyMapError
    self.set_keymap(self.keymap.textual_keymap())               # Textual swaps the keys

``KeyMap(overrides=None, *, enter_sends=True)`` validates every override: an unknown id,
a malformed key (``ctrl+``, ``crtl+x``, ``f99``), or two ids of one scope on the same key
raise ``KeyMapError`` whose message lists every problem (``KeyMapError.problems``).
Methods: ``keys(id) -> tuple[str, ...]`` (effective), ``matches(id, key) -> bool`` (for
widgets that dispatch in ``_on_key``), ``textual_keymap() -> dict[str, str]`` (ids whose
keys differ from the class defaults), ``help_rows(scopes) -> list[HelpRow]`` and
``help_markdown(scopes) -> str`` (a Markdown table for the F1 help of the focused widget).

``scopes_for(widget) -> list[str]``: the scopes active for a focused widget, innermost
first, collected from the ``KEY_SCOPES`` (a tuple: the widget's own scopes) and
``KEY_SCOPE`` (the area it belongs to, e.g. ``card``) class attributes of the widget and
its ancestors, with ``app`` last. F1 help: ``km.help_markdown(scopes_for(app.focused))``.

A card's own hint line and its footer come from one list of ``Hint``s (a binding id, and the
card's words for it on this page): ``hint_bindings(hints)`` gives the ``Binding``s the footer
shows, ``KeyMap.hint_line(hints)`` the line the card prints, in the user's keys — so a footer
never contradicts its card.

``normalize_keys(text) -> str`` validates and canonicalises a key string (raises
``ValueError``); ``display_keys(keys) -> str`` renders it for people (``Ctrl+N``, ``F2``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from textual.binding import Binding, BindingType
from textual.keys import Keys

from .textual_internals import character_key

if TYPE_CHECKING:
    from textual.dom import DOMNode

__all__ = [
    "FOOTER_DROP_FIRST",
    "FOOTER_SHORT",
    "KEYS",
    "SCOPES",
    "SCOPE_TITLES",
    "FooterItem",
    "HelpRow",
    "Hint",
    "KeyMap",
    "KeyMapError",
    "KeySpec",
    "Scope",
    "bindings",
    "descriptions_for",
    "display_keys",
    "fit_footer",
    "hint_bindings",
    "normalize_keys",
    "scopes_for",
    "spec",
]

Scope = Literal[
    "app",
    "conversation",
    "input",
    "card",
    "card_always",
    "thread_list",
    "block",
    "tool_card",
    "plan",
    "more_steps",
    "earlier_text",
    "earlier_turns",
    "help",
    "thread_search",
    "thread_rename",
    "thread_delete",
    "resume",
    "permissions",
    "rewind",
    "user_message",
    "find",
    "model_picker",
    "queued",
    "login",
    "setup",
    "n8n_tasks",
    "workflow",
    "mcp",
    "mcp_prompt",
    "start_failure",
    "questions",
    "questions_review",
]
SCOPES: tuple[Scope, ...] = get_args(Scope)
#: for the help screen (its Where column) and the status line's "keys: …": short, so the Action column
#: keeps the room
SCOPE_TITLES: dict[str, str] = {
    "app": "Anywhere",
    "conversation": "Conversation",
    "input": "Message input",
    "card": "Confirmation card",
    "card_always": "Always allow: step 2",
    "thread_list": "Threads",
    "block": "Block",
    "tool_card": "Tool call",
    "plan": "Plan review",
    "more_steps": "Earlier steps line",
    "earlier_text": "Earlier text line",
    "earlier_turns": "Earlier turns line",
    "help": "Help",
    "thread_search": "Thread search",
    "thread_rename": "Rename dialog",
    "thread_delete": "Delete dialog",
    "resume": "Resume picker",
    "permissions": "Permissions",
    "rewind": "Rewind picker",
    "user_message": "Your message",
    "find": "Find bar",
    "model_picker": "Model picker",
    "queued": "A queued message",
    "login": "n8n login",
    "setup": "Model setup",
    "n8n_tasks": "n8n tasks",
    "workflow": "Workflow canvas",
    "mcp": "MCP servers",
    "mcp_prompt": "MCP prompt form",
    "start_failure": "Start failure",
    "questions": "Questions wizard",
    "questions_review": "Questions: review",
}


@dataclass(frozen=True, slots=True)
class KeySpec:
    id: str
    action: str
    keys: str
    description: str
    scope: Scope
    show: bool = True
    priority: bool = False


KEYS: tuple[KeySpec, ...] = (
    KeySpec("quit", "quit", "ctrl+q", "Quit", "app", priority=True),
    KeySpec("help", "help", "f1", "Help for the focused part", "app"),
    KeySpec("command-palette", "command_palette", "ctrl+p", "Command palette", "app", show=False, priority=True),
    KeySpec("new-thread", "new_thread", "ctrl+n", "New thread", "app"),
    KeySpec("toggle-threads", "toggle_threads", "ctrl+b", "Show/hide threads", "app"),
    KeySpec("toggle-tasks", "toggle_tasks", "ctrl+t", "Show/hide tasks", "app"),
    KeySpec("focus-input", "focus_input", "ctrl+l", "Focus the message input", "app", show=False),
    KeySpec("next-pending-card", "next_pending_card", "ctrl+g", "Go to the next pending approval", "app"),
    KeySpec("cancel-run", "cancel_run", "escape", "Cancel the running agent", "app"),
    KeySpec("find", "find", "ctrl+f", "Find in the conversation", "app", show=False),
    KeySpec("interrupt", "interrupt", "ctrl+c", "Clear the prompt, else copy the selection, else stop the agent; twice: quit",
            "app", show=False, priority=True),
    KeySpec("theme-picker", "theme_picker", "f9", "Choose a theme", "app", show=False),
    KeySpec("export", "export", "ctrl+s", "Export the thread", "app", show=False),
    KeySpec("send", "send", "enter", "Send the message", "input", priority=True),
    KeySpec("newline", "newline", "shift+enter,ctrl+j", "New line", "input", show=False, priority=True),
    KeySpec("expand-pastes", "expand_pastes", "ctrl+o", "Show folded pastes in full", "input", show=False),
    KeySpec("page-up", "page(-1)", "pageup", "Scroll the conversation up a page", "input", show=False,
            priority=True),
    KeySpec("page-down", "page(1)", "pagedown", "Scroll the conversation down a page", "input", show=False,
            priority=True),
    KeySpec("scroll-to-end", "scroll_to_end", "end", "Jump to the latest output", "conversation"),
    KeySpec("load-older", "load_older", "home", "Load older turns", "conversation", show=False),
    KeySpec("copy-block", "copy_block", "c", "Copy the focused block", "conversation"),
    KeySpec("copy-code", "copy_code", "k", "Copy the next code block of the focused block", "conversation", show=False),
    KeySpec("conversation-back", "app.focus_input", "escape", "Back to the prompt", "conversation"),
    KeySpec("block-previous", "block_previous", "alt+up", "Previous block", "app", show=False),
    KeySpec("block-next", "block_next", "alt+down", "Next block", "app", show=False),
    KeySpec("approve", "approve", "y,enter", "Approve", "card"),
    KeySpec("deny", "deny", "n", "Deny", "card"),
    KeySpec("always-allow", "always_allow", "a", "Always allow… (asks again)", "card"),
    KeySpec("confirm-always", "confirm_always", "enter", "Grant it", "card_always"),
    KeySpec("cancel-always", "cancel_always", "escape", "Back without granting", "card_always"),
    KeySpec("search-threads", "search_threads", "slash", "Search threads", "thread_list"),
    KeySpec("rename-thread", "rename_thread", "f2", "Rename thread", "thread_list"),
    KeySpec("delete-thread", "delete_thread", "delete", "Delete thread", "thread_list"),
    KeySpec("threads-back", "app.focus_input", "escape", "Back to the prompt", "thread_list"),
    KeySpec("toggle-block", "toggle_block", "enter,space", "Expand", "block"),
    KeySpec("unfold-result", "unfold", "f", "Unfold", "tool_card"),
    KeySpec("show-workflow", "show_workflow", "w", "Show the workflow", "tool_card"),
    KeySpec("request-changes", "request_changes", "r", "Request changes", "plan"),
    KeySpec("reject-plan", "deny", "x", "Reject plan", "plan", show=False),
    KeySpec("show-earlier", "more", "enter,space", "Show earlier", "more_steps"),
    KeySpec("show-earlier-text", "more", "enter,space", "Show earlier text", "earlier_text"),
    KeySpec("load-earlier", "load", "enter,space", "Load earlier", "earlier_turns"),
    KeySpec("help.close", "dismiss_help", "escape,f1,q", "Close", "help"),
    KeySpec("thread-search-down", "leave_to_list", "down", "Go to the list", "thread_search", show=False),
    KeySpec("thread-search-clear", "clear_or_leave", "escape", "Clear the search", "thread_search", show=False),
    KeySpec("rename-save", "save", "enter", "Save", "thread_rename", priority=True),
    KeySpec("rename-cancel", "cancel", "escape", "Cancel", "thread_rename"),
    KeySpec("delete-confirm", "confirm", "ctrl+d", "Delete", "thread_delete"),
    KeySpec("delete-cancel", "cancel", "escape", "Cancel", "thread_delete"),
    KeySpec("permissions-revoke", "revoke", "delete,d", "Revoke the grant", "permissions"),
    KeySpec("permissions-close", "close", "escape,q", "Close", "permissions"),
    KeySpec("resume-open", "open", "enter", "Open", "resume", priority=True),
    KeySpec("resume-new", "new_thread", "escape", "Start a new thread", "resume"),
    KeySpec("resume-down", "move(1)", "down", "Next thread", "resume", show=False),
    KeySpec("resume-up", "move(-1)", "up", "Previous thread", "resume", show=False),
    KeySpec("rewind-choose", "choose", "enter", "Go back to it", "rewind", priority=True),
    KeySpec("rewind-cancel", "cancel", "escape", "Cancel", "rewind"),
    KeySpec("edit-message", "edit_message", "e", "Edit and resend from here", "user_message"),
    KeySpec("find-next", "next", "f3", "Next match", "find", show=False),
    KeySpec("find-previous", "previous", "shift+enter,shift+f3", "Previous match", "find", show=False),
    KeySpec("find-close", "close", "escape", "Close the search", "find", show=False),
    KeySpec("model-picker-choose", "choose", "enter", "Use it", "model_picker", priority=True),
    KeySpec("model-picker-cancel", "cancel", "escape", "Keep the current model", "model_picker"),
    KeySpec("queue-edit", "edit", "enter,e", "Edit", "queued"),
    KeySpec("queue-remove", "remove", "delete,x,backspace", "Remove", "queued"),
    KeySpec("login-cancel", "cancel", "escape", "Cancel", "login"),
    KeySpec("setup-browse", "browse", "escape", "Browse without sending", "setup"),
    KeySpec("setup-quit", "quit_app", "q", "Quit", "setup"),
    KeySpec("task-previous", "move(-1)", "up,k", "Previous task", "n8n_tasks", show=False),
    KeySpec("task-next", "move(1)", "down,j", "Next task", "n8n_tasks", show=False),
    KeySpec("task-cancel", "cancel_task", "x", "Cancel the task", "n8n_tasks"),
    KeySpec("task-correct", "correct_task", "c", "Send a correction", "n8n_tasks"),
    KeySpec("workflow-node-left", "node('left')", "left,h", "Node to the left", "workflow", show=False),
    KeySpec("workflow-node-right", "node('right')", "right,l", "Node to the right", "workflow", show=False),
    KeySpec("workflow-node-up", "node('up')", "up,k", "Node above", "workflow", show=False),
    KeySpec("workflow-node-down", "node('down')", "down,j", "Node below", "workflow", show=False),
    KeySpec("workflow-pan-left", "pan(-1,0)", "shift+left", "Pan left", "workflow", show=False),
    KeySpec("workflow-pan-right", "pan(1,0)", "shift+right", "Pan right", "workflow", show=False),
    KeySpec("workflow-pan-up", "pan(0,-1)", "shift+up", "Pan up", "workflow", show=False),
    KeySpec("workflow-pan-down", "pan(0,1)", "shift+down", "Pan down", "workflow", show=False),
    KeySpec("workflow-zoom", "zoom", "z", "Zoom out/in", "workflow"),
    KeySpec("workflow-fit", "fit", "f", "Fit / overview", "workflow"),
    KeySpec("workflow-find", "find", "slash", "Find a node", "workflow"),
    KeySpec("workflow-find-next", "find_next(1)", "n", "Next match", "workflow", show=False),
    KeySpec("workflow-find-previous", "find_next(-1)", "N", "Previous match", "workflow", show=False),
    KeySpec("workflow-run-older", "execution(1)", "left_square_bracket", "Older execution", "workflow"),
    KeySpec("workflow-run-newer", "execution(-1)", "right_square_bracket", "Newer execution", "workflow"),
    KeySpec("workflow-details", "details", "enter", "Node details", "workflow"),
    KeySpec("workflow-open", "open_editor", "o", "Open in n8n", "workflow"),
    KeySpec("workflow-reload", "reload", "r", "Reload", "workflow"),
    KeySpec("workflow-maximize", "maximize", "m", "Wider/narrower", "workflow"),
    KeySpec("workflow-before-after", "before_after", "b", "Before/after", "workflow"),
    KeySpec("workflow-close", "close", "escape,q", "Close", "workflow"),
    KeySpec("mcp-restart", "restart", "r", "Restart the server", "mcp"),
    KeySpec("mcp-approve", "approve", "a", "Approve the project's server (.mcp.json)", "mcp"),
    KeySpec("mcp-sign-out", "sign_out", "o", "Sign out (forget its tokens)", "mcp"),
    KeySpec("mcp-log-level", "log_level", "l", "Its log level (next)", "mcp"),
    KeySpec("mcp-close", "close", "escape,q", "Close", "mcp"),
    KeySpec("mcp-prompt-close", "close", "escape", "Close without sending", "mcp_prompt"),
    KeySpec("wizard-enter", "wizard_enter", "enter", "Choose / next", "questions"),
    KeySpec("wizard-move", "wizard_move", "up,down", "Move", "questions"),
    KeySpec("wizard-next", "wizard_next", "right", "Next question", "questions"),
    KeySpec("wizard-skip", "wizard_skip", "s", "Skip", "questions"),
    KeySpec("wizard-back", "wizard_back", "left,backspace", "Back", "questions"),
    KeySpec("wizard-leave-field", "wizard_leave_field", "escape", "Leave the field", "questions"),
    KeySpec("wizard-submit", "wizard_submit", "enter,y", "Submit", "questions_review"),
    KeySpec("wizard-decline", "wizard_decline", "x", "Decline to answer", "questions_review"),
    KeySpec("start-failure-quit", "leave", "q", "Quit", "start_failure", priority=True),
    KeySpec("start-failure-leave", "leave", "escape,enter,ctrl+c", "Quit", "start_failure", show=False, priority=True),
)

_BY_ID: dict[str, KeySpec] = {item.id: item for item in KEYS}

#: the footer's shorter words for a binding, used when the full descriptions do not fit the width
#: (the help screen keeps the full ones)
FOOTER_SHORT: dict[str, str] = {
    "help": "Help",
    "command-palette": "Commands",
    "new-thread": "New",
    "toggle-threads": "Threads",
    "toggle-tasks": "Tasks",
    "next-pending-card": "Next approval",
    "cancel-run": "Stop",
    "send": "Send",
    "scroll-to-end": "Latest",
    "copy-block": "Copy",
    "conversation-back": "Prompt",
    "threads-back": "Prompt",
    "always-allow": "Always allow…",
    "edit-message": "Edit",
    "search-threads": "Search",
    "rename-thread": "Rename",
    "delete-thread": "Delete",
    "show-workflow": "Workflow",
    "request-changes": "Changes",
    "mcp-restart": "Restart",
    "mcp-approve": "Approve",
    "mcp-sign-out": "Sign out",
    "mcp-log-level": "Log level",
}

#: the footer drops keys in this order when even the short words do not fit (least useful
#: first: each is one key away in F1's help); a key not named here goes last, from the right
FOOTER_DROP_FIRST: tuple[str, ...] = (
    "command-palette",
    "toggle-tasks",
    "toggle-threads",
    "new-thread",
    "scroll-to-end",
    "help",
    "copy-block",
    "conversation-back",
    "threads-back",
    "search-threads",
    "rename-thread",
    "delete-thread",
)


@dataclass(frozen=True, slots=True)
class FooterItem:
    """One key of the footer: its binding ``id`` (``None``: not from the key table), the key as
    shown and the words."""

    id: str | None
    key: str
    words: str

    @property
    def width(self) -> int:
        from rich.cells import cell_len

        return cell_len(self.key) + cell_len(self.words) + 3  # " key " + "words "


def fit_footer(items: list[FooterItem], width: int) -> list[FooterItem]:
    """The keys of ``items`` that fit ``width`` cells, each whole (never cut in a word): all in full
    words if they fit, else in the short words of ``FOOTER_SHORT``, then without the keys of
    ``FOOTER_DROP_FIRST`` in its order, then without the rightmost others."""
    if sum(item.width for item in items) <= width:
        return list(items)
    kept = [FooterItem(i.id, i.key, FOOTER_SHORT.get(i.id or "", i.words)) for i in items]
    rank = {binding_id: n for n, binding_id in enumerate(FOOTER_DROP_FIRST)}
    while kept and sum(item.width for item in kept) > width:
        droppable = [n for n, item in enumerate(kept) if item.id in rank]
        if droppable:
            kept.pop(min(droppable, key=lambda n: rank[kept[n].id or ""]))
        else:
            kept.pop()
    return kept


@dataclass(frozen=True, slots=True)
class Hint:
    """One key of a card's hint line and of its footer: the binding ``id`` and the card's
    ``words`` for it where they differ from the registry's description."""

    id: str
    words: str | None = None
    #: name every key of the binding (``↑/↓``), not only its first
    all_keys: bool = False

    @property
    def description(self) -> str:
        return self.words if self.words is not None else _BY_ID[self.id].description


def hint_bindings(hints: Iterable[Hint], *, show: bool = True) -> list[Binding]:
    """The footer's ``Binding``s of ``hints`` (default keys, ids attached: a user's remap
    applies as to every binding), described in the hint's words."""
    out = []
    for hint in hints:
        item = _BY_ID[hint.id]
        out.append(Binding(item.keys, item.action, hint.description, show=show, priority=item.priority, id=item.id))
    return out
_ENTER_SWAPPED = {"send": "shift+enter,ctrl+j", "newline": "enter"}


def spec(binding_id: str) -> KeySpec:
    """The registry entry of ``binding_id`` (``KeyError`` if unknown)."""
    return _BY_ID[binding_id]


def bindings(scope: Scope, *, enter_sends: bool = True) -> list[BindingType]:
    """Textual ``Binding``s (with ids, default keys) of one scope, for ``BINDINGS``."""
    if scope not in SCOPES:
        raise ValueError(f"unknown key scope {scope!r}; scopes: {', '.join(SCOPES)}")
    out: list[BindingType] = []
    for item in KEYS:
        if item.scope != scope:
            continue
        keys = _ENTER_SWAPPED.get(item.id, item.keys) if not enter_sends else item.keys
        out.append(
            Binding(
                keys,
                item.action,
                item.description,
                show=item.show,
                priority=item.priority,
                id=item.id,
            )
        )
    return out


# --------------------------------------------------------------------------- key strings

_MODIFIERS = ("alt", "ctrl", "hyper", "meta", "shift", "super")
_NAMED_KEYS: frozenset[str] = frozenset(
    {
        name
        for key in Keys
        for name in [key.value.rpartition("+")[2]]
        if not name.startswith("<") and len(name) > 1
    }
    | {character_key(chr(code)) for code in range(0x21, 0x7F)}
    | {"space", "tab", "enter", "escape", "backspace", "delete", "insert", "newline"}
)


def _normalize_one(key: str) -> str:
    raw = key
    key = key.strip()
    if not key:
        raise ValueError("empty key")
    if key == "+":
        return "plus"
    *modifiers, name = key.split("+")
    if name == "" and modifiers and modifiers[-1] == "":  # "ctrl++"
        modifiers, name = modifiers[:-1], "plus"
    if not name:
        raise ValueError(f"{raw.strip()!r}: missing the key after '+'")
    mods = []
    for modifier in modifiers:
        modifier = modifier.strip().lower()
        if modifier not in _MODIFIERS:
            raise ValueError(
                f"{raw.strip()!r}: unknown modifier {modifier!r} (use {', '.join(_MODIFIERS)})"
            )
        if modifier not in mods:
            mods.append(modifier)
    name = name.strip()
    if len(name) == 1:
        if not name.isprintable() or name.isspace():
            raise ValueError(f"{raw.strip()!r}: not a key")
        if name.isalnum():
            # "N" alone is shift+n as Textual reports it; with modifiers keys are lower case
            name = name.lower() if mods else name
        else:
            name = character_key(name)
    else:
        lowered = name.lower()
        if lowered not in _NAMED_KEYS:
            raise ValueError(f"{raw.strip()!r}: unknown key name {name!r}")
        name = lowered
    return "+".join([*sorted(mods), name])


def normalize_keys(text: str) -> str:
    """Validate and canonicalise ``"Ctrl+N, f2"`` -> ``"ctrl+n,f2"``. Raises ``ValueError``."""
    if not isinstance(text, str):
        raise ValueError(f"keys must be a string like 'ctrl+n' or 'f2,r', not {type(text).__name__}")
    parts = text.split(",")
    if text.strip() == "":
        raise ValueError("no key given")
    out: list[str] = []
    for part in parts:
        if part.strip() == "" and len(parts) > 1:
            # "a,,b" or a trailing comma; a literal comma key is written "comma"
            raise ValueError(f"{text!r}: empty key between commas (write 'comma' for the , key)")
        normalized = _normalize_one(part)
        if normalized not in out:
            out.append(normalized)
    return ",".join(out)


_DISPLAY_NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "delete": "Del",
    "backspace": "Backspace",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "space": "Space",
    "tab": "Tab",
    "home": "Home",
    "end": "End",
    "insert": "Ins",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
}


def _display_one(key: str) -> str:
    *modifiers, name = key.split("+")
    if name in _DISPLAY_NAMES:
        shown = _DISPLAY_NAMES[name]
    elif len(name) > 1 and name[0] == "f" and name[1:].isdigit():
        shown = name.upper()
    elif len(name) == 1:
        shown = name.upper() if modifiers else name
    else:
        from textual.keys import format_key

        shown = format_key(name)
    return "+".join([*(m.capitalize() for m in modifiers), shown])


def display_keys(keys: str | Iterable[str]) -> str:
    """``"ctrl+n,f2"`` -> ``"Ctrl+N / F2"``."""
    items = keys.split(",") if isinstance(keys, str) else list(keys)
    return " / ".join(_display_one(key.strip()) for key in items if key.strip())


# --------------------------------------------------------------------------- the key map


class KeyMapError(ValueError):
    """The user's key map is invalid; ``problems`` lists each problem in words."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            "invalid [ui.keys] in the config file:\n" + "\n".join(f"  - {p}" for p in problems)
        )


@dataclass(frozen=True, slots=True)
class HelpRow:
    id: str
    keys: str  # for display, e.g. "Ctrl+N"
    description: str
    scope: Scope


class KeyMap:
    """Effective keys of every binding: registry defaults plus the user's overrides."""

    def __init__(self, overrides: Mapping[str, Any] | None = None, *, enter_sends: bool = True) -> None:
        self.enter_sends = enter_sends
        defaults = {
            item.id: (_ENTER_SWAPPED.get(item.id, item.keys) if not enter_sends else item.keys)
            for item in KEYS
        }
        self._class_defaults = {item.id: item.keys for item in KEYS}
        problems: list[str] = []
        effective = dict(defaults)
        for binding_id, keys in (overrides or {}).items():
            if binding_id not in _BY_ID:
                close = [known for known in _BY_ID if binding_id.replace("_", "-") == known]
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(f"unknown binding id {binding_id!r}{hint}; known ids: {', '.join(_BY_ID)}")
                continue
            try:
                effective[binding_id] = normalize_keys(keys)
            except ValueError as exc:
                problems.append(f"{binding_id}: {exc}")
        problems.extend(self._clashes(effective))
        if problems:
            raise KeyMapError(problems)
        self._keys = effective

    @classmethod
    def from_settings(cls, ui: Any) -> KeyMap:
        """From ``config.UiSettings`` or ``tui.startup.FirstFramePrefs`` (``keys`` and ``enter_sends``)."""
        return cls(dict(ui.keys), enter_sends=bool(ui.enter_sends))

    @staticmethod
    def _clashes(effective: Mapping[str, str]) -> list[str]:
        problems = []
        for scope in SCOPES:
            seen: dict[str, str] = {}
            for item in KEYS:
                if item.scope != scope:
                    continue
                for key in effective[item.id].split(","):
                    if key in seen and seen[key] != item.id:
                        problems.append(
                            f"{key!r} is bound to both {seen[key]!r} and {item.id!r} (scope {scope})"
                        )
                    seen.setdefault(key, item.id)
        return problems

    def keys(self, binding_id: str) -> tuple[str, ...]:
        """Effective keys of ``binding_id`` (``KeyError`` if unknown)."""
        return tuple(self._keys[binding_id].split(","))

    def hint(self, binding_id: str) -> str:
        """The key to name in a hint for ``binding_id``: its first key that every terminal reports
        (Shift+Enter only where it is the only one), as a person reads it ("Ctrl+J")."""
        keys = [k.strip() for k in self.keys(binding_id) if k.strip()]
        portable = [k for k in keys if k != "shift+enter"] or keys
        return display_keys(portable[:1])

    def hint_line(self, hints: Iterable[Hint], *, lead: str = "") -> str:
        """A card's hint line: each hint's keys (all of them, as ``↑/↓``) and words, the same
        words as the footer (``hint_bindings``); ``lead`` (e.g. "1–4 choose") goes first."""
        return " · ".join(self.hint_parts(hints, lead=lead))

    def hint_parts(self, hints: Iterable[Hint], *, lead: str = "") -> list[str]:
        """The pieces of ``hint_line``, one per hint (a card breaks its line between them)."""
        parts = [lead] if lead else []
        for hint in hints:
            keys = [k.strip() for k in self.keys(hint.id) if k.strip()]
            shown = "/".join(_display_one(k) for k in (keys if hint.all_keys else keys[:1]))
            parts.append(f"{shown} {hint.description[:1].lower()}{hint.description[1:]}")
        return parts

    def send_hint(self) -> str:
        """"Enter sends, Ctrl+J new line" in this key map's keys."""
        return f"{self.hint('send')} sends, {self.hint('newline')} new line"

    def matches(self, binding_id: str, key: str) -> bool:
        """Is ``key`` (a Textual ``events.Key.key``) one of ``binding_id``'s keys?"""
        return key in self._keys[binding_id].split(",")

    def textual_keymap(self) -> dict[str, str]:
        """For ``App.set_keymap``: ids whose keys differ from the ``BINDINGS`` defaults."""
        return {
            binding_id: keys
            for binding_id, keys in self._keys.items()
            if keys != self._class_defaults[binding_id]
        }

    def help_rows(self, scopes: Iterable[str] = SCOPES, descriptions: Mapping[str, str] | None = None) -> list[HelpRow]:
        """Rows for the help screen, in ``scopes`` order, then registry order. ``descriptions``:
        a widget's own words for some ids (``BINDING_DESCRIPTIONS``, e.g. the plan review's
        "Reject plan" for ``deny``), the same words its footer shows."""
        rows = []
        for scope in scopes:
            for item in KEYS:
                if item.scope == scope:
                    words = (descriptions or {}).get(item.id, item.description)
                    rows.append(HelpRow(item.id, display_keys(self._keys[item.id]), words, item.scope))
        return rows

    def help_markdown(self, scopes: Iterable[str] = SCOPES, descriptions: Mapping[str, str] | None = None) -> str:
        """A Markdown table of ``help_rows(scopes)`` for the F1 help."""
        lines = ["| Key | Action | Where | Id |", "|---|---|---|---|"]
        for row in self.help_rows(scopes, descriptions):
            keys = row.keys.replace("|", "\\|")
            lines.append(f"| {keys} | {row.description} | {SCOPE_TITLES[row.scope]} | `{row.id}` |")
        return "\n".join(lines)


def descriptions_for(node: DOMNode | None) -> dict[str, str]:
    """The ``BINDING_DESCRIPTIONS`` of ``node`` and its ancestors (innermost wins): a widget's
    own words for a shared binding, used by its footer and its help alike."""
    out: dict[str, str] = {}
    current = node
    while current is not None:
        own = getattr(type(current), "BINDING_DESCRIPTIONS", None)
        if isinstance(own, dict):
            for key, value in own.items():
                out.setdefault(key, value)
        current = current.parent
    return out


def scopes_for(node: DOMNode | None) -> list[str]:
    """Scopes active when ``node`` has focus: the ``KEY_SCOPES`` and ``KEY_SCOPE`` of it and
    its ancestors (innermost first), then ``app``."""
    scopes: list[str] = []
    current = node
    while current is not None:
        kind = type(current)
        own = getattr(kind, "KEY_SCOPES", ())
        for scope in (*(own if isinstance(own, tuple) else ()), getattr(kind, "KEY_SCOPE", None)):
            if isinstance(scope, str) and scope in SCOPES and scope not in scopes:
                scopes.append(scope)
        current = current.parent
    if "app" in scopes:
        scopes.remove("app")
    scopes.append("app")
    return scopes


def reference_markdown() -> str:
    """Every binding of ``KEYS`` as a Markdown table: ``docs/keymap.md`` (the one written list of keys)."""
    rows = "\n".join(f"| `{spec.id}` | {', '.join(f'`{key}`' for key in spec.keys.split(','))} | {spec.scope} | "
                     f"`{spec.action}` | {spec.description} |" for spec in KEYS)
    return ("# Key map\n\nEvery key binding of the app, from `instance_ai_tui/tui/keymap.py` (`KEYS`): its id (remap it in "
            "the config file's `[ui.keys]`, e.g. `approve = \"y,ctrl+y\"`), its default keys in Textual's notation, where "
            "it works, and the action it runs. With `ui.enter_sends = false` the defaults of `send` and `newline` swap. "
            "Written by `python -m instance_ai_tui.tui.keymap > docs/keymap.md`; `tests/tui_parts/test_keymap.py` "
            "checks it is up to date.\n\n| id | default keys | scope | action | what it does |\n|---|---|---|---|---|\n"
            f"{rows}\n")


if __name__ == "__main__":
    print(reference_markdown(), end="")
