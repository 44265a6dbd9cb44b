"""The small form of an MCP prompt's arguments (``/mcp__<server>__<prompt>`` without them).

One field per argument (its name, "required" where it is, the server's description under it),
filled with what was given inline. **Enter** goes to the next field, and on the last one sends;
**Tab**/**Shift+Tab** move between fields; **Esc** closes without sending. A required field left
empty is said, and the form stays. The keys are the form's own while it is open (a modal screen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from ...protocol.safe_text import visible
from .. import keymap

if TYPE_CHECKING:
    from ...protocol.mcp import McpPromptInfo


class McpPromptForm(ModalScreen[dict[str, str] | None]):
    """The arguments of one prompt; dismissed with them, or None (Esc)."""

    KEY_SCOPES = ("mcp_prompt",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("mcp_prompt")]

    DEFAULT_CSS = """
    McpPromptForm { align: center middle; }
    McpPromptForm > Vertical {
        width: 80; max-width: 95%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    McpPromptForm .form-title { text-style: bold; margin-bottom: 1; }
    McpPromptForm .form-help { color: $text-muted; }
    McpPromptForm .form-hint { color: $text-muted; margin-top: 1; }
    McpPromptForm VerticalScroll { height: auto; max-height: 30; }
    """

    def __init__(self, title: str, prompt: McpPromptInfo, values: dict[str, str]) -> None:
        super().__init__()
        self.title_text = title
        self.prompt = prompt
        self.values = dict(values)

    def compose(self) -> ComposeResult:
        prompt = self.prompt
        with Vertical():
            yield Static(visible(self.title_text), classes="form-title", markup=False)
            if prompt.description:
                yield Static(visible(prompt.description[:300]), classes="form-help", markup=False)
            with VerticalScroll():
                for index, argument in enumerate(prompt.arguments):
                    label = f"{argument.name}{' (required)' if argument.required else ''}"
                    yield Static(visible(label), markup=False)
                    if argument.description:
                        yield Static(visible(argument.description[:200]), classes="form-help", markup=False)
                    yield Input(self.values.get(argument.name, ""), id=f"arg-{index}",
                                placeholder=visible(argument.name))
            yield Static("Enter next field / send · Tab move · Esc close without sending", classes="form-hint",
                         markup=False)
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        fields = list(self.query(Input))
        if fields:
            fields[0].focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        fields = list(self.query(Input))
        index = fields.index(event.input)
        if index + 1 < len(fields):
            fields[index + 1].focus()
            return
        self.send()

    def send(self) -> None:
        fields = list(self.query(Input))
        values = {a.name: f.value for a, f in zip(self.prompt.arguments, fields, strict=False)}
        missing = [a.name for a in self.prompt.arguments if a.required and not values.get(a.name, "").strip()]
        if missing:
            self.notify(visible(f"{', '.join(missing)}: required"), severity="warning")
            fields[[a.name for a in self.prompt.arguments].index(missing[0])].focus()
            return
        self.dismiss({k: v for k, v in values.items() if v.strip()})

    def action_close(self) -> None:
        self.dismiss(None)
