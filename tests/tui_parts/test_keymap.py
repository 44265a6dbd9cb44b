from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import Static

from instance_ai_tui.config import UiSettings
from instance_ai_tui.tui import keymap
from instance_ai_tui.tui.keymap import KEYS, KeyMap, KeyMapError, bindings, display_keys, normalize_keys, scopes_for

REQUIRED_IDS = {
    "send", "newline", "cancel-run", "new-thread", "toggle-threads", "toggle-tasks", "focus-input",
    "next-pending-card", "approve", "deny", "always-allow", "copy-block", "command-palette", "help",
    "quit", "scroll-to-end", "load-older", "search-threads", "rename-thread", "delete-thread",
    "theme-picker", "export",
}


def test_registry_has_every_required_id_once() -> None:
    ids = [item.id for item in KEYS]
    assert len(ids) == len(set(ids))
    assert REQUIRED_IDS <= set(ids)
    for item in KEYS:
        assert normalize_keys(item.keys) == item.keys, item.id  # defaults are canonical
        assert item.description and item.scope in keymap.SCOPES


def test_defaults_have_no_clash() -> None:
    KeyMap()  # raises on a clash
    KeyMap(enter_sends=False)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("Ctrl+N", "ctrl+n"),
        ("f2, r", "f2,r"),
        ("shift+ctrl+a", "ctrl+shift+a"),
        ("/", "slash"),
        ("?", "question_mark"),
        ("ctrl++", "ctrl+plus"),
        ("N", "N"),
        ("y,y", "y"),
        ("PageDown", "pagedown"),
    ],
)
def test_normalize_keys(given: str, expected: str) -> None:
    assert normalize_keys(given) == expected


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("", "no key given"),
        ("ctrl+", "missing the key after '+'"),
        ("crtl+x", "unknown modifier 'crtl'"),
        ("f99", "unknown key name 'f99'"),
        ("a,,b", "empty key between commas"),
        ("enterr", "unknown key name 'enterr'"),
    ],
)
def test_malformed_keys(given: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        normalize_keys(given)
    assert message in str(info.value)


def test_user_errors_are_collected_with_clear_messages() -> None:
    with pytest.raises(KeyMapError) as info:
        KeyMap({"aprove": "x", "cancel_run": "f5", "deny": "ctrl+", "always-allow": "y"})
    problems = info.value.problems
    assert problems[0].startswith("unknown binding id 'aprove'")
    assert "did you mean 'cancel-run'?" in problems[1]
    assert problems[2] == "deny: 'ctrl+': missing the key after '+'"
    assert problems[3] == "'y' is bound to both 'approve' and 'always-allow' (scope card)"
    assert "[ui.keys]" in str(info.value)


def test_non_string_keys_value() -> None:
    with pytest.raises(KeyMapError, match="keys must be a string"):
        KeyMap({"quit": 3})


def test_remaps_and_enter_sends() -> None:
    km = KeyMap.from_settings(UiSettings(keys={"approve": "Y, ctrl+y", "quit": "ctrl+q"}, enter_sends=False))
    assert km.keys("approve") == ("Y", "ctrl+y")
    assert km.matches("send", "ctrl+j") and not km.matches("send", "enter")
    assert km.matches("newline", "enter")
    # only what differs from the BINDINGS defaults goes to App.set_keymap
    assert km.textual_keymap() == {"approve": "Y,ctrl+y", "send": "shift+enter,ctrl+j", "newline": "enter"}
    # a swap of two keys within one scope is fine
    KeyMap({"approve": "n", "deny": "y"})


def test_bindings_carry_ids_and_flags() -> None:
    card = {b.id: b for b in bindings("card")}
    assert set(card) == {"approve", "deny", "always-allow"}
    assert card["approve"].key == "y,enter" and card["approve"].action == "approve"
    send = {b.id: b for b in bindings("input")}["send"]
    assert send.priority is True and send.key == "enter"
    assert {b.id: b for b in bindings("input", enter_sends=False)}["send"].key == "shift+enter,ctrl+j"
    with pytest.raises(ValueError, match="unknown key scope"):
        bindings("nowhere")  # type: ignore[arg-type]


def test_help_rows_and_markdown() -> None:
    km = KeyMap({"delete-thread": "ctrl+d"})
    rows = km.help_rows(["thread_list", "app"])
    assert rows[0].scope == "thread_list"
    assert {r.id: r.keys for r in rows}["delete-thread"] == "Ctrl+D"
    assert {r.id: r.keys for r in rows}["rename-thread"] == "F2"
    assert rows[-1].scope == "app"
    md = km.help_markdown(["card"])
    assert "| y / Enter | Approve | Confirmation card | `approve` |" in md
    assert display_keys("shift+enter,ctrl+j") == "Shift+Enter / Ctrl+J"


class Card(Static, can_focus=True):
    KEY_SCOPE = "card"
    BINDINGS = bindings("card")

    def action_approve(self) -> None:
        self.app.log_lines.append("approve")  # type: ignore[attr-defined]

    def action_deny(self) -> None:
        self.app.log_lines.append("deny")  # type: ignore[attr-defined]

    def action_always_allow(self) -> None:
        self.app.log_lines.append("always")  # type: ignore[attr-defined]


class Column(Widget):
    KEY_SCOPE = "conversation"

    def compose(self) -> ComposeResult:
        yield Card("card")


class KeysApp(App[None]):
    def __init__(self, km: KeyMap) -> None:
        super().__init__()
        self.km = km
        self.log_lines: list[str] = []

    def compose(self) -> ComposeResult:
        yield Column()

    def on_mount(self) -> None:
        self.set_keymap(self.km.textual_keymap())
        self.query_one(Card).focus()


async def test_remap_takes_effect_in_a_textual_app() -> None:
    app = KeysApp(KeyMap({"approve": "ctrl+y", "deny": "x"}))
    async with app.run_test() as pilot:
        await pilot.press("y", "n", "ctrl+y", "x", "a")
        assert app.log_lines == ["approve", "deny", "always"]
        assert scopes_for(app.focused) == ["card", "conversation", "app"]
        assert scopes_for(None) == ["app"]


# --------------------------------------------------------------------------- every binding is registered


def _widget_classes() -> list[type]:
    """Every DOM node class defined in the TUI package (its modules imported)."""
    import importlib
    import inspect
    import pkgutil

    from textual.dom import DOMNode

    import instance_ai_tui.tui as package

    classes: list[type] = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        if info.ispkg or info.name.rsplit(".", 1)[-1] == "cli":
            continue
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, DOMNode) and cls.__module__ == module.__name__:
                classes.append(cls)
    return classes


def test_every_binding_of_the_app_has_a_registered_id() -> None:
    from textual.binding import Binding

    classes = _widget_classes()
    assert len(classes) > 20
    seen: set[str] = set()
    for cls in classes:
        for binding in cls.__dict__.get("BINDINGS", ()):
            assert isinstance(binding, Binding), f"{cls.__name__}: {binding!r} is not a Binding with an id"
            assert binding.id, f"{cls.__name__}: the binding for {binding.key!r} has no id (it cannot be remapped)"
            item = keymap.spec(binding.id)  # KeyError: not in the registry
            # a widget may word a shared binding its own way (BINDING_DESCRIPTIONS), footer and help alike
            words = cls.__dict__.get("BINDING_DESCRIPTIONS", {}).get(binding.id, item.description)
            assert (binding.key, binding.action, binding.description) == (item.keys, item.action, words)
            seen.add(binding.id)
            # the widget tells the help screen which scope its keys belong to
            scopes = (*cls.__dict__.get("KEY_SCOPES", ()), *[getattr(cls, "KEY_SCOPE", None)], "app")
            assert item.scope in scopes, f"{cls.__name__}: {binding.id} (scope {item.scope}) not in {scopes}"
    for item in KEYS:
        assert item.id in seen, f"{item.id} is registered but no widget binds it"


def test_widget_scopes_show_in_the_help_for_the_focused_widget() -> None:
    from instance_ai_tui.tui.widgets.confirmations import PlanReviewCard
    from instance_ai_tui.tui.widgets.tool_card import ToolCallCard

    class Card(ToolCallCard):
        def __init__(self) -> None:  # no tool call needed to ask for its scopes
            Widget.__init__(self)

    scopes = scopes_for(Card())
    assert scopes[:2] == ["tool_card", "block"] and scopes[-1] == "app"
    text = KeyMap({"toggle-block": "t"}).help_markdown(scopes)
    assert "| t | Expand | Block | `toggle-block` |" in text and "| f | Unfold | Tool call | `unfold-result` |" in text
    assert "plan" in scopes_for_class(PlanReviewCard) and "card" in scopes_for_class(PlanReviewCard)


def scopes_for_class(cls: type) -> tuple[str, ...]:
    return (*cls.__dict__.get("KEY_SCOPES", ()), getattr(cls, "KEY_SCOPE", ""))


def test_the_new_ids_can_be_remapped_and_clash_checks_cover_them() -> None:
    km = KeyMap({"toggle-block": "t", "help.close": "escape", "reject-plan": "ctrl+x"})
    assert km.keys("toggle-block") == ("t",) and km.textual_keymap()["toggle-block"] == "t"
    with pytest.raises(KeyMapError) as error:
        KeyMap({"reject-plan": "r"})  # request-changes has r in the plan scope
    assert "request-changes" in str(error.value)


def test_the_key_map_is_documented_once_from_its_table() -> None:
    """Issue 46 item 5: the key map was written twice (the module's docstring and ``KEYS``) and the two
    drifted; ``docs/keymap.md`` is written from ``KEYS`` (``keymap.reference_markdown``) and must be what
    it writes now (``python -m instance_ai_tui.tui.keymap > docs/keymap.md`` after changing a key)."""
    from pathlib import Path

    from instance_ai_tui.tui import keymap

    doc = Path(__file__).resolve().parents[2] / "docs" / "keymap.md"
    assert doc.read_text(encoding="utf-8") == keymap.reference_markdown()
    assert all(f"| `{spec.id}` |" in doc.read_text(encoding="utf-8") for spec in keymap.KEYS)
    assert "====" not in (keymap.__doc__ or "")  # no second table in the docstring
